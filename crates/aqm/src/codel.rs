//! CoDel: Controlled Delay.
//!
//! Source: Nichols, Jacobson, McGregor & Iyengar, RFC 8289 (2018), the pseudocode of
//! its §5 (`dodequeue`, `dequeue`, `control_law`) line by line; constants from its
//! §4.2-4.3 (TARGET 5 ms, INTERVAL 100 ms) and MAXPACKET ("SHOULD use interface
//! MTU"). ECN marking where the pseudocode drops follows Linux's `codel_impl.h`
//! (mark, schedule the next signal, send the marked packet); the structure too: the
//! control law is a plain function over CoDel's variables and a queue it reaches
//! through the [`CodelQueue`] trait (Linux passes callbacks), so that FQ-CoDel
//! ([`crate::fq_codel`]) runs one CoDel state per flow queue with this same code.
//! No code is taken from Linux.
//!
//! `ignore_ce_in_measure` (Khademi, Ros & Welzl, IETF 88: "exclude delay caused by
//! CE-marked packets"): CoDel marks at dequeue, so a marked packet never waits in its
//! queue; what it adds to the delay of the packets behind it is its transmission time.
//! With the option on, a packet's measured sojourn leaves out the transmission time
//! (at the link rate) of every CE-marked packet that departed while it waited.

use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Fifo, Limit, Queued};
use crate::time::{Duration, Time};
use crate::units::Bytes;
use crate::{Admit, Aqm, Cause, Ctx, Departure, Dropped, Ecn, Probe, QPacket, Transport};

/// CoDel's parameters. Defaults are RFC 8289's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CodelParams {
    /// TARGET, the acceptable standing queue delay (RFC 8289 §4.3: 5 ms).
    pub target: Duration,
    /// INTERVAL, the window of the minimum and the control law's unit (RFC 8289 §4.2: 100 ms).
    pub interval: Duration,
    /// MAXPACKET: no drop while the backlog is at most this (RFC 8289 §5: "SHOULD use
    /// interface MTU"; 1500 B. Linux uses the device MTU plus link header, 1514 B).
    pub mtu: Bytes,
    /// Mark ECN-capable packets instead of dropping them (RFC 3168; Linux codel `ecn`,
    /// off by default).
    pub ecn: bool,
    /// Leave the transmission time of CE-marked packets out of the measured sojourn
    /// (Khademi, Ros & Welzl, IETF 88).
    pub ignore_ce_in_measure: bool,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams { target: Duration::from_millis(5), interval: Duration::from_millis(100), mtu: Bytes(1500), ecn: false, ignore_ce_in_measure: false }
    }
}

impl CodelParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("target", "TARGET, acceptable standing queue delay (RFC 8289 §4.3: 5 ms)"),
        ("interval", "INTERVAL, sliding-minimum window and control-law unit (RFC 8289 §4.2: 100 ms)"),
        ("mtu", "MAXPACKET: no drop while the backlog is at most this (RFC 8289 §5: the MTU, 1500 B)"),
        ("ecn", "mark ECN-capable packets instead of dropping (RFC 3168; Linux codel default off)"),
        ("ignore_ce_in_measure", "leave CE-marked packets' transmission time out of the sojourn (Khademi, Ros & Welzl, IETF 88)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        if self.interval.is_zero() {
            return Err("interval: must be greater than zero".into());
        }
        if self.target.is_zero() {
            return Err("target: must be greater than zero".into());
        }
        Ok(())
    }
}

/// CoDel's state variables (RFC 8289 names in comments).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CodelVars {
    /// count_
    pub count: u32,
    /// lastcount_
    pub lastcount: u32,
    /// dropping_
    pub dropping: bool,
    /// first_above_time_ (0 in the RFC means unset)
    pub first_above_time: Option<Time>,
    /// drop_next_
    pub drop_next: Time,
    /// The (measured) sojourn of the last packet examined.
    pub ldelay: Duration,
}

/// A packet in a CoDel queue, with the CE service clock when it arrived.
#[derive(Clone, Debug)]
pub struct Stamped<P> {
    pub pkt: P,
    pub ce_clock: Duration,
}

impl<P: QPacket> QPacket for Stamped<P> {
    fn size_bytes(&self) -> u32 {
        self.pkt.size_bytes()
    }
    fn flow_key(&self) -> u64 {
        self.pkt.flow_key()
    }
    fn host_pair_key(&self) -> u64 {
        self.pkt.host_pair_key()
    }
    fn transport(&self) -> Transport {
        self.pkt.transport()
    }
    fn src_host(&self) -> u64 {
        self.pkt.src_host()
    }
    fn dst_host(&self) -> u64 {
        self.pkt.dst_host()
    }
    fn tcp_ack(&self) -> Option<crate::TcpAck> {
        self.pkt.tcp_ack()
    }
    fn ecn(&self) -> Ecn {
        self.pkt.ecn()
    }
    fn set_ce(&mut self) {
        self.pkt.set_ce()
    }
}

/// Total transmission time of the CE-marked packets that have left a qdisc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CeClock(pub Duration);

/// What CoDel needs from the queue it manages (Linux's `codel_dequeue` takes the
/// same as callbacks: dequeue, and the backlog).
pub trait CodelQueue<P> {
    /// Remove the head packet.
    fn pop(&mut self) -> Option<Queued<Stamped<P>>>;
    /// The backlog in bytes after the pop, for the "at most one MTU" rule (RFC 8289:
    /// `bytes()`; FQ-CoDel, as Linux, passes the whole qdisc's backlog).
    fn backlog_bytes(&self) -> u64;
}

/// RFC 8289 `control_law(t, count)`: `t + INTERVAL / sqrt(count)`, to the nearest ns.
pub fn control_law(t: Time, interval: Duration, count: u32) -> Time {
    t + Duration::from_nanos((interval.as_nanos() as f64 / (count.max(1) as f64).sqrt()).round() as u64)
}

/// RFC 8289 `dodequeue()`: the head packet and whether it may be dropped.
fn dodequeue<P: QPacket, Q: CodelQueue<P>>(p: &CodelParams, v: &mut CodelVars, ce: CeClock, q: &mut Q, now: Time) -> (Option<Queued<Stamped<P>>>, bool) {
    let Some(item) = q.pop() else {
        // "queue is empty - reset first_above_time"
        v.first_above_time = None;
        return (None, false);
    };
    let mut sojourn = now.saturating_since(item.enqueued_at);
    if p.ignore_ce_in_measure {
        sojourn = sojourn.saturating_sub(ce.0.saturating_sub(item.pkt.ce_clock));
    }
    v.ldelay = sojourn;
    let ok = if sojourn < p.target || q.backlog_bytes() <= p.mtu.0 {
        // "went below - stay below for at least INTERVAL"
        v.first_above_time = None;
        false
    } else {
        match v.first_above_time {
            // "just went above from below. If still above at first_above_time, will
            // say it's ok to drop."
            None => {
                v.first_above_time = Some(now + p.interval);
                false
            }
            Some(t) => now >= t,
        }
    };
    (Some(item), ok)
}

fn drop_item<P>(item: Queued<Stamped<P>>, now: Time, drops: &mut Vec<Dropped<P>>) {
    let sojourn = Some(now.saturating_since(item.enqueued_at));
    drops.push(Dropped { pkt: item.pkt.pkt, cause: Cause::Deterministic, sojourn });
}

/// RFC 8289 `dequeue()`: the next packet to send, dropping (or, with ECN, marking)
/// on the control law's schedule. Drops go to `drops` with cause deterministic.
pub fn codel_dequeue<P: QPacket, Q: CodelQueue<P>>(
    p: &CodelParams,
    v: &mut CodelVars,
    ce: &mut CeClock,
    q: &mut Q,
    ctx: &Ctx<'_>,
    drops: &mut Vec<Dropped<P>>,
) -> Option<Departure<P>> {
    let now = ctx.now;
    let (mut item, mut ok) = dodequeue(p, v, *ce, q, now);
    let mut marked = None;
    if v.dropping {
        if !ok {
            // "sojourn time below TARGET - leave drop state"
            v.dropping = false;
        }
        // "Time for the next drop. Drop current packet and dequeue next. If the dequeue
        // doesn't take us out of dropping state, schedule the next drop."
        while v.dropping && now >= v.drop_next {
            v.count += 1;
            let it = item.take().expect("ok_to_drop implies a packet");
            if p.ecn && it.pkt.ecn().is_ect() {
                // Linux codel_impl.h: mark instead, schedule the next signal, send it.
                let mut it = it;
                it.pkt.set_ce();
                marked = Some(Cause::Deterministic);
                v.drop_next = control_law(v.drop_next, p.interval, v.count);
                item = Some(it);
                break;
            }
            drop_item(it, now, drops);
            (item, ok) = dodequeue(p, v, *ce, q, now);
            if !ok {
                v.dropping = false;
            } else {
                v.drop_next = control_law(v.drop_next, p.interval, v.count);
            }
        }
    } else if ok {
        let mut it = item.take().expect("ok_to_drop implies a packet");
        if p.ecn && it.pkt.ecn().is_ect() {
            it.pkt.set_ce();
            marked = Some(Cause::Deterministic);
            item = Some(it);
        } else {
            drop_item(it, now, drops);
            (item, _) = dodequeue(p, v, *ce, q, now);
        }
        v.dropping = true;
        // "If min went above TARGET close to when it last went below, assume that the
        // drop rate that controlled the queue on the last cycle is a good starting
        // point to control it now."
        let delta = v.count.saturating_sub(v.lastcount);
        v.count = if delta > 1 && now.saturating_since(v.drop_next) < p.interval.checked_mul(16).unwrap_or(Duration::MAX) { delta } else { 1 };
        v.drop_next = control_law(now, p.interval, v.count);
        v.lastcount = v.count;
    }
    let item = item?;
    let pkt = item.pkt.pkt;
    if pkt.ecn() == Ecn::Ce {
        ce.0 += ctx.link_rate.tx_time(pkt.size_bytes() as u64);
    }
    Some(Departure { sojourn: now.saturating_since(item.enqueued_at), pkt, marked })
}

/// The queue of a single CoDel: its FIFO.
struct Whole<'a, P>(&'a mut Fifo<Stamped<P>>);

impl<P: QPacket> CodelQueue<P> for Whole<'_, P> {
    fn pop(&mut self) -> Option<Queued<Stamped<P>>> {
        self.0.pop()
    }
    fn backlog_bytes(&self) -> u64 {
        self.0.bytes()
    }
}

/// CoDel over one FIFO with a drop-tail limit.
#[derive(Debug)]
pub struct Codel<P> {
    pub params: CodelParams,
    pub vars: CodelVars,
    fifo: Fifo<Stamped<P>>,
    limit: Limit,
    ce: CeClock,
}

impl<P: QPacket> Codel<P> {
    pub fn new(params: &CodelParams, limit: Limit) -> Self {
        Codel { params: params.clone(), vars: CodelVars::default(), fifo: Fifo::new(), limit, ce: CeClock::default() }
    }
}

impl<P: QPacket> Aqm<P> for Codel<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        // RFC 8289 §5: packets are timestamped at enqueue; a full buffer drops the arrival.
        if self.limit.overflows(self.fifo.backlog(), pkt.size_bytes()) {
            drops.push(Dropped { pkt, cause: Cause::Overflow, sojourn: None });
            return Admit::Dropped(Cause::Overflow);
        }
        self.fifo.push(Stamped { pkt, ce_clock: self.ce.0 }, ctx.now);
        Admit::Queued
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        codel_dequeue(&self.params, &mut self.vars, &mut self.ce, &mut Whole(&mut self.fifo), ctx, drops)
    }

    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }

    fn probe(&self) -> Probe {
        Probe { drop_prob: None, delay_estimate: Some(self.vars.ldelay) }
    }
}


impl crate::AqmParams for CodelParams {
    const TITLE: &'static str = "Controlled Delay: drop at dequeue on the interval/sqrt(count) schedule";
    const SOURCE: &'static str = "Nichols, Jacobson, McGregor & Iyengar, RFC 8289 (2018)";
    const DOC: &'static [(&'static str, &'static str)] = CodelParams::DOC;
    type Algo<P: QPacket> = Codel<P>;
    fn check(&self) -> Result<(), String> {
        CodelParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        Codel::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn filled(n: u64, params: CodelParams) -> Codel<TestPkt> {
        let mut q = Codel::new(&params, Limit::packets(100_000));
        let mut r = rng(1);
        let mut drops = Vec::new();
        for i in 0..n {
            q.enqueue(TestPkt { id: i, size: 1500, flow: 0, ecn: Ecn::Ect0 }, &mut ctx(Time::ZERO, &mut r), &mut drops);
        }
        q
    }

    /// Dequeue every `step` from `from` to `to`; the times of the drops (or marks).
    fn signal_times(q: &mut Codel<TestPkt>, from_ms: u64, to_ms: u64, step_us: u64) -> Vec<Time> {
        let mut r = rng(1);
        let mut out = Vec::new();
        let mut t = Time::from_millis(from_ms);
        while t <= Time::from_millis(to_ms) {
            let mut drops = Vec::new();
            let d = q.dequeue(&mut ctx(t, &mut r), &mut drops);
            for _ in &drops {
                out.push(t);
            }
            if d.is_some_and(|d| d.marked.is_some()) {
                out.push(t);
            }
            t += Duration::from_micros(step_us);
        }
        out
    }

    /// Expected signal times by hand from RFC 8289: the first at the first dequeue at
    /// or after first_above_time = (first dequeue above target) + 100 ms; then the
    /// schedule D_2 = D_1 + 100 ms, D_{k+1} = D_k + 100 ms / sqrt(k), each taken at the
    /// first dequeue at or after it (dequeues on a 1 ms grid here).
    fn expected(entry_ms: f64, n: usize) -> Vec<Time> {
        let mut d = entry_ms + 100.0;
        let mut out = vec![Time::from_millis(entry_ms as u64)];
        for k in 1..n {
            out.push(Time::from_millis(d.ceil() as u64));
            d += 100.0 / ((k + 1) as f64).sqrt();
        }
        out
    }

    #[test]
    fn drop_times_follow_interval_over_sqrt_count() {
        // 2000 packets queued at t = 0; dequeues every 1 ms from t = 10 ms, so every
        // sojourn is above 5 ms: first_above_time = 10 + 100 = 110 ms; the dropping
        // state starts at 110 ms with count 1; drop_next = 210; then + 100/sqrt(2) =
        // 280.71, + 100/sqrt(3) = 338.45, + 50 = 388.45, + 100/sqrt(5) = 433.17,
        // + 100/sqrt(6) = 473.99, + 100/sqrt(7) = 511.78, ...
        let mut q = filled(2000, CodelParams::default());
        let got = signal_times(&mut q, 10, 900, 1000);
        let want = expected(110.0, got.len());
        assert_eq!(&want[..7].iter().map(|t| t.as_nanos() / 1_000_000).collect::<Vec<_>>(), &[110, 210, 281, 339, 389, 434, 474]);
        assert_eq!(got, want);
        assert!(got.len() >= 14, "{}", got.len());
        assert_eq!(q.vars.count as usize, got.len());
        assert!(q.vars.dropping);
    }

    #[test]
    fn ecn_marks_on_the_same_schedule() {
        let mut q = filled(2000, CodelParams { ecn: true, ..CodelParams::default() });
        let got = signal_times(&mut q, 10, 900, 1000);
        assert_eq!(got, expected(110.0, got.len()));
        assert!(got.len() >= 14);
        // nothing was dropped: every packet dequeued was sent
        assert_eq!(q.backlog().packets, 2000 - 891);
    }

    #[test]
    fn leaving_and_re_entering_resumes_the_count() {
        // State as if a dropping cycle just ended: count 7, lastcount 2 (delta 5).
        let mut q = filled(100, CodelParams::default());
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.vars = CodelVars { count: 7, lastcount: 2, dropping: false, first_above_time: Some(Time::from_millis(200)), drop_next: Time::from_millis(150), ldelay: Duration::ZERO };
        // at 300 ms, within 16 intervals of drop_next: count = delta = 5,
        // drop_next = 300 + 100/sqrt(5) = 344.72 ms
        q.dequeue(&mut ctx(Time::from_millis(300), &mut r), &mut drops);
        assert_eq!(drops.len(), 1);
        assert_eq!((q.vars.count, q.vars.lastcount, q.vars.dropping), (5, 5, true));
        assert_eq!(q.vars.drop_next, Time::from_nanos(344_721_360));
        // long after drop_next (>= 16 intervals): start again from 1
        q.vars = CodelVars { count: 7, lastcount: 2, dropping: false, first_above_time: Some(Time::from_millis(200)), drop_next: Time::from_millis(150), ldelay: Duration::ZERO };
        q.dequeue(&mut ctx(Time::from_millis(1750), &mut r), &mut drops);
        assert_eq!((q.vars.count, q.vars.drop_next), (1, Time::from_millis(1850)));
        // delta of 1: start from 1
        q.vars = CodelVars { count: 3, lastcount: 2, dropping: false, first_above_time: Some(Time::from_millis(200)), drop_next: Time::from_millis(1800), ldelay: Duration::ZERO };
        q.dequeue(&mut ctx(Time::from_millis(1810), &mut r), &mut drops);
        assert_eq!(q.vars.count, 1);
    }

    #[test]
    fn sojourn_under_target_leaves_the_dropping_state() {
        let mut q = filled(10, CodelParams::default());
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.vars.dropping = true;
        q.vars.drop_next = Time::from_millis(1);
        // every sojourn 4 ms < 5 ms
        let d = q.dequeue(&mut ctx(Time::from_millis(4), &mut r), &mut drops);
        assert!(d.is_some() && drops.is_empty());
        assert!(!q.vars.dropping);
        assert_eq!(q.vars.first_above_time, None);
    }

    #[test]
    fn no_drop_while_the_backlog_is_at_most_one_mtu() {
        // after taking the head, 1500 B left (<= MAXPACKET): never ok to drop
        for (n, drops_expected) in [(2u64, 0usize), (3, 1)] {
            let mut q = filled(n, CodelParams::default());
            let mut r = rng(1);
            let mut drops = Vec::new();
            q.vars.first_above_time = Some(Time::from_millis(1));
            q.dequeue(&mut ctx(Time::from_millis(500), &mut r), &mut drops);
            assert_eq!(drops.len(), drops_expected, "{n} packets");
        }
    }

    #[test]
    fn an_empty_queue_leaves_the_dropping_state() {
        let mut q = filled(0, CodelParams::default());
        let mut r = rng(1);
        q.vars.dropping = true;
        q.vars.first_above_time = Some(Time::ZERO);
        assert!(q.dequeue(&mut ctx(Time::from_millis(5), &mut r), &mut Vec::new()).is_none());
        assert!(!q.vars.dropping && q.vars.first_above_time.is_none());
    }

    #[test]
    fn ce_marked_departures_leave_the_measure() {
        // 10 Mbps: a 1500 B packet takes 1.2 ms. The first packet leaves CE at 10 ms;
        // the second, dequeued at 20 ms after waiting 20 ms, is measured at 18.8 ms.
        let mut q = Codel::new(&CodelParams { ignore_ce_in_measure: true, ..CodelParams::default() }, Limit::packets(10));
        let mut r = rng(1);
        let mut drops = Vec::new();
        q.enqueue(TestPkt { id: 0, size: 1500, flow: 0, ecn: Ecn::Ce }, &mut ctx(Time::ZERO, &mut r), &mut drops);
        q.enqueue(pkt(1, 1500), &mut ctx(Time::ZERO, &mut r), &mut drops);
        q.dequeue(&mut ctx(Time::from_millis(10), &mut r), &mut drops);
        let d = q.dequeue(&mut ctx(Time::from_millis(20), &mut r), &mut drops).unwrap();
        assert_eq!(d.sojourn, Duration::from_millis(20));
        assert_eq!(q.vars.ldelay, Duration::from_micros(18_800));
        // a packet that arrives after the CE departure is not affected
        q.enqueue(pkt(2, 1500), &mut ctx(Time::from_millis(21), &mut r), &mut drops);
        q.dequeue(&mut ctx(Time::from_millis(30), &mut r), &mut drops);
        assert_eq!(q.vars.ldelay, Duration::from_millis(9));
    }

    #[test]
    fn a_full_buffer_drops_the_arrival() {
        let mut q: Codel<TestPkt> = Codel::new(&CodelParams::default(), Limit::packets(2));
        let mut r = rng(1);
        let mut drops = Vec::new();
        assert_eq!(q.enqueue(pkt(0, 1500), &mut ctx(Time::ZERO, &mut r), &mut drops), Admit::Queued);
        assert_eq!(q.enqueue(pkt(1, 1500), &mut ctx(Time::ZERO, &mut r), &mut drops), Admit::Queued);
        assert_eq!(q.enqueue(pkt(2, 1500), &mut ctx(Time::ZERO, &mut r), &mut drops), Admit::Dropped(Cause::Overflow));
    }
}

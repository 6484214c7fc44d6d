//! MADPIE: Maximum and Average queuing Delay with PIE.
//!
//! Source: Kuhn & Ros, "Improving PIE's performance over high-delay paths", §II.
//! MADPIE is PIE ([`crate::pie`], run unchanged through its public `decide`,
//! `admit_decided` and `update`) plus one parameter, `tau_DD`, and an indicator
//! `p_max`:
//!
//! > "Every λ, if the estimated queuing delay is > τ_DD, p_max is set to 1. Then, if a
//! > packet is not dropped nor marked by the random drop algorithm and p_max = 1, then
//! > a packet is dropped or marked and p_max is reset to 0. Thus, there can be a
//! > maximum of one deterministic drop every λ." (§II)
//!
//! Two readings had to be settled (see docs/aqm/madpie.md):
//!
//! * PIE's burst allowance and safeguards. The paper's §III says that "with MADPIE, it
//!   is possible to initially allow the same bursts, but the deterministic drops would
//!   then prevent an excessive growth": the deterministic drop waits, as the random
//!   one does, while PIE's burst allowance (RFC 8033 §4.4) or its safeguards (§4.1)
//!   hold early drops back. A packet let through by those protections was not "let
//!   through by the random drop algorithm"; it was never submitted to it. That is the
//!   default; `dd_respects_safeguards = false` gives the other reading (the
//!   deterministic drop applies to any packet PIE admits).
//! * The indicator is only ever set by the update and reset by a drop: once armed it
//!   stays armed, across updates, until a packet takes it (the text has no other reset).

use serde::{Deserialize, Serialize};

use crate::pie::{Pie, PieParams};
use crate::queue::{Backlog, Limit};
use crate::time::{Duration, Time};
use crate::{Admit, Aqm, Cause, Ctx, Departure, Dropped, Probe, QPacket};

/// MADPIE's parameters: PIE's, and tau_DD.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MadPieParams {
    /// PIE's parameters, for the random drop policy (defaults RFC 8033's; Kuhn & Ros
    /// §III use target 20 ms and tupdate 30 ms).
    pub pie: PieParams,
    /// tau_DD: the estimated delay above which deterministic drops occur (§III: 30 ms).
    pub tau_dd: Duration,
    /// The deterministic drop, like the random one, waits while PIE's burst allowance
    /// or safeguards hold early drops back (§III "initially allow the same bursts").
    pub dd_respects_safeguards: bool,
}

impl Default for MadPieParams {
    fn default() -> Self {
        MadPieParams { pie: PieParams::default(), tau_dd: Duration::from_millis(30), dd_respects_safeguards: true }
    }
}

impl MadPieParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("pie", "PIE's parameters for the random policy, e.g. { target = \"20ms\", tupdate = \"30ms\" } (RFC 8033 defaults)"),
        ("tau_dd", "estimated delay above which the deterministic drop is armed (Kuhn & Ros §III: 30 ms)"),
        ("dd_respects_safeguards", "deterministic drop held back by PIE's burst allowance and safeguards, as the random one (§III)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        self.pie.validate().map_err(|e| format!("pie.{e}"))
    }
}

/// MADPIE over one FIFO: a PIE and the indicator.
#[derive(Debug)]
pub struct MadPie<P> {
    pub pie: Pie<P>,
    pub tau_dd: Duration,
    pub respects_safeguards: bool,
    /// p_max, the indicator (§II).
    pub armed: bool,
    /// Updates that found the estimate above tau_DD.
    pub armings: u64,
}

impl<P: QPacket> MadPie<P> {
    pub fn new(params: &MadPieParams, limit: Limit) -> Self {
        MadPie { pie: Pie::new(&params.pie, limit), tau_dd: params.tau_dd, respects_safeguards: params.dd_respects_safeguards, armed: false, armings: 0 }
    }
}

impl<P: QPacket> Aqm<P> for MadPie<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let mut decision = self.pie.decide(pkt.size_bytes(), ctx);
        // §II: "if a packet is not dropped nor marked by the random drop algorithm and
        // p_max = 1, then a packet is dropped or marked and p_max is reset to 0".
        if decision.is_none() && self.armed {
            let random_policy_ran = self.pie.vars.burst_allowance.is_zero() && !self.pie.safeguard_applies();
            if random_policy_ran || !self.respects_safeguards {
                decision = Some(Cause::Deterministic);
                self.armed = false;
            }
        }
        // PIE's ECN rule applies to the deterministic signal too: marked below
        // or at ecn_threshold for ECN-capable packets, dropped otherwise (RFC 8033 §5.1).
        self.pie.admit_decided(pkt, decision, ctx, drops)
    }

    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        self.pie.dequeue(ctx, drops)
    }

    fn backlog(&self) -> Backlog {
        self.pie.backlog()
    }

    fn next_timer(&self) -> Option<Time> {
        self.pie.next_timer()
    }

    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.pie.update(ctx);
        // §II: "Every λ, if the estimated queuing delay is > τ_DD, p_max is set to 1."
        if self.pie.current_qdelay() > self.tau_dd {
            self.armed = true;
            self.armings += 1;
        }
    }

    fn probe(&self) -> Probe {
        self.pie.probe()
    }
}


impl crate::AqmParams for MadPieParams {
    const TITLE: &'static str = "PIE plus at most one deterministic drop per update while the delay estimate exceeds tau_DD";
    const SOURCE: &'static str = "Kuhn & Ros, \"Improving PIE's performance over high-delay paths\", §II";
    const DOC: &'static [(&'static str, &'static str)] = MadPieParams::DOC;
    type Algo<P: QPacket> = MadPie<P>;
    fn check(&self) -> Result<(), String> {
        MadPieParams::validate(self)
    }
    fn marks_ecn(&self) -> bool {
        self.pie.ecn
    }
    fn build<P: QPacket>(&self, limit: Limit) -> Self::Algo<P> {
        MadPie::new(self, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pie::DelayEstimator;
    use crate::testing::*;
    use crate::Ecn;

    /// PIE whose random policy never fires (alpha = beta = 0 keep drop_prob at 0),
    /// timestamp estimator (the estimate is the last sojourn), no burst allowance.
    fn quiet(respects: bool, max_burst_ms: u64) -> MadPie<TestPkt> {
        let pie = PieParams {
            target: Duration::from_millis(20),
            tupdate: Duration::from_millis(30),
            alpha: 0.0,
            beta: 0.0,
            max_burst: Duration::from_millis(max_burst_ms),
            estimator: DelayEstimator::Timestamp,
            ..PieParams::default()
        };
        MadPie::new(&MadPieParams { pie, tau_dd: Duration::from_millis(30), dd_respects_safeguards: respects }, Limit::packets(100_000))
    }

    /// Offer `n` packets at `now`; returns the admits.
    fn offer(q: &mut MadPie<TestPkt>, n: u64, now: Time, ecn: Ecn) -> Vec<Admit> {
        let mut r = rng(now.as_nanos());
        let mut drops = Vec::new();
        (0..n).map(|i| q.enqueue(TestPkt { id: i, size: 1500, flow: 0, ecn }, &mut ctx(now, &mut r), &mut drops)).collect()
    }

    fn deterministic(a: &[Admit]) -> usize {
        a.iter().filter(|x| matches!(x, Admit::Dropped(Cause::Deterministic) | Admit::Marked(Cause::Deterministic))).count()
    }

    #[test]
    fn at_most_one_deterministic_drop_per_update_interval() {
        let mut q = quiet(true, 0);
        offer(&mut q, 10, Time::ZERO, Ecn::NotEct);
        let mut r = rng(1);
        for k in 1..=10u64 {
            // estimated delay 50 ms > tau_DD = 30 ms at every update
            q.pie.vars.qdelay = Duration::from_millis(50);
            q.on_timer(&mut ctx(Time::from_millis(30 * k), &mut r));
            assert!(q.armed);
            let a = offer(&mut q, 100, Time::from_millis(30 * k + 1), Ecn::NotEct);
            assert_eq!(deterministic(&a), 1, "interval {k}");
            // the first packet after arming takes it
            assert_eq!(a[0], Admit::Dropped(Cause::Deterministic));
            assert!(!q.armed);
        }
        // two updates with no arrival in between still give one drop: p_max is 0 or 1
        q.pie.vars.qdelay = Duration::from_millis(50);
        q.on_timer(&mut ctx(Time::from_millis(330), &mut r));
        q.on_timer(&mut ctx(Time::from_millis(360), &mut r));
        assert_eq!(deterministic(&offer(&mut q, 100, Time::from_millis(361), Ecn::NotEct)), 1);
        assert_eq!(q.armings, 12);
    }

    #[test]
    fn not_armed_at_or_below_tau_dd() {
        let mut q = quiet(true, 0);
        offer(&mut q, 10, Time::ZERO, Ecn::NotEct);
        let mut r = rng(1);
        q.pie.vars.qdelay = Duration::from_millis(30); // "> tau_DD" is strict
        q.on_timer(&mut ctx(Time::from_millis(30), &mut r));
        assert!(!q.armed);
        assert_eq!(deterministic(&offer(&mut q, 100, Time::from_millis(31), Ecn::NotEct)), 0);
    }

    #[test]
    fn the_random_drop_comes_first_and_the_indicator_waits_for_a_packet_it_lets_through() {
        let mut q = quiet(true, 0);
        offer(&mut q, 10, Time::ZERO, Ecn::NotEct);
        let mut r = rng(1);
        q.pie.vars.qdelay = Duration::from_millis(50);
        q.on_timer(&mut ctx(Time::from_millis(30), &mut r));
        q.pie.vars.drop_prob = 1.0; // the random policy drops everything
        let a = offer(&mut q, 20, Time::from_millis(31), Ecn::NotEct);
        assert!(a.iter().all(|x| *x == Admit::Dropped(Cause::Random)));
        assert!(q.armed, "still armed: no packet was let through");
        q.pie.vars.drop_prob = 0.0;
        let a = offer(&mut q, 20, Time::from_millis(32), Ecn::NotEct);
        assert_eq!(a[0], Admit::Dropped(Cause::Deterministic));
        assert_eq!(deterministic(&a), 1);
    }

    #[test]
    fn the_deterministic_drop_waits_for_the_burst_allowance_unless_asked_not_to() {
        // max_burst 100 ms, tupdate 30 ms: the allowance lasts four updates
        // (100 -> 70 -> 40 -> 10 -> 0).
        let mut q = quiet(true, 100);
        offer(&mut q, 10, Time::ZERO, Ecn::NotEct);
        let mut r = rng(1);
        let mut per_interval = Vec::new();
        for k in 1..=6u64 {
            q.pie.vars.qdelay = Duration::from_millis(50);
            q.on_timer(&mut ctx(Time::from_millis(30 * k), &mut r));
            per_interval.push(deterministic(&offer(&mut q, 50, Time::from_millis(30 * k + 1), Ecn::NotEct)));
        }
        assert_eq!(per_interval, vec![0, 0, 0, 1, 1, 1]);
        // the literal reading: any packet PIE admits can take the deterministic drop
        let mut q = quiet(false, 100);
        offer(&mut q, 10, Time::ZERO, Ecn::NotEct);
        let mut per_interval = Vec::new();
        for k in 1..=6u64 {
            q.pie.vars.qdelay = Duration::from_millis(50);
            q.on_timer(&mut ctx(Time::from_millis(30 * k), &mut r));
            per_interval.push(deterministic(&offer(&mut q, 50, Time::from_millis(30 * k + 1), Ecn::NotEct)));
        }
        assert_eq!(per_interval, vec![1; 6]);
    }

    #[test]
    fn the_deterministic_signal_marks_ecn_capable_packets_under_the_pie_threshold() {
        let mut q = quiet(true, 0);
        q.pie.params.ecn = true;
        offer(&mut q, 10, Time::ZERO, Ecn::NotEct);
        let mut r = rng(1);
        q.pie.vars.qdelay = Duration::from_millis(50);
        q.on_timer(&mut ctx(Time::from_millis(30), &mut r));
        let a = offer(&mut q, 5, Time::from_millis(31), Ecn::Ect0);
        assert_eq!(a[0], Admit::Marked(Cause::Deterministic));
        assert_eq!(&a[1..], &[Admit::Queued; 4]);
    }

    #[test]
    fn the_overflow_drop_does_not_take_the_indicator() {
        let pie = PieParams { alpha: 0.0, beta: 0.0, max_burst: Duration::ZERO, estimator: DelayEstimator::Timestamp, ..PieParams::default() };
        let mut q: MadPie<TestPkt> = MadPie::new(&MadPieParams { pie, ..MadPieParams::default() }, Limit::packets(10));
        offer(&mut q, 10, Time::ZERO, Ecn::NotEct);
        let mut r = rng(1);
        q.pie.vars.qdelay = Duration::from_millis(50);
        q.on_timer(&mut ctx(Time::from_millis(15), &mut r));
        assert_eq!(offer(&mut q, 3, Time::from_millis(16), Ecn::NotEct), vec![Admit::Dropped(Cause::Overflow); 3]);
        assert!(q.armed);
    }
}

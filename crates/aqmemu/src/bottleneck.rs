//! The two directions of the bottleneck, without the system calls: each runs the
//! simulator's own link ([`aqmsim::net::link::Link`]: queue, AQM, transmitter, rate
//! schedule or trace, counters and samples) in run-relative virtual time, followed
//! by a per-flow propagation delay line. The real-time loop ([`crate::run`]) feeds it
//! the packets it reads, stamped with the loop's clock, asks it when to wake up, and
//! writes out what the delay lines hand back.
//!
//! Two clocks. The loop's is CLOCK_MONOTONIC less the process's epoch; the links'
//! is the time since the run's start (the `start` command's instant), so that rate
//! schedules, traces and sample times count from 0 as in the simulator. Packets
//! read before the run's start (none of the run's traffic: the traffic programs
//! start at it) cross the bottleneck on their propagation delay only, uncounted.
//!
//! Virtual-time order. When the loop wakes, [`Bottleneck::advance`] runs each link's
//! operations (AQM timer, rate change, transmission start, trace opportunity) and
//! the arrivals read since in the order of their times, as the simulator does; each
//! sample is taken between the operations before its time and those at or after it,
//! and the links' counters for the summary are read at the end of recording the same
//! way. However late the loop wakes, every transmission and drop is counted in the
//! interval it happened in. A departure is handed back when its transmission starts,
//! with its end, and joins the delay line, due at that end plus its flow's delay: the
//! loop need not wake at each transmission, only in time for the earliest departure
//! a link could still produce to reach the line before it is due ([`Bottleneck::deadline`]).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::os::fd::RawFd;

use aqm::{Cause, Dropped, Duration, Qdisc, Stats, Time};
use aqmsim::engine::key_time;
use aqmsim::net::link::{Link, LinkConfig, Observe, Sent};
use aqmsim::net::topology::dumbbell_monitors;
use aqmsim::record::{LinkInfo, Logged, Recorder};

use crate::packet::{IpPacket, Pool};
use crate::{sys, Config, PipeConfig};

/// A packet serialized and propagating: it reaches the far end at `due` (loop
/// time). Ordered by (due, seq), so that packets due at the same time leave in the
/// order they entered.
#[derive(Debug)]
struct InLine {
    due: Time,
    seq: u64,
    pkt: IpPacket,
}

impl PartialEq for InLine {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl Eq for InLine {}
impl PartialOrd for InLine {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InLine {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.due, self.seq).cmp(&(o.due, o.seq))
    }
}

/// The recording side of a link's packet events: the simulator's [`Recorder`] (packet
/// log, streaming histograms, per-flow drops and marks), given the events of the
/// plan's flows up to the end of recording (times since the run's start), and the
/// dropped packets' buffers back to the pool.
struct Log<'a> {
    rec: &'a mut Recorder,
    pool: &'a mut Pool,
    /// The link being run (0 forward, 1 reverse) and its rate, for the queueing
    /// delay at drops.
    link: u16,
    rate_bps: u64,
    /// The plan's flows are 0..flows.
    flows: u32,
    end: Time,
}

impl Log<'_> {
    #[inline]
    fn on(&self, t: Time, flow: u32) -> bool {
        t <= self.end && flow < self.flows
    }
}

/// A packet as the recorder sees it: its flow's forward or return traffic is the
/// direction it crosses the bottleneck in (download requests go back, their data
/// forward; any FIN or ACK-only segment goes where it travels).
struct Seen<'a> {
    p: &'a IpPacket,
    forward: bool,
}

impl Logged for Seen<'_> {
    #[inline]
    fn logged(&self) -> (u32, u64, u8, u32) {
        (self.p.flow, self.p.uid, self.p.kind, self.p.len as u32)
    }
    #[inline]
    fn forward(&self) -> bool {
        self.forward
    }
}

impl Observe<IpPacket> for Log<'_> {
    /// (flow, uid, kind, size)
    type Info = (u32, u64, u8, u32);
    fn info(&self, p: &IpPacket) -> Self::Info {
        (p.flow, p.uid, p.kind, p.len as u32)
    }
    fn enqueued(&mut self, t: Time, info: Self::Info, q: &Qdisc<IpPacket>, marked: Option<Cause>) {
        if self.on(t, info.0) {
            self.rec.enqueued(self.link, t, info, q, marked);
        }
    }
    fn dequeued(&mut self, t: Time, p: &IpPacket, sojourn: Duration, q: &Qdisc<IpPacket>, marked: Option<Cause>) {
        if self.on(t, p.flow) {
            self.rec.dequeued(self.link, t, &Seen { p, forward: self.link == 0 }, sojourn, q, marked);
        }
    }
    fn dropped(&mut self, t: Time, d: &Dropped<IpPacket>, q: &Qdisc<IpPacket>) {
        if self.on(t, d.pkt.flow) {
            let seen = Seen { p: &d.pkt, forward: self.link == 0 };
            self.rec.dropped(self.link, t, &seen, d.cause, d.sojourn, q.backlog().bytes, self.rate_bps, Some(q));
        }
    }
    fn recycle(&mut self, p: IpPacket) {
        self.pool.put(p);
    }
}

/// One direction: the link, then the delay line.
struct Pipe {
    link: Link<IpPacket>,
    /// Its index among the links (0 forward, 1 reverse).
    index: u16,
    /// Propagation delay of packets of no flow of the plan, and each flow's.
    delay: Duration,
    flow_delays: Vec<Duration>,
    /// The shortest of them: no departure is due sooner after its transmission starts.
    min_delay: Duration,
    /// Packets read (loop time in `arrived`) and not yet run through the link.
    arrivals: VecDeque<IpPacket>,
    /// Packets propagating, earliest due first. A heap, because flows with
    /// different path delays overtake each other on the line.
    line: BinaryHeap<Reverse<InLine>>,
    line_seq: u64,
    /// Packets read before the run's start, which skipped the link.
    bypassed: u64,
    delivered: u64,
    /// Packets the far device refused, in all and while recording.
    write_errors: u64,
    write_errors_recorded: u64,
    /// The link's counters at the end of recording.
    at_end: Option<Stats>,
    out: Vec<Sent<IpPacket>>,
}

impl Pipe {
    fn new(cfg: &PipeConfig, index: u16, seed: u64) -> Pipe {
        let link = Link::new(LinkConfig {
            name: &cfg.name,
            rate: cfg.rate,
            delay: cfg.delay,
            limit: cfg.limit,
            aqm: &cfg.aqm,
            schedule: cfg.schedule.iter().map(|&(at, r)| (Time::ZERO + at, r)).collect(),
            trace: cfg.trace.clone(),
            // the simulator's stream for the same link
            rng: aqmsim::rng::stream(seed, &format!("link.{}", cfg.name)),
        });
        let min_delay = cfg.flow_delays.iter().copied().chain([cfg.delay]).min().unwrap_or(cfg.delay);
        Pipe {
            link,
            index,
            delay: cfg.delay,
            flow_delays: cfg.flow_delays.clone(),
            min_delay,
            arrivals: VecDeque::new(),
            line: BinaryHeap::new(),
            line_seq: 0,
            bypassed: 0,
            delivered: 0,
            write_errors: 0,
            write_errors_recorded: 0,
            at_end: None,
            out: Vec::with_capacity(16),
        }
    }

    /// A packet whose last bit leaves at `sent` (loop time) propagates for its flow's delay.
    fn onto_line(&mut self, sent: Time, pkt: IpPacket) {
        let delay = self.flow_delays.get(pkt.flow as usize).copied().unwrap_or(self.delay);
        self.line_seq += 1;
        self.line.push(Reverse(InLine { due: sent + delay, seq: self.line_seq, pkt }));
    }

    /// Run the link's operations and the arrivals read, in the order of their times
    /// (operations first at equal times), up to `bound` (run-relative; included if
    /// `inclusive`). `origin` converts between the two clocks.
    fn run(&mut self, bound: Time, inclusive: bool, origin: Time, log: &mut Log<'_>) {
        log.link = self.index;
        loop {
            let op = self.link.next_op(self.index);
            let op_t = if op == u128::MAX { Time::MAX } else { key_time(op) };
            let arr_t = self.arrivals.front().map_or(Time::MAX, |p| Time::ZERO + p.arrived.saturating_since(origin));
            let t = op_t.min(arr_t);
            if t == Time::MAX || t > bound || (t == bound && !inclusive) {
                break;
            }
            // the rate before the operation, as the simulator's observer has it
            log.rate_bps = self.link.rate().bps();
            if op_t <= arr_t {
                self.link.do_op(op, log, &mut self.out);
            } else {
                let p = self.arrivals.pop_front().expect("an arrival");
                self.link.enqueue(p, t, log, &mut self.out);
            }
            let mut out = std::mem::take(&mut self.out);
            for s in out.drain(..) {
                self.onto_line(origin + (s.end - Time::ZERO), s.pkt);
            }
            self.out = out;
        }
    }

    /// Hand every packet whose propagation is over to the far end; `recording`: the
    /// run-relative time, while recording.
    fn deliver(&mut self, now: Time, fd: RawFd, pool: &mut Pool, late: &mut Lateness, recording: Option<u64>) {
        while self.line.peek().is_some_and(|Reverse(x)| x.due <= now) {
            let Reverse(InLine { due, pkt, .. }) = self.line.pop().unwrap();
            if let Some(at) = recording {
                late.add(now.saturating_since(due), at);
            }
            if sys::write(fd, pkt.bytes()) {
                self.delivered += 1;
            } else {
                self.write_errors += 1;
                self.write_errors_recorded += recording.is_some() as u64;
            }
            pool.put(pkt);
        }
    }

    /// Packets inside: waiting to enter the link, in it, propagating.
    fn in_flight(&self) -> u64 {
        self.arrivals.len() as u64 + self.link.held() + self.line.len() as u64
    }
}

/// Both directions of the bottleneck and what they record.
pub struct Bottleneck {
    pipes: [Pipe; 2],
    interval: Duration,
    /// The run's start in loop time, once known.
    origin: Option<Time>,
    /// The end of recording, run-relative.
    end: Time,
    /// The next sample's time, run-relative.
    next_sample: Time,
    /// The plan's flows: 0..flows.
    flows: u32,
    pub rec: Recorder,
    pub pool: Pool,
    pub lateness: Lateness,
}

impl Bottleneck {
    pub fn new(cfg: &Config) -> Bottleneck {
        let logged: Vec<u16> = (0..2).filter(|&d| cfg.log_packets[d as usize]).collect();
        let fwd = Pipe::new(&cfg.pipes[0], 0, cfg.seed);
        let rev = Pipe::new(&cfg.pipes[1], 1, cfg.seed);
        // the end of recording is known at the start; the recorder's bounds only
        // its eager links' histograms, which the emulator has none of
        let rec = Recorder::new(2, cfg.flow_group.clone(), &cfg.groups, &logged, &dumbbell_monitors(), Time::ZERO + cfg.warmup, Time::MAX);
        Bottleneck {
            pipes: [fwd, rev],
            interval: cfg.interval,
            origin: None,
            end: Time::MAX,
            next_sample: Time::MAX,
            flows: cfg.flow_group.len() as u32,
            rec,
            pool: Pool::default(),
            lateness: Lateness::new(),
        }
    }

    /// The run starts at `origin` (loop time) and is recorded for `duration`.
    pub fn start(&mut self, origin: Time, duration: Duration) {
        self.origin = Some(origin);
        self.end = Time::ZERO + duration;
        self.next_sample = Time::ZERO + self.interval;
    }

    /// The run-relative time of loop time `t`, if the run has started by then.
    fn rel(&self, t: Time) -> Option<Time> {
        self.origin.and_then(|o| t.checked_since(o)).map(|d| Time::ZERO + d)
    }

    /// The run-relative time of loop time `t` in ns while recording (from the start
    /// to the end of recording).
    pub fn recording(&self, t: Time) -> Option<u64> {
        self.rel(t).filter(|&r| r <= self.end).map(|r| r.as_nanos())
    }

    /// Has recording ended by loop time `t`?
    pub fn ended(&self, t: Time) -> bool {
        self.rel(t).is_some_and(|r| r >= self.end)
    }

    /// A packet read from direction `dir`'s device at loop time `p.arrived` (no
    /// earlier than the last [`Bottleneck::advance`]'s time).
    pub fn arrive(&mut self, dir: usize, p: IpPacket) {
        if self.rel(p.arrived).is_some() {
            self.pipes[dir].arrivals.push_back(p);
        } else {
            let pipe = &mut self.pipes[dir];
            pipe.bypassed += 1;
            pipe.onto_line(p.arrived, p);
        }
    }

    /// Run both links up to loop time `now` (inclusive), taking the samples and the
    /// end-of-recording counters due on the way at their own times.
    pub fn advance(&mut self, now: Time) {
        let (Some(origin), Some(now)) = (self.origin, self.rel(now)) else { return };
        let mut log = Log { rec: &mut self.rec, pool: &mut self.pool, link: 0, rate_bps: 0, flows: self.flows, end: self.end };
        loop {
            let sample = if self.next_sample <= self.end { self.next_sample } else { Time::MAX };
            let end = if self.pipes[0].at_end.is_none() { self.end } else { Time::MAX };
            if sample.min(end) > now {
                break;
            }
            if sample <= end {
                // the state just before the sample's time
                for p in &mut self.pipes {
                    p.run(sample, false, origin, &mut log);
                }
                for p in &mut self.pipes {
                    p.link.sample(sample, self.interval, p.index, &mut log.rec.link_series);
                }
                self.next_sample = sample + self.interval;
            } else {
                for p in &mut self.pipes {
                    p.run(end, true, origin, &mut log);
                    p.at_end = Some(p.link.stats());
                }
            }
        }
        for p in &mut self.pipes {
            p.run(now, true, origin, &mut log);
        }
    }

    /// Write out every packet due by loop time `now`, direction `d` to `fds[d]`.
    pub fn deliver(&mut self, now: Time, fds: [RawFd; 2]) {
        let recording = self.recording(now);
        for (p, fd) in self.pipes.iter_mut().zip(fds) {
            p.deliver(now, fd, &mut self.pool, &mut self.lateness, recording);
        }
    }

    /// When the loop must wake next (loop time; `Time::MAX`: only for a packet):
    /// the earliest due packet on a delay line; the earliest transmission start or
    /// trace opportunity of a link plus its shortest delay, by which its departure
    /// must be on the line; the next sample and the end of recording.
    pub fn deadline(&self) -> Time {
        let mut t = Time::MAX;
        for p in &self.pipes {
            if let Some(Reverse(x)) = p.line.peek() {
                t = t.min(x.due);
            }
        }
        let Some(origin) = self.origin else { return t };
        let at = |r: Time| if r == Time::MAX { Time::MAX } else { origin + (r - Time::ZERO) };
        for p in &self.pipes {
            let s = p.link.next_start();
            if s != Time::MAX {
                t = t.min(at(s + p.min_delay));
            }
        }
        if self.next_sample <= self.end {
            t = t.min(at(self.next_sample));
        }
        if self.pipes[0].at_end.is_none() {
            t = t.min(at(self.end));
        }
        t
    }

    /// The links as the run's metadata describes them, with their counters at the
    /// end of recording (or now, if it did not end).
    pub fn links(&self) -> Vec<LinkInfo> {
        self.pipes.iter().map(|p| p.link.info(p.at_end.unwrap_or_else(|| p.link.stats()))).collect()
    }

    /// Packets the far devices refused while recording.
    pub fn write_errors_recorded(&self) -> u64 {
        self.pipes.iter().map(|p| p.write_errors_recorded).sum()
    }

    /// Over the bottleneck's whole life: (packets read, written out, refused by the
    /// far device, dropped, still inside).
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for p in &self.pipes {
            let st = p.link.stats();
            c.arrived += st.arrivals + p.bypassed + p.arrivals.len() as u64;
            c.delivered += p.delivered;
            c.write_errors += p.write_errors;
            c.dropped += st.dropped();
            c.in_flight += p.in_flight();
        }
        c
    }
}

/// Packet counts over the bottleneck's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub arrived: u64,
    pub delivered: u64,
    pub write_errors: u64,
    pub dropped: u64,
    pub in_flight: u64,
}

impl Counts {
    /// Every packet read was written out (or refused by the far device), dropped
    /// with a cause, or is still inside.
    pub fn conserved(&self) -> bool {
        self.arrived == self.delivered + self.write_errors + self.dropped + self.in_flight
    }
}

/// How late packets left the delay line (the write time minus the due time), in
/// 1 µs buckets up to 10 ms: the bottleneck's own timing error.
pub struct Lateness {
    pub buckets_us: Vec<u64>,
    /// The first stalls (deliveries more than 1 ms late): (time since the start in
    /// ns, lateness in ns), at most [`Lateness::MAX_STALLS`].
    pub stalls: Vec<(u64, u64)>,
}

impl Lateness {
    const BUCKETS: usize = 10_001;
    pub const MAX_STALLS: usize = 100;
    pub fn new() -> Self {
        Lateness { buckets_us: vec![0; Self::BUCKETS], stalls: Vec::new() }
    }
    fn add(&mut self, d: Duration, at: u64) {
        if d.as_nanos() > 1_000_000 && self.stalls.len() < Self::MAX_STALLS {
            self.stalls.push((at, d.as_nanos()));
        }
        let i = ((d.as_nanos() / 1000) as usize).min(Self::BUCKETS - 1);
        self.buckets_us[i] += 1;
    }
    /// The `q`-quantile (0..=1) in microseconds (the bucket's upper edge).
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        let n: u64 = self.buckets_us.iter().sum();
        if n == 0 {
            return None;
        }
        let target = ((q * n as f64).ceil() as u64).max(1);
        let mut acc = 0;
        for (i, c) in self.buckets_us.iter().enumerate() {
            acc += c;
            if acc >= target {
                return Some(i as u64 + 1);
            }
        }
        None
    }
}

impl Default for Lateness {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use aqm::{Limit, Rate};
    use aqmsim::net::trace::LinkTrace;

    const MS: fn(u64) -> Time = Time::from_millis;

    fn pipe_config(trace: Option<LinkTrace>) -> PipeConfig {
        PipeConfig {
            name: "bottleneck".into(),
            rate: Rate::from_mbps(12),
            schedule: Vec::new(),
            delay: Duration::from_millis(10),
            flow_delays: Vec::new(),
            aqm: aqm::AqmSpec::default(),
            limit: Limit::packets(100),
            trace,
        }
    }

    /// A bottleneck whose forward direction is `fwd` (12 Mbps: 1500 B take 1 ms;
    /// 10 ms of propagation), sampled every `interval`.
    fn bottleneck(fwd: PipeConfig, interval: Duration) -> Bottleneck {
        let mut rev = pipe_config(None);
        rev.name = "bottleneck_rev".into();
        let cfg = Config {
            pipes: [fwd, rev],
            seed: 1,
            interval,
            log_packets: [true, false],
            flows: crate::FlowMap { base_port: 20000, flows: 2 },
            // flows 0 and 1 are the plan's, in two groups
            groups: vec!["a".into(), "b".into()],
            flow_group: vec![0, 1],
            warmup: Duration::ZERO,
            realtime: false,
            spin: crate::DEFAULT_SPIN,
        };
        Bottleneck::new(&cfg)
    }

    fn send_flow(b: &mut Bottleneck, at: Time, sizes: &[usize], flow: u32) {
        for &len in sizes {
            let mut pkt = IpPacket::empty();
            pkt.len = len;
            pkt.flow = flow;
            pkt.arrived = at;
            b.arrive(0, pkt);
        }
    }

    fn send(b: &mut Bottleneck, at: Time, sizes: &[usize]) {
        send_flow(b, at, sizes, u32::MAX)
    }

    /// Due times on the forward delay line, in ms of loop time.
    fn due_ms(b: &Bottleneck) -> Vec<f64> {
        let mut due: Vec<Time> = b.pipes[0].line.iter().map(|Reverse(x)| x.due).collect();
        due.sort();
        due.into_iter().map(|t| t.as_nanos() as f64 / 1e6).collect()
    }

    #[test]
    fn a_rate_step_applies_to_packets_that_start_after_it() {
        // 12 Mbps, then 6 Mbps from 2 ms after the start (at 5 ms): 1500 B take 1 ms,
        // then 2 ms. The packet that starts at 4 ms finishes at the old rate.
        let mut cfg = pipe_config(None);
        cfg.schedule = vec![(Duration::from_millis(2), Rate::from_mbps(6))];
        let mut b = bottleneck(cfg, Duration::from_millis(1));
        b.start(MS(3), Duration::from_secs(1));
        send(&mut b, Time::from_micros(3_500), &[750, 1500, 1500, 1500]);
        b.advance(MS(20));
        // 3.5 -> 4.0, 4.0 -> 5.0 (starts before the step at 5 ms), 5.0 -> 7.0, 7.0 -> 9.0
        assert_eq!(due_ms(&b), [14.0, 15.0, 17.0, 19.0]);
        // capacity offered per 1 ms interval (3, 4], (4, 5], ... ms of loop time: the
        // link's clock is run-relative, its samples at 1, 2, ... ms after the start
        let cap: Vec<u64> = b.rec.link_series.capacity_bps.iter().step_by(2).copied().collect();
        assert_eq!(cap[..4], [12_000_000, 12_000_000, 6_000_000, 6_000_000]);
        // over (4, 6] ms: 1 ms at 12 Mbps and 1 ms at 6 Mbps
        assert_eq!((cap[1] + cap[2]) / 2, 9_000_000);
        assert_eq!((cap[2] + cap[3]) / 2, 6_000_000);
        assert_eq!((cap[0] + cap[1]) / 2, 12_000_000);
    }

    #[test]
    fn each_flow_propagates_for_its_own_delay_and_may_overtake() {
        // flow 0: 50 ms, flow 1: 10 ms; other packets: the pipe's 10 ms
        let mut cfg = pipe_config(None);
        cfg.flow_delays = vec![Duration::from_millis(50), Duration::from_millis(10)];
        let mut b = bottleneck(cfg, Duration::from_secs(1));
        b.start(Time::ZERO, Duration::from_secs(1));
        send_flow(&mut b, Time::ZERO, &[1500], 0);
        send_flow(&mut b, Time::ZERO, &[1500], 1);
        send_flow(&mut b, Time::ZERO, &[1500], 7);
        b.advance(Time::ZERO);
        b.advance(MS(3));
        assert_eq!(due_ms(&b), [12.0, 13.0, 51.0]);
        // the tun write fails on fd -1 (counted, not delivered): what matters is the order
        b.deliver(MS(20), [-1, -1]);
        assert_eq!(due_ms(&b), [51.0]);
        assert_eq!(b.pipes[0].write_errors, 2);
        let c = b.counts();
        assert_eq!((c.arrived, c.write_errors, c.in_flight), (3, 2, 1));
        assert!(c.conserved());
    }

    #[test]
    fn constant_rate_link_sends_back_to_back_then_waits_for_arrivals() {
        // 12 Mbps: 1500 B take 1 ms; + 10 ms propagation
        let mut b = bottleneck(pipe_config(None), Duration::from_secs(1));
        b.start(Time::ZERO, Duration::from_secs(1));
        send(&mut b, Time::ZERO, &[1500, 1500, 1500]);
        // the loop wakes late (at 5 ms): the packets still leave back to back from 0
        b.advance(MS(5));
        assert_eq!(due_ms(&b), [11.0, 12.0, 13.0]);
        send(&mut b, MS(20), &[750]);
        b.advance(MS(20));
        assert_eq!(due_ms(&b)[3], 20.0 + 0.5 + 10.0);
        // busy time up to 30 ms: 3 ms, then 0.5 ms
        assert_eq!(b.pipes[0].link.sent_until(MS(30)).0, 3_500_000);
    }

    #[test]
    fn a_late_wake_up_counts_each_transmission_in_the_interval_it_was_sent_in() {
        // 12 Mbps: 1500 B take 1 ms; samples every 2 ms. The loop wakes at 5 ms and
        // sends back to back from 0: transmissions over [0, 1], [1, 2], ..., [4, 5] ms.
        let iv = Duration::from_millis(2);
        let late = {
            let mut b = bottleneck(pipe_config(None), iv);
            b.start(MS(0), Duration::from_millis(6));
            send(&mut b, MS(0), &[1500; 5]);
            b.advance(MS(5));
            b.advance(MS(6));
            b
        };
        let s = &late.rec.link_series;
        assert_eq!(s.time_ns, [2_000_000, 2_000_000, 4_000_000, 4_000_000, 6_000_000, 6_000_000]);
        let fwd = |v: &Vec<u64>| v.iter().step_by(2).copied().collect::<Vec<u64>>();
        // a transmission counts in the interval where its last bit leaves, as in the
        // simulator: (0, 2] ends 1, 2 | (2, 4] ends 3, 4 | (4, 6] ends 5
        assert_eq!(fwd(&s.tx_packets), [2, 2, 1]);
        assert_eq!(fwd(&s.tx_bytes), [3000, 3000, 1500]);
        // and busy time: 2 ms, 2 ms, the last millisecond
        assert_eq!(fwd(&s.busy_ns), [2_000_000, 2_000_000, 1_000_000]);
        assert_eq!(fwd(&s.capacity_bps), [12_000_000; 3]);
        // the rows do not depend on when the loop woke: waking every 100 us gives the same
        let mut on_time = bottleneck(pipe_config(None), iv);
        on_time.start(MS(0), Duration::from_millis(6));
        send(&mut on_time, MS(0), &[1500; 5]);
        for k in 0..=60 {
            on_time.advance(Time::from_micros(100 * k));
        }
        assert_eq!((on_time.rec.link_series.tx_packets, on_time.rec.link_series.tx_bytes, on_time.rec.link_series.busy_ns), (s.tx_packets.clone(), s.tx_bytes.clone(), s.busy_ns.clone()));
        // after the last sample, transmissions go on and count in the link's totals
        let mut b = late;
        send(&mut b, MS(7), &[750]);
        b.advance(MS(7));
        let (_, bytes, packets) = b.pipes[0].link.sent_until(MS(8));
        assert_eq!((packets, bytes), (6, 8250));
        // the summary's counters stop at the end of recording (6 ms)
        assert_eq!(b.links()[0].stats.arrivals, 5);
        assert_eq!(b.pipes[0].link.stats().arrivals, 6);
    }

    #[test]
    fn trace_link_shares_and_splits_opportunities_like_mahimahi() {
        // opportunities at 1, 1, 2 ms, then 3, 3, 4 ms, ... of 1500 B each
        let trace = LinkTrace::from_ms(vec![1, 1, 2]).unwrap();
        let mut b = bottleneck(pipe_config(Some(trace)), Duration::from_millis(25));
        b.start(Time::ZERO, Duration::from_secs(1));
        // two 1000 B packets: the first fits in opportunity 1, the second takes the
        // remaining 500 B of it and 500 B of opportunity 2 (also at 1 ms)
        send(&mut b, Time::ZERO, &[1000, 1000]);
        b.advance(MS(9));
        assert_eq!(due_ms(&b), [11.0, 11.0]);
        // the rest of opportunity 2 and those from 2 ms to 9 ms passed while the queue
        // was empty: lost. Arrivals at 9.5 ms use the opportunities at 10, 11 and 11 ms
        // (one arriving at an opportunity's very time could not use it: Mahimahi).
        send(&mut b, Time::from_micros(9_500), &[1500, 1500, 1500]);
        b.advance(MS(25));
        assert_eq!(&due_ms(&b)[2..], [20.0, 21.0, 21.0]);
        assert_eq!(b.pipes[0].link.held(), 0);
        // [0, 25) ms: 12 periods of 3 opportunities (the 2 at 25 ms come after the
        // sample at 25 ms); 5 of them used
        let s = &b.rec.link_series;
        assert_eq!((s.opportunities[0], s.opportunities_used[0], s.tx_bytes[0]), (36, 5, 6500));
        assert_eq!(s.capacity_bps[0], 36 * 1500 * 8 * 40);
    }

    #[test]
    fn before_the_start_packets_only_propagate() {
        let mut b = bottleneck(pipe_config(None), Duration::from_millis(100));
        send(&mut b, MS(1), &[1500, 1500]);
        b.advance(MS(1));
        // no serialization, no queue, no counters: 10 ms of propagation each
        assert_eq!(due_ms(&b), [11.0, 11.0]);
        assert_eq!(b.pipes[0].link.stats().arrivals, 0);
        // the run starts at 5 ms: from then on the link runs, its clock from 0
        b.start(MS(5), Duration::from_millis(100));
        send(&mut b, MS(6), &[1500]);
        b.advance(MS(6));
        assert_eq!(due_ms(&b), [11.0, 11.0, 17.0]);
        let c = b.counts();
        assert_eq!((c.arrived, c.in_flight), (3, 3));
        assert!(c.conserved());
    }

    #[test]
    fn the_loop_wakes_for_due_packets_samples_and_a_link_s_next_departure() {
        let mut cfg = pipe_config(None);
        cfg.flow_delays = vec![Duration::from_millis(4)];
        let mut b = bottleneck(cfg, Duration::from_millis(100));
        assert_eq!(b.deadline(), Time::MAX);
        b.start(MS(10), Duration::from_millis(150));
        assert_eq!(b.deadline(), MS(110)); // the first sample
        send_flow(&mut b, MS(10), &[1500, 1500], 0);
        b.advance(MS(10));
        // the first packet is on the line, due 10 + 1 + 4 ms; the second starts at 11
        // ms and must be on the line by 11 + 4 ms, the shortest delay
        assert_eq!(b.deadline(), MS(15));
        b.advance(MS(15));
        assert_eq!(due_ms(&b), [15.0, 16.0]);
        assert_eq!(b.deadline(), MS(15));
        b.deliver(MS(16), [-1, -1]);
        assert_eq!(b.deadline(), MS(110));
        b.advance(MS(110));
        // after the sample at 100 ms the end of recording is next
        assert_eq!(b.deadline(), MS(160));
        b.advance(MS(160));
        assert_eq!(b.deadline(), Time::MAX);
        assert_eq!(b.rec.link_series.time_ns, [100_000_000, 100_000_000]);
    }

    #[test]
    fn the_simulator_s_recorder_keeps_rows_histograms_and_flow_drops() {
        // 12 Mbps, a buffer of 2 packets: flow 0 sends 4 packets of 1500 B at once,
        // flow 1 one at 0.5 ms; other traffic (flow u32::MAX) 4 at 10 ms
        let mut cfg = pipe_config(None);
        cfg.limit = Limit::packets(2);
        let mut b = bottleneck(cfg, Duration::from_secs(1));
        b.start(Time::ZERO, Duration::from_millis(20));
        send_flow(&mut b, Time::ZERO, &[1500; 4], 0);
        send_flow(&mut b, Time::from_micros(500), &[1500], 1);
        send(&mut b, MS(10), &[1500; 4]);
        b.advance(MS(30));
        // flow 0: the first starts at once, two wait (sojourn 1 and 2 ms), the fourth
        // overflows; flow 1's arrives to a full queue (the second and third of flow 0)
        assert_eq!(b.rec.flow_drops, [1, 1]);
        assert_eq!((b.rec.flow_ack_drops.clone(), b.rec.flow_marks.clone()), (vec![0, 0], vec![0, 0]));
        let (info, buckets) = b.rec.histograms();
        let h = |n: &str| info.iter().find(|h| h.name == n).unwrap_or_else(|| panic!("{n}"));
        // the recorded flows' departures only: 3 of flow 0, sojourns 0, 1 and 2 ms
        let all = h("bottleneck.sojourn");
        assert_eq!((all.count, all.sum_ns, all.max_ns), (3, 3e6, Some(2_000_000)));
        assert_eq!((h("bottleneck.sojourn.a").count, h("bottleneck.sojourn.b").count), (3, 0));
        // the two overflows, each with 2 packets (2 ms at 12 Mbps) queued
        assert_eq!((h("bottleneck.drop_delay.overflow").count, h("bottleneck.drop_delay.overflow").max_ns), (2, Some(2_000_000)));
        assert_eq!(h("bottleneck_rev.sojourn").count, 0);
        assert!(buckets.count.iter().sum::<u64>() >= 3);
        // the packet log: 4 + 1 arrivals, 2 drops, 3 departures; nothing of the others
        let ev = &b.rec.packets.event;
        let n = |e| ev.iter().filter(|&&x| x == e).count();
        assert_eq!((n(0), n(1), n(2)), (3, 3, 2));
        assert!(b.rec.packets.flow.iter().all(|&f| f < 2));
        // the link counts everything, the other traffic too
        assert_eq!(b.pipes[0].link.stats().arrivals, 9);
    }

    #[test]
    fn lateness_quantiles_are_bucket_upper_edges() {
        let mut l = Lateness::new();
        assert_eq!(l.quantile_us(0.5), None);
        for us in [0u64, 0, 3, 3, 3, 7, 20, 50_000] {
            l.add(Duration::from_micros(us), 0);
        }
        // 8 samples: the 4th is 3 us (bucket [3, 4) us), the 8th is past 10 ms
        assert_eq!(l.quantile_us(0.5), Some(4));
        assert_eq!(l.quantile_us(0.25), Some(1));
        assert_eq!(l.quantile_us(1.0), Some(10_001));
        assert_eq!(l.stalls, vec![(0, 50_000_000)]);
    }
}

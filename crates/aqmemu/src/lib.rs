//! # aqmemu: a userspace bottleneck for real Linux traffic
//!
//! Packets leave the senders' network namespace through one TUN device and enter the
//! receivers' namespace through another; in between, this process plays the
//! scenario's bottleneck link in both directions with the simulator's own link
//! ([`aqmsim::net::link::Link`]: the queue run by an [`aqm`] state machine, the
//! transmitter at the link rate, its rate schedule or Mahimahi trace, its counters
//! and samples), followed by a per-flow propagation delay line ([`bottleneck`]). It
//! is the userspace equivalent of a Linux qdisc plus netem (or of Mahimahi's link
//! shells), and needs neither.
//!
//! Timing. The clock is CLOCK_MONOTONIC in integer nanoseconds; the links run in
//! virtual time since the run's start, stamped on each packet as it is read. A
//! transmission starts when the previous one ended (or when its packet arrived, if
//! the link was idle), however late the loop wakes, so the delivered rate over any
//! busy period is the configured one. The loop sleeps in `ppoll` until the next
//! deadline (a packet due at the far end, the latest time to produce a link's next
//! departure, a sample) minus a short margin, then spins to the deadline.
//!
//! Records are the simulator's columns ([`aqmsim::record::PacketLog`],
//! [`aqmsim::record::LinkSeries`], the latter written by the link itself) with times
//! relative to the run's start, so the Python side writes the same tables and
//! summary for emulated and simulated runs.

pub mod bottleneck;
pub mod packet;
pub mod plan;
pub mod sys;

use std::os::fd::RawFd;

use aqm::{Duration, Limit, Rate, Time};
use aqmsim::net::trace::LinkTrace;
use aqmsim::record::{HistInfo, HistTable, LinkInfo, LinkSeries, PacketLog};
use aqmsim::Scenario;

pub use bottleneck::{Bottleneck, Lateness};
pub use packet::{FlowMap, IpPacket, Pool};

/// One direction of the bottleneck, as configured.
#[derive(Clone, Debug)]
pub struct PipeConfig {
    pub name: String,
    /// The rate at the start (and throughout, without a `schedule`).
    pub rate: Rate,
    /// Rate changes, from the run's start: from `at` on, the link runs at the rate
    /// (the scenario's `bottleneck.schedule`). A packet being serialized finishes at
    /// the rate it started with, as in the simulator.
    pub schedule: Vec<(Duration, Rate)>,
    /// One-way propagation delay added after serialization, for packets of no flow
    /// of the plan.
    pub delay: Duration,
    /// The propagation delay of each flow's packets in this direction (flow ids
    /// beyond the vector take `delay`): the flow's whole path (its group's access
    /// delays, the bottleneck's, its own extra delay), see [`plan::FlowPlan`].
    pub flow_delays: Vec<Duration>,
    pub aqm: aqm::AqmSpec,
    pub limit: Limit,
    /// A Mahimahi delivery trace instead of the constant rate (the link then runs at
    /// the trace's mean rate, for the AQMs that need one).
    pub trace: Option<LinkTrace>,
}

/// What the bottleneck process needs to know.
#[derive(Clone, Debug)]
pub struct Config {
    /// Forward (senders to receivers) and reverse (ACKs) directions.
    pub pipes: [PipeConfig; 2],
    pub seed: u64,
    pub interval: Duration,
    /// Record one row per packet event (`record.packets`) on these pipes.
    pub log_packets: [bool; 2],
    pub flows: FlowMap,
    /// The flow groups' names and each flow's group, for the recorder (per-group
    /// histograms; flows beyond these are not recorded).
    pub groups: Vec<String>,
    pub flow_group: Vec<u16>,
    /// Queueing delays enter the streaming histograms from this time on (`metrics.warmup`).
    pub warmup: Duration,
    /// Ask for SCHED_FIFO (see [`sys::realtime_priority`]).
    pub realtime: bool,
    /// Do not sleep in `ppoll` closer than this to a deadline: spin instead (a
    /// sleeping thread wakes some microseconds late). More spin, more precision and
    /// more CPU.
    pub spin: Duration,
}

impl Config {
    /// The bottleneck of a scenario. The path between the namespaces has no access
    /// links, so their propagation delay is folded into the bottleneck's, per flow,
    /// keeping each flow's base RTT in the simulated dumbbell (`Scenario::base_rtt`,
    /// with the group's `path` and the flow's own `path.flow_delay`); the access
    /// links' rate (100 Mbps in Kuhn & Ros Fig. 1) is not emulated. The reverse
    /// direction has the scenario's `reverse_rate`, `reverse_delay`, `reverse_buffer`
    /// and `reverse_aqm`, as in the simulator.
    pub fn from_scenario(sc: &Scenario, flows: FlowMap) -> Result<Config, String> {
        let b = sc.dumbbell().ok_or_else(|| plan::NOT_A_DUMBBELL.to_string())?;
        let a = sc.access().delay;
        let fwd = sc.resolve_limit("bottleneck.buffer", b.buffer).map_err(|e| e.to_string())?;
        let rev = sc.resolve_limit("bottleneck.reverse_buffer", b.reverse_buffer.unwrap_or(b.buffer)).map_err(|e| e.to_string())?;
        let logged = |n: &str| sc.record.packets && sc.record.links.iter().any(|l| l == n);
        let plan = plan::plan(sc).map_err(|e| e.to_string())?;
        let [fwd_delays, rev_delays] = plan::flow_delays(&plan);
        let schedule = if b.trace.is_some() { Vec::new() } else { b.schedule.iter().map(|s| (s.at, s.rate)).collect() };
        Ok(Config {
            pipes: [
                PipeConfig {
                    name: "bottleneck".into(),
                    rate: b.rate,
                    schedule,
                    delay: a + b.delay + a,
                    flow_delays: fwd_delays,
                    aqm: b.aqm.clone(),
                    limit: fwd,
                    trace: b.trace.clone(),
                },
                PipeConfig {
                    name: "bottleneck_rev".into(),
                    rate: b.rev_rate(),
                    schedule: Vec::new(),
                    delay: a + b.rev_delay() + a,
                    flow_delays: rev_delays,
                    aqm: b.reverse_aqm.clone(),
                    limit: rev,
                    trace: None,
                },
            ],
            seed: sc.seed,
            interval: sc.record.interval,
            log_packets: [logged("bottleneck"), logged("bottleneck_rev")],
            flows,
            groups: plan.groups.iter().map(|g| g.name.clone()).collect(),
            flow_group: plan.flows.iter().map(|f| f.group).collect(),
            warmup: sc.metrics.warmup,
            realtime: true,
            spin: DEFAULT_SPIN,
        })
    }

    /// Replace the forward direction's rate (or its scenario's trace) by a delivery
    /// trace, its opportunity times in ms.
    pub fn with_trace(mut self, ms: Vec<u64>) -> Result<Config, String> {
        let trace = LinkTrace::from_ms(ms).map_err(|e| format!("trace: {e}"))?;
        self.pipes[0].rate = trace.mean_rate();
        self.pipes[0].schedule.clear();
        self.pipes[0].trace = Some(trace);
        Ok(self)
    }
}

/// Everything the bottleneck recorded.
pub struct Output {
    pub links: Vec<LinkInfo>,
    pub logged_links: Vec<String>,
    pub packets: PacketLog,
    pub link_series: LinkSeries,
    /// The streaming histograms (as the simulator keeps them for the dumbbell): their
    /// names and moments, and their buckets.
    pub histograms: Vec<HistInfo>,
    pub histogram_buckets: HistTable,
    /// Per flow, while recording: its forward packets dropped, its return packets
    /// dropped, its packets marked CE.
    pub flow_drops: Vec<u64>,
    pub flow_ack_drops: Vec<u64>,
    pub flow_marks: Vec<u64>,
    /// Nanoseconds from the start to the stop of recording.
    pub recorded_ns: u64,
    /// Over the whole life of the bottleneck: packets that arrived, were written
    /// out, were dropped, were still inside at the stop.
    pub arrived: u64,
    pub delivered: u64,
    pub dropped: u64,
    pub in_flight: u64,
    /// Packets that were not IPv4 (never forwarded) and packets the far device refused.
    pub ignored: u64,
    pub write_errors: u64,
    /// CPU time this thread used while recording, in ns (user + system).
    pub cpu_ns: u64,
    /// Delivery lateness of the packets delivered while recording.
    pub lateness: Lateness,
    /// Whether the loop ran under SCHED_FIFO.
    pub realtime: bool,
}

/// The file descriptors of a run: the TUN device in the senders' namespace, the one
/// in the receivers' namespace, and the control channel (a pipe or socket; lines
/// `start <CLOCK_MONOTONIC ns> <duration ns>` and `stop`; end of file also stops).
/// Packets are forwarded from the first moment to the stop; they are recorded, and
/// counted in the links' statistics, from the start for the duration.
#[derive(Clone, Copy, Debug)]
pub struct Fds {
    pub senders: RawFd,
    pub receivers: RawFd,
    pub control: RawFd,
}

/// The default of [`Config::spin`] (measured in docs/emulation.md).
pub const DEFAULT_SPIN: Duration = Duration::from_micros(20);
/// Packets read from one device per pass, so that neither direction starves the other.
const READ_BATCH: usize = 64;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid timespec pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Run the bottleneck until the control channel says stop (or closes).
pub fn run(cfg: &Config, fds: Fds) -> Result<Output, String> {
    for fd in [fds.senders, fds.receivers, fds.control] {
        sys::set_nonblocking(fd).map_err(|e| format!("fd {fd}: {e}"))?;
    }
    sys::tight_timer_slack();
    let realtime = cfg.realtime && sys::realtime_priority();
    let epoch = sys::monotonic_ns();
    let clock = || Time::from_nanos(sys::monotonic_ns().saturating_sub(epoch));
    let logged_links: Vec<String> = cfg.pipes.iter().zip(cfg.log_packets).filter(|(_, on)| *on).map(|(p, _)| p.name.clone()).collect();
    let mut b = Bottleneck::new(cfg);
    let ins = [fds.senders, fds.receivers];
    let outs = [fds.receivers, fds.senders];
    let mut uid = 0u64;
    let mut ignored = 0u64;
    let mut ctl_buf: Vec<u8> = Vec::new();
    let (mut cpu0, mut cpu_end) = (0u64, 0u64);
    let mut end = Time::MAX;
    let mut readable = [true, true, true];
    let stop_at;
    loop {
        let now = clock();
        // control channel
        if readable[2] {
            let mut buf = [0u8; 256];
            let mut closed = false;
            loop {
                match sys::read(fds.control, &mut buf) {
                    Ok(Some(0)) => {
                        closed = true;
                        break;
                    }
                    Ok(Some(n)) => ctl_buf.extend_from_slice(&buf[..n]),
                    Ok(None) => break,
                    Err(e) => return Err(format!("control channel: {e}")),
                }
            }
            let mut stop = closed;
            while let Some(i) = ctl_buf.iter().position(|&c| c == b'\n') {
                let line: Vec<u8> = ctl_buf.drain(..=i).collect();
                let line = String::from_utf8_lossy(&line);
                let mut words = line.split_whitespace();
                match (words.next(), words.next(), words.next()) {
                    (Some("start"), Some(t), Some(d)) => {
                        let (Ok(abs), Ok(dur)) = (t.parse::<u64>(), d.parse::<u64>()) else {
                            return Err(format!("control channel: bad start command {line:?}"));
                        };
                        let origin = Time::from_nanos(abs.saturating_sub(epoch));
                        b.start(origin, Duration::from_nanos(dur));
                        end = origin + Duration::from_nanos(dur);
                        cpu0 = thread_cpu_ns();
                    }
                    (Some("stop"), _, _) => stop = true,
                    (None, _, _) => {}
                    (Some(_), _, _) => return Err(format!("control channel: unknown command {line:?}")),
                }
            }
            if stop {
                stop_at = now;
                break;
            }
        }
        // arrivals, stamped as they are read
        for dir in 0..2 {
            if !readable[dir] {
                continue;
            }
            for _ in 0..READ_BATCH {
                let mut p = b.pool.get();
                match sys::read(ins[dir], &mut p.buf[..]) {
                    Ok(Some(n)) if n > 0 => {
                        p.len = n;
                        if !p.parse(&cfg.flows, dir == 0) {
                            ignored += 1;
                            b.pool.put(p);
                            continue;
                        }
                        p.uid = uid;
                        uid += 1;
                        p.arrived = clock();
                        b.arrive(dir, p);
                    }
                    Ok(_) => {
                        b.pool.put(p);
                        break;
                    }
                    Err(e) => return Err(format!("reading the {} TUN device: {e}", ["senders'", "receivers'"][dir])),
                }
            }
        }
        // the links up to now, in virtual-time order; then what is due at the far ends
        let now = clock();
        b.advance(now);
        b.deliver(now, outs);
        if cpu_end == 0 && now >= end {
            cpu_end = thread_cpu_ns();
        }
        // sleep until the next deadline, then spin the last stretch
        let deadline = b.deadline();
        let now = clock();
        let wait = deadline.saturating_since(now).as_nanos();
        let spin = cfg.spin.as_nanos();
        let sleep = if wait > spin { (wait - spin).min(100_000_000) } else { 0 };
        readable = sys::wait_readable(&[fds.senders, fds.receivers, fds.control], sleep);
    }
    let cpu_ns = if cpu_end > 0 { cpu_end } else { thread_cpu_ns() }.saturating_sub(cpu0);
    let recorded_ns = b.recording(stop_at.min(end)).unwrap_or(0);
    let c = b.counts();
    if !c.conserved() {
        return Err(format!("packet conservation broken: {} arrived, {} written, {} dropped, {} inside", c.arrived, c.delivered + c.write_errors, c.dropped, c.in_flight));
    }
    let links = b.links();
    let write_errors = b.write_errors_recorded();
    let (histograms, histogram_buckets) = b.rec.histograms();
    let r = b.rec;
    Ok(Output {
        links,
        logged_links,
        packets: r.packets,
        link_series: r.link_series,
        histograms,
        histogram_buckets,
        flow_drops: r.flow_drops,
        flow_ack_drops: r.flow_ack_drops,
        flow_marks: r.flow_marks,
        recorded_ns,
        arrived: c.arrived,
        delivered: c.delivered,
        dropped: c.dropped,
        in_flight: c.in_flight,
        ignored,
        write_errors,
        cpu_ns,
        lateness: b.lateness,
        realtime,
    })
}

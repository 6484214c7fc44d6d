//! A sender and a receiver joined by a lossless-unless-told pipe with a fixed delay
//! and a rate limit, on virtual time (the `Pair` harness of quinn-proto's tests):
//! the TCP machinery checked end to end without the rest of the simulator.

use std::collections::BTreeMap;

use aqmsim::aqm::{Duration, Rate, Time};
use aqmsim::packet::{Kind, Packet};
use aqmsim::tcp::sender::CaState;
use aqmsim::tcp::CcSpec;
use aqmsim::tcp::{Recovery, TcpConfig, TcpReceiver, TcpSender};

type LossFn = Box<dyn FnMut(u64, bool, Time) -> bool>;
type DelayFn = Box<dyn FnMut(&Packet, Time) -> Duration>;

struct Pair {
    snd: TcpSender,
    rcv: TcpReceiver,
    now: Time,
    one_way: Duration,
    rate: Rate,
    /// When the forward link is next free (serialization).
    fwd_free: Time,
    /// In flight: (arrival time, sequence for ties) -> packet.
    wire: BTreeMap<(Time, u64), Packet>,
    n: u64,
    /// Decides whether a data packet is lost: (segment, is retransmission, time).
    lose: LossFn,
    /// Times at which each segment was sent (seq -> times).
    sends: BTreeMap<u64, Vec<Time>>,
    lost: u64,
    /// Segments to mark CE on their first transmission, if ECN-capable.
    ce: Vec<u64>,
    /// Extra delay of a packet (data or ACK) sent at a time: reordering, delay spikes.
    delay: DelayFn,
}

impl Pair {
    fn new(cfg: TcpConfig, lose: impl FnMut(u64, bool, Time) -> bool + 'static) -> Pair {
        Pair {
            snd: TcpSender::new(0, &cfg),
            rcv: TcpReceiver::new(0, &cfg),
            now: Time::ZERO,
            one_way: Duration::from_millis(50),
            rate: Rate::from_mbps(10),
            fwd_free: Time::ZERO,
            wire: BTreeMap::new(),
            n: 0,
            lose: Box::new(lose),
            sends: BTreeMap::new(),
            lost: 0,
            ce: Vec::new(),
            delay: Box::new(|_, _| Duration::ZERO),
        }
    }

    fn put(&mut self, out: Vec<Packet>) {
        for mut p in out {
            if p.kind == Kind::Data && !p.retx() && p.ecn().is_ect() && self.ce.contains(&p.seq) {
                p.set_ecn(aqmsim::aqm::Ecn::Ce);
            }
            let extra = (self.delay)(&p, self.now);
            let at = if p.kind.is_forward() {
                if p.kind == Kind::Data {
                    self.sends.entry(p.seq).or_default().push(self.now);
                    if (self.lose)(p.seq, p.retx(), self.now) {
                        self.lost += 1;
                        continue;
                    }
                }
                let start = self.fwd_free.max(self.now);
                self.fwd_free = start + self.rate.tx_time(p.size as u64);
                self.fwd_free + self.one_way
            } else {
                self.now + self.one_way
            };
            self.n += 1;
            self.wire.insert((at + extra, self.n), p);
        }
    }

    fn start(&mut self, bytes: Option<u64>) {
        let mut out = Vec::new();
        self.snd.start(self.now, bytes, &mut out);
        self.put(out);
    }

    /// Run until `end` or until the transfer is done.
    fn run(&mut self, end: Time) {
        loop {
            let next_pkt = self.wire.keys().next().map(|k| k.0);
            let next_timer = [self.snd.poll_at(), self.rcv.poll_at()].into_iter().flatten().min();
            let t = match (next_pkt, next_timer) {
                (Some(a), Some(b)) => a.min(b),
                (a, b) => match a.or(b) {
                    Some(t) => t,
                    None => return,
                },
            };
            if t > end || self.snd.is_done() {
                return;
            }
            self.now = t;
            let mut out = Vec::new();
            if next_pkt == Some(t) {
                let key = *self.wire.keys().next().unwrap();
                let p = self.wire.remove(&key).unwrap();
                if p.kind.is_forward() {
                    self.rcv.on_packet(&p, t, &mut out);
                } else {
                    self.snd.on_packet(&p, t, &mut out);
                }
            } else {
                self.snd.on_timer(t, &mut out);
                self.rcv.on_timer(t, &mut out);
            }
            self.snd.check_invariants().unwrap();
            self.put(out);
        }
    }
}

fn cfg() -> TcpConfig {
    TcpConfig::default()
}

#[test]
fn lossless_transfer_completes_and_every_byte_arrives() {
    let mut p = Pair::new(cfg(), |_, _, _| false);
    p.start(Some(1_000_000));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!(p.rcv.bytes_delivered, 1_000_000);
    assert_eq!(p.snd.stats.retransmits, 0);
    assert_eq!(p.snd.stats.timeouts, 0);
    // 1e6 B / 1460 = 685 segments: 684 full and one of 1e6 - 684*1460 = 1360 B
    assert_eq!(p.snd.snd_nxt, 685);
}

#[test]
fn a_single_loss_is_repaired_by_fast_retransmit_without_a_timeout() {
    let mut p = Pair::new(cfg(), |seq, retx, _| seq == 40 && !retx);
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!(p.rcv.bytes_delivered, 300 * 1460);
    assert_eq!(p.lost, 1);
    assert_eq!(p.snd.stats.retransmits, 1, "exactly the lost segment is resent");
    assert_eq!(p.snd.stats.timeouts, 0);
    assert_eq!(p.snd.stats.recoveries, 1);
    // The retransmission went out about one RTT after the original (when the third
    // SACK arrived), far sooner than the 1 s initial RTO.
    let t = &p.sends[&40];
    assert_eq!(t.len(), 2);
    let gap = t[1] - t[0];
    assert!(gap > Duration::from_millis(100) && gap < Duration::from_millis(150), "{gap}");
}

#[test]
fn a_single_loss_without_sack_is_repaired_by_newreno_fast_retransmit() {
    let c = TcpConfig { sack: false, ..cfg() };
    let mut p = Pair::new(c, |seq, retx, _| seq == 40 && !retx);
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!(p.snd.stats.retransmits, 1);
    assert_eq!(p.snd.stats.timeouts, 0);
}

#[test]
fn several_losses_in_one_window_are_repaired_by_sack_in_one_recovery() {
    let dropped = [50u64, 53, 57, 60];
    let mut p = Pair::new(cfg(), move |seq, retx, _| dropped.contains(&seq) && !retx);
    p.start(Some(400 * 1460));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!(p.rcv.bytes_delivered, 400 * 1460);
    assert_eq!(p.snd.stats.retransmits, 4, "only the four lost segments are resent");
    assert_eq!(p.snd.stats.timeouts, 0);
    assert_eq!(p.snd.stats.recoveries, 1, "one recovery episode repairs all four");
    // All four retransmissions leave within one RTT of each other: SACK tells the
    // sender about every hole at once.
    let first = p.sends[&50][1];
    for s in dropped {
        assert!(p.sends[&s][1] - first < Duration::from_millis(110), "segment {s}");
    }
}

#[test]
fn several_losses_without_sack_take_one_rtt_each() {
    // NewReno (RFC 6582): each partial ACK reveals the next hole.
    let dropped = [50u64, 53, 57];
    let c = TcpConfig { sack: false, ..cfg() };
    let mut p = Pair::new(c, move |seq, retx, _| dropped.contains(&seq) && !retx);
    p.start(Some(400 * 1460));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!(p.snd.stats.retransmits, 3);
    assert_eq!(p.snd.stats.timeouts, 0);
    let r: Vec<Time> = dropped.iter().map(|s| p.sends[s][1]).collect();
    assert!(r[1] - r[0] >= Duration::from_millis(100));
    assert!(r[2] - r[1] >= Duration::from_millis(100));
}

#[test]
fn prr_reduces_the_window_to_ssthresh_by_the_end_of_recovery() {
    let mut p = Pair::new(TcpConfig { cc: CcSpec::default_for("newreno").unwrap(), ..cfg() }, |seq, retx, _| seq == 200 && !retx);
    p.start(None);
    let mut saw_recovery = false;
    // steps of 100 us, shorter than the time between two ACKs: the window is read
    // right after the ACK that ends recovery, before the next one raises it
    for us in (0..20_000_000).step_by(100) {
        p.run(Time::from_micros(us));
        if p.snd.ca_state == CaState::Recovery {
            saw_recovery = true;
        } else if saw_recovery {
            break;
        }
    }
    assert!(saw_recovery);
    // RFC 6937: on exit cwnd = ssthresh (Linux tcp_end_cwnd_reduction); the same
    // ACK's congestion avoidance (tcp_cong_control) only counts toward the next
    // segment (snd_cwnd_cnt)
    assert_eq!(p.snd.w.cwnd, p.snd.w.ssthresh);
    assert_eq!(p.snd.stats.timeouts, 0);
}

#[test]
fn a_lost_retransmission_is_detected_without_a_timeout() {
    // Lose segment 80 and its first retransmission: the second retransmission is
    // sent once three segments sent after the first one are SACKed.
    let mut tries = 0;
    let mut p = Pair::new(cfg(), move |seq, _, _| {
        if seq == 80 {
            tries += 1;
            tries <= 2
        } else {
            false
        }
    });
    p.start(Some(400 * 1460));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!(p.sends[&80].len(), 3);
    assert_eq!(p.snd.stats.timeouts, 0);
}

#[test]
fn repeated_timeouts_back_off_exponentially() {
    // Everything sent after 2 s is lost: the head segment is retransmitted with an
    // RTO that doubles (RFC 6298 §5.5), each time on the tick Linux's timer wheel
    // runs the timer: one tick after its expiry below 63 jiffies, else on the next
    // multiple of the level's granularity (8 or 64 jiffies), so the gaps are not
    // exactly doubled.
    let mut p = Pair::new(cfg(), |_, _, t| t >= Time::from_secs(2));
    p.start(None);
    p.run(Time::from_secs(60));
    assert!(p.snd.stats.timeouts >= 5, "{}", p.snd.stats.timeouts);
    let head = p.snd.snd_una;
    let t = &p.sends[&head];
    let n = t.len();
    assert!(n >= 5, "{t:?}");
    let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
    // the timer armed at retransmission k (k >= 1) ran for the RTO backed off after
    // it; the last of them is the sender's RTO now
    let last = p.snd.rtt.rto();
    for k in 1..n - 1 {
        let rto = last.div_u64(1 << (n - 1 - k));
        assert_eq!(t[k + 1], aqmsim::tcp::jiffies::fires_at(t[k], rto, cfg().tick), "retransmission {k}: gaps {gaps:?}, RTO {rto:?}");
        assert!(gaps[k] >= rto.as_secs_f64() && gaps[k] <= rto.as_secs_f64() * 1.13 + 0.004, "gaps {gaps:?}");
    }
    assert_eq!(p.snd.ca_state, CaState::Loss);
    assert_eq!(p.snd.w.cwnd, 1.0);
}

#[test]
fn handshake_adds_one_round_trip_and_measures_it() {
    let c = TcpConfig { handshake: true, ..cfg() };
    let mut p = Pair::new(c, |_, _, _| false);
    p.start(Some(1460));
    p.run(Time::from_secs(5));
    assert!(p.snd.is_done());
    assert_eq!(p.rcv.bytes_delivered, 1460);
    // SYN 50 ms + SYN-ACK 50 ms before the first data segment
    let first_data = p.sends[&0][0];
    assert!(first_data >= Time::from_millis(100) && first_data < Time::from_millis(101), "{first_data:?}");
    assert!(p.snd.rtt.srtt().is_some());
}

#[test]
fn the_receiver_measures_its_rtt_from_the_syn_ack_to_the_handshake_s_ack() {
    // RFC 9293 §3.5, Linux tcp_synack_rtt_meas. The path: 50 ms each way, the forward
    // link 10 Mb/s. The SYN (40 B, 32 us) reaches the receiver at 50.032 ms and its
    // SYN-ACK the sender at 100.032 ms; the sender's ACK (40 B) takes the forward
    // link first and arrives at 100.032 + 0.032 + 50 = 150.064 ms: RTT 100.032 ms.
    // The whole initial window is lost, so the first data arrives only after a
    // loss probe or timeout, hundreds of ms later: the sample must not come from it.
    let c = TcpConfig { handshake: true, ..cfg() };
    let mut p = Pair::new(c.clone(), |seq, retx, _| seq < 10 && !retx);
    p.start(Some(20 * 1460));
    p.run(Time::from_millis(151));
    assert_eq!(p.rcv.stats.segments, 0);
    assert_eq!(p.rcv.srtt(), Some(Duration::from_micros(100_032)));
    p.run(Time::from_secs(10));
    assert!(p.snd.is_done() && p.lost == 10);
    assert!(p.sends[&0][1] > Time::from_millis(300), "{:?}", p.sends[&0]);
    assert_eq!(p.rcv.srtt(), Some(Duration::from_micros(100_032)));

    // the ACK lost (here: held back past everything else): the first data segment
    // completes the handshake and gives the sample. It leaves at 100.064 ms, after
    // the ACK's 32 us on the link, takes 1500 B / 10 Mb/s = 1.2 ms and arrives at
    // 151.264 ms: RTT 101.232 ms
    let mut p = Pair::new(c, |_, _, _| false);
    p.delay = Box::new(|pkt, _| if pkt.kind == Kind::FwdAck { Duration::from_secs(1000) } else { Duration::ZERO });
    p.start(Some(20 * 1460));
    p.run(Time::from_secs(10));
    assert!(p.snd.is_done());
    assert_eq!(p.rcv.srtt(), Some(Duration::from_micros(101_232)));

    // without a handshake the receiver has no estimate
    let mut p = Pair::new(cfg(), |_, _, _| false);
    p.start(Some(20 * 1460));
    p.run(Time::from_secs(10));
    assert!(p.snd.is_done() && p.rcv.srtt().is_none());
}

#[test]
fn a_lost_syn_is_retried_after_the_initial_rto() {
    let c = TcpConfig { handshake: true, ..cfg() };
    let mut p = Pair::new(c, |_, _, _| false);
    p.start(Some(1460));
    p.wire.clear(); // the first SYN is lost
    p.run(Time::from_secs(5));
    assert!(p.snd.is_done());
    assert_eq!(p.snd.stats.syn_retransmits, 1);
    assert!(p.sends[&0][0] >= Time::from_millis(1100));
}

#[test]
fn ecn_marks_reduce_the_window_once_per_rtt_without_retransmissions() {
    let c = TcpConfig { ecn: true, cc: CcSpec::default_for("newreno").unwrap(), ..cfg() };
    let mut p = Pair::new(c, |_, _, _| false);
    // three marks in one window, then one more much later
    p.ce = vec![200, 203, 207, 600];
    p.start(Some(1000 * 1460));
    p.run(Time::from_secs(60));
    assert!(p.snd.is_done());
    assert_eq!(p.rcv.bytes_delivered, 1000 * 1460);
    assert_eq!(p.snd.stats.retransmits, 0, "marks are not losses");
    assert_eq!(p.snd.stats.ecn_reductions, 2, "one reduction for the first window's three marks, one for the later mark");
    assert_eq!(p.rcv.stats.ce_received, 4);
}

#[test]
fn ecn_negotiation_through_the_handshake() {
    let c = TcpConfig { ecn: true, handshake: true, ..cfg() };
    let mut p = Pair::new(c, |_, _, _| false);
    p.ce = vec![100];
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(60));
    assert_eq!(p.snd.stats.ecn_reductions, 1);
    // a sender without ECN never sends ECT, so nothing can be marked
    let mut p = Pair::new(TcpConfig { handshake: true, ..cfg() }, |_, _, _| false);
    p.ce = vec![100];
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(60));
    assert_eq!(p.rcv.stats.ce_received, 0);
    assert_eq!(p.snd.stats.ecn_reductions, 0);
}

#[test]
fn reno_without_sack_ends_recovery_on_the_first_new_ack_newreno_does_not() {
    // Two losses in one window. NewReno (RFC 6582) retransmits the second hole on the
    // partial ACK within one recovery; Reno (RFC 5681 §3.2) leaves recovery on that
    // ACK and needs three more duplicate ACKs (a second recovery, a second halving).
    let dropped = [50u64, 53];
    let run = |cc: CcSpec| {
        let c = TcpConfig { sack: false, cc, ..cfg() };
        let mut p = Pair::new(c, move |seq, retx, _| dropped.contains(&seq) && !retx);
        p.start(Some(400 * 1460));
        p.run(Time::from_secs(30));
        assert!(p.snd.is_done());
        assert_eq!(p.rcv.bytes_delivered, 400 * 1460);
        assert_eq!(p.snd.stats.retransmits, 2);
        p
    };
    let newreno = run(CcSpec::default_for("newreno").unwrap());
    let reno = run(CcSpec::default_for("reno").unwrap());
    assert_eq!(newreno.snd.stats.recoveries, 1);
    assert_eq!(reno.snd.stats.recoveries + reno.snd.stats.timeouts, 2, "a second episode for the second hole");
    assert!(reno.snd.w.ssthresh < newreno.snd.w.ssthresh, "two halvings: {} vs {}", reno.snd.w.ssthresh, newreno.snd.w.ssthresh);
    // with SACK, reno recovers as every controller does (RFC 6675): one episode
    let c = TcpConfig { cc: CcSpec::default_for("reno").unwrap(), ..cfg() };
    let mut p = Pair::new(c, move |seq, retx, _| dropped.contains(&seq) && !retx);
    p.start(Some(400 * 1460));
    p.run(Time::from_secs(30));
    assert_eq!(p.snd.stats.recoveries, 1);
}

#[test]
fn a_persistent_connection_restarts_its_window_after_idling() {
    // RFC 2861 / Linux tcp_cwnd_restart: after an idle period longer than the RTO,
    // cwnd halves once per RTO of idle time, down to the initial window: 5 s of
    // idle time take it all the way to 10.
    for restart in [true, false] {
        let c = TcpConfig { slow_start_after_idle: restart, ..cfg() };
        let mut p = Pair::new(c, |_, _, _| false);
        p.start(Some(300 * 1460));
        p.run(Time::from_secs(30));
        assert!(p.snd.is_done());
        let grown = p.snd.w.cwnd;
        assert!(grown > 50.0, "{grown}");
        p.now += Duration::from_secs(5);
        let mut out = Vec::new();
        p.snd.send_more(p.now, 100 * 1460 + 7, &mut out);
        p.rcv.expect_more(p.snd.app_segments());
        assert_eq!(p.snd.w.cwnd, if restart { 10.0 } else { grown });
        assert_eq!(out.len(), if restart { 10 } else { 101 });
        p.put(out);
        p.run(Time::from_secs(60));
        assert!(p.snd.is_done());
        assert!(p.rcv.completed_at.is_some());
        // the second response's last segment carries the 7 odd bytes
        assert_eq!(p.rcv.bytes_delivered, 400 * 1460 + 7);
    }
    // an idle period of 1.5 RTOs halves cwnd once (and ssthresh keeps 3/4 of it)
    let mut p = Pair::new(cfg(), |_, _, _| false);
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(30));
    let (grown, rto) = (p.snd.w.cwnd, p.snd.rtt.rto());
    p.now += rto.mul_f64(1.5);
    let mut out = Vec::new();
    p.snd.send_more(p.now, 100 * 1460, &mut out);
    assert_eq!(p.snd.w.cwnd, (grown / 2.0).floor().max(10.0));
    assert!(p.snd.w.ssthresh >= (grown * 0.75).floor());
}

/// An ACK as the receiver would send it: cumulative `seq`, at most one SACK block,
/// the echoed timestamp.
fn ack(seq: u64, sack: Option<(u64, u64)>, echo: Time, at: Time) -> Packet {
    let mut a = Packet::new(0, 0, Kind::Ack, 40, at);
    a.seq = seq;
    a.rwnd = 1 << 40;
    if let Some((s, e)) = sack {
        a.sack.push(seq, s, e);
    }
    a.ts_echo = echo.as_nanos();
    a
}

#[test]
fn only_an_ack_of_new_data_raises_the_window() {
    // RFC 5681 §3.1 (Linux `tcp_may_raise_cwnd`): slow start adds what an ACK that
    // advances the edge delivered; an ACK that only SACKs adds nothing.
    let mut s = TcpSender::new(0, &cfg());
    let mut out = Vec::new();
    s.start(Time::ZERO, None, &mut out);
    assert_eq!((out.len(), s.w.cwnd), (10, 10.0));
    let t = Time::from_millis(100);
    s.on_packet(&ack(1, None, Time::ZERO, t), t, &mut out);
    assert_eq!(s.w.cwnd, 11.0);
    // segment 1 is missing; 2 and then 3 arrive: two SACK-only ACKs, below dupthresh
    s.on_packet(&ack(1, Some((2, 3)), Time::ZERO, t), t, &mut out);
    s.on_packet(&ack(1, Some((2, 4)), Time::ZERO, t), t, &mut out);
    // (Linux's Disorder state: SACKs seen, no loss detected yet)
    assert_eq!((s.w.cwnd, s.ca_state), (11.0, CaState::Disorder));
    // segment 1 arrives: the ACK to 5 delivers 1 and 4 (2 and 3 counted when SACKed)
    s.on_packet(&ack(5, None, Time::ZERO, t), t, &mut out);
    assert_eq!(s.w.cwnd, 13.0);
    s.check_invariants().unwrap();
}

#[test]
fn after_a_timeout_without_sack_duplicate_acks_do_not_clock_out_go_back_n() {
    // Linux `tcp_process_loss`: in the loss state, a Reno duplicate ACK counts as a
    // delivered segment only once data beyond the timeout's high mark was sent.
    let mut s = TcpSender::new(0, &TcpConfig { sack: false, ..cfg() });
    let mut out = Vec::new();
    s.start(Time::ZERO, None, &mut out);
    out.clear();
    // (without SACK there is no tail loss probe: the first timer is the RTO)
    let rto = s.poll_at().unwrap();
    s.on_timer(rto, &mut out);
    assert_eq!((s.ca_state, s.w.cwnd, out.len()), (CaState::Loss, 1.0, 1));
    assert!(out[0].retx() && out[0].seq == 0);
    out.clear();
    // late duplicate ACKs for segments 1..9 of the first flight
    for _ in 0..5 {
        s.on_packet(&ack(0, None, Time::ZERO, rto), rto, &mut out);
    }
    assert!(out.is_empty(), "resent {:?}", out.iter().map(|p| p.seq).collect::<Vec<_>>());
    assert_eq!(s.w.cwnd, 1.0);
    s.check_invariants().unwrap();
}

#[test]
fn the_echoed_timestamp_of_a_retransmission_samples_the_rtt_and_ends_the_back_off() {
    // Karn's rule gives no sample from retransmitted data; the timestamp echo does
    // (RFC 7323 §4.1, Linux `tcp_ack_update_rtt`), and a sample ends the back-off
    // (RFC 6298 §5.7).
    let c = TcpConfig { tlp: false, ..cfg() };
    let mut s = TcpSender::new(0, &c);
    let mut out = Vec::new();
    s.start(Time::ZERO, None, &mut out);
    out.clear();
    let rto = s.poll_at().unwrap();
    s.on_timer(rto, &mut out);
    assert_eq!(s.rtt.backoffs(), 1);
    let back = rto + Duration::from_millis(120);
    // the retransmission of segment 0 arrived (with 1..9 held): ACK to 10, echoing
    // the retransmission's send time
    s.on_packet(&ack(10, None, rto, back), back, &mut out);
    assert_eq!(s.rtt.backoffs(), 0);
    assert_eq!(s.rtt.srtt(), Some(Duration::from_millis(120)));
    // without an echo, no sample: the back-off stays
    let mut s = TcpSender::new(0, &c);
    s.start(Time::ZERO, None, &mut out);
    s.on_timer(rto, &mut out);
    s.on_packet(&ack(10, None, Time::ZERO, back), back, &mut out);
    assert_eq!((s.rtt.backoffs(), s.rtt.srtt()), (1, None));
}

#[test]
fn a_lost_last_segment_is_repaired_by_a_tail_loss_probe_not_a_timeout() {
    // RFC 8985 §7 (Linux tcp_early_retrans = 3): the last of 300 segments is lost; no
    // later segment can reveal it. The probe timer (2 SRTT + 2 ms, re-armed by each
    // ACK, never later than the RTO) retransmits it before the RTO would.
    let mut p = Pair::new(cfg(), |seq, retx, _| seq == 299 && !retx);
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!((p.snd.stats.timeouts, p.snd.stats.loss_probes, p.snd.stats.retransmits), (0, 1, 1));
    let probe = p.sends[&299][1] - p.sends[&299][0];
    let srtt = p.snd.rtt.srtt().unwrap();
    assert!(probe >= srtt.checked_mul(2).unwrap(), "probe after {probe} (SRTT {srtt})");
    // without tail loss probes, the RTO repairs it, later
    let mut q = Pair::new(TcpConfig { tlp: false, ..cfg() }, |seq, retx, _| seq == 299 && !retx);
    q.start(Some(300 * 1460));
    q.run(Time::from_secs(30));
    assert!(q.snd.is_done());
    assert_eq!((q.snd.stats.timeouts, q.snd.stats.loss_probes), (1, 0));
}

#[test]
fn a_loss_with_two_later_segments_is_found_by_rack_s_reordering_window() {
    // Segment 297 of 300 is lost: two later segments are SACKed, fewer than
    // DupThresh. RACK (RFC 8985 §6.2) marks it lost once a quarter of the minimum
    // RTT (its reordering window) has passed after the later segments' delivery
    // (plus 2 ms, on the 4 ms tick), sooner than a probe (2 SRTT): a fast
    // retransmission in a recovery, no timeout.
    let mut p = Pair::new(cfg(), |seq, retx, _| seq == 297 && !retx);
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(30));
    assert!(p.snd.is_done());
    assert_eq!((p.snd.stats.timeouts, p.snd.stats.recoveries, p.snd.stats.retransmits, p.snd.stats.loss_probes), (0, 1, 1, 0));
    // the retransmission follows 298's send by one RTT (the SACK's return) plus the
    // window: less than two RTTs
    let rtt = p.snd.rtt.srtt().unwrap();
    let after = p.sends[&297][1] - p.sends[&298][0];
    assert!(after < rtt.checked_mul(2).unwrap(), "{after} vs SRTT {rtt}");
    // RFC 6675 without probes needs DupThresh SACKs: here the RTO
    let c = TcpConfig { recovery: Recovery::Rfc6675, tlp: false, ..cfg() };
    let mut p = Pair::new(c, |seq, retx, _| seq == 297 && !retx);
    p.start(Some(300 * 1460));
    p.run(Time::from_secs(30));
    assert_eq!(p.snd.stats.timeouts, 1);
}

#[test]
fn a_reordered_segment_s_fast_retransmission_is_undone() {
    // Segment 40 is held 30 ms on the way (reordering): three later segments are
    // SACKed first and RACK (window 0 once DupThresh segments are SACKed and no
    // reordering has been seen) retransmits it in a recovery. The original then
    // fills the hole: its ACK echoes the original's timestamp, older than the
    // retransmission (Eifel, RFC 3522), and Linux's partial undo restores the
    // window; the retransmission draws a D-SACK (RFC 2883).
    let held = |pkt: &Packet, _: Time| if pkt.kind == Kind::Data && pkt.seq == 40 && !pkt.retx() { Duration::from_millis(30) } else { Duration::ZERO };
    let window_at = |c: TcpConfig, delay: bool, lose: bool| {
        let mut p = Pair::new(c, move |seq, retx, _| lose && seq == 40 && !retx);
        if delay {
            p.delay = Box::new(held);
        }
        p.start(Some(400 * 1460));
        p.run(Time::from_millis(700));
        p
    };
    let p = window_at(cfg(), true, false);
    assert_eq!((p.snd.stats.recoveries, p.snd.stats.retransmits, p.snd.stats.timeouts), (1, 1, 0));
    assert_eq!(p.snd.stats.undos, 1, "the reduction is undone");
    assert_eq!(p.snd.stats.dsacks, 1, "the receiver reports the duplicate");
    assert_eq!(p.rcv.stats.dsacks_sent, 1);
    // the window stays far above a lossy flow's
    let clean = window_at(cfg(), false, false);
    let lossy = window_at(cfg(), false, true);
    assert_eq!(lossy.snd.stats.undos, 0);
    // (Linux restores cwnd to max(now, before the reduction); the lossy flow halved)
    assert!(p.snd.w.cwnd > 4.0 * lossy.snd.w.cwnd, "{:?} / {:?} / {:?}", p.snd.w, clean.snd.w, lossy.snd.w);
    // with D-SACK off, Eifel alone still undoes it
    let q = window_at(TcpConfig { dsack: false, ..cfg() }, true, false);
    assert_eq!((q.snd.stats.undos, q.snd.stats.dsacks), (1, 0));
}

#[test]
fn a_spurious_timeout_is_undone() {
    // The ACKs the receiver sends between 1.0 and 1.3 s are held 0.6 s on the return
    // path: the RTO (about 1.33 s) fires and resends the oldest segment, cwnd
    // collapses. The held ACKs then arrive: they ack data sent before the timeout
    // and echo older timestamps than the retransmission's (Eifel, RFC 3522): the
    // timeout was spurious, its reduction is undone (Linux tcp_try_undo_loss).
    let c = TcpConfig { tlp: false, receive_window: Some(aqmsim::aqm::Bytes(20 * 1460)), ..cfg() };
    let mut p = Pair::new(c.clone(), |_, _, _| false);
    p.delay = Box::new(|pkt, t| if pkt.kind == Kind::Ack && t >= Time::from_secs(1) && t < Time::from_millis(1300) { Duration::from_millis(600) } else { Duration::ZERO });
    p.start(None);
    p.run(Time::from_millis(990));
    let before = p.snd.w.cwnd;
    p.run(Time::from_secs(4));
    assert_eq!(p.snd.stats.timeouts, 1);
    assert_eq!(p.snd.stats.undos, 1);
    assert!(p.snd.w.cwnd >= before, "cwnd {} restored (before the timeout {before})", p.snd.w.cwnd);
    // When those ACKs are lost instead, the first ACK after the timeout is the one of
    // the retransmission, echoing its own timestamp: no Eifel. It acks data never
    // retransmitted: F-RTO (RFC 5682 step 3b) finds the timeout spurious.
    let blackout = |pkt: &Packet, t: Time| if pkt.kind == Kind::Ack && t >= Time::from_secs(1) && t < Time::from_millis(1300) { Duration::from_secs(1000) } else { Duration::ZERO };
    let mut p = Pair::new(c.clone(), |_, _, _| false);
    p.delay = Box::new(blackout);
    p.start(None);
    p.run(Time::from_secs(4));
    assert_eq!((p.snd.stats.timeouts, p.snd.stats.spurious_rtos, p.snd.stats.undos), (1, 1, 1));
    // without F-RTO the timeout stands
    let mut p = Pair::new(TcpConfig { frto: false, ..c }, |_, _, _| false);
    p.delay = Box::new(blackout);
    p.start(None);
    p.run(Time::from_secs(4));
    assert_eq!((p.snd.stats.timeouts, p.snd.stats.spurious_rtos, p.snd.stats.undos), (1, 0, 0));
}

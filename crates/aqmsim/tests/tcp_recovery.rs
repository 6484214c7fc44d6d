//! Loss recovery driven by hand-built ACK sequences: RACK-TLP (Cheng, Cardwell,
//! Dukkipati & Jha, RFC 8985) with Linux's reordering window and probe timing,
//! D-SACK (RFC 2883) and Eifel (RFC 3522) undo as `tcp_input.c` does it, and RFC
//! 6675's DupThresh rule when selected. Every expectation is worked out by hand in
//! the comments; timers are exact (`tick = 0`) so that they can be.

use aqmsim::aqm::{Duration, Time};
use aqmsim::packet::{Kind, Packet};
use aqmsim::tcp::sender::CaState;
use aqmsim::tcp::{Gso, Recovery, TcpConfig, TcpSender};

const T0: Time = Time::from_secs(1);

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

fn at(x: u64) -> Time {
    T0 + ms(x)
}

/// Exact timers, and every transmission what the windows release segment by
/// segment (no GSO skbs held back by `tcp_tso_should_defer`), so that each ACK's
/// sends can be worked out by hand.
fn cfg() -> TcpConfig {
    TcpConfig { tick: Duration::ZERO, gso: Gso::Off, ..TcpConfig::default() }
}

/// An ACK: cumulative `seq`, SACK blocks in order (a D-SACK block first, below
/// `seq`, RFC 2883 §4), the echoed timestamp.
fn ack(seq: u64, blocks: &[(u64, u64)], echo: Time, when: Time) -> Packet {
    let mut a = Packet::new(0, 0, Kind::Ack, 40, when);
    a.seq = seq;
    a.rwnd = 1 << 40;
    for &(s, e) in blocks {
        a.sack.push(seq, s, e);
    }
    a.ts_echo = echo.as_nanos();
    a
}

fn retransmitted(out: &[Packet]) -> Vec<u64> {
    out.iter().filter(|p| p.kind == Kind::Data && p.retx()).map(|p| p.seq).collect()
}

/// Ten segments (0-9) at T0; at T0 + 100 ms the ACK of segment 0 gives the first
/// RTT sample (SRTT = min RTT = 100 ms; Linux's RTO = 100 + max(200, 200) = 300 ms)
/// and slow start sends 10 and 11.
fn started(c: TcpConfig, bytes: Option<u64>) -> (TcpSender, Vec<Packet>) {
    let mut s = TcpSender::new(0, &c);
    let mut out = Vec::new();
    s.start(T0, bytes, &mut out);
    assert_eq!(out.len(), 10);
    out.clear();
    s.on_packet(&ack(1, &[], T0, at(100)), at(100), &mut out);
    assert_eq!((s.rtt.srtt(), s.min_rtt(), s.rtt.rto()), (Some(ms(100)), Some(ms(100)), ms(300)));
    assert_eq!(out.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![10, 11]);
    out.clear();
    (s, out)
}

#[test]
fn rack_waits_a_quarter_of_the_min_rtt_before_marking_a_hole_lost() {
    // RFC 8985 §6.2: segment 2, sent with 1, is SACKed at T0 + 100 ms (RACK.rtt =
    // 100 ms). Segment 1 is lost only once RACK.rtt + reo_wnd has passed since its
    // send: reo_wnd = min_rtt / 4 = 25 ms (one SACKed segment, fewer than
    // DupThresh, no recovery yet). The reordering timer is armed for the 25 ms left
    // plus Linux's TCP_TIMEOUT_MIN (2 ms): T0 + 127 ms.
    let (mut s, mut out) = started(cfg(), None);
    s.on_packet(&ack(1, &[(2, 3)], T0, at(100)), at(100), &mut out);
    // nothing is retransmitted yet; the SACKed segment leaves the flight, which
    // lets segment 12 go (Linux's Disorder state: SACKs, no loss detected)
    assert_eq!(out.iter().map(|p| (p.seq, p.retx())).collect::<Vec<_>>(), vec![(12, false)]);
    out.clear();
    assert_eq!(s.ca_state, CaState::Disorder);
    assert_eq!(s.poll_at(), Some(at(127)));
    s.on_timer(at(126), &mut out);
    assert!(out.is_empty());
    // the timer: 1 is lost (127 >= 100 + 25), a recovery starts, 1 goes again
    s.on_timer(at(127), &mut out);
    assert_eq!(retransmitted(&out), vec![1]);
    assert_eq!((s.ca_state, s.stats.recoveries, s.stats.timeouts), (CaState::Recovery, 1, 0));
    s.check_invariants().unwrap();
}

#[test]
fn dupthresh_sacked_segments_close_the_reordering_window() {
    // Linux tcp_rack_reo_wnd: with no reordering seen, the window is 0 once DupThresh
    // (3) segments are SACKed: 1, sent before the SACKed 2-4 and RACK.rtt ago, is
    // lost at once and retransmitted by the same ACK.
    let (mut s, mut out) = started(cfg(), None);
    s.on_packet(&ack(1, &[(2, 5)], T0, at(100)), at(100), &mut out);
    assert_eq!(retransmitted(&out), vec![1]);
    assert_eq!(s.ca_state, CaState::Recovery);
    // ssthresh = 11 * 717 / 1024 = 7 (CUBIC); PRR (RFC 6937): in flight 11 - 3
    // SACKed - 1 lost = 7 = ssthresh, so the ACK may send just the retransmission
    assert_eq!(s.w.ssthresh, 7.0);
    assert_eq!(out.len(), 1);
    s.check_invariants().unwrap();
}

#[test]
fn rfc6675_waits_for_dupthresh_sacked_segments_and_has_no_reordering_timer() {
    // RFC 6675 §4 IsLost(): one SACKed segment above the hole is not enough, and no
    // timer waits for more; three are.
    let c = TcpConfig { recovery: Recovery::Rfc6675, ..cfg() };
    let (mut s, mut out) = started(c.clone(), None);
    s.on_packet(&ack(1, &[(2, 3)], T0, at(100)), at(100), &mut out);
    assert!(retransmitted(&out).is_empty());
    // the next timer is still the tail loss probe armed when 10 and 11 went out:
    // 2 SRTT + 2 ms, capped by segment 1's RTO (sent at T0, RTO 300 ms): T0 + 300 ms
    assert_eq!(s.poll_at(), Some(at(300)));
    s.on_packet(&ack(1, &[(2, 4)], T0, at(101)), at(101), &mut out);
    assert!(retransmitted(&out).is_empty());
    s.on_packet(&ack(1, &[(2, 5)], T0, at(102)), at(102), &mut out);
    assert_eq!(retransmitted(&out), vec![1]);
    assert_eq!(s.ca_state, CaState::Recovery);
}

#[test]
fn rack_finds_a_lost_retransmission() {
    // RFC 8985 §2.2 / §6.2: the retransmission of 1 (T0 + 100 ms) is lost too. At T0 +
    // 200 ms segments 10 and 11, sent at T0 + 100 ms with it but after it (the later
    // sequence breaks the tie, Linux tcp_skb_sent_after), are SACKed: RACK.rtt =
    // 100 ms, the window 0 in recovery, so the retransmission, sent 100 ms ago, is
    // lost again and goes a third time (Linux TCPLostRetransmit). RFC 6675 would wait
    // for DupThresh segments sent after it to be SACKed, or the RTO.
    let (mut s, mut out) = started(cfg(), None);
    s.on_packet(&ack(1, &[(2, 5)], T0, at(100)), at(100), &mut out);
    assert_eq!(retransmitted(&out), vec![1]);
    out.clear();
    s.on_packet(&ack(1, &[(2, 12)], T0, at(200)), at(200), &mut out);
    assert_eq!(s.stats.lost_retransmits, 1);
    assert_eq!(retransmitted(&out), vec![1]);
    assert_eq!((s.stats.retransmits, s.stats.timeouts), (2, 0));
    s.check_invariants().unwrap();
}

#[test]
fn a_tail_loss_probe_goes_two_srtt_after_the_last_ack() {
    // RFC 8985 §7.2 (Linux tcp_schedule_loss_probe): a finite transfer of 30 segments;
    // at T0 + 200 ms all but 28 and 29 are acked (SRTT stays 100 ms, RTO 300 ms). The
    // probe timer: 2 SRTT + 2 ms (two segments out) = 202 ms < RTO: T0 + 402 ms.
    // With nothing new to send, the probe resends the last segment (§7.3).
    let (mut s, mut out) = started(cfg(), Some(30 * 1460));
    s.on_packet(&ack(10, &[], T0, at(100)), at(100), &mut out);
    // slow start: cwnd 20 at 10 acked; 12-29 go out at T0 + 100 ms
    assert_eq!(out.len(), 18);
    out.clear();
    s.on_packet(&ack(28, &[], at(100), at(200)), at(200), &mut out);
    assert!(out.is_empty());
    assert_eq!(s.poll_at(), Some(at(402)));
    s.on_timer(at(401), &mut out);
    assert!(out.is_empty());
    s.on_timer(at(402), &mut out);
    assert_eq!(retransmitted(&out), vec![29]);
    assert_eq!((s.stats.loss_probes, s.stats.timeouts, s.ca_state), (1, 0, CaState::Open));
    // the RTO restarts from the probe: T0 + 402 + 300 ms
    assert_eq!(s.poll_at(), Some(at(702)));
    // one segment out: the probe waits 2 SRTT + rto_min (a delayed ACK), capped by
    // the RTO (RFC 8985 §7.2's WCDelAckT): here the RTO's 300 ms
    let (mut s, mut out) = started(cfg(), Some(30 * 1460));
    s.on_packet(&ack(10, &[], T0, at(100)), at(100), &mut out);
    s.on_packet(&ack(29, &[], at(100), at(200)), at(200), &mut out);
    assert_eq!(s.poll_at(), Some(at(500)));
}

#[test]
fn a_dsack_for_every_retransmission_undoes_the_reduction() {
    // RFC 2883 §4 and Linux tcp_try_undo_dsack: the fast retransmission of 1 was
    // spurious (1 was only late). The ACK that ends the recovery echoes the
    // retransmission's time, so Eifel cannot tell; cwnd = ssthresh = 7 (and CUBIC
    // grows it to 8 on the same ACK, which acked 8 segments). The D-SACK
    // of 1 (a block below the cumulative ACK) then accounts for the episode's only
    // retransmission: cwnd and ssthresh return to what they were (11, and the
    // "infinite" ssthresh of slow start).
    let (mut s, mut out) = started(cfg(), None);
    s.on_packet(&ack(1, &[(2, 5)], T0, at(100)), at(100), &mut out);
    assert_eq!(retransmitted(&out), vec![1]);
    s.on_packet(&ack(12, &[], at(100), at(200)), at(200), &mut out);
    assert_eq!((s.ca_state, s.w.ssthresh, s.w.cwnd, s.stats.undos), (CaState::Open, 7.0, 8.0, 0));
    s.on_packet(&ack(12, &[(1, 2)], at(100), at(201)), at(201), &mut out);
    assert_eq!((s.stats.dsacks, s.stats.undos), (1, 1));
    assert_eq!(s.w.cwnd, 11.0);
    assert!(s.w.ssthresh > 1e8);
    // a D-SACK is not enough when a second retransmission is unaccounted for: after
    // the retransmission of 1 was lost and resent, one D-SACK leaves undo_retrans 1
    let (mut s, mut out) = started(cfg(), None);
    s.on_packet(&ack(1, &[(2, 5)], T0, at(100)), at(100), &mut out);
    s.on_packet(&ack(1, &[(2, 12)], T0, at(200)), at(200), &mut out);
    assert_eq!(s.stats.retransmits, 2);
    s.on_packet(&ack(12, &[], at(200), at(300)), at(300), &mut out);
    s.on_packet(&ack(12, &[(1, 2)], at(200), at(301)), at(301), &mut out);
    assert_eq!((s.stats.dsacks, s.stats.undos), (1, 0));
}

#[test]
fn an_ack_echoing_the_original_undoes_the_recovery_eifel() {
    // RFC 3522 (Linux tcp_packet_delayed): the ACK that ends the recovery echoes T0,
    // the original's send time, older than the first retransmission (T0 + 100 ms):
    // the original arrived, the reduction is undone at once (TCPFullUndo).
    let (mut s, mut out) = started(cfg(), None);
    s.on_packet(&ack(1, &[(2, 5)], T0, at(100)), at(100), &mut out);
    s.on_packet(&ack(12, &[], T0, at(150)), at(150), &mut out);
    assert_eq!((s.ca_state, s.stats.undos), (CaState::Open, 1));
    assert!(s.w.cwnd >= 11.0, "cwnd {}", s.w.cwnd);
}

#[test]
fn a_timeout_collapses_the_window_and_f_rto_finds_it_spurious() {
    // Linux tcp_enter_loss (RFC 6298 §5.4-5.6, RFC 5681 §3.1): no probes; nothing
    // comes back after T0 + 100 ms; the RTO fires at T0 + 400 ms (armed by the ACK of
    // new data at T0 + 100 ms). Segments 1-11 are lost; cwnd = in flight + 1 = 1,
    // ssthresh = 11 * 717 / 1024 = 7; segment 1 goes again; the RTO doubles to 600 ms.
    let c = TcpConfig { tlp: false, ..cfg() };
    let (mut s, mut out) = started(c, None);
    assert_eq!(s.poll_at(), Some(at(400)));
    s.on_timer(at(400), &mut out);
    assert_eq!(retransmitted(&out), vec![1]);
    assert_eq!((s.ca_state, s.w.cwnd, s.w.ssthresh, s.stats.timeouts), (CaState::Loss, 1.0, 7.0, 1));
    assert_eq!(s.poll_at(), Some(at(1000)));
    out.clear();
    // F-RTO (RFC 5682 §3.1, SACK-enhanced as Linux): the ACK of the retransmission
    // (step 2b) sends new data, not more retransmissions: 12 and 13 (cwnd 2 in slow
    // start, nothing else counted in flight)
    s.on_packet(&ack(2, &[], at(400), at(500)), at(500), &mut out);
    assert_eq!(out.iter().map(|p| (p.seq, p.retx())).collect::<Vec<_>>(), vec![(12, false), (13, false)]);
    out.clear();
    // the next ACK acks segment 2, sent once, before the timeout: the original was
    // delivered, the timeout spurious (step 3b): its reduction is undone. (Its echo
    // is not older than the retransmission, so Eifel alone could not tell.)
    s.on_packet(&ack(3, &[], at(500), at(600)), at(600), &mut out);
    assert_eq!((s.stats.spurious_rtos, s.stats.undos, s.ca_state), (1, 1, CaState::Open));
    assert!(s.w.cwnd >= 11.0 && s.w.ssthresh > 1e8, "{:?}", s.w);
    s.check_invariants().unwrap();
}

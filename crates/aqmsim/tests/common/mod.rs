//! Shared harness of the sender tests: a sender and a receiver on virtual time.

use std::collections::BTreeMap;

use aqmsim::aqm::{Duration, Time};
use aqmsim::packet::{Kind, Packet};
use aqmsim::tcp::{TcpConfig, TcpReceiver, TcpSender};

/// A lossless path on virtual time: data through a bottleneck of `rate_bps` (a FIFO
/// without limit; none: no rate limit), then `one_way`; ACKs back in `one_way`. What
/// the sender sends is exactly what its pacing, its skbs or its ACK clock let out.
/// Returns the send time of every data segment.
pub fn send_times(cfg: &TcpConfig, rate_bps: Option<u64>, one_way: Duration, end: Time) -> Vec<Time> {
    data_sent(cfg, rate_bps, one_way, end).into_iter().map(|(t, _)| t).collect()
}

/// As [`send_times`], with each data segment as sent.
#[allow(dead_code)] // not every test binary that shares this harness reads the packets
pub fn data_sent(cfg: &TcpConfig, rate_bps: Option<u64>, one_way: Duration, end: Time) -> Vec<(Time, Packet)> {
    let mut snd = TcpSender::new(0, cfg);
    let mut rcv = TcpReceiver::new(0, cfg);
    let mut wire: BTreeMap<(Time, u64), Packet> = BTreeMap::new();
    let mut n = 0;
    let mut busy_until = Time::ZERO;
    let mut sends = Vec::new();
    let mut out = Vec::new();
    snd.start(Time::ZERO, None, &mut out);
    let mut t = Time::ZERO;
    loop {
        for p in std::mem::take(&mut out) {
            n += 1;
            if p.kind == Kind::Data {
                sends.push((t, p));
            }
            let at = match rate_bps {
                Some(r) if p.kind.is_forward() => {
                    busy_until = busy_until.max(t) + Duration::from_nanos(p.size as u64 * 8 * 1_000_000_000 / r);
                    busy_until + one_way
                }
                _ => t + one_way,
            };
            wire.insert((at, n), p);
        }
        let next_pkt = wire.keys().next().map(|k| k.0);
        let next_timer = [snd.poll_at(), rcv.poll_at()].into_iter().flatten().min();
        let Some(next) = [next_pkt, next_timer].into_iter().flatten().min() else { break };
        if next > end {
            break;
        }
        t = next;
        if next_pkt == Some(t) {
            let key = *wire.keys().next().unwrap();
            let p = wire.remove(&key).unwrap();
            if p.kind.is_forward() {
                rcv.on_packet(&p, t, &mut out);
            } else {
                snd.on_packet(&p, t, &mut out);
            }
        } else {
            snd.on_timer(t, &mut out);
            rcv.on_timer(t, &mut out);
        }
        snd.check_invariants().unwrap();
    }
    sends
}


//! CAKE's ACK filter (sch_cake `cake_ack_filter`, Høiland-Jørgensen, Täht & Morton,
//! "Piece of CAKE", §III-D): an arriving pure ACK may make an older one of its flow
//! redundant.

use super::*;

impl<P: QPacket> Cake<P> {
    /// sch_cake `cake_ack_filter` on flow `idx`, whose tail just arrived: the position
    /// of an older ACK the new one makes redundant, if any.
    pub(super) fn ack_filter(&self, idx: usize) -> Option<usize> {
        let aggressive = self.params.ack_filter == AckFilter::Aggressive;
        let items = &self.flows[idx].items;
        if items.len() < 2 {
            return None;
        }
        let tail = &items[items.len() - 1].pkt;
        let trig = tail.tcp_ack()?;
        let (tsval, tsecr) = trig.timestamps.unwrap_or((0, 0));
        let flags = |a: &TcpAck| (a.ece, a.cwr);
        let mut elig: Option<(usize, (bool, bool))> = None;
        let mut num_found = 0i32;
        for (i, it) in items.iter().enumerate().take(items.len() - 1) {
            let Some(check) = it.pkt.tcp_ack() else { continue };
            // only the same flow (Linux: the same addresses and ports)
            if it.pkt.flow_key() != tail.flow_key() {
                continue;
            }
            // ECE/CWR changed since the eligible ACK: dropping it would lose information
            if let Some((_, f)) = elig {
                if flags(&check) != f {
                    elig = None;
                    num_found -= 1;
                }
            }
            // only pure ACKs, with timestamps not newer than the trigger's, and no
            // higher cumulative ACK
            let ts_newer = check.timestamps.is_some_and(|(v, e)| seq_after(v, tsval) || seq_after(e, tsecr));
            if !check.pure || ts_newer || seq_after(check.ack, trig.ack) {
                continue;
            }
            let sack = sack_compare(&check, &trig);
            if sack < 0 || (check.ack == trig.ack && sack == 0) {
                continue;
            }
            if elig.is_none() {
                elig = Some((i, flags(&check)));
            }
            let before = num_found;
            num_found += 1;
            if before > 0 {
                return elig.map(|e| e.0);
            }
        }
        // a single eligible ACK: in aggressive mode, if it is right ahead of the new one
        // and has the same flags
        match elig {
            Some((i, f)) if aggressive && i + 2 == items.len() && f == flags(&trig) => Some(i),
            _ => None,
        }
    }
}

/// sch_cake `cake_tcph_sack_compare(a, b)`: -1 if `a` SACKs something `b` does not (or
/// carries a D-SACK), 1 if `b` SACKs strictly more, 0 if the same.
pub fn sack_compare(a: &TcpAck, b: &TcpAck) -> i32 {
    let (sa, sb) = (a.sack_blocks(), b.sack_blocks());
    match (sa.is_empty(), sb.is_empty()) {
        (false, true) => return -1,
        (true, false) => return 1,
        (true, true) => return 0,
        (false, false) => {}
    }
    let (mut bytes_a, mut bytes_b) = (0u32, 0u32);
    let mut first = true;
    for &(start_a, end_a) in sa {
        // D-SACK: always greater, never dropped
        if seq_after(a.ack, start_a) {
            return -1;
        }
        bytes_a = bytes_a.wrapping_add(end_a.wrapping_sub(start_a));
        let mut found = false;
        for &(start_b, end_b) in sb {
            if first {
                bytes_b = bytes_b.wrapping_add(end_b.wrapping_sub(start_b));
            }
            if !seq_after(start_b, start_a) && !seq_after(end_a, end_b) {
                found = true;
                if !first {
                    break;
                }
            }
        }
        if !found {
            return -1;
        }
        first = false;
    }
    if bytes_b > bytes_a { 1 } else { 0 }
}

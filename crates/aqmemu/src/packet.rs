//! A raw IPv4 packet as read from a TUN device (IFF_TUN | IFF_NO_PI), seen by the
//! AQMs through [`aqm::QPacket`]: its size, its 5-tuple flow key, and the ECN field
//! of the TOS byte (RFC 3168 §5), which `set_ce` rewrites with the header checksum
//! fixed (RFC 1071).

use aqm::{Ecn, QPacket, TcpAck, Time, Transport};
use aqmsim::packet::Kind;

/// Largest packet the bottleneck carries; the TUN devices' MTU is 1500.
pub const BUF_SIZE: usize = 2048;

/// Packet kinds, coded as the simulator's records code them ([`Kind`]).
pub const KIND_DATA: u8 = Kind::Data.code();
pub const KIND_ACK: u8 = Kind::Ack.code();
pub const KIND_SYN: u8 = Kind::Syn.code();
pub const KIND_SYNACK: u8 = Kind::SynAck.code();
pub const KIND_UDP: u8 = Kind::Udp.code();

/// A packet buffer with what the bottleneck parsed out of its headers on arrival.
#[derive(Debug)]
pub struct IpPacket {
    pub buf: Box<[u8; BUF_SIZE]>,
    pub len: usize,
    /// Sequence number of the arrival at the bottleneck (both directions share it).
    pub uid: u64,
    /// Flow index for the records (see [`FlowMap`]), `u32::MAX` for other traffic.
    pub flow: u32,
    pub kind: u8,
    pub key: u64,
    /// The source-destination address pair (RED+Tail's classifier cannot see ports).
    pub pair: u64,
    pub transport: Transport,
    pub arrived: Time,
}

impl IpPacket {
    pub fn empty() -> IpPacket {
        IpPacket { buf: Box::new([0u8; BUF_SIZE]), len: 0, uid: 0, flow: u32::MAX, kind: KIND_DATA, key: 0, pair: 0, transport: Transport::Other, arrived: Time::ZERO }
    }
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Parse the IPv4 header and the ports; false if this is not an IPv4 packet
    /// with a complete header.
    pub fn parse(&mut self, map: &FlowMap, forward: bool) -> bool {
        let b = &self.buf[..self.len];
        if b.len() < 20 || b[0] >> 4 != 4 {
            return false;
        }
        let ihl = ((b[0] & 0x0f) as usize) * 4;
        let total = u16::from_be_bytes([b[2], b[3]]) as usize;
        if ihl < 20 || b.len() < ihl || total > b.len() {
            return false;
        }
        let proto = b[9];
        let src = u32::from_be_bytes([b[12], b[13], b[14], b[15]]);
        let dst = u32::from_be_bytes([b[16], b[17], b[18], b[19]]);
        let (mut sport, mut dport) = (0u16, 0u16);
        if (proto == 6 || proto == 17) && b.len() >= ihl + 4 {
            sport = u16::from_be_bytes([b[ihl], b[ihl + 1]]);
            dport = u16::from_be_bytes([b[ihl + 2], b[ihl + 3]]);
        }
        self.transport = match proto {
            6 => Transport::Tcp,
            17 => Transport::Udp,
            _ => Transport::Other,
        };
        self.kind = match proto {
            6 if b.len() >= ihl + 14 => {
                let flags = b[ihl + 13];
                let doff = ((b[ihl + 12] >> 4) as usize) * 4;
                let payload = total.saturating_sub(ihl + doff);
                let (syn, ack) = (flags & 0x02 != 0, flags & 0x10 != 0);
                match (syn, ack, payload > 0) {
                    (true, true, _) => KIND_SYNACK,
                    (true, false, _) => KIND_SYN,
                    (false, _, true) => KIND_DATA,
                    (false, _, false) => KIND_ACK,
                }
            }
            17 => KIND_UDP,
            _ => KIND_DATA,
        };
        // the 5-tuple, mixed (FNV-1a over its bytes): equal tuples give equal keys
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for x in [src as u64, dst as u64, proto as u64, sport as u64, dport as u64] {
            h ^= x;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.key = h;
        self.pair = ((src as u64) << 32) | dst as u64;
        // the port of the flow's end in the plan's range names the flow in both
        // directions: the data sender's (bulk, CBR) or the download client's
        let (near, far) = if forward { (sport, dport) } else { (dport, sport) };
        self.flow = match map.flow_of(near) {
            u32::MAX => map.flow_of(far),
            f => f,
        };
        true
    }
}

/// Flow numbering: the traffic programs bind flow `i`'s socket to port `base + i`
/// (the data sender's for bulk and CBR flows, the client's for downloads, whose
/// servers listen on ports below `base`), so the records can name flows the way the
/// simulator does.
#[derive(Clone, Copy, Debug)]
pub struct FlowMap {
    pub base_port: u16,
    pub flows: u32,
}

impl FlowMap {
    pub fn flow_of(&self, port: u16) -> u32 {
        match port.checked_sub(self.base_port) {
            Some(i) if (i as u32) < self.flows => i as u32,
            _ => u32::MAX,
        }
    }
}

/// The Internet checksum of an IPv4 header (RFC 1071), with its checksum field zeroed.
pub fn ipv4_header_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for (i, pair) in h.chunks(2).enumerate() {
        if i == 5 {
            continue; // the checksum field itself
        }
        let w = if pair.len() == 2 { u16::from_be_bytes([pair[0], pair[1]]) } else { (pair[0] as u16) << 8 };
        sum += w as u32;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

impl QPacket for IpPacket {
    fn size_bytes(&self) -> u32 {
        self.len as u32
    }
    fn flow_key(&self) -> u64 {
        self.key
    }
    fn host_pair_key(&self) -> u64 {
        self.pair
    }
    fn src_host(&self) -> u64 {
        self.pair >> 32
    }
    fn dst_host(&self) -> u64 {
        self.pair & 0xffff_ffff
    }
    fn tcp_ack(&self) -> Option<TcpAck> {
        parse_tcp_ack(self.bytes())
    }
    fn transport(&self) -> Transport {
        self.transport
    }
    fn ecn(&self) -> Ecn {
        // RFC 3168 §5: the two low bits of the TOS byte
        match self.buf[1] & 0x03 {
            0 => Ecn::NotEct,
            1 => Ecn::Ect1,
            2 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }
    fn set_ce(&mut self) {
        self.buf[1] |= 0x03;
        let ihl = ((self.buf[0] & 0x0f) as usize) * 4;
        let c = ipv4_header_checksum(&self.buf[..ihl]);
        self.buf[10..12].copy_from_slice(&c.to_be_bytes());
    }
}

/// The acknowledgement of an IPv4 TCP segment with ACK set and SYN clear, as CAKE's
/// ACK filter reads it (Linux `cake_ack_filter`, `cake_tcph_may_drop`): pure when it
/// carries no payload, no flag but ACK (ECE and CWR aside) and only SACK, timestamp,
/// MD5 or padding options.
pub fn parse_tcp_ack(b: &[u8]) -> Option<TcpAck> {
    if b.len() < 20 || b[0] >> 4 != 4 || b[9] != 6 {
        return None;
    }
    let ihl = ((b[0] & 0x0f) as usize) * 4;
    let total = (u16::from_be_bytes([b[2], b[3]]) as usize).min(b.len());
    if b.len() < ihl + 20 {
        return None;
    }
    let t = &b[ihl..];
    let flags = t[13];
    let (fin, syn, rst, psh, ack, urg, ece, cwr) =
        (flags & 0x01 != 0, flags & 0x02 != 0, flags & 0x04 != 0, flags & 0x08 != 0, flags & 0x10 != 0, flags & 0x20 != 0, flags & 0x40 != 0, flags & 0x80 != 0);
    if !ack || syn {
        return None;
    }
    let doff = ((t[12] >> 4) as usize) * 4;
    if doff < 20 || t.len() < doff {
        return None;
    }
    let payload = total.saturating_sub(ihl + doff);
    let mut a = TcpAck { ack: u32::from_be_bytes([t[8], t[9], t[10], t[11]]), ece, cwr, ..TcpAck::default() };
    // reserved bits, URG, PSH, RST, FIN: not droppable
    let mut pure = payload == 0 && !(fin || rst || psh || urg) && t[12] & 0x0f == 0;
    let opts = &t[20..doff];
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let Some(&len) = opts.get(i + 1) else { break };
                let len = len as usize;
                if len < 2 || i + len > opts.len() {
                    break;
                }
                let o = &opts[i + 2..i + len];
                match kind {
                    5 if len % 8 == 2 => {
                        for blk in o.chunks_exact(8).take(a.sack.len()) {
                            let s = u32::from_be_bytes([blk[0], blk[1], blk[2], blk[3]]);
                            let e = u32::from_be_bytes([blk[4], blk[5], blk[6], blk[7]]);
                            a.sack[a.sack_len as usize] = (s, e);
                            a.sack_len += 1;
                        }
                    }
                    8 if len == 10 => {
                        a.timestamps = Some((u32::from_be_bytes([o[0], o[1], o[2], o[3]]), u32::from_be_bytes([o[4], o[5], o[6], o[7]])));
                    }
                    19 => {} // MD5 signature: does not influence state
                    _ => pure = false,
                }
                i += len;
            }
        }
    }
    a.pure = pure;
    Some(a)
}

/// Recycled packet buffers: the hot path allocates nothing once the pool is warm.
#[derive(Default)]
pub struct Pool {
    free: Vec<IpPacket>,
}

impl Pool {
    pub fn get(&mut self) -> IpPacket {
        self.free.pop().unwrap_or_else(IpPacket::empty)
    }
    pub fn put(&mut self, p: IpPacket) {
        self.free.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 20-byte IPv4 header + TCP header, as `tcpdump -x` would show it.
    fn tcp_packet(tos: u8, sport: u16, dport: u16, flags: u8, payload: usize) -> IpPacket {
        let mut p = IpPacket::empty();
        let total = 20 + 20 + payload;
        let h = &mut p.buf[..];
        h[0] = 0x45;
        h[1] = tos;
        h[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        h[8] = 64;
        h[9] = 6;
        h[12..16].copy_from_slice(&[10, 201, 0, 1]);
        h[16..20].copy_from_slice(&[10, 201, 1, 1]);
        let c = ipv4_header_checksum(&h[..20]);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h[20..22].copy_from_slice(&sport.to_be_bytes());
        h[22..24].copy_from_slice(&dport.to_be_bytes());
        h[32] = 5 << 4;
        h[33] = flags;
        p.len = total;
        p
    }

    /// RFC 1071: summing a header together with its checksum gives 0xffff.
    fn verifies(h: &[u8]) -> bool {
        let mut sum: u32 = h.chunks(2).map(|w| u16::from_be_bytes([w[0], w[1]]) as u32).sum();
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    #[test]
    fn tcp_acks_parse_for_the_ack_filter() {
        // a pure ACK (flags 0x10) of ack number 0x01020304, ECE set (0x50)
        let mut p = tcp_packet(0, 5201, 20003, 0x50, 0);
        p.buf[28..32].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        let a = p.tcp_ack().unwrap();
        assert_eq!((a.ack, a.pure, a.ece, a.cwr, a.sack_len, a.timestamps), (0x0102_0304, true, true, false, 0, None));
        assert!(p.is_pure_ack());
        // data with ACK: an ACK, not pure; PSH: not pure; SYN-ACK: none
        assert!(!tcp_packet(0, 5201, 20003, 0x10, 100).tcp_ack().unwrap().pure);
        assert!(!tcp_packet(0, 5201, 20003, 0x18, 0).tcp_ack().unwrap().pure);
        assert!(tcp_packet(0, 5201, 20003, 0x12, 0).tcp_ack().is_none());
        assert!(tcp_packet(0, 5201, 20003, 0x02, 0).tcp_ack().is_none());
        // options: NOP NOP TS(10) = 12 bytes, NOP NOP SACK with one block (10) = 12
        let mut q = tcp_packet(0, 5201, 20003, 0x10, 24);
        q.buf[32] = 11 << 4; // 44-byte TCP header
        let opts: [u8; 24] = [1, 1, 8, 10, 0, 0, 0, 7, 0, 0, 0, 9, 1, 1, 5, 10, 0, 0, 1, 0, 0, 0, 2, 0];
        q.buf[40..64].copy_from_slice(&opts);
        let a = q.tcp_ack().unwrap();
        assert!(a.pure, "the 24 bytes are options, not payload");
        assert_eq!(a.timestamps, Some((7, 9)));
        assert_eq!(a.sack_blocks(), &[(256, 512)]);
        // an unknown option (window scale) makes it not droppable
        q.buf[40..43].copy_from_slice(&[3, 3, 7]);
        q.buf[43] = 1;
        assert!(!q.tcp_ack().unwrap().pure);
        // hosts from the addresses (parsed on arrival)
        assert!(p.parse(&FlowMap { base_port: 20000, flows: 4 }, false));
        assert_eq!(p.src_host(), u32::from_be_bytes([10, 201, 0, 1]) as u64);
        assert_eq!(p.dst_host(), u32::from_be_bytes([10, 201, 1, 1]) as u64);
    }

    #[test]
    fn checksum_of_a_known_header() {
        // the worked example of RFC 1071-style checksums often quoted from Wikipedia's
        // "IPv4 header checksum": 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7
        let h = [0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7];
        assert_eq!(ipv4_header_checksum(&h), 0xb861);
    }

    #[test]
    fn set_ce_marks_and_keeps_the_header_valid() {
        let mut p = tcp_packet(0x02, 20000, 5201, 0x10, 100); // ECT(0)
        assert!(verifies(&p.buf[..20]));
        assert_eq!(p.ecn(), Ecn::Ect0);
        p.set_ce();
        assert_eq!(p.ecn(), Ecn::Ce);
        assert_eq!(p.buf[1], 0x03);
        assert!(verifies(&p.buf[..20]));
    }

    #[test]
    fn parse_names_kind_flow_and_direction() {
        let map = FlowMap { base_port: 20000, flows: 4 };
        let mut d = tcp_packet(0, 20003, 5201, 0x18, 1448);
        assert!(d.parse(&map, true));
        assert_eq!((d.kind, d.flow, d.len), (KIND_DATA, 3, 1488));
        let mut a = tcp_packet(0, 5201, 20003, 0x10, 0);
        assert!(a.parse(&map, false));
        assert_eq!((a.kind, a.flow), (KIND_ACK, 3));
        let mut s = tcp_packet(0, 20001, 5201, 0x02, 0);
        s.parse(&map, true);
        assert_eq!(s.kind, KIND_SYN);
        let mut sa = tcp_packet(0, 5201, 20001, 0x12, 0);
        sa.parse(&map, false);
        assert_eq!(sa.kind, KIND_SYNACK);
        let mut other = tcp_packet(0, 22, 5201, 0x10, 0);
        other.parse(&map, true);
        assert_eq!(other.flow, u32::MAX);
        // a download: the server (senders' side, port 6002) sends to client port 20002
        let mut file = tcp_packet(0, 6002, 20002, 0x18, 1448);
        file.parse(&map, true);
        assert_eq!((file.kind, file.flow), (KIND_DATA, 2));
        let mut req = tcp_packet(0, 20002, 6002, 0x02, 0);
        req.parse(&map, false);
        assert_eq!((req.kind, req.flow), (KIND_SYN, 2));
        // the same 5-tuple gives the same key, another tuple another
        assert_eq!(d.key, tcp_packet(0, 20003, 5201, 0x10, 0).tap_parse(&map).key);
        assert_ne!(d.key, s.key);
        // one host pair for every flow between the two addresses
        assert_eq!(d.host_pair_key(), s.host_pair_key());
        assert_eq!(d.transport(), Transport::Tcp);
        let mut v6 = IpPacket::empty();
        v6.buf[0] = 0x60;
        v6.len = 40;
        assert!(!v6.parse(&map, true));
    }

    trait TapParse {
        fn tap_parse(self, map: &FlowMap) -> Self;
    }
    impl TapParse for IpPacket {
        fn tap_parse(mut self, map: &FlowMap) -> Self {
            self.parse(map, true);
            self
        }
    }
}

//! libpcap captures of simulated links (`record.pcap`): every packet that leaves a
//! captured link's queue, as a capture on that link's egress interface would see it,
//! with synthetic IPv4 and TCP or UDP headers, so that Wireshark, tshark and tcpdump
//! read a simulated run as a captured one.
//!
//! The file format is libpcap's with nanosecond timestamps (magic `0xa1b23c4d`,
//! version 2.4; `pcap-savefile(5)`, and the IETF draft "PCAP Capture File Format",
//! draft-ietf-opsawg-pcap), link type `LINKTYPE_RAW` (101: the packet begins with
//! its IPv4 header). Only the headers are captured: each record's captured length
//! is the headers', its original length the IPv4 total length (a capture with a
//! snap length, as `tcpdump -s`), so tools count the payload without storing it.
//!
//! What the headers say (docs/outputs.md has the table):
//! - time: the simulated instant the link starts transmitting the packet (ns);
//! - addresses: host `h` (`Scenario::host_ids`: each group's sender and receiver) is
//!   10.0.0.1 + h; ports: flow `f`'s connection `c` uses port
//!   1024 + (f + c·N) mod 64512 (N flows) at its data sender, 5201 (TCP) or 5004
//!   (UDP) at its receiver;
//! - IPv4 (RFC 791): the ECN field of the packet (RFC 3168 §5: CE once an AQM
//!   marked it), DF, TTL 64, the identification the low 16 bits of the packet's
//!   uid, the header checksum (RFC 1071);
//! - TCP (RFC 9293 §3.1): sequence numbers count bytes from an initial sequence
//!   number of 0 (the SYN's), segment k starting at byte 1 + k·MSS; the ACK number
//!   the receiver's next expected segment the same way; SACK blocks (RFC 2018) as
//!   byte ranges; ECE and CWR (RFC 3168 §6.1); the window the advertised receive
//!   window scaled by 2^7, the shift a SYN or SYN-ACK announces (RFC 7323 §2.2)
//!   with its MSS and SACK-permitted options; the checksum over the pseudo-header,
//!   the header and a zero payload;
//! - UDP (RFC 768): length, and no checksum (0, allowed over IPv4).
//!
//! The simulator's segments hold MSS bytes but a message's last one (files), so
//! the next message starts at the next multiple of the MSS: a gap that Wireshark
//! may call a segment not captured. Its headers count 40 bytes; a captured ACK with
//! SACK blocks is longer by their option bytes.

use aqm::{Ecn, Time};

use super::sink::{OutputFile, PacketSink};
use super::RunOutput;
use crate::packet::{Kind, Packet};

/// Distinct data-sender ports: 1024..=65535.
const PORTS: u64 = 65536 - 1024;
/// The receivers' ports (iperf3's and RTP's customary ones).
const TCP_PORT: u16 = 5201;
const UDP_PORT: u16 = 5004;
/// The window-scale shift the SYN and SYN-ACK announce.
const WSCALE: u32 = 7;
/// libpcap's nanosecond-resolution magic number and `LINKTYPE_RAW`.
const MAGIC_NS: u32 = 0xa1b2_3c4d;
const LINKTYPE_RAW: u32 = 101;

/// `record.pcap` needs a distinct data-sender port for every flow.
pub fn check_flows(nflows: u64) -> Result<(), String> {
    if nflows > PORTS {
        return Err(format!("{nflows} flows need more distinct ports than TCP has (at most {PORTS} flows with a capture)"));
    }
    Ok(())
}

/// What the headers of a flow's packets need beyond the packet: its TCP MSS and
/// whether it uses ECN (none for UDP flows).
#[derive(Clone, Copy, Debug)]
pub struct FlowTcp {
    pub mss: u32,
    pub ecn: bool,
}

/// The libpcap writer: one file per captured link, built in memory and handed to
/// the run folder at the end.
pub struct PcapSink {
    links: Vec<u16>,
    names: Vec<String>,
    files: Vec<Vec<u8>>,
    flows: Vec<Option<FlowTcp>>,
}

impl PcapSink {
    /// Captures of `links` (index in the run's links, name), for flows whose TCP
    /// settings are `flows` (by flow id).
    pub fn new(links: Vec<(u16, String)>, flows: Vec<Option<FlowTcp>>) -> PcapSink {
        let (links, names): (Vec<u16>, Vec<String>) = links.into_iter().unzip();
        let files = names.iter().map(|_| file_header().to_vec()).collect();
        PcapSink { links, names, files, flows }
    }
}

impl PacketSink for PcapSink {
    fn links(&self) -> &[u16] {
        &self.links
    }

    fn departure(&mut self, link: u16, t: Time, p: &Packet) {
        let Some(i) = self.links.iter().position(|&l| l == link) else { return };
        let tcp = self.flows.get(p.flow as usize).copied().flatten();
        write_record(&mut self.files[i], t, p, tcp, self.flows.len() as u64);
    }

    fn finish(self: Box<Self>, _run: &RunOutput) -> Vec<OutputFile> {
        let one = self.names.len() == 1;
        // a link's name in a file name: other characters than letters, digits, - and _ as _
        let safe = |n: &str| n.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect::<String>();
        self.names.iter().zip(self.files).map(|(n, bytes)| OutputFile { name: if one { "packets.pcap".into() } else { format!("packets.{}.pcap", safe(n)) }, bytes }).collect()
    }
}

/// The file header: nanosecond timestamps, version 2.4, snap length 65535, raw IP.
pub fn file_header() -> [u8; 24] {
    let mut h = [0u8; 24];
    h[0..4].copy_from_slice(&MAGIC_NS.to_le_bytes());
    h[4..6].copy_from_slice(&2u16.to_le_bytes());
    h[6..8].copy_from_slice(&4u16.to_le_bytes());
    // thiszone and sigfigs: 0
    h[16..20].copy_from_slice(&65535u32.to_le_bytes());
    h[20..24].copy_from_slice(&LINKTYPE_RAW.to_le_bytes());
    h
}

/// The IPv4 address of host `h`: 10.0.0.1 + h.
pub fn host_addr(h: u16) -> [u8; 4] {
    (0x0a00_0001u32 + h as u32).to_be_bytes()
}

/// Flow `flow`'s port at its data sender for connection `conn`, of `nflows` flows.
pub fn sender_port(flow: u32, conn: u32, nflows: u64) -> u16 {
    (1024 + (flow as u64 + conn as u64 * nflows.max(1)) % PORTS) as u16
}

/// The Internet checksum (RFC 1071) of `words` summed onto `sum`.
fn ones_sum(mut sum: u32, b: &[u8]) -> u32 {
    for w in b.chunks(2) {
        sum += u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)]) as u32;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Append packet `p`'s record (leaving the link at `t`) to a capture.
pub fn write_record(out: &mut Vec<u8>, t: Time, p: &Packet, tcp: Option<FlowTcp>, nflows: u64) {
    let mut h = [0u8; 20 + 60];
    let forward = p.kind.is_forward();
    let port = sender_port(p.flow, p.conn, nflows);
    let (l4, l4_len, payload) = if p.kind == Kind::Udp {
        let (sp, dp) = (port, UDP_PORT);
        let u = &mut h[20..28];
        u[0..2].copy_from_slice(&sp.to_be_bytes());
        u[2..4].copy_from_slice(&dp.to_be_bytes());
        u[4..6].copy_from_slice(&((8 + p.payload) as u16).to_be_bytes());
        (17u8, 8usize, p.payload)
    } else {
        let FlowTcp { mss, .. } = tcp.unwrap_or(FlowTcp { mss: 1460, ecn: false });
        let byte = |seg: u64| (1 + seg.wrapping_mul(mss as u64)) as u32;
        let (sp, dp) = if forward { (port, TCP_PORT) } else { (TCP_PORT, port) };
        let mut opts: Vec<u8> = Vec::new();
        // flags: FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, URG 0x20, ECE 0x40, CWR 0x80
        let (seq, ack, mut flags, window, payload) = match p.kind {
            Kind::Data => (byte(p.seq), 1, 0x10, 0xffff, p.payload),
            Kind::Ack => {
                for (s, e) in p.sack.iter(p.seq) {
                    opts.extend_from_slice(&byte(s).to_be_bytes());
                    opts.extend_from_slice(&byte(e).to_be_bytes());
                }
                if !opts.is_empty() {
                    let n = opts.len() as u8;
                    opts.splice(0..0, [1, 1, 5, 2 + n]);
                }
                (1, byte(p.seq), 0x10, (p.rwnd >> WSCALE).min(0xffff) as u16, 0)
            }
            // the handshake's third segment: the sender's first sequence number,
            // acknowledging the SYN-ACK
            Kind::FwdAck => (1, 1, 0x10, 0xffff, 0),
            Kind::Syn | Kind::SynAck => {
                // MSS (RFC 9293 §3.2), NOP + window scale (RFC 7323 §2.2), SACK permitted (RFC 2018) + 2 NOPs
                opts.extend_from_slice(&[2, 4]);
                opts.extend_from_slice(&(mss.min(0xffff) as u16).to_be_bytes());
                opts.extend_from_slice(&[1, 3, 3, WSCALE as u8, 4, 2, 1, 1]);
                // RFC 3168 §6.1.1: an ECN-setup SYN has ECE and CWR, its SYN-ACK ECE;
                // RFC 9768 §3.1: AccECN's SYN AE, CWR and ECE, its SYN-ACK an ACE
                // (the flags the endpoints set; below)
                let (ack, f) = if p.kind == Kind::Syn { (0, 0x02) } else { (1, 0x12) };
                (0u32, ack, f, 0xffff, 0)
            }
            _ => unreachable!("only TCP packets get a TCP header"),
        };
        // ECE and CWR as the packet carries them (under AccECN, with AE, the ACE field
        // of ACKs, SYNs and SYN-ACKs: RFC 9768 §3.2.1)
        if p.cwr() {
            flags |= 0x80;
        }
        if p.kind != Kind::Data && p.ece() {
            flags |= 0x40;
        }
        let hl = 20 + opts.len();
        let th = &mut h[20..20 + hl];
        th[0..2].copy_from_slice(&sp.to_be_bytes());
        th[2..4].copy_from_slice(&dp.to_be_bytes());
        th[4..8].copy_from_slice(&seq.to_be_bytes());
        th[8..12].copy_from_slice(&ack.to_be_bytes());
        th[12] = ((hl / 4) as u8) << 4 | (p.kind != Kind::Data && p.flag(Packet::AE)) as u8;
        th[13] = flags;
        th[14..16].copy_from_slice(&window.to_be_bytes());
        th[20..].copy_from_slice(&opts);
        (6u8, hl, payload)
    };
    let total = 20 + l4_len + payload as usize;
    let ip = &mut h[..20];
    ip[0] = 0x45;
    ip[1] = match p.ecn() {
        Ecn::NotEct => 0,
        Ecn::Ect1 => 1,
        Ecn::Ect0 => 2,
        Ecn::Ce => 3,
    };
    ip[2..4].copy_from_slice(&(total.min(0xffff) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&(p.uid as u16).to_be_bytes());
    ip[6] = 0x40; // DF
    ip[8] = 64;
    ip[9] = l4;
    ip[12..16].copy_from_slice(&host_addr(p.src_host));
    ip[16..20].copy_from_slice(&host_addr(p.dst_host));
    let c = fold(ones_sum(0, ip));
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    if l4 == 6 {
        // pseudo-header: source, destination, zero, protocol, TCP length
        let mut sum = ones_sum(0, &h[12..20]);
        sum += 6 + (l4_len as u32 + payload);
        sum = ones_sum(sum, &h[20..20 + l4_len]);
        let c = fold(sum);
        h[36..38].copy_from_slice(&c.to_be_bytes());
    }
    let cap = 20 + l4_len;
    let ns = t.as_nanos();
    out.extend_from_slice(&((ns / 1_000_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&((ns % 1_000_000_000) as u32).to_le_bytes());
    out.extend_from_slice(&(cap as u32).to_le_bytes());
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&h[..cap]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 1071: a header summed with its checksum in place gives 0xffff.
    fn verifies(sum: u32) -> bool {
        fold(sum) == 0
    }

    fn record(p: &Packet, tcp: Option<FlowTcp>) -> Vec<u8> {
        let mut out = Vec::new();
        write_record(&mut out, Time::from_nanos(3_000_000_123), p, tcp, 10);
        out
    }

    const TCP: Option<FlowTcp> = Some(FlowTcp { mss: 1000, ecn: true });

    #[test]
    fn the_file_header_is_libpcap_s_with_nanoseconds_and_raw_ip() {
        let h = file_header();
        assert_eq!(h[..4], [0x4d, 0x3c, 0xb2, 0xa1]);
        assert_eq!((u16::from_le_bytes([h[4], h[5]]), u16::from_le_bytes([h[6], h[7]])), (2, 4));
        assert_eq!(u32::from_le_bytes(h[20..24].try_into().unwrap()), 101);
    }

    #[test]
    fn a_ce_marked_data_segment_has_its_flow_s_ports_bytes_and_ecn() {
        // flow 3, connection 2 of 10 flows: port 1024 + 3 + 20; segment 5 of 1000 B
        let mut p = Packet::new(70_000, 3, Kind::Data, 1040, Time::ZERO);
        (p.seq, p.payload, p.conn, p.src_host, p.dst_host) = (5, 1000, 2, 0, 1);
        p.set_ecn(Ecn::Ce);
        p.set_flag(Packet::CWR, true);
        let r = record(&p, TCP);
        // record header: 3 s + 123 ns, 40 bytes captured of 1040
        let u = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().unwrap());
        assert_eq!((u(0), u(4), u(8), u(12)), (3, 123, 40, 1040));
        let ip = &r[16..36];
        assert_eq!((ip[0], ip[1] & 3, u16::from_be_bytes([ip[2], ip[3]]), ip[9]), (0x45, 3, 1040, 6));
        assert_eq!(u16::from_be_bytes([ip[4], ip[5]]), 70_000u64 as u16);
        assert_eq!((&ip[12..16], &ip[16..20]), (&[10, 0, 0, 1][..], &[10, 0, 0, 2][..]));
        assert!(verifies(ones_sum(0, ip)));
        let tcp = &r[36..56];
        let be16 = |b: &[u8]| u16::from_be_bytes([b[0], b[1]]);
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!((be16(&tcp[0..]), be16(&tcp[2..])), (1047, 5201));
        assert_eq!((be32(&tcp[4..]), be32(&tcp[8..])), (5001, 1));
        assert_eq!((tcp[12] >> 4, tcp[13]), (5, 0x90)); // ACK + CWR
        // the checksum over the pseudo-header and a 1000-byte zero payload
        let mut sum = ones_sum(0, &ip[12..20]) + 6 + 1020;
        sum = ones_sum(sum, tcp);
        assert!(verifies(sum));
    }

    #[test]
    fn an_ack_carries_its_sack_blocks_as_bytes_and_the_scaled_window() {
        // cumulative ACK of segment 10, blocks [12, 14) and [16, 17), ECE, window 1 MB
        let mut p = Packet::new(1, 3, Kind::Ack, 40, Time::ZERO);
        (p.seq, p.rwnd, p.src_host, p.dst_host) = (10, 1 << 20, 1, 0);
        p.sack.push(10, 12, 14);
        p.sack.push(10, 16, 17);
        p.set_flag(Packet::ECE, true);
        let r = record(&p, TCP);
        let tcp = &r[36..];
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        // 20 + NOP NOP SACK(2 + 16) = 40 bytes of TCP header: captured 60 of 60
        assert_eq!(u32::from_le_bytes(r[8..12].try_into().unwrap()), 60);
        assert_eq!(u32::from_le_bytes(r[12..16].try_into().unwrap()), 60);
        assert_eq!((u16::from_be_bytes([tcp[0], tcp[1]]), u16::from_be_bytes([tcp[2], tcp[3]])), (5201, 1024 + 3));
        assert_eq!((be32(&tcp[4..]), be32(&tcp[8..]), tcp[12] >> 4, tcp[13]), (1, 10_001, 10, 0x50));
        assert_eq!(u16::from_be_bytes([tcp[14], tcp[15]]), 8192); // 2^20 >> 7
        assert_eq!(&tcp[20..24], &[1, 1, 5, 18]);
        assert_eq!([be32(&tcp[24..]), be32(&tcp[28..]), be32(&tcp[32..]), be32(&tcp[36..])], [12_001, 14_001, 16_001, 17_001]);
        let mut sum = ones_sum(0, &r[16 + 12..16 + 20]) + 6 + 40;
        sum = ones_sum(sum, &tcp[..40]);
        assert!(verifies(sum));
    }

    #[test]
    fn an_ecn_setup_syn_and_a_udp_datagram() {
        let mut syn = Packet::new(0, 0, Kind::Syn, 40, Time::ZERO);
        syn.set_ecn(Ecn::NotEct);
        syn.set_ace(0b011); // as the sender sets an ECN-setup SYN: ECE and CWR
        let r = record(&syn, TCP);
        let tcp = &r[36..];
        // 20 + MSS(4) + NOP WS(4) + SACK-permitted NOP NOP(4): SYN + ECE + CWR
        assert_eq!((tcp[12] >> 4, tcp[13]), (8, 0xc2));
        assert_eq!(&tcp[20..32], &[2, 4, 0x03, 0xe8, 1, 3, 3, 7, 4, 2, 1, 1]);
        // an AccECN ACK's ACE field 0b110: AE (the low bit of byte 12) and CWR, no ECE
        let mut ack = Packet::new(1, 0, Kind::Ack, 40, Time::ZERO);
        ack.set_ace(0b110);
        let r = record(&ack, TCP);
        let tcp = &r[36..];
        assert_eq!((tcp[12] & 1, tcp[13]), (1, 0x90));
        // a 200-byte CBR datagram: 28 bytes of headers captured
        let mut d = Packet::new(9, 4, Kind::Udp, 200, Time::ZERO);
        d.payload = 172;
        d.set_ecn(Ecn::Ect0);
        let r = record(&d, None);
        assert_eq!((u32::from_le_bytes(r[8..12].try_into().unwrap()), u32::from_le_bytes(r[12..16].try_into().unwrap())), (28, 200));
        let ip = &r[16..36];
        assert_eq!((ip[1] & 3, ip[9]), (2, 17));
        let u = &r[36..44];
        assert_eq!((u16::from_be_bytes([u[0], u[1]]), u16::from_be_bytes([u[2], u[3]]), u16::from_be_bytes([u[4], u[5]])), (1028, 5004, 180));
    }

    #[test]
    fn the_handshake_ack_goes_from_the_sender_s_port_with_the_ack_flag_alone() {
        // flow 3's third segment: 10.0.0.1:1027 -> 10.0.0.2:5201, seq 1, ack 1, ACK
        let mut p = Packet::new(1, 3, Kind::FwdAck, 40, Time::ZERO);
        (p.src_host, p.dst_host) = (0, 1);
        let r = record(&p, TCP);
        assert_eq!((u32::from_le_bytes(r[8..12].try_into().unwrap()), u32::from_le_bytes(r[12..16].try_into().unwrap())), (40, 40));
        let ip = &r[16..36];
        assert_eq!((u16::from_be_bytes([ip[2], ip[3]]), ip[9]), (40, 6));
        assert_eq!((&ip[12..16], &ip[16..20]), (&[10, 0, 0, 1][..], &[10, 0, 0, 2][..]));
        let tcp = &r[36..56];
        let be32 = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!((u16::from_be_bytes([tcp[0], tcp[1]]), u16::from_be_bytes([tcp[2], tcp[3]])), (1024 + 3, 5201));
        assert_eq!((be32(&tcp[4..]), be32(&tcp[8..]), tcp[12] >> 4, tcp[13]), (1, 1, 5, 0x10));
        let sum = ones_sum(ones_sum(0, &ip[12..20]) + 6 + 20, tcp);
        assert!(verifies(sum));
    }

    #[test]
    fn ports_differ_between_flows_and_between_a_flow_s_connections() {
        assert_eq!(sender_port(0, 0, 100), 1024);
        assert_eq!(sender_port(99, 0, 100), 1123);
        assert_eq!(sender_port(0, 1, 100), 1124);
        assert_eq!(sender_port(64511, 0, 64512), 65535);
        assert_eq!(sender_port(0, 1, 64512), 1024); // the same flow's port again after a full turn
        assert!(check_flows(64512).is_ok() && check_flows(64513).is_err());
    }
}

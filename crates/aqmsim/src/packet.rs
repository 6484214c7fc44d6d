//! The simulator's packet: small, `Copy`, moved by value through queues and pipes
//! (no allocation per packet). Sequence numbers count segments, not bytes: every data
//! segment carries a full MSS except the last one of a finite transfer.

use aqm::{Ecn, QPacket, TcpAck, Time, Transport};

/// What a packet is. A byte with named values rather than an enum: a packet then
/// has no field with invalid bit patterns (a *niche*), so `Option<Packet>` and the
/// queues' `Option<Departure<Packet>>` keep their tag beside the packet, and the
/// compiler copies a packet as one aligned block. With a niche in the middle of
/// the packet it copied it in overlapping unaligned pieces around that byte, and
/// the reads that followed stalled on those writes (store forwarding fails), which
/// cost more time than the instruction counts show.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Kind(u8);

#[allow(non_upper_case_globals)]
impl Kind {
    pub const Data: Kind = Kind(0);
    pub const Ack: Kind = Kind(1);
    pub const Syn: Kind = Kind(2);
    pub const SynAck: Kind = Kind(3);
    pub const Udp: Kind = Kind(4);
    /// A pure ACK the sender sends forward: the handshake's third segment (RFC 9293
    /// §3.5, Linux `tcp_rcv_synsent_state_process` sends it at once on the SYN-ACK).
    /// A kind of its own because an [`Kind::Ack`] travels the reverse path; the
    /// records write it as an `ack`, as the emulator records the kernel's.
    pub const FwdAck: Kind = Kind(5);

    pub fn name(self) -> &'static str {
        ["data", "ack", "syn", "synack", "udp", "ack"][self.0 as usize]
    }
    /// Forward (sender to receiver) or reverse.
    #[inline]
    pub fn is_forward(self) -> bool {
        matches!(self, Kind::Data | Kind::Syn | Kind::Udp | Kind::FwdAck)
    }
    /// The number the records write for it (0 data, 1 ack, 2 syn, 3 synack, 4 udp;
    /// a forward ACK is an ack, 1).
    #[inline]
    pub const fn code(self) -> u8 {
        if self.0 == Kind::FwdAck.0 { Kind::Ack.0 } else { self.0 }
    }
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(["Data", "Ack", "Syn", "SynAck", "Udp", "FwdAck"][self.0 as usize])
    }
}

/// Up to three SACK blocks (RFC 2018), as segment ranges `[start, end)`. Offsets from
/// the cumulative ACK keep the packet small; they are signed because a D-SACK block
/// (RFC 2883), always the first, may lie below the cumulative ACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SackBlocks {
    blocks: [(i32, i32); 3],
    n: u8,
}

impl SackBlocks {
    pub const MAX: usize = 3;
    pub fn push(&mut self, ack: u64, start: u64, end: u64) {
        debug_assert!(end > start);
        if (self.n as usize) < Self::MAX {
            self.blocks[self.n as usize] = ((start as i64 - ack as i64) as i32, (end as i64 - ack as i64) as i32);
            self.n += 1;
        }
    }
    pub fn len(&self) -> usize {
        self.n as usize
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn iter(&self, ack: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.blocks[..self.n as usize].iter().map(move |&(s, e)| ((ack as i64 + s as i64) as u64, (ack as i64 + e as i64) as u64))
    }
    /// The first block, if any.
    pub fn first(&self, ack: u64) -> Option<(u64, u64)> {
        self.iter(ack).next()
    }
}

#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Packet {
    /// Unique per run, in creation order.
    pub uid: u64,
    /// Data: segment number. ACK: cumulative ACK (next expected segment). Forward
    /// ACK: 0 (the receiver sends no data).
    pub seq: u64,
    /// ACK: receive window advertised, in bytes.
    pub rwnd: u64,
    /// When the endpoint sent it (also the TCP timestamp value, RFC 7323).
    pub sent_at: Time,
    /// The timestamp echoed (TSecr, RFC 7323 §3), in ns; 0 = none. Data: `sent_at`
    /// of the newest ACK the sender had (lets the receiver measure the RTT). ACK:
    /// the receiver's TS.Recent (§4.3; lets the sender measure the RTT of
    /// retransmitted data).
    pub ts_echo: u64,
    pub flow: u32,
    /// The flow's connection that sent it: a flow that opens a new connection per
    /// download discards what arrives for an earlier one.
    pub conn: u32,
    /// Bytes on the wire.
    pub size: u32,
    /// Data: payload bytes.
    pub payload: u32,
    pub kind: Kind,
    /// The ECN field, [`Ecn::index`] (a byte, not an [`Ecn`]: see [`Kind`]); read
    /// and set with [`Packet::ecn`] and [`Packet::set_ecn`].
    ecn: u8,
    /// [`Packet::ECE`], [`Packet::CWR`], [`Packet::RETX`], [`Packet::AE`], [`Packet::PSH`]: one bit each, in a plain
    /// byte rather than three `bool`s. A `bool` gives `Option<Packet>` and the
    /// queues' `Option<Queued<Packet>>` / `Option<Departure<Packet>>` their niche
    /// (the most invalid values of any field); the compiler then splits copies of a
    /// packet around that byte. Without it: 1 % fewer instructions per run.
    flags: u8,
    /// The sending and the receiving host, for classifiers that isolate hosts (CAKE):
    /// ids the simulation gives each flow group's two ends (see `Sim::new`), set when
    /// the packet enters the network.
    pub src_host: u16,
    pub dst_host: u16,
    pub sack: SackBlocks,
    /// The network's business: where the packet is on its route (the position of
    /// its current hop in the network's table of all routes' hops).
    pub hop: u32,
}

const _: () = assert!(std::mem::size_of::<Packet>() == 96);

impl Packet {
    /// The ECN field of the IP header.
    #[inline]
    pub fn ecn(&self) -> Ecn {
        Ecn::ALL[self.ecn as usize & 3]
    }
    #[inline]
    pub fn set_ecn(&mut self, e: Ecn) {
        self.ecn = e.index() as u8;
    }
    /// TCP ECE flag (ACKs), RFC 3168 §6.1.
    pub const ECE: u8 = 1;
    /// TCP CWR flag (data), RFC 3168 §6.1.
    pub const CWR: u8 = 2;
    /// Data: this segment is a retransmission.
    pub const RETX: u8 = 4;
    /// TCP AE flag (the former ECN-nonce bit), RFC 9768 §3: with ECE and CWR it forms
    /// the 3-bit ACE field of Accurate ECN.
    pub const AE: u8 = 8;
    /// TCP PSH flag (data): RFC 9293 §3.9.1.2.
    pub const PSH: u8 = 16;

    pub fn flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }
    pub fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }
    pub fn ece(&self) -> bool {
        self.flag(Self::ECE)
    }
    pub fn cwr(&self) -> bool {
        self.flag(Self::CWR)
    }
    pub fn retx(&self) -> bool {
        self.flag(Self::RETX)
    }
    /// The ACE field (RFC 9768 §3.2.1): AE, CWR and ECE as a 3-bit number, AE the
    /// most significant (Linux `tcp_accecn_ace`).
    pub fn ace(&self) -> u8 {
        (self.flag(Self::AE) as u8) << 2 | (self.flag(Self::CWR) as u8) << 1 | self.flag(Self::ECE) as u8
    }
    pub fn set_ace(&mut self, ace: u8) {
        self.set_flag(Self::ECE, ace & 1 != 0);
        self.set_flag(Self::CWR, ace & 2 != 0);
        self.set_flag(Self::AE, ace & 4 != 0);
    }

    pub fn new(uid: u64, flow: u32, kind: Kind, size: u32, now: Time) -> Packet {
        Packet {
            uid,
            flow,
            conn: 0,
            kind,
            hop: 0,
            ecn: 0,
            flags: 0,
            src_host: 0,
            dst_host: 0,
            size,
            payload: 0,
            seq: 0,
            rwnd: 0,
            sack: SackBlocks::default(),
            sent_at: now,
            ts_echo: 0,
        }
    }
}

impl QPacket for Packet {
    fn size_bytes(&self) -> u32 {
        self.size
    }
    fn flow_key(&self) -> u64 {
        ((self.flow as u64) << 1) | (!self.kind.is_forward()) as u64
    }
    fn transport(&self) -> Transport {
        if self.kind == Kind::Udp { Transport::Udp } else { Transport::Tcp }
    }
    fn src_host(&self) -> u64 {
        self.src_host as u64
    }
    fn dst_host(&self) -> u64 {
        self.dst_host as u64
    }
    /// ACKs only (either way): the simulator's data segments carry no
    /// acknowledgement. Sequence numbers count segments; timestamps are the send
    /// times in microseconds.
    fn tcp_ack(&self) -> Option<TcpAck> {
        if self.kind != Kind::Ack && self.kind != Kind::FwdAck {
            return None;
        }
        let mut a = TcpAck { ack: self.seq as u32, pure: true, ece: self.ece(), cwr: self.cwr(), ..TcpAck::default() };
        for (i, (s, e)) in self.sack.iter(self.seq).enumerate() {
            a.sack[i] = (s as u32, e as u32);
            a.sack_len += 1;
        }
        a.timestamps = Some(((self.sent_at.as_nanos() / 1000) as u32, (self.ts_echo / 1000) as u32));
        Some(a)
    }
    fn ecn(&self) -> Ecn {
        Packet::ecn(self)
    }
    fn set_ce(&mut self) {
        self.set_ecn(Ecn::Ce);
    }
}

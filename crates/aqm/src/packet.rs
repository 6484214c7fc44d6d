//! What an AQM may know about a packet: its size, its flow, its ECN field.
//!
//! The simulator's packets and the emulator's raw IP buffers both implement
//! [`QPacket`]; the algorithms are generic over it and never see anything else.
//! Everything beyond size, flow and ECN has a default, so that a packet type gives
//! only what its classifiers need.

/// The two-bit ECN field of the IP header (RFC 3168 §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Ecn {
    #[default]
    NotEct,
    Ect0,
    Ect1,
    Ce,
}

impl Ecn {
    /// The four codepoints in the order of [`Ecn::index`] (the order of the per-codepoint
    /// counters: Not-ECT, ECT(0), ECT(1), CE).
    pub const ALL: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
    /// Names of the codepoints in [`Ecn::ALL`] order, as the records write them.
    pub const NAMES: [&'static str; 4] = ["not_ect", "ect0", "ect1", "ce"];
    /// Position in [`Ecn::ALL`]: an index for per-codepoint counters.
    #[inline]
    pub fn index(self) -> usize {
        match self {
            Ecn::NotEct => 0,
            Ecn::Ect0 => 1,
            Ecn::Ect1 => 2,
            Ecn::Ce => 3,
        }
    }
    pub fn name(self) -> &'static str {
        Self::NAMES[self.index()]
    }
    /// ECN-capable transport: a router may set CE instead of dropping (RFC 3168 §5).
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
    /// The L4S identifier (RFC 9331 §2): ECT(1) or CE, i.e. the field's low bit set.
    pub fn is_l4s(self) -> bool {
        matches!(self, Ecn::Ect1 | Ecn::Ce)
    }
    /// The two bits as they sit in the IP header (RFC 3168 §5: Not-ECT 00, ECT(1) 01,
    /// ECT(0) 10, CE 11).
    pub fn bits(self) -> u8 {
        match self {
            Ecn::NotEct => 0b00,
            Ecn::Ect1 => 0b01,
            Ecn::Ect0 => 0b10,
            Ecn::Ce => 0b11,
        }
    }
}

/// What an ACK filter reads from a TCP segment that acknowledges (CAKE's
/// `cake_ack_filter`): sequence numbers are 32-bit and compared with wrap-around
/// (RFC 793 §3.3, Linux `before()`/`after()`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpAck {
    /// The cumulative acknowledgement number.
    pub ack: u32,
    /// A pure ACK: no payload, no flag but ACK (ECE and CWR aside) and no option an
    /// ACK filter must keep (CAKE `cake_tcph_may_drop`: only SACK, timestamps and MD5).
    pub pure: bool,
    pub ece: bool,
    pub cwr: bool,
    /// SACK blocks `[start, end)` (RFC 2018), the first `sack_len` of them.
    pub sack: [(u32, u32); 4],
    pub sack_len: u8,
    /// The timestamps option (RFC 7323): TSval, TSecr.
    pub timestamps: Option<(u32, u32)>,
}

impl TcpAck {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.sack_len as usize]
    }
}

/// `a` is later than `b` in 32-bit sequence space (Linux `after()`).
#[inline]
pub fn seq_after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// The transport protocol, as far as a classifier cares (RED+Tail sends UDP to its
/// drop-tail queue).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp,
    Udp,
    Other,
}

/// A packet as an AQM sees it.
pub trait QPacket {
    /// Size on the wire, in bytes (what the link serializes and what byte limits count).
    fn size_bytes(&self) -> u32;
    /// A key identifying the packet's flow (the 5-tuple, or the source-destination
    /// pair for classifiers that look no further). Equal keys: same flow.
    fn flow_key(&self) -> u64;
    /// The source-destination host pair, for classifiers that cannot see ports
    /// (Jou, Tan & Baras, RED+Tail §III). Defaults to the flow key.
    fn host_pair_key(&self) -> u64 {
        self.flow_key()
    }
    fn transport(&self) -> Transport {
        Transport::Tcp
    }
    /// The sending host, for per-host fairness (CAKE's `srchost`, `dual-srchost`,
    /// `triple-isolate`). Defaults to the flow key: each flow its own host.
    fn src_host(&self) -> u64 {
        self.flow_key()
    }
    /// The receiving host (CAKE's `dsthost`, `dual-dsthost`). Defaults to the flow key.
    fn dst_host(&self) -> u64 {
        self.flow_key()
    }
    /// The acknowledgement a TCP segment carries (ACK flag set, SYN clear), for ACK
    /// filters; `None` for everything else (the default).
    fn tcp_ack(&self) -> Option<TcpAck> {
        None
    }
    /// A pure TCP ACK (see [`TcpAck::pure`]).
    fn is_pure_ack(&self) -> bool {
        self.tcp_ack().is_some_and(|a| a.pure)
    }
    fn ecn(&self) -> Ecn;
    /// Set the CE codepoint (only called on ECN-capable packets, or on CE ones, where
    /// it changes nothing).
    fn set_ce(&mut self);
}

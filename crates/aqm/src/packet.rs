//! What an AQM may know about a packet: its size, its flow, its ECN field.
//!
//! The simulator's packets and the emulator's raw IP buffers both implement
//! [`QPacket`]; the algorithms are generic over it and never see anything else.

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
    /// ECN-capable transport: a router may set CE instead of dropping (RFC 3168 §5).
    pub fn is_ect(self) -> bool {
        matches!(self, Ecn::Ect0 | Ecn::Ect1)
    }
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
    fn ecn(&self) -> Ecn;
    /// Set the CE codepoint (only called on ECN-capable packets).
    fn set_ce(&mut self);
}

//! Packet sinks: what else a run makes of the packets that cross its links.
//!
//! The columnar packet log (`packets.parquet`, [`super::PacketLog`]) is built into the
//! [`super::Recorder`]; a sink is a plug-in beside it, handed the whole packet each
//! time one leaves a queue of the links it asks for, and asked at the end for the
//! files it writes into the run folder. The first is the libpcap writer
//! ([`super::pcap::PcapSink`], `record.pcap`).
//!
//! Cost: the network's observer asks the recorder at each departure of a lazy link
//! whether a sink wants it (one load from a list that is empty without sinks); the
//! sinks themselves are called through one `Box<dyn PacketSink>` call per departure
//! of their links.

use aqm::Time;

use super::RunOutput;
use crate::packet::Packet;

/// A file a sink writes into the run folder. The run stays in memory until the
/// caller writes its folder (atomically, with the other files), so the bytes travel
/// with the run's output ([`RunOutput::files`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFile {
    /// The file's name in the run folder (no directory part).
    pub name: String,
    pub bytes: Vec<u8>,
}

/// A consumer of the packets that leave the queues of some links.
pub trait PacketSink: Send {
    /// The links (indices in the run's [`RunOutput::links`]) whose departures it
    /// wants. They run lazily, packet by packet (the simulator builds them so).
    fn links(&self) -> &[u16];

    /// Link `link` starts transmitting `p` at `t`: the packet has left the queue (the
    /// AQM has let it through, CE-marked or not) and goes on the wire. This is what a
    /// capture on the link's egress interface sees, after the qdisc; drops never
    /// reach the wire.
    fn departure(&mut self, link: u16, t: Time, p: &Packet);

    /// The run is over: the sink's files. `run` is everything else the run produced
    /// (its tables, the links' and groups' descriptions).
    fn finish(self: Box<Self>, run: &RunOutput) -> Vec<OutputFile>;
}

//! The scenario's types: what a scenario file declares (the dumbbell's bottleneck and
//! access links, flow groups, recording and metrics options) as serde reads and writes
//! them. Parsing, overrides and validation are in the parent module.

use super::*;

/// When flows start.
#[derive(Clone, Debug, PartialEq)]
pub enum StartSpec {
    /// All at this time.
    At(Duration),
    /// Each uniformly at random in `[from, to]` (Kuhn & Ros: "randomly start in [0; 1] s").
    Uniform(Duration, Duration),
}

impl Default for StartSpec {
    fn default() -> Self {
        StartSpec::At(Duration::ZERO)
    }
}

impl Serialize for StartSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            StartSpec::At(d) => TimeDist::Fixed(d).serialize(s),
            StartSpec::Uniform(a, b) => TimeDist::Uniform(a, b).serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for StartSpec {
    /// The forms of a bounded [`TimeDist`]: a time, or `{ uniform = [a, b] }`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match TimeDist::deserialize(d)? {
            TimeDist::Fixed(t) => Ok(StartSpec::At(t)),
            TimeDist::Uniform(a, b) => Ok(StartSpec::Uniform(a, b)),
            TimeDist::Exponential(_) | TimeDist::Pareto(_) => {
                Err(de::Error::custom("a start time is a time or { uniform = [from, to] }, not a distribution without bounds"))
            }
        }
    }
}

/// The bottleneck link of the dumbbell (Kuhn & Ros, MADPIE Fig. 1: R1 -> R2), and the
/// reverse bottleneck R2 -> R1 that the ACKs cross.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckSpec {
    /// The rate (required, except with a `trace`, where it defaults to the trace's
    /// mean rate and only sizes `bdp` buffers and informs AQMs of the link rate).
    #[serde(default)]
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Buffer of the bottleneck queue: packets, bytes, or multiples of the BDP
    /// (the bottleneck rate times the largest base RTT among the flow groups).
    pub buffer: QueueLimit,
    /// The AQM on the bottleneck queue (default: DropTail).
    #[serde(skip_deserializing)]
    pub aqm: AqmSpec,
    /// Rate changes over time (Pan et al., PIE slides: 50 Mbps, then 10 Mbps at 50 s).
    /// A packet already being serialized finishes at the old rate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub schedule: Vec<RateStep>,
    /// A trace-driven link in Mahimahi's format: each line a millisecond timestamp at
    /// which one 1500-byte packet may leave; the trace repeats. Parsed by hand.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub trace: Option<LinkTrace>,
    /// Buffer of the reverse direction (ACKs), default: the same as `buffer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_buffer: Option<QueueLimit>,
    /// Rate of the reverse direction, default: the same as `rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_rate: Option<Rate>,
    /// One-way delay of the reverse direction, default: the same as `delay`
    /// (Popovsky §2: "a NETEM delay of 70ms in the upstream path").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_delay: Option<Duration>,
    /// The AQM of the reverse queue (default: DropTail).
    #[serde(skip_deserializing)]
    pub reverse_aqm: AqmSpec,
}

impl BottleneckSpec {
    pub fn rev_rate(&self) -> Rate {
        self.reverse_rate.unwrap_or(self.rate)
    }
    pub fn rev_delay(&self) -> Duration {
        self.reverse_delay.unwrap_or(self.delay)
    }
}

/// One step of a capacity schedule: from `at` on, the link runs at `rate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    pub at: Duration,
    pub rate: Rate,
}

/// Access links between hosts and routers (Kuhn & Ros Fig. 1: 100 Mbps, 1 ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessSpec {
    pub rate: Rate,
    pub delay: Duration,
    /// Access queues are DropTail with this buffer (Linux txqueuelen: 1000 packets).
    pub buffer: QueueLimit,
}

impl Default for AccessSpec {
    fn default() -> Self {
        AccessSpec { rate: Rate::from_mbps(100), delay: Duration::from_millis(1), buffer: QueueLimit::Packets(1000) }
    }
}

/// What to record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecordSpec {
    /// One row per packet event on the recorded links (`packets.parquet`).
    pub packets: bool,
    /// Links whose packet events are recorded: "bottleneck", "bottleneck_rev".
    pub links: Vec<String>,
    /// Sampling interval of `timeseries.parquet`.
    pub interval: Duration,
    /// Per-flow rows in the time series (cwnd, RTT, in-flight, delivered).
    pub flow_series: bool,
    /// Flows whose every ACK is recorded (sequence, cwnd, RTT, in flight; Popovsky
    /// Figs. 2-4): flow ids, or group names for all the flows of a group.
    pub flow_trace: Vec<FlowSel>,
    /// One row per UDP datagram received, with its one-way delay (`datagrams.parquet`).
    pub datagrams: bool,
    /// libpcap captures (`packets.pcap`, or `packets.LINK.pcap` each with several):
    /// every packet leaving the link's queue, with synthetic IPv4 + TCP/UDP headers
    /// ([`crate::record::pcap`]). `true` captures the recorded links (`links`), a
    /// list the named link sides. Off by default, and written into the scenario's
    /// JSON only when on (so the runs without it keep their digests).
    #[serde(skip_serializing_if = "PcapSel::is_off")]
    pub pcap: PcapSel,
}

/// `record.pcap`: which link sides get a libpcap capture.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum PcapSel {
    /// `false`, or an empty list.
    #[default]
    Off,
    /// `true`: the recorded links (`record.links`).
    Recorded,
    /// The link sides named.
    Links(Vec<String>),
}

impl PcapSel {
    pub fn is_off(&self) -> bool {
        matches!(self, PcapSel::Off)
    }
}

impl Serialize for PcapSel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PcapSel::Off => s.serialize_bool(false),
            PcapSel::Recorded => s.serialize_bool(true),
            PcapSel::Links(v) => v.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for PcapSel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = PcapSel;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("true, false or a list of link names (such as [\"bottleneck\"])")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<PcapSel, E> {
                Ok(if b { PcapSel::Recorded } else { PcapSel::Off })
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<PcapSel, A::Error> {
                let mut v = Vec::new();
                while let Some(name) = a.next_element::<String>()? {
                    v.push(name);
                }
                Ok(if v.is_empty() { PcapSel::Off } else { PcapSel::Links(v) })
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for RecordSpec {
    fn default() -> Self {
        RecordSpec {
            packets: true,
            links: vec!["bottleneck".into()],
            interval: Duration::from_millis(100),
            flow_series: true,
            flow_trace: Vec::new(),
            datagrams: true,
            pcap: PcapSel::Off,
        }
    }
}

/// A flow by its id, or every flow of a group by the group's name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlowSel {
    Id(u32),
    Group(String),
}

/// How headline figures are computed from the records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSpec {
    /// Bottleneck utilization is bits sent per interval over capacity (MADPIE §III: 1 s).
    pub utilization_interval: Duration,
    /// Goodput per interval (Khademi, Ros & Welzl use 5 s).
    pub goodput_interval: Duration,
    /// Samples before this time are left out of the headline figures.
    pub warmup: Duration,
}

impl Default for MetricsSpec {
    fn default() -> Self {
        MetricsSpec { utilization_interval: Duration::from_secs(1), goodput_interval: Duration::from_secs(1), warmup: Duration::ZERO }
    }
}

/// Settings shared by every kind of flow group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupCommon {
    /// The group's class name in every output.
    pub name: String,
    #[serde(default = "one")]
    pub count: u32,
    #[serde(default)]
    pub start: StartSpec,
    /// When the group's flows stop: bulk senders stop writing new data (what is
    /// written is still delivered), CBR sources fall silent, downloaders make no new
    /// requests (Jou, Tan & Baras §V: 20 FTP flows "arrive at time 100s and leave
    /// at time 300s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Duration>,
    /// The group's own path delays.
    #[serde(default)]
    pub path: PathSpec,
    /// With `[[links]]`: the links the group's data crosses, in order (its ACKs come
    /// back the same way).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<Vec<String>>,
}

pub const GROUP_COMMON_KEYS: &[&str] = &["name", "count", "start", "stop", "path", "route"];

fn one() -> u32 {
    1
}

/// Delays of a group's own path. Groups with different paths share the bottleneck
/// (Kuhn & Ros §V, Fig. 9: senders 1 ms or 201 ms from R1, so base RTTs of 100 ms
/// and 500 ms).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// One-way delay of the senders' access links, both directions (default:
    /// `access.delay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_delay: Option<Duration>,
    /// One-way delay of the receivers' access links, both directions (default:
    /// `access.delay`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_delay: Option<Duration>,
    /// Extra one-way delay on the return path only (receiver to sender).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_delay: Option<Duration>,
    /// Extra one-way delay of each flow, drawn once per flow and added in both
    /// directions: a fixed time or { uniform = [a, b] } (Jou, Tan & Baras §II: web
    /// round-trip propagation delays uniform in (16, 240) ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_delay: Option<TimeDist>,
    /// The host the group's flows are sent from, by name (default: one host of its
    /// own, "NAME.sender"). Groups naming the same host are one host to classifiers
    /// that isolate hosts (CAKE); each group keeps its own access links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_host: Option<String>,
    /// The host the group's flows are received by (default: "NAME.receiver").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver_host: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowGroupSpec {
    #[serde(flatten)]
    pub common: GroupCommon,
    #[serde(flatten)]
    pub traffic: TrafficSpec,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "unnamed")]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Simulated time.
    pub duration: Duration,
    /// The run's seed (`aqmlab run --seed` overrides it).
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// The dumbbell's bottleneck (absent with `[[links]]`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<BottleneckSpec>,
    /// The dumbbell's access links (always present in a dumbbell once parsed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessSpec>,
    /// A general topology instead of the dumbbell. Parsed by hand.
    #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<LinkDecl>,
    #[serde(skip_deserializing)]
    pub flows: Vec<FlowGroupSpec>,
    #[serde(default)]
    pub record: RecordSpec,
    #[serde(default)]
    pub metrics: MetricsSpec,
}

fn unnamed() -> String {
    "unnamed".into()
}
fn one_u64() -> u64 {
    1
}

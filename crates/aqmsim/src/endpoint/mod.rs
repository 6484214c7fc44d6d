//! Endpoints: the hosts at both ends of a flow and the application that drives
//! them, behind one trait ([`Endpoint`]): it starts, takes the packets that reach
//! its hosts, runs its timers, and says when it next needs time (`poll_at`, as
//! smoltcp's sockets). It never sees the clock or the network: time comes in
//! [`Cx::now`], packets go out through [`Cx::out`], application events it wants
//! later go through [`Cx::at`], and its records go to [`Cx::rec`].
//!
//! The traffic kinds of a scenario's flow groups are one registry ([`registry!`]
//! below): each kind is one file with its scenario parameters (the `[[flows]]`
//! table), a [`TrafficKind`] impl that checks them and builds an endpoint, and the
//! endpoint; adding a kind is that file and one line in the list.

pub mod bulk;
pub mod cbr;
pub mod downloads;
pub mod onoff;
pub mod tcp_flow;

use aqm::{Duration, Time};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::packet::Packet;
use crate::record::{FlowSeries, FlowTable, Recorder};
use crate::rng::SimRng;
use crate::tcp::TcpConfig;

/// An application event an endpoint asked for, in their order at equal times (the
/// simulator's event tags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEvent {
    /// A constant-bit-rate source's next datagram.
    Send,
    /// A download client's next request.
    Request,
    /// The group's `stop`: a sender stops writing.
    Stop,
}

/// What a datagram source does at its send event ([`Endpoint::on_send`]).
pub enum SendStep {
    /// This datagram leaves now; the source's next send event is at this time.
    Datagram(Packet, Option<Time>),
    /// Nothing leaves (a stale or late send event).
    Nothing,
    /// Not a lean source: run [`Endpoint::on_app`] with [`AppEvent::Send`] in a context.
    Hook,
}

/// What an endpoint's hook may use.
pub struct Cx<'a> {
    pub now: Time,
    /// The flow's id.
    pub flow: u32,
    /// Packets to send now (the simulator stamps their connection and injects them
    /// in order).
    pub out: &'a mut Vec<Packet>,
    /// Application events to run later.
    pub at: &'a mut Vec<(Time, AppEvent)>,
    pub rec: &'a mut Recorder,
    /// The end of the run.
    pub end: Time,
    /// Record every ACK the flow's sender receives (`record.flow_trace`).
    pub traced: bool,
}

/// A flow's hosts and application.
pub trait Endpoint {
    /// The flow starts.
    fn start(&mut self, cx: &mut Cx<'_>);
    /// A packet of this flow reached one of its hosts.
    fn on_packet(&mut self, p: &Packet, cx: &mut Cx<'_>);
    /// Whether it takes its packets the lean way ([`Endpoint::receive`]): a sink
    /// that sends nothing back, asks for no events and has no timers.
    fn lean_receiver(&self) -> bool {
        false
    }
    /// A packet reached a lean receiver ([`Endpoint::lean_receiver`]): it counts
    /// and records it, at `now`, without a hook context.
    fn receive(&mut self, _p: &Packet, _now: Time, _rec: &mut Recorder) {
        unreachable!("only lean receivers take packets without a context")
    }
    /// Its protocol timers are due (see `poll_at`).
    fn on_timer(&mut self, _cx: &mut Cx<'_>) {}
    /// An application event it asked for is due.
    fn on_app(&mut self, _ev: AppEvent, _cx: &mut Cx<'_>) {}
    /// Its send event ([`AppEvent::Send`]), the lean way: a datagram source without
    /// protocol timers (its `poll_at` is always None) and without records of its
    /// own on sending returns the datagram that leaves now and its next send time,
    /// and the simulator sends and schedules them without a hook context. Any other
    /// endpoint keeps the default, [`SendStep::Hook`]: its `on_app` runs.
    #[inline]
    fn on_send(&mut self, _flow: u32, _now: Time) -> SendStep {
        SendStep::Hook
    }
    /// When its protocol timers next need to run.
    fn poll_at(&self) -> Option<Time> {
        None
    }
    /// The connection its packets belong to: packets of an earlier connection of
    /// the flow are discarded on arrival.
    fn connection(&self) -> u32 {
        0
    }
    /// Its columns of a row of the per-interval flow series.
    fn sample(&self, r: &mut FlowSeries);
    /// Its columns of its row of the flow table, at the end of the run.
    fn finish(&self, t: &mut FlowTable);
}

/// What building an endpoint needs to know of its flow.
pub struct FlowSetup<'a> {
    pub flow: u32,
    /// The flow's index within its group.
    pub index: u32,
    pub group: &'a str,
    pub group_index: u16,
    pub seed: u64,
    pub start: Time,
    /// No application activity at or after this time (the group's `stop`, or the end).
    pub stop: Time,
    /// The flow's two-way propagation delay (its path both ways, with its own extra
    /// delay): what a handshake on the empty path would measure.
    pub base_rtt: Duration,
}

impl FlowSetup<'_> {
    /// The flow's own random stream.
    pub fn rng(&self) -> SimRng {
        crate::rng::stream(self.seed, &format!("group.{}.flow.{}", self.group, self.index))
    }
}

/// What the registry needs from a traffic kind's file, implemented on its scenario
/// parameters.
pub trait TrafficKind: Clone + std::fmt::Debug + PartialEq + Serialize + DeserializeOwned {
    /// What the analysis treats it as: "bulk" (long-lived transfers), "datagrams"
    /// (unresponsive UDP) or "downloads" (finite transfers with download times).
    const FAMILY: &'static str;
    /// The endpoint it builds.
    type Endpoint: Endpoint;
    /// Its TCP settings, if it runs over TCP.
    fn tcp(&self) -> Option<&TcpConfig> {
        None
    }
    /// Checks that cannot be expressed in types: `"field: message"`, the field
    /// under the group's table.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// The application events to schedule at the start besides the flow's start.
    fn stop_event(&self) -> bool {
        false
    }
    /// Files: the distinct sizes when they come from a list; a transfer: its size.
    fn sizes(&self) -> Option<Vec<u64>> {
        None
    }
    /// A UDP source (an unresponsive one: its load does not depend on the network):
    /// its mean offered rate in b/s and its datagram size in bytes, for the run's
    /// metadata (`rate_bps`, `packet_size` of its group) and the budget estimate.
    fn datagrams(&self) -> Option<(u64, u32)> {
        None
    }
    fn build(&self, f: &FlowSetup<'_>) -> Self::Endpoint;
}

macro_rules! registry {
    ($($name:literal => $variant:ident($spec:ty),)*) => {
        /// The traffic of a flow group, tagged by `kind`.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(tag = "kind")]
        pub enum TrafficSpec {
            $( #[serde(rename = $name)] $variant($spec), )*
        }

        /// Every built-in endpoint, dispatched by `match`.
        pub enum AnyEndpoint {
            $( $variant(<$spec as TrafficKind>::Endpoint), )*
        }

        impl TrafficSpec {
            pub const KINDS: &'static [&'static str] = &[$($name),*];
            /// Each kind with its family ([`TrafficKind::FAMILY`]).
            pub const FAMILIES: &'static [(&'static str, &'static str)] = &[$(($name, <$spec as TrafficKind>::FAMILY)),*];

            pub fn kind(&self) -> &'static str {
                match self { $( TrafficSpec::$variant(_) => $name, )* }
            }

            /// Deserialize the table of `kind` (without its `kind` key), with
            /// errors under `prefix`.
            pub(crate) fn parse(prefix: &str, kind: &str, rest: toml::Value) -> Result<TrafficSpec, crate::scenario::ScenarioError> {
                let spec = match kind {
                    $( $name => TrafficSpec::$variant(crate::scenario::de_at::<$spec>(prefix, rest)?), )*
                    other => return Err(crate::scenario::ScenarioError {
                        path: format!("{prefix}.kind"),
                        message: format!("unknown flow kind \"{other}\", expected one of: {}", Self::KINDS.join(", ")),
                    }),
                };
                Ok(spec)
            }

            pub fn tcp(&self) -> Option<&TcpConfig> {
                match self { $( TrafficSpec::$variant(s) => s.tcp(), )* }
            }
            pub fn check(&self) -> Result<(), String> {
                match self { $( TrafficSpec::$variant(s) => s.check(), )* }
            }
            pub fn stop_event(&self) -> bool {
                match self { $( TrafficSpec::$variant(s) => s.stop_event(), )* }
            }
            pub fn sizes(&self) -> Option<Vec<u64>> {
                match self { $( TrafficSpec::$variant(s) => s.sizes(), )* }
            }
            pub fn datagrams(&self) -> Option<(u64, u32)> {
                match self { $( TrafficSpec::$variant(s) => s.datagrams(), )* }
            }
            pub fn build(&self, f: &FlowSetup<'_>) -> AnyEndpoint {
                match self { $( TrafficSpec::$variant(s) => AnyEndpoint::$variant(s.build(f)), )* }
            }
        }

        impl Endpoint for AnyEndpoint {
            fn start(&mut self, cx: &mut Cx<'_>) {
                match self { $( AnyEndpoint::$variant(e) => e.start(cx), )* }
            }
            #[inline]
            fn on_packet(&mut self, p: &Packet, cx: &mut Cx<'_>) {
                match self { $( AnyEndpoint::$variant(e) => e.on_packet(p, cx), )* }
            }
            fn lean_receiver(&self) -> bool {
                match self { $( AnyEndpoint::$variant(e) => e.lean_receiver(), )* }
            }
            #[inline]
            fn receive(&mut self, p: &Packet, now: Time, rec: &mut Recorder) {
                match self { $( AnyEndpoint::$variant(e) => e.receive(p, now, rec), )* }
            }
            #[inline]
            fn on_timer(&mut self, cx: &mut Cx<'_>) {
                match self { $( AnyEndpoint::$variant(e) => e.on_timer(cx), )* }
            }
            fn on_app(&mut self, ev: AppEvent, cx: &mut Cx<'_>) {
                match self { $( AnyEndpoint::$variant(e) => e.on_app(ev, cx), )* }
            }
            #[inline]
            fn on_send(&mut self, flow: u32, now: Time) -> SendStep {
                match self { $( AnyEndpoint::$variant(e) => e.on_send(flow, now), )* }
            }
            #[inline]
            fn poll_at(&self) -> Option<Time> {
                match self { $( AnyEndpoint::$variant(e) => e.poll_at(), )* }
            }
            #[inline]
            fn connection(&self) -> u32 {
                match self { $( AnyEndpoint::$variant(e) => e.connection(), )* }
            }
            fn sample(&self, r: &mut FlowSeries) {
                match self { $( AnyEndpoint::$variant(e) => e.sample(r), )* }
            }
            fn finish(&self, t: &mut FlowTable) {
                match self { $( AnyEndpoint::$variant(e) => e.finish(t), )* }
            }
        }
    };
}

// The built-in traffic kinds: kind => variant(parameters). One line each.
registry! {
    "bulk" => Bulk(bulk::BulkSpec),
    "cbr" => Cbr(cbr::CbrSpec),
    "files" => Files(downloads::FilesSpec),
    "web" => Web(downloads::WebSpec),
    "transfer" => Transfer(downloads::TransferSpec),
    "onoff" => OnOff(onoff::OnOffSpec),
}

//! The registry of built-in AQMs: the one list below ([`registry!`]) generates
//! [`AqmSpec`] (which algorithm, with which parameters: the scenario schema), [`AnyAqm`]
//! (a closed enum that runs it, dispatched by `match`) and [`AqmSpec::KINDS`] (names,
//! sources and parameter docs for `aqmlab list` and the docs).
//!
//! Adding an AQM: its own file with its parameters, its state machine and an
//! [`AqmParams`] impl (title, source, parameter docs, validation, constructor), and
//! one line in the list. Nothing in the simulator or the emulator changes.

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};

use crate::queue::{Backlog, Limit};
use crate::time::Time;
use crate::{Admit, Aqm, Counter, Ctx, Departure, Dropped, Probe, QPacket, Stats};
// implemented by each AQM's file; kept in lib.rs beside `Aqm`
pub use crate::AqmParams;

/// Name, one-line description, source, and the parameter documentation of each kind.
pub struct KindInfo {
    pub kind: &'static str,
    pub title: &'static str,
    pub source: &'static str,
    pub params: &'static [(&'static str, &'static str)],
}

macro_rules! registry {
    ($($name:literal => $variant:ident($params:ty),)*) => {
        /// An AQM and its parameters, as a scenario names it: `{ kind = "pie", target = "20ms" }`.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(tag = "kind")]
        pub enum AqmSpec {
            $( #[serde(rename = $name)] $variant($params), )*
        }

        /// Every built-in AQM, dispatched by `match` (no trait objects on the hot path).
        /// One link holds one, so the variants' sizes differ at no cost worth a box's
        /// pointer chase per packet.
        #[derive(Debug)]
        #[allow(clippy::large_enum_variant)]
        pub enum AnyAqm<P: QPacket> {
            $( $variant(<$params as AqmParams>::Algo<P>), )*
        }

        impl AqmSpec {
            /// Every kind, in the registry's order.
            pub const KINDS: &'static [KindInfo] = &[
                $( KindInfo {
                    kind: $name,
                    title: <$params as AqmParams>::TITLE,
                    source: <$params as AqmParams>::SOURCE,
                    params: <$params as AqmParams>::DOC,
                }, )*
            ];

            pub fn kind(&self) -> &'static str {
                match self { $( AqmSpec::$variant(_) => $name, )* }
            }

            /// The default parameters of `kind`.
            pub fn default_for(kind: &str) -> Option<AqmSpec> {
                match kind {
                    $( $name => {
                        let mut p = <$params>::default();
                        p.complete();
                        Some(AqmSpec::$variant(p))
                    } )*
                    _ => None,
                }
            }

            /// Deserialize the parameters of `kind` (the table without its `kind` key).
            /// The caller extracts the tag, so that errors inside the parameters keep
            /// their field names (serde's internally tagged enums lose them).
            pub fn from_kind<'de, D: Deserializer<'de>>(kind: &str, params: D) -> Result<AqmSpec, D::Error> {
                use serde::de::Error;
                let spec = match kind {
                    $( $name => {
                        let mut p = <$params>::deserialize(params)?;
                        p.complete();
                        AqmSpec::$variant(p)
                    } )*
                    other => {
                        let kinds: Vec<&str> = Self::KINDS.iter().map(|k| k.kind).collect();
                        return Err(D::Error::custom(format!("unknown AQM kind \"{other}\", expected one of: {}", kinds.join(", "))));
                    }
                };
                spec.validate().map_err(D::Error::custom)?;
                Ok(spec)
            }

            /// Checks that cannot be expressed in types; the message starts with the field name.
            pub fn validate(&self) -> Result<(), String> {
                match self { $( AqmSpec::$variant(p) => p.check(), )* }
            }

            /// Whether it marks ECN-capable packets CE (rather than only dropping).
            pub fn marks_ecn(&self) -> bool {
                match self { $( AqmSpec::$variant(p) => p.marks_ecn(), )* }
            }

            pub fn build<P: QPacket>(&self, limit: Limit) -> AnyAqm<P> {
                match self { $( AqmSpec::$variant(p) => AnyAqm::$variant(p.build(limit)), )* }
            }

            /// The heap `build` allocates (see [`AqmParams::built_bytes`]).
            pub fn built_bytes<P: QPacket>(&self) -> usize {
                match self { $( AqmSpec::$variant(p) => p.built_bytes::<P>(), )* }
            }
        }

        impl<P: QPacket> AnyAqm<P> {
            /// The scenario name of this AQM.
            pub fn kind(&self) -> &'static str {
                match self { $( AnyAqm::$variant(_) => $name, )* }
            }
        }

        macro_rules! dispatch {
            ($self_:expr, $a:ident => $body:expr) => {
                match $self_ { $( AnyAqm::$variant($a) => $body, )* }
            };
        }
    };
}

// The built-in AQMs: kind => variant(parameters). One line each.
registry! {
    "droptail" => Droptail(crate::droptail::DropTailParams),
    "pie" => Pie(crate::pie::PieParams),
    "madpie" => Madpie(crate::madpie::MadPieParams),
    "red" => Red(crate::red::RedParams),
    "ared" => Ared(crate::ared::AredParams),
    "ared_sliding" => AredSliding(crate::ared::AredSlidingParams),
    "codel" => Codel(crate::codel::CodelParams),
    "fq_codel" => FqCodel(crate::fq_codel::FqCodelParams),
    "red_tail" => RedTail(crate::red_tail::RedTailParams),
    "dualpi2" => DualPi2(crate::dualpi2::DualPi2Params),
    "fq_pie" => FqPie(crate::fq_pie::FqPieParams),
    "cobalt" => Cobalt(crate::cobalt::CobaltParams),
    "cake" => Cake(crate::cake::CakeParams),
    "blue" => Blue(crate::blue::BlueParams),
}

impl Default for AqmSpec {
    fn default() -> Self {
        AqmSpec::Droptail(Default::default())
    }
}

impl<P: QPacket> Aqm<P> for AnyAqm<P> {
    #[inline]
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        dispatch!(self, a => a.enqueue(pkt, ctx, drops))
    }
    #[inline]
    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        dispatch!(self, a => a.dequeue(ctx, drops))
    }
    #[inline]
    fn backlog(&self) -> Backlog {
        dispatch!(self, a => a.backlog())
    }
    #[inline]
    fn next_timer(&self) -> Option<Time> {
        dispatch!(self, a => a.next_timer())
    }
    fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        dispatch!(self, a => a.on_timer(ctx))
    }
    fn probe(&self) -> Probe {
        dispatch!(self, a => a.probe())
    }
    fn counters(&self, out: &mut Vec<Counter>) {
        dispatch!(self, a => a.counters(out))
    }
}

/// An AQM with its counters: what a link holds. Counting happens here, once, for
/// every algorithm, from the verdicts and drop lists the algorithm returns.
#[derive(Debug)]
pub struct Qdisc<P: QPacket> {
    pub aqm: AnyAqm<P>,
    pub stats: Stats,
    /// The queue's backlog, followed here from the same verdicts, drop lists and
    /// departures (a packet accepted: +1; a departure, or a drop from inside the
    /// queue, i.e. one with a sojourn: -1), so that the link reads it without a
    /// dispatch to the algorithm. [`Qdisc::conserved`] checks it against the
    /// algorithm's own count. (`on_timer` never moves packets: it has no drop list.)
    backlog: Backlog,
}

impl<P: QPacket> Qdisc<P> {
    pub fn new(spec: &AqmSpec, limit: Limit) -> Self {
        Qdisc { aqm: spec.build(limit), stats: Stats::default(), backlog: Backlog::default() }
    }

    #[inline]
    fn count_drops(&mut self, drops: &[Dropped<P>], from: usize) {
        for d in &drops[from..] {
            self.stats.drops[d.cause.index()] += 1;
            if d.sojourn.is_some() {
                self.backlog.packets -= 1;
                self.backlog.bytes -= d.pkt.size_bytes() as u64;
            }
        }
    }

    #[inline]
    pub fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let size = pkt.size_bytes() as u64;
        let before = drops.len();
        self.stats.arrivals += 1;
        self.stats.ecn_arrived[pkt.ecn().index()] += 1;
        let admit = self.aqm.enqueue(pkt, ctx, drops);
        match admit {
            Admit::Queued => {
                self.stats.enqueued += 1;
                self.stats.bytes_enqueued += size;
                self.backlog.packets += 1;
                self.backlog.bytes += size;
            }
            Admit::Marked(c) => {
                self.stats.enqueued += 1;
                self.stats.bytes_enqueued += size;
                self.stats.marks[c.index()] += 1;
                self.backlog.packets += 1;
                self.backlog.bytes += size;
            }
            Admit::Dropped(_) => {}
        }
        self.count_drops(drops, before);
        admit
    }

    #[inline]
    pub fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let before = drops.len();
        let d = self.aqm.dequeue(ctx, drops);
        self.count_drops(drops, before);
        if let Some(dep) = &d {
            let size = dep.pkt.size_bytes() as u64;
            self.stats.dequeued += 1;
            self.stats.bytes_dequeued += size;
            self.stats.ecn_dequeued[dep.pkt.ecn().index()] += 1;
            self.backlog.packets -= 1;
            self.backlog.bytes -= size;
            if let Some(c) = dep.marked {
                self.stats.marks[c.index()] += 1;
            }
        }
        d
    }

    #[inline]
    pub fn backlog(&self) -> Backlog {
        debug_assert_eq!(self.backlog, self.aqm.backlog());
        self.backlog
    }
    #[inline]
    pub fn next_timer(&self) -> Option<Time> {
        self.aqm.next_timer()
    }
    pub fn on_timer(&mut self, ctx: &mut Ctx<'_>) {
        self.aqm.on_timer(ctx)
    }
    pub fn probe(&self) -> Probe {
        self.aqm.probe()
    }
    /// The AQM's own named figures (see [`Counter`]).
    pub fn counters(&self) -> Vec<Counter> {
        let mut out = Vec::new();
        self.aqm.counters(&mut out);
        out
    }

    /// Packet conservation inside the queue: every arrival was refused or accepted,
    /// and every accepted packet has left, was dropped from inside, or is still here
    /// (by the algorithm's own count, which the followed backlog must equal).
    pub fn conserved(&self) -> bool {
        let s = &self.stats;
        let Some(refused) = s.arrivals.checked_sub(s.enqueued) else { return false };
        let Some(dropped_inside) = s.dropped().checked_sub(refused) else { return false };
        let held = self.aqm.backlog();
        held == self.backlog
            && s.enqueued == s.dequeued + dropped_inside + held.packets
            && s.ecn_arrived.iter().sum::<u64>() == s.arrivals
            && s.ecn_dequeued.iter().sum::<u64>() == s.dequeued
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_listed_once_and_have_defaults() {
        for k in AqmSpec::KINDS {
            let spec = AqmSpec::default_for(k.kind).expect(k.kind);
            assert_eq!(spec.kind(), k.kind);
            assert!(spec.validate().is_ok());
        }
    }

    #[test]
    fn every_parameter_is_documented_and_every_doc_is_a_parameter() {
        for k in AqmSpec::KINDS {
            let spec = AqmSpec::default_for(k.kind).unwrap();
            let v = serde_json::to_value(&spec).unwrap();
            let mut fields: Vec<String> = v.as_object().unwrap().keys().filter(|f| *f != "kind").cloned().collect();
            fields.sort();
            let mut doc: Vec<String> = k.params.iter().map(|(n, _)| n.to_string()).collect();
            doc.sort();
            assert_eq!(fields, doc, "kind {}", k.kind);
        }
    }

    #[test]
    fn every_kind_builds_and_round_trips_through_its_schema() {
        use crate::Limit;
        let mut seen = std::collections::BTreeSet::new();
        for k in AqmSpec::KINDS {
            assert!(seen.insert(k.kind), "{} listed twice", k.kind);
            let spec = AqmSpec::default_for(k.kind).unwrap();
            let q: AnyAqm<crate::testing::TestPkt> = spec.build(Limit::packets(100));
            assert_eq!(q.kind(), k.kind);
            let mut v = serde_json::to_value(&spec).unwrap();
            v.as_object_mut().unwrap().remove("kind");
            let again = AqmSpec::from_kind(k.kind, v).unwrap_or_else(|e| panic!("{}: {e}", k.kind));
            assert_eq!(again, spec, "{}", k.kind);
        }
    }

    #[test]
    fn ared_sliding_turns_sliding_on() {
        let spec = AqmSpec::from_kind("ared_sliding", serde_json::json!({"max_p": 0.2})).unwrap();
        match spec {
            AqmSpec::AredSliding(p) => assert_eq!(p.0.sliding, Some(crate::ared::SlidingParams::default())),
            other => panic!("{other:?}"),
        }
        let spec = AqmSpec::from_kind("ared_sliding", serde_json::json!({"sliding": {"gamma": 0.1}})).unwrap();
        match spec {
            AqmSpec::AredSliding(p) => assert_eq!(p.0.sliding.unwrap().gamma, 0.1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn nested_parameters_are_checked_too() {
        let e = AqmSpec::from_kind("madpie", serde_json::json!({"pie": {"tarrget": "5ms"}})).unwrap_err().to_string();
        assert!(e.contains("tarrget"), "{e}");
        let e = AqmSpec::from_kind("madpie", serde_json::json!({"pie": {"alpha": -1.0}})).unwrap_err().to_string();
        assert!(e.starts_with("pie.alpha:"), "{e}");
        let e = AqmSpec::from_kind("red_tail", serde_json::json!({"ared": {"min_th": "30KB", "max_th": "20KB"}})).unwrap_err().to_string();
        assert!(e.starts_with("ared.max_th:"), "{e}");
        let e = AqmSpec::from_kind("red", serde_json::json!({"min_th": "1bdp"})).unwrap_err().to_string();
        assert!(e.starts_with("min_th:"), "{e}");
    }

    #[test]
    fn unknown_kind_is_named() {
        let v = serde_json::json!({});
        let e = AqmSpec::from_kind("nosuch", v).unwrap_err().to_string();
        assert!(e.contains("\"nosuch\"") && e.contains("pie"), "{e}");
    }

    #[test]
    fn unknown_parameter_is_named() {
        let v = serde_json::json!({"target": "20ms", "tarrget": "5ms"});
        let e = AqmSpec::from_kind("pie", v).unwrap_err().to_string();
        assert!(e.contains("tarrget"), "{e}");
    }
}

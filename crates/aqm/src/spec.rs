//! The registry of built-in AQMs: [`AqmSpec`] (which algorithm, with which
//! parameters; the scenario schema) and [`AnyAqm`] (a closed enum that runs it).
//!
//! Adding an AQM: one file with its params and state machine, one variant in each
//! enum below, one line in [`AqmSpec::KINDS`] and in [`AqmSpec::from_kind`].

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};

use crate::ared::{Ared, AredParams, SlidingParams};
use crate::codel::{Codel, CodelParams};
use crate::droptail::{DropTail, DropTailParams};
use crate::fq_codel::{FqCodel, FqCodelParams};
use crate::madpie::{MadPie, MadPieParams};
use crate::pie::{Pie, PieParams};
use crate::red::{Red, RedParams};
use crate::red_tail::{RedTail, RedTailParams};
use crate::queue::{Backlog, Limit};
use crate::time::Time;
use crate::{Admit, Aqm, Ctx, Departure, Dropped, Probe, QPacket, Stats};

/// An AQM and its parameters, as a scenario names it: `{ kind = "pie", target = "20ms" }`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AqmSpec {
    Droptail(DropTailParams),
    Pie(PieParams),
    Madpie(MadPieParams),
    Red(RedParams),
    Ared(AredParams),
    /// Adaptive RED with `sliding` on by default.
    AredSliding(AredParams),
    Codel(CodelParams),
    FqCodel(FqCodelParams),
    RedTail(RedTailParams),
}

impl Default for AqmSpec {
    fn default() -> Self {
        AqmSpec::Droptail(DropTailParams::default())
    }
}

/// Name, one-line description, source, and the parameter documentation of each kind.
pub struct KindInfo {
    pub kind: &'static str,
    pub title: &'static str,
    pub source: &'static str,
    pub params: &'static [(&'static str, &'static str)],
}

impl AqmSpec {
    pub const KINDS: &'static [KindInfo] = &[
        KindInfo {
            kind: "droptail",
            title: "FIFO that drops arrivals when the buffer is full",
            source: "the classic router queue",
            params: DropTailParams::DOC,
        },
        KindInfo {
            kind: "pie",
            title: "Proportional Integral controller Enhanced",
            source: "Pan et al., RFC 8033 (2017)",
            params: PieParams::DOC,
        },
        KindInfo {
            kind: "madpie",
            title: "PIE plus at most one deterministic drop per update while the delay estimate exceeds tau_DD",
            source: "Kuhn & Ros, \"Improving PIE's performance over high-delay paths\", §II",
            params: MadPieParams::DOC,
        },
        KindInfo {
            kind: "red",
            title: "Random Early Detection",
            source: "Floyd & Jacobson, IEEE/ACM Trans. Networking 1(4), 1993",
            params: RedParams::DOC,
        },
        KindInfo {
            kind: "ared",
            title: "Adaptive RED: max_p adapted toward a target queue, automatic parameters",
            source: "Floyd, Gummadi & Shenker, \"Adaptive RED\", ICIR technical report, 2001",
            params: AredParams::DOC,
        },
        KindInfo {
            kind: "ared_sliding",
            title: "Adaptive RED with sliding thresholds holding the drop probability in (P_L, P_U)",
            source: "Jou, Tan & Baras, \"A Parallel Virtual Queue Structure for AQM\", CSHCN TR 2003-18, §V",
            params: AredParams::DOC,
        },
        KindInfo {
            kind: "codel",
            title: "Controlled Delay: drop at dequeue on the interval/sqrt(count) schedule",
            source: "Nichols, Jacobson, McGregor & Iyengar, RFC 8289 (2018)",
            params: CodelParams::DOC,
        },
        KindInfo {
            kind: "fq_codel",
            title: "Flow Queue CoDel: DRR over hashed flow queues, CoDel in each",
            source: "Hoeiland-Joergensen, McKenney, Taht, Gettys & Dumazet, RFC 8290 (2018)",
            params: FqCodelParams::DOC,
        },
        KindInfo {
            kind: "red_tail",
            title: "RED+Tail: drop-tail and Adaptive RED virtual queues sharing one buffer",
            source: "Jou, Tan & Baras, \"A Parallel Virtual Queue Structure for AQM\", CSHCN TR 2003-18, §III",
            params: RedTailParams::DOC,
        },
    ];

    pub fn kind(&self) -> &'static str {
        match self {
            AqmSpec::Droptail(_) => "droptail",
            AqmSpec::Pie(_) => "pie",
            AqmSpec::Madpie(_) => "madpie",
            AqmSpec::Red(_) => "red",
            AqmSpec::Ared(_) => "ared",
            AqmSpec::AredSliding(_) => "ared_sliding",
            AqmSpec::Codel(_) => "codel",
            AqmSpec::FqCodel(_) => "fq_codel",
            AqmSpec::RedTail(_) => "red_tail",
        }
    }

    /// The default parameters of `kind`.
    pub fn default_for(kind: &str) -> Option<AqmSpec> {
        Some(match kind {
            "droptail" => AqmSpec::Droptail(DropTailParams::default()),
            "pie" => AqmSpec::Pie(PieParams::default()),
            "madpie" => AqmSpec::Madpie(MadPieParams::default()),
            "red" => AqmSpec::Red(RedParams::default()),
            "ared" => AqmSpec::Ared(AredParams::default()),
            "ared_sliding" => AqmSpec::AredSliding(AredParams { sliding: Some(SlidingParams::default()), ..AredParams::default() }),
            "codel" => AqmSpec::Codel(CodelParams::default()),
            "fq_codel" => AqmSpec::FqCodel(FqCodelParams::default()),
            "red_tail" => AqmSpec::RedTail(RedTailParams::default()),
            _ => return None,
        })
    }

    /// Deserialize the parameters of `kind` (the table without its `kind` key).
    /// The caller extracts the tag, so that errors inside the parameters keep their
    /// field names (serde's internally tagged enums lose them).
    pub fn from_kind<'de, D: Deserializer<'de>>(kind: &str, params: D) -> Result<AqmSpec, D::Error> {
        use serde::de::Error;
        let spec = match kind {
            "droptail" => AqmSpec::Droptail(DropTailParams::deserialize(params)?),
            "pie" => AqmSpec::Pie(PieParams::deserialize(params)?),
            "madpie" => AqmSpec::Madpie(MadPieParams::deserialize(params)?),
            "red" => AqmSpec::Red(RedParams::deserialize(params)?),
            "ared" => AqmSpec::Ared(AredParams::deserialize(params)?),
            "ared_sliding" => {
                let mut p = AredParams::deserialize(params)?;
                p.sliding.get_or_insert_with(SlidingParams::default);
                AqmSpec::AredSliding(p)
            }
            "codel" => AqmSpec::Codel(CodelParams::deserialize(params)?),
            "fq_codel" => AqmSpec::FqCodel(FqCodelParams::deserialize(params)?),
            "red_tail" => AqmSpec::RedTail(RedTailParams::deserialize(params)?),
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
        match self {
            AqmSpec::Droptail(_) => Ok(()),
            AqmSpec::Pie(p) => p.validate(),
            AqmSpec::Madpie(p) => p.validate(),
            AqmSpec::Red(p) => p.validate(),
            AqmSpec::Ared(p) | AqmSpec::AredSliding(p) => p.validate(),
            AqmSpec::Codel(p) => p.validate(),
            AqmSpec::FqCodel(p) => p.validate(),
            AqmSpec::RedTail(p) => p.validate(),
        }
    }

    pub fn build<P: QPacket>(&self, limit: Limit) -> AnyAqm<P> {
        match self {
            AqmSpec::Droptail(p) => AnyAqm::Droptail(DropTail::new(p, limit)),
            AqmSpec::Pie(p) => AnyAqm::Pie(Pie::new(p, limit)),
            AqmSpec::Madpie(p) => AnyAqm::Madpie(MadPie::new(p, limit)),
            AqmSpec::Red(p) => AnyAqm::Red(Red::new(p, limit)),
            AqmSpec::Ared(p) => AnyAqm::Ared(Ared::new(p, limit)),
            AqmSpec::AredSliding(p) => AnyAqm::AredSliding(Ared::new(p, limit)),
            AqmSpec::Codel(p) => AnyAqm::Codel(Codel::new(p, limit)),
            AqmSpec::FqCodel(p) => AnyAqm::FqCodel(Box::new(FqCodel::new(p, limit))),
            AqmSpec::RedTail(p) => AnyAqm::RedTail(RedTail::new(p, limit)),
        }
    }
}

/// Every built-in AQM, dispatched by `match` (no trait objects on the hot path).
#[derive(Debug)]
pub enum AnyAqm<P> {
    Droptail(DropTail<P>),
    Pie(Pie<P>),
    Madpie(MadPie<P>),
    Red(Red<P>),
    Ared(Ared<P>),
    AredSliding(Ared<P>),
    Codel(Codel<P>),
    FqCodel(Box<FqCodel<P>>),
    RedTail(RedTail<P>),
}

macro_rules! dispatch {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            AnyAqm::Droptail($a) => $body,
            AnyAqm::Pie($a) => $body,
            AnyAqm::Madpie($a) => $body,
            AnyAqm::Red($a) => $body,
            AnyAqm::Ared($a) => $body,
            AnyAqm::AredSliding($a) => $body,
            AnyAqm::Codel($a) => $body,
            AnyAqm::FqCodel($a) => $body,
            AnyAqm::RedTail($a) => $body,
        }
    };
}

impl<P> AnyAqm<P> {
    /// The scenario name of this AQM.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyAqm::Droptail(_) => "droptail",
            AnyAqm::Pie(_) => "pie",
            AnyAqm::Madpie(_) => "madpie",
            AnyAqm::Red(_) => "red",
            AnyAqm::Ared(_) => "ared",
            AnyAqm::AredSliding(_) => "ared_sliding",
            AnyAqm::Codel(_) => "codel",
            AnyAqm::FqCodel(_) => "fq_codel",
            AnyAqm::RedTail(_) => "red_tail",
        }
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
}

/// An AQM with its counters: what a link holds. Counting happens here, once, for
/// every algorithm, from the verdicts and drop lists the algorithm returns.
#[derive(Debug)]
pub struct Qdisc<P> {
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

    /// Packet conservation inside the queue: every arrival was refused or accepted,
    /// and every accepted packet has left, was dropped from inside, or is still here
    /// (by the algorithm's own count, which the followed backlog must equal).
    pub fn conserved(&self) -> bool {
        let s = &self.stats;
        let Some(refused) = s.arrivals.checked_sub(s.enqueued) else { return false };
        let Some(dropped_inside) = s.dropped().checked_sub(refused) else { return false };
        let held = self.aqm.backlog();
        held == self.backlog && s.enqueued == s.dequeued + dropped_inside + held.packets
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
            AqmSpec::AredSliding(p) => assert_eq!(p.sliding, Some(SlidingParams::default())),
            other => panic!("{other:?}"),
        }
        let spec = AqmSpec::from_kind("ared_sliding", serde_json::json!({"sliding": {"gamma": 0.1}})).unwrap();
        match spec {
            AqmSpec::AredSliding(p) => assert_eq!(p.sliding.unwrap().gamma, 0.1),
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
        let e = AqmSpec::from_kind("blue", v).unwrap_err().to_string();
        assert!(e.contains("\"blue\"") && e.contains("pie"), "{e}");
    }

    #[test]
    fn unknown_parameter_is_named() {
        let v = serde_json::json!({"target": "20ms", "tarrget": "5ms"});
        let e = AqmSpec::from_kind("pie", v).unwrap_err().to_string();
        assert!(e.contains("tarrget"), "{e}");
    }
}

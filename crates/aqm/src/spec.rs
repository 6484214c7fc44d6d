//! The registry of built-in AQMs: [`AqmSpec`] (which algorithm, with which
//! parameters; the scenario schema) and [`AnyAqm`] (a closed enum that runs it).
//!
//! Adding an AQM: one file with its params and state machine, one variant in each
//! enum below, one line in [`AqmSpec::KINDS`] and in [`AqmSpec::from_kind`].

use serde::de::Deserializer;
use serde::{Deserialize, Serialize};

use crate::droptail::{DropTail, DropTailParams};
use crate::pie::{Pie, PieParams};
use crate::queue::{Backlog, Limit};
use crate::time::Time;
use crate::{Admit, Aqm, Ctx, Departure, Dropped, Probe, QPacket, Stats};

/// An AQM and its parameters, as a scenario names it: `{ kind = "pie", target = "20ms" }`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AqmSpec {
    Droptail(DropTailParams),
    Pie(PieParams),
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
    ];

    pub fn kind(&self) -> &'static str {
        match self {
            AqmSpec::Droptail(_) => "droptail",
            AqmSpec::Pie(_) => "pie",
        }
    }

    /// The default parameters of `kind`.
    pub fn default_for(kind: &str) -> Option<AqmSpec> {
        Some(match kind {
            "droptail" => AqmSpec::Droptail(DropTailParams::default()),
            "pie" => AqmSpec::Pie(PieParams::default()),
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
        }
    }

    pub fn build<P: QPacket>(&self, limit: Limit) -> AnyAqm<P> {
        match self {
            AqmSpec::Droptail(p) => AnyAqm::Droptail(DropTail::new(p, limit)),
            AqmSpec::Pie(p) => AnyAqm::Pie(Pie::new(p, limit)),
        }
    }
}

/// Every built-in AQM, dispatched by `match` (no trait objects on the hot path).
#[derive(Debug)]
pub enum AnyAqm<P> {
    Droptail(DropTail<P>),
    Pie(Pie<P>),
}

macro_rules! dispatch {
    ($self:expr, $a:ident => $body:expr) => {
        match $self {
            AnyAqm::Droptail($a) => $body,
            AnyAqm::Pie($a) => $body,
        }
    };
}

impl<P> AnyAqm<P> {
    /// The scenario name of this AQM.
    pub fn kind(&self) -> &'static str {
        match self {
            AnyAqm::Droptail(_) => "droptail",
            AnyAqm::Pie(_) => "pie",
        }
    }
}

impl<P: QPacket> Aqm<P> for AnyAqm<P> {
    fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        dispatch!(self, a => a.enqueue(pkt, ctx, drops))
    }
    fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        dispatch!(self, a => a.dequeue(ctx, drops))
    }
    fn backlog(&self) -> Backlog {
        dispatch!(self, a => a.backlog())
    }
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
}

impl<P: QPacket> Qdisc<P> {
    pub fn new(spec: &AqmSpec, limit: Limit) -> Self {
        Qdisc { aqm: spec.build(limit), stats: Stats::default() }
    }

    fn count_drops(&mut self, drops: &[Dropped<P>], from: usize) {
        for d in &drops[from..] {
            self.stats.drops[d.cause.index()] += 1;
        }
    }

    pub fn enqueue(&mut self, pkt: P, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Admit {
        let size = pkt.size_bytes() as u64;
        let before = drops.len();
        self.stats.arrivals += 1;
        let admit = self.aqm.enqueue(pkt, ctx, drops);
        match admit {
            Admit::Queued => {
                self.stats.enqueued += 1;
                self.stats.bytes_enqueued += size;
            }
            Admit::Marked(c) => {
                self.stats.enqueued += 1;
                self.stats.bytes_enqueued += size;
                self.stats.marks[c.index()] += 1;
            }
            Admit::Dropped(_) => {}
        }
        self.count_drops(drops, before);
        admit
    }

    pub fn dequeue(&mut self, ctx: &mut Ctx<'_>, drops: &mut Vec<Dropped<P>>) -> Option<Departure<P>> {
        let before = drops.len();
        let d = self.aqm.dequeue(ctx, drops);
        self.count_drops(drops, before);
        if let Some(dep) = &d {
            self.stats.dequeued += 1;
            self.stats.bytes_dequeued += dep.pkt.size_bytes() as u64;
            if let Some(c) = dep.marked {
                self.stats.marks[c.index()] += 1;
            }
        }
        d
    }

    pub fn backlog(&self) -> Backlog {
        self.aqm.backlog()
    }
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
    /// and every accepted packet has left, was dropped from inside, or is still here.
    pub fn conserved(&self) -> bool {
        let s = &self.stats;
        let Some(refused) = s.arrivals.checked_sub(s.enqueued) else { return false };
        let Some(dropped_inside) = s.dropped().checked_sub(refused) else { return false };
        s.enqueued == s.dequeued + dropped_inside + self.backlog().packets
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

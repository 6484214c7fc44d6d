//! Topologies: the links a scenario declares and the route of each flow group.
//!
//! The dumbbell (Kuhn & Ros, MADPIE Fig. 1) is the default, per flow group `g`:
//!
//! ```text
//!   snd_g --access--> R1 ==bottleneck==> R2 --access--> dst_g      (data)
//!   snd_g <--access-- R1 <=bottleneck_rev= R2 <--access-- dst_g    (ACKs)
//! ```
//!
//! Each group has its own access links; all groups share the bottleneck in each
//! direction.

use aqm::{AqmSpec, Duration, Limit, Rate, Time};

use super::link::{Link, LinkConfig};
use super::trace::LinkTrace;
use crate::packet::Packet;
use crate::record::Monitor;
use crate::rng;
use crate::scenario::{Scenario, ScenarioError};

/// Links and routes, ready for the network.
pub struct Built {
    pub links: Vec<Link<Packet>>,
    /// Per flow group: the data route and the return route, as link indices.
    pub routes: Vec<[Vec<u16>; 2]>,
    /// Links whose packet events are recorded, in the packet log's order.
    pub logged: Vec<u16>,
    /// Links with streaming histograms, in the histograms' order.
    pub monitors: Vec<Monitor>,
}

/// One link of a scenario, before it is built.
pub struct LinkSpec<'a> {
    pub name: String,
    pub rate: Rate,
    pub delay: Duration,
    pub limit: Limit,
    pub aqm: &'a AqmSpec,
    pub schedule: Vec<(Time, Rate)>,
    pub trace: Option<LinkTrace>,
}

fn build(seed: u64, s: LinkSpec<'_>) -> Link<Packet> {
    let rng = rng::stream(seed, &format!("link.{}", s.name));
    Link::new(LinkConfig { name: &s.name, rate: s.rate, delay: s.delay, limit: s.limit, aqm: s.aqm, schedule: s.schedule, trace: s.trace, rng })
}

/// The links and routes of a scenario: its `[[links]]`, or the dumbbell.
pub fn build_topology(sc: &Scenario) -> Result<Built, ScenarioError> {
    match sc.dumbbell() {
        Some(_) => dumbbell(sc),
        None => general(sc),
    }
}

/// The dumbbell of a scenario: the bottleneck (0), the reverse bottleneck (1), then
/// each group's access links `NAME.up`, `NAME.down` (data) and `NAME.up_rev`,
/// `NAME.down_rev` (ACKs).
fn dumbbell(sc: &Scenario) -> Result<Built, ScenarioError> {
    let seed = sc.seed;
    let b = sc.dumbbell().expect("a dumbbell");
    let fwd_limit = sc.resolve_limit("bottleneck.buffer", b.buffer)?;
    let rev_limit = sc.resolve_limit("bottleneck.reverse_buffer", b.reverse_buffer.unwrap_or(b.buffer))?;
    let a = sc.access();
    let access_limit = sc.resolve_limit("access.buffer", a.buffer)?;
    let droptail = AqmSpec::default();
    let mut links = Vec::new();
    let schedule = if b.trace.is_some() { Vec::new() } else { b.schedule.iter().map(|s| (Time::ZERO + s.at, s.rate)).collect() };
    links.push(build(seed, LinkSpec { name: "bottleneck".into(), rate: b.rate, delay: b.delay, limit: fwd_limit, aqm: &b.aqm, schedule, trace: b.trace.clone() }));
    links.push(build(seed, LinkSpec { name: "bottleneck_rev".into(), rate: b.rev_rate(), delay: b.rev_delay(), limit: rev_limit, aqm: &b.reverse_aqm, schedule: Vec::new(), trace: None }));
    links[0].set_sampled(true);
    links[1].set_sampled(true);
    let mut routes = Vec::new();
    for g in &sc.flows {
        let name = &g.common.name;
        let path = &g.common.path;
        let snd_delay = path.sender_delay.unwrap_or(a.delay);
        let rcv_delay = path.receiver_delay.unwrap_or(a.delay);
        let ret_delay = path.return_delay.unwrap_or(Duration::ZERO);
        let mut add = |suffix: &str, delay: Duration| {
            links.push(build(seed, LinkSpec { name: format!("{name}.{suffix}"), rate: a.rate, delay, limit: access_limit, aqm: &droptail, schedule: Vec::new(), trace: None }));
            (links.len() - 1) as u16
        };
        // data: sender -> R1 -> R2 -> receiver; ACKs: receiver -> R2 -> R1 -> sender
        let up = add("up", snd_delay);
        let down = add("down", rcv_delay);
        let up_rev = add("up_rev", rcv_delay + ret_delay);
        let down_rev = add("down_rev", snd_delay);
        routes.push([vec![up, 0, down], vec![up_rev, 1, down_rev]]);
    }
    let logged = if sc.record.packets {
        sc.record.links.iter().map(|n| links.iter().position(|l| l.name() == n).expect("validated link name") as u16).collect()
    } else {
        Vec::new()
    };
    Ok(Built { links, routes, logged, monitors: dumbbell_monitors() })
}

/// The dumbbell's streaming histograms: the bottleneck's (per group, and the queueing
/// delay at drops) and its reverse side's; links 0 and 1, simulated or emulated.
pub fn dumbbell_monitors() -> Vec<Monitor> {
    vec![
        Monitor { link: 0, name: "bottleneck".into(), by_group: true, drop_delay: true },
        Monitor { link: 1, name: "bottleneck_rev".into(), by_group: false, drop_delay: false },
    ]
}

/// A topology of `[[links]]`: link `i`'s forward side is link `2i` (named as declared),
/// its reverse side `2i + 1` (`NAME_rev`). Every side is sampled and has streaming
/// histograms (per group too) if a route crosses it.
fn general(sc: &Scenario) -> Result<Built, ScenarioError> {
    let seed = sc.seed;
    let routes_h = sc.routes().expect("a topology");
    let mut links = Vec::new();
    for (i, l) in sc.links.iter().enumerate() {
        for fwd in [true, false] {
            let (side, name) = l.side(fwd);
            let path = if fwd { format!("links[{i}].buffer") } else { format!("links[{i}].reverse.buffer") };
            let limit = crate::scenario::resolve_limit(&path, side.buffer, sc.link_bdp_bytes(i, fwd))?;
            let schedule = side.schedule.iter().map(|s| (Time::ZERO + s.at, s.rate)).collect();
            let mut link = build(seed, LinkSpec { name, rate: side.rate, delay: side.delay, limit, aqm: &side.aqm, schedule, trace: side.trace.clone() });
            link.set_sampled(true);
            links.push(link);
        }
    }
    let side = |l: usize, fwd: bool| (2 * l + (!fwd) as usize) as u16;
    let routes: Vec<[Vec<u16>; 2]> = routes_h
        .iter()
        .map(|h| {
            let data = h.hops.iter().map(|&(l, d)| side(l, d)).collect();
            let acks = h.hops.iter().rev().map(|&(l, d)| side(l, !d)).collect();
            [data, acks]
        })
        .collect();
    let logged = if sc.record.packets {
        sc.record.links.iter().map(|n| links.iter().position(|l| l.name() == n).expect("validated link name") as u16).collect()
    } else {
        Vec::new()
    };
    let mut crossed = vec![false; links.len()];
    for r in routes.iter().flatten() {
        for &l in r {
            crossed[l as usize] = true;
        }
    }
    let monitors = (0..links.len()).filter(|&l| crossed[l]).map(|l| Monitor { link: l as u16, name: links[l].name().to_string(), by_group: true, drop_delay: true }).collect();
    Ok(Built { links, routes, logged, monitors })
}

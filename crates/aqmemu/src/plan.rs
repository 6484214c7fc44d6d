//! The traffic plan of an emulated run: what each flow does and when, drawn from the
//! simulator's own random streams (`aqmsim::sim::flow_draws`, the download clients'
//! `group.NAME.flow.K` streams), so that an emulated run and a simulated run of the
//! same scenario and seed start their flows at the same instants, give them the
//! same extra path delays, and download the same files after the same think times.
//!
//! The plan goes to the traffic programs (Python, in the namespaces) as JSON, and its
//! per-flow path delays to the bottleneck ([`crate::Config::from_scenario`]).

use aqm::{Duration, Time};
use aqmsim::record::GroupInfo;
use aqmsim::scenario::{Connection, TrafficSpec};
use aqmsim::{rng, Scenario, ScenarioError};
use serde::Serialize;

/// Draws of think times and sizes per download client stop after this many files
/// (a client cannot make more requests than think times fit in the run).
const MAX_DOWNLOADS: usize = 100_000;

/// What one flow does.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "app", rename_all = "snake_case")]
pub enum App {
    /// A TCP sender that always has data (until `stop`).
    Bulk,
    /// Constant-bit-rate UDP: datagram k leaves at `start + floor(k * size * 8 / rate)`
    /// (`aqmsim::traffic::Cbr::send_time`).
    /// ECT(0) datagrams with the flow's `ecn`.
    Cbr { rate_bps: u64, packet_size: u32 },
    /// A client that downloads `sizes[k]`, then thinks `thinks_ns[k]` before asking
    /// for the next (`files`, `web`), or downloads one file (`transfer`, no thinks).
    Downloads { sizes: Vec<u64>, thinks_ns: Vec<u64>, persistent: bool },
}

/// One flow of the plan.
#[derive(Clone, Debug, Serialize)]
pub struct FlowPlan {
    pub group: u16,
    pub start_ns: u64,
    /// No new data, datagram or request at or after this time (the run's end, or the
    /// group's `stop`).
    pub stop_ns: u64,
    /// One-way propagation delay of the flow's path, data direction and return
    /// direction: the group's access delays, the bottleneck's and the flow's own
    /// extra delay (`Scenario::path_delays` + `path.flow_delay`).
    pub fwd_delay_ns: u64,
    pub rev_delay_ns: u64,
    /// The Linux congestion control module (TCP flows).
    pub cc: Option<&'static str>,
    /// RFC 3168 ECN (TCP flows: `tcp.ecn`; CBR: ECT(0) datagrams).
    pub ecn: bool,
    #[serde(flatten)]
    pub app: App,
}

/// The whole plan: the groups as every run's metadata describes them, and the flows.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub groups: Vec<GroupInfo>,
    pub flows: Vec<FlowPlan>,
}

/// The Linux module that runs a scenario's congestion control (its registry entry's
/// `LINUX`: `newreno` is Linux's `reno`, NewReno's window; Linux recovers with SACK
/// or RFC 6582 NewReno).
pub fn kernel_cc(cc: &aqmsim::tcp::CcSpec) -> Result<&'static str, String> {
    cc.linux().ok_or_else(|| format!("\"{}\" has no Linux module: `aqmlab emulate` cannot run it", cc.kind()))
}

/// Why a topology of `[[links]]` cannot be emulated.
pub const NOT_A_DUMBBELL: &str = "`aqmlab emulate` runs the dumbbell of a [bottleneck]; a topology of [[links]] runs in the simulator only";

/// The plan of `sc`.
pub fn plan(sc: &Scenario) -> Result<Plan, ScenarioError> {
    if sc.dumbbell().is_none() {
        return Err(ScenarioError { path: "links".into(), message: NOT_A_DUMBBELL.into() });
    }
    let end = Time::ZERO + sc.duration;
    let mut flows = Vec::new();
    for (gi, g) in sc.flows.iter().enumerate() {
        let (fwd, rev) = sc.path_delays(gi);
        let stop = g.common.stop.map_or(end, |s| (Time::ZERO + s).min(end));
        for (k, (start, extra)) in aqmsim::sim::flow_draws(sc, gi).into_iter().enumerate() {
            let app = match &g.traffic {
                TrafficSpec::Bulk(_) => App::Bulk,
                TrafficSpec::Cbr(c) => App::Cbr { rate_bps: c.rate.bps(), packet_size: c.packet_size.0 as u32 },
                TrafficSpec::Transfer(t) => App::Downloads { sizes: vec![t.size.0], thinks_ns: vec![], persistent: false },
                TrafficSpec::Files(aqmsim::endpoint::downloads::FilesSpec(d)) | TrafficSpec::Web(aqmsim::endpoint::downloads::WebSpec(d)) => {
                    // the simulator's client draws a size at each request and a think
                    // time at each completion, alternately, from this stream
                    // (`aqmsim::traffic::Downloads`)
                    let mut r = rng::stream(sc.seed, &format!("group.{}.flow.{k}", g.common.name));
                    let (mut sizes, mut thinks) = (Vec::new(), Vec::new());
                    let mut t = start;
                    while t < stop && sizes.len() < MAX_DOWNLOADS {
                        sizes.push(d.sizes.sample(&mut r));
                        let think = d.think.sample(&mut r);
                        thinks.push(think.as_nanos());
                        t += think;
                    }
                    App::Downloads { sizes, thinks_ns: thinks, persistent: d.connection == Connection::Persistent }
                }
                // a kind added to the simulator's registry runs in the simulator until
                // the emulator has a traffic program for it
                #[allow(unreachable_patterns)]
                other => {
                    return Err(ScenarioError {
                        path: format!("flows[{gi}].kind"),
                        message: format!("`aqmlab emulate` has no traffic program for \"{}\": it runs in the simulator only", other.kind()),
                    })
                }
            };
            let (cc, ecn) = match (&g.traffic, g.traffic.tcp()) {
                (TrafficSpec::Cbr(c), _) => (None, c.ecn),
                (_, Some(tcp)) => {
                    let cc = kernel_cc(&tcp.cc).map_err(|m| ScenarioError { path: format!("flows[{gi}].tcp.cc"), message: m })?;
                    (Some(cc), tcp.ecn)
                }
                (_, None) => (None, false),
            };
            flows.push(FlowPlan {
                group: gi as u16,
                start_ns: start.as_nanos(),
                stop_ns: stop.as_nanos(),
                fwd_delay_ns: (fwd + extra).as_nanos(),
                rev_delay_ns: (rev + extra).as_nanos(),
                cc,
                ecn,
                app,
            });
        }
    }
    Ok(Plan { groups: aqmsim::sim::group_infos(sc), flows })
}

/// Each flow's one-way delays, data direction and return direction.
pub fn flow_delays(plan: &Plan) -> [Vec<Duration>; 2] {
    [
        plan.flows.iter().map(|f| Duration::from_nanos(f.fwd_delay_ns)).collect(),
        plan.flows.iter().map(|f| Duration::from_nanos(f.rev_delay_ns)).collect(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        let text = format!(
            r#"
            duration = "30s"
            seed = 7
            [bottleneck]
            rate = "10Mbps"
            delay = "20ms"
            buffer = "100pkts"
            [[flows]]
            name = "near"
            count = 2
            start = {{ uniform = ["0s", "1s"] }}
            [[flows]]
            name = "far"
            path = {{ sender_delay = "101ms", return_delay = "5ms" }}
            [[flows]]
            name = "files"
            kind = "files"
            count = 2
            {extra}
            "#
        );
        Scenario::from_toml(&text, &[]).unwrap()
    }

    #[test]
    fn path_delays_are_the_groups_access_and_bottleneck_delays() {
        let p = plan(&scenario("")).unwrap();
        // near: 1 + 20 + 1 ms each way; far: 101 + 20 + 1 ms, back 1 + 5 + 20 + 101 ms
        assert_eq!((p.flows[0].fwd_delay_ns, p.flows[0].rev_delay_ns), (22_000_000, 22_000_000));
        assert_eq!((p.flows[2].fwd_delay_ns, p.flows[2].rev_delay_ns), (122_000_000, 127_000_000));
        assert_eq!(p.groups[1].base_rtt_ns, 249_000_000);
    }

    #[test]
    fn start_times_and_downloads_are_the_simulators_draws() {
        let sc = scenario("");
        let p = plan(&sc).unwrap();
        let draws = aqmsim::sim::flow_draws(&sc, 0);
        assert_eq!(p.flows[0].start_ns, draws[0].0.as_nanos());
        assert_eq!(p.flows[1].start_ns, draws[1].0.as_nanos());
        assert!(p.flows[0].start_ns <= 1_000_000_000 && p.flows[0].start_ns != p.flows[1].start_ns);
        // files: Kuhn & Ros's sizes, alternating with think times from the client's stream
        let App::Downloads { sizes, thinks_ns, persistent } = &p.flows[3].app else { panic!() };
        assert!(!persistent);
        let mut r = rng::stream(7, "group.files.flow.0");
        let d = match &sc.flows[2].traffic {
            TrafficSpec::Files(aqmsim::endpoint::downloads::FilesSpec(d)) => d.clone(),
            _ => unreachable!(),
        };
        assert_eq!(sizes[0], d.sizes.sample(&mut r));
        assert_eq!(thinks_ns[0], d.think.sample(&mut r).as_nanos());
        assert_eq!(sizes[1], d.sizes.sample(&mut r));
        assert!(sizes.iter().all(|s| [15_000, 44_000, 73_000, 102_000].contains(s)));
        // enough think times to cover the run, and not one more
        let total: u64 = thinks_ns.iter().sum();
        assert!(total >= 30_000_000_000 && total - thinks_ns.last().unwrap() < 30_000_000_000);
    }

    #[test]
    fn the_plan_serializes_each_field_once() {
        let sc = Scenario::from_toml(
            "duration = \"5s\"\n[bottleneck]\nrate = \"10Mbps\"\ndelay = \"10ms\"\nbuffer = \"10pkts\"\n[[flows]]\nname = \"v\"\nkind = \"cbr\"\nrate = \"87kbps\"\npacket_size = \"218B\"\necn = true\n",
            &[],
        )
        .unwrap();
        let j: serde_json::Value = serde_json::from_str(&serde_json::to_string(&plan(&sc).unwrap()).unwrap()).unwrap();
        let f = &j["flows"][0];
        assert_eq!((f["app"].as_str(), f["rate_bps"].as_u64(), f["packet_size"].as_u64(), f["ecn"].as_bool()), (Some("cbr"), Some(87_000), Some(218), Some(true)));
        assert!(f["cc"].is_null());
    }

    #[test]
    fn a_kind_without_a_traffic_program_is_refused_naming_the_group() {
        let sc = Scenario::from_toml(
            "duration = \"5s\"\n[bottleneck]\nrate = \"10Mbps\"\ndelay = \"10ms\"\nbuffer = \"10pkts\"\n[[flows]]\nname = \"b\"\n[[flows]]\nname = \"o\"\nkind = \"onoff\"\nrate = \"1Mbps\"\n",
            &[],
        )
        .unwrap();
        let e = plan(&sc).unwrap_err();
        assert_eq!(e.path, "flows[1].kind");
        assert!(e.message.contains("\"onoff\"") && !e.message.contains('\n'), "{}", e.message);
    }

    #[test]
    fn linux_names_of_the_congestion_controls() {
        let p = plan(&scenario("tcp = { cc = \"newreno\" }")).unwrap();
        assert_eq!(p.flows[0].cc, Some("cubic"));
        assert_eq!(p.flows[3].cc, Some("reno"));
        let p = plan(&scenario("tcp = { cc = \"bbr\" }")).unwrap();
        assert_eq!(p.flows[3].cc, Some("bbr"));
    }
}

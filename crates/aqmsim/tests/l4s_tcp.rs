//! End-to-end checks of the scalable senders, DCTCP and Prague, through DualPI2,
//! with the figures issue 16 asks for (printed with `-- --nocapture`):
//!
//! * 1 Prague + 1 CUBIC (ECN) flow, 40 Mb/s, base RTT 20 ms: Prague's p99 queueing
//!   delay <= 3 ms, CUBIC's median near the 15 ms target, utilization >= 0.95, the
//!   Prague/CUBIC rate ratio within 0.5-3;
//! * Prague alone, 100 Mb/s, RTT 20 ms: utilization >= 0.9, p99 <= 3 ms;
//! * DCTCP alone with `any_ect`, 100 Mb/s, RTT 20 ms: p99 <= 3 ms;
//! * ECN codepoints end to end: what each flow sent and received, and what the
//!   link saw, agree with each other and with the marks;
//! * AccECN feedback and DCTCP's ECE state machine both keep DCTCP's queue short;
//! * a `prague` flow on a path where nothing marks, or told `ecn = false`, is a
//!   one-line error naming the field.

use aqm::Ecn;
use aqmsim::record::EV_DEQUEUE;
use aqmsim::{RunOutput, Scenario};

fn run(text: &str) -> RunOutput {
    let sc = Scenario::from_toml(text, &[]).unwrap_or_else(|e| panic!("{e}"));
    aqmsim::run(&sc, &mut |_| true).unwrap_or_else(|e| panic!("{e:?}"))
}

/// Bottleneck sojourns (ms) of the packets of group `g` dequeued after `from_s`, sorted.
fn sojourns(o: &RunOutput, g: u16, from_s: f64) -> Vec<f64> {
    let link = o.logged_links.iter().position(|l| l == "bottleneck").unwrap() as u8;
    let p = &o.packets;
    let mut v: Vec<f64> = (0..p.len())
        .filter(|&i| p.link[i] == link && p.event[i] == EV_DEQUEUE && o.flows.group[p.flow[i] as usize] == g && p.time_ns[i] as f64 >= from_s * 1e9)
        .map(|i| p.sojourn_ns[i] as f64 / 1e6)
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn pct(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty());
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Bits sent at the bottleneck over its capacity, after `from_s`.
fn utilization(o: &RunOutput, from_s: f64) -> f64 {
    let li = o.links.iter().position(|l| l.name == "bottleneck").unwrap() as u16;
    let s = &o.link_series;
    let (mut sent, mut cap) = (0f64, 0f64);
    for i in 0..s.time_ns.len() {
        if s.link[i] == li && s.time_ns[i] as f64 > from_s * 1e9 {
            sent += s.tx_bytes[i] as f64 * 8.0;
            cap += s.capacity_bps[i] as f64 * 0.1; // 100 ms samples
        }
    }
    sent / cap
}

/// Payload bytes group `g` delivered between `from_s` and the end.
fn delivered_after(o: &RunOutput, g: u16, from_s: f64) -> f64 {
    let fs = &o.flow_series;
    let mut total = 0.0;
    for f in (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == g) {
        let rows: Vec<usize> = (0..fs.time_ns.len()).filter(|&i| fs.flow[i] as usize == f).collect();
        let at = |t: f64| rows.iter().filter(|&&i| fs.time_ns[i] as f64 <= t * 1e9).map(|&i| fs.delivered_bytes[i]).next_back().unwrap_or(0);
        total += (o.flows.bytes_delivered[f] - at(from_s)) as f64;
    }
    total
}

/// A dumbbell with DualPI2 (its parameters in `aqm`), base RTT 20 ms, and the groups.
fn dumbbell(rate: &str, aqm: &str, groups: &str) -> String {
    format!(
        r#"
name = "l4s"
duration = "30s"
seed = 1
[bottleneck]
rate = "{rate}"
delay = "9ms"
buffer = "10000pkts"
aqm = {{ kind = "dualpi2"{aqm} }}
[access]
rate = "1Gbps"
delay = "0.5ms"
{groups}"#
    )
}

fn group(name: &str, tcp: &str) -> String {
    format!("[[flows]]\nname = \"{name}\"\nkind = \"bulk\"\ncount = 1\ntcp = {{ {tcp} }}\n")
}

#[test]
fn prague_and_cubic_share_dualpi2_each_in_its_queue() {
    let text = dumbbell("40Mbps", "", &(group("prague", "cc = \"prague\"") + &group("cubic", "cc = \"cubic\", ecn = true")));
    let o = run(&text);
    let (l, c) = (sojourns(&o, 0, 10.0), sojourns(&o, 1, 10.0));
    let u = utilization(&o, 10.0);
    let ratio = delivered_after(&o, 0, 10.0) / delivered_after(&o, 1, 10.0);
    eprintln!(
        "dualpi2 40 Mb/s RTT 20 ms, prague + cubic: L p50 {:.2} p99 {:.2} ms; C p25 {:.2} p50 {:.2} p75 {:.2} ms; utilization {u:.4}; prague/cubic {ratio:.2}",
        pct(&l, 0.5),
        pct(&l, 0.99),
        pct(&c, 0.25),
        pct(&c, 0.5),
        pct(&c, 0.75)
    );
    assert!(pct(&l, 0.99) <= 3.0, "Prague's p99 {}", pct(&l, 0.99));
    assert!((pct(&c, 0.5) - 15.0).abs() <= 3.0, "CUBIC's median {}", pct(&c, 0.5));
    assert!(u >= 0.95, "utilization {u}");
    assert!((0.5..=3.0).contains(&ratio), "rate ratio {ratio}");
    // Prague sent ECT(1) (all of it: AccECN keeps retransmissions ECN-capable),
    // CUBIC ECT(0); each got CE marks, Prague's from the L queue's coupled
    // probability (and the step), CUBIC's from the classic queue
    let f = &o.flows;
    assert_eq!((f.sent_ect1[0], f.sent_ect0[0], f.sent_not_ect[0]), (f.segments_sent[0], 0, 0));
    assert_eq!((f.sent_ect0[1], f.sent_ect1[1]), (f.segments_sent[1] - f.retransmits[1], 0));
    assert!(f.received_ce[0] > 100 && f.received_ce[1] > 10, "{:?} {:?}", f.received_ce, f.marks);
    let c: std::collections::BTreeMap<String, f64> = o.links[0].counters.iter().map(|c| (format!("{}.{}", c.queue, c.name), c.value.as_f64())).collect();
    assert!(c["l.coupled_marks"] > c["l.step_marks"], "{c:?}");
}

#[test]
fn prague_alone_fills_100_mbps_with_a_millisecond_queue() {
    let o = run(&dumbbell("100Mbps", "", &group("prague", "cc = \"prague\"")));
    let l = sojourns(&o, 0, 10.0);
    let u = utilization(&o, 10.0);
    eprintln!("dualpi2 100 Mb/s RTT 20 ms, prague alone: p50 {:.2} p99 {:.2} ms, utilization {u:.4}", pct(&l, 0.5), pct(&l, 0.99));
    assert!(u >= 0.9 && pct(&l, 0.99) <= 3.0);
}

/// DCTCP alone through DualPI2 with `any_ect` (ECT(0) goes to the L queue), with
/// AccECN feedback or DCTCP's ECE state machine: (p99 ms, utilization, output).
fn dctcp_alone(accecn: bool) -> (f64, f64, RunOutput) {
    let o = run(&dumbbell("100Mbps", ", any_ect = true", &group("dctcp", &format!("cc = \"dctcp\", accecn = {accecn}"))));
    let l = sojourns(&o, 0, 10.0);
    let u = utilization(&o, 10.0);
    eprintln!("dualpi2 any_ect 100 Mb/s RTT 20 ms, dctcp alone (accecn {accecn}): p50 {:.2} p99 {:.2} ms, utilization {u:.4}, marks {}", pct(&l, 0.5), pct(&l, 0.99), o.flows.marks[0]);
    (pct(&l, 0.99), u, o)
}

#[test]
fn dctcp_keeps_the_l_queue_short_with_either_feedback() {
    for accecn in [false, true] {
        let (p99, u, o) = dctcp_alone(accecn);
        assert!(p99 <= 3.0, "accecn {accecn}: p99 {p99}");
        // the step marks ECT(0) here; DCTCP answers with ECT(0) throughout
        let f = &o.flows;
        assert!(f.sent_ect0[0] > 100_000 && f.sent_ect1[0] == 0 && f.received_ce[0] > 1000, "{f:?}");
        assert!(u > 0.5, "accecn {accecn}: utilization {u}");
    }
}

#[test]
fn codepoints_agree_between_the_senders_the_link_and_the_receivers() {
    let o = run(&dumbbell("40Mbps", "", &(group("prague", "cc = \"prague\"") + &group("cubic", "cc = \"cubic\", ecn = true") + &group("plain", "cc = \"cubic\""))));
    let st = o.links[0].stats;
    let f = &o.flows;
    let idx = |e: Ecn| e.index();
    // Nothing reaches the bottleneck CE (the access links do not mark); what it lets
    // through leaves as it came or CE; its CE departures are its marks on the way out
    // or at enqueue, less the marked packets still queued.
    assert_eq!(st.ecn_arrived[idx(Ecn::Ce)], 0);
    let sent = |e: Ecn| [f.sent_not_ect.clone(), f.sent_ect0.clone(), f.sent_ect1.clone(), f.sent_ce.clone()][idx(e)].iter().sum::<u64>();
    let received = |e: Ecn| [f.received_not_ect.clone(), f.received_ect0.clone(), f.received_ect1.clone(), f.received_ce.clone()][idx(e)].iter().sum::<u64>();
    for e in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1] {
        // every forward packet sent crosses the bottleneck (in flight at the end aside)
        assert!(sent(e) >= st.ecn_arrived[idx(e)] && sent(e) - st.ecn_arrived[idx(e)] < 200, "{e:?}: sent {} arrived {}", sent(e), st.ecn_arrived[idx(e)]);
    }
    assert!(st.ecn_dequeued[idx(Ecn::Ce)] <= st.marked() && st.marked() - st.ecn_dequeued[idx(Ecn::Ce)] < 50);
    assert_eq!(received(Ecn::Ce), f.received_ce.iter().sum::<u64>());
    assert!(received(Ecn::Ce) <= st.ecn_dequeued[idx(Ecn::Ce)] && st.ecn_dequeued[idx(Ecn::Ce)] - received(Ecn::Ce) < 50);
    // the plain CUBIC flow sends Not-ECT and is never marked
    assert_eq!((f.sent_ect0[2], f.sent_ect1[2], f.received_ce[2], f.marks[2]), (0, 0, 0, 0));
    assert!(f.sent_not_ect[2] > 1000);
}

fn error_of(text: &str) -> String {
    Scenario::from_toml(text, &[]).map(|_| ()).unwrap_err().to_string()
}

#[test]
fn prague_without_an_ecn_path_or_ecn_is_a_one_line_error() {
    let prague = group("prague", "cc = \"prague\"");
    for (text, field, says) in [
        (dumbbell("40Mbps", "", &prague).replace("kind = \"dualpi2\"", "kind = \"pie\""), "flows[0].tcp.cc", "bottleneck: pie with ecn = false"),
        (dumbbell("40Mbps", "", &prague).replace("aqm = { kind = \"dualpi2\" }", ""), "flows[0].tcp.cc", "bottleneck: droptail"),
        (dumbbell("40Mbps", "", &group("prague", "cc = \"prague\", ecn = false")), "flows[0].tcp.ecn", "prague needs ECN"),
        (dumbbell("40Mbps", "", &group("prague", "cc = \"prague\", accecn = false")), "flows[0].tcp.accecn", "prague needs Accurate ECN"),
        (dumbbell("40Mbps", "", &group("x", "cc = \"cubic\", accecn = true, ecn = false")), "flows[0].tcp.ecn", "accecn"),
    ] {
        let e = error_of(&text);
        eprintln!("{e}");
        assert!(!e.contains('\n') && e.starts_with(field) && e.contains(says), "{e}");
    }
    // with ECN on at a classic AQM, Prague runs (RFC 8311: the AQM marks ECT(1))
    let ok = dumbbell("40Mbps", "", &prague).replace("kind = \"dualpi2\"", "kind = \"pie\", ecn = true");
    assert!(Scenario::from_toml(&ok, &[]).is_ok());
    // DCTCP over DropTail is allowed (the classic comparison), and gets ECN
    let sc = Scenario::from_toml(&dumbbell("40Mbps", "", &group("d", "cc = \"dctcp\"")).replace("aqm = { kind = \"dualpi2\" }", ""), &[]).unwrap();
    let tcp = sc.flows[0].traffic.tcp().unwrap();
    assert!(tcp.ecn && !tcp.accecn);
}

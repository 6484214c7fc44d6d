//! LEDBAT (RFC 6817) end to end, the experiment of Gong, Rossi, Testa, Valenti & Täht,
//! "Fighting the bufferbloat: on the coexistence of AQM and low priority congestion
//! control": one LEDBAT and one CUBIC flow share 10 Mb/s (base RTT 50 ms). Behind a
//! DropTail buffer of 300 ms CUBIC keeps the queue above LEDBAT's 100 ms target and
//! LEDBAT yields (its share of the goodput well under 1/4); behind CoDel or PIE the
//! queue stays far below the target, LEDBAT sees no delay to yield to and loss is
//! the only signal for both: LEDBAT competes like a Reno flow (the
//! "reprioritization"). Alone, LEDBAT fills the link and holds the queue near its
//! target. The figures are printed (`-- --nocapture`).

use aqmsim::record::EV_DEQUEUE;
use aqmsim::{RunOutput, Scenario};

fn run(text: &str) -> RunOutput {
    let sc = Scenario::from_toml(text, &[]).unwrap_or_else(|e| panic!("{e}"));
    aqmsim::run(&sc, &mut |_| true).unwrap_or_else(|e| panic!("{e:?}"))
}

fn scenario(aqm: &str, cubic: u32) -> String {
    format!(
        r#"
name = "ledbat-vs-cubic"
duration = "60s"
seed = 1
[bottleneck]
rate = "10Mbps"
delay = "23ms"
buffer = "375000B"
aqm = {aqm}
[access]
rate = "100Mbps"
delay = "1ms"
[[flows]]
name = "ledbat"
kind = "bulk"
count = 1
start = {{ uniform = ["0s", "0.5s"] }}
tcp = {{ cc = "ledbat", sack = true, initial_window = 2 }}
"#
    ) + &if cubic > 0 {
        format!(
            r#"
[[flows]]
name = "cubic"
kind = "bulk"
count = {cubic}
start = {{ uniform = ["0s", "0.5s"] }}
tcp = {{ cc = "cubic", sack = true, initial_window = 10 }}
"#
        )
    } else {
        String::new()
    }
}

/// Bytes delivered by group `g`.
fn delivered(o: &RunOutput, g: u16) -> f64 {
    (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == g).map(|i| o.flows.bytes_delivered[i] as f64).sum()
}

fn ledbat_share(aqm: &str) -> f64 {
    let o = run(&scenario(aqm, 1));
    let (l, c) = (delivered(&o, 0), delivered(&o, 1));
    let share = l / (l + c);
    eprintln!("{aqm}: LEDBAT {:.2} Mb/s, CUBIC {:.2} Mb/s, share {share:.3}", l * 8.0 / 60e6, c * 8.0 / 60e6);
    share
}

#[test]
fn ledbat_yields_to_cubic_behind_a_large_droptail_buffer() {
    let s = ledbat_share(r#"{ kind = "droptail" }"#);
    assert!(s < 0.15, "LEDBAT's share behind DropTail: {s}");
}

#[test]
fn an_aqm_undoes_ledbat_s_yielding() {
    for aqm in [r#"{ kind = "codel" }"#, r#"{ kind = "pie" }"#] {
        let s = ledbat_share(aqm);
        assert!(s > 0.3, "LEDBAT's share behind {aqm}: {s}");
    }
}

#[test]
fn ledbat_alone_fills_the_link_and_holds_the_queue_near_its_target() {
    let o = run(&scenario(r#"{ kind = "droptail" }"#, 0));
    let rate = delivered(&o, 0) * 8.0 / 60e6;
    let link = o.logged_links.iter().position(|l| l == "bottleneck").unwrap() as u8;
    let p = &o.packets;
    let mut soj: Vec<f64> =
        (0..p.len()).filter(|&i| p.link[i] == link && p.event[i] == EV_DEQUEUE && p.time_ns[i] > 30_000_000_000).map(|i| p.sojourn_ns[i] as f64 / 1e6).collect();
    soj.sort_by(f64::total_cmp);
    let med = soj[soj.len() / 2];
    eprintln!("LEDBAT alone: {rate:.2} Mb/s, queueing delay median {med:.1} ms after 30 s");
    assert!(rate > 8.0, "LEDBAT alone: {rate} Mb/s");
    // TARGET 100 ms, less the delayed-ACK hold that the base delay also holds
    assert!((80.0..=110.0).contains(&med), "LEDBAT alone: queueing delay median {med} ms");
}

//! Traffic, paths, changing links and receivers, checked on whole runs: each
//! generator's statistics, the trace-driven link's opportunities, the capacity
//! schedule, per-group paths, conservation with UDP and new connections, and the
//! Palermo-like receiver against DRS.

use aqmsim::{builtin, RunOutput, Scenario};

fn run(sc: &Scenario) -> RunOutput {
    aqmsim::run(sc, &mut |_| true).unwrap_or_else(|e| panic!("{e}"))
}

fn parse(text: &str, extra: &[&str]) -> Scenario {
    let o: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    Scenario::from_toml(text, &o).unwrap_or_else(|e| panic!("{e}"))
}

fn builtin_scenario(name: &str, extra: &[&str]) -> Scenario {
    parse(builtin::get(name).unwrap(), extra)
}

const ONE_LINK: &str = r#"
    name = "t"
    duration = "20s"
    [bottleneck]
    rate = "10Mbps"
    delay = "10ms"
    buffer = "1000pkts"
    [access]
    rate = "100Mbps"
    delay = "1ms"
"#;

#[test]
fn cbr_datagrams_leave_at_exact_intervals_and_all_arrive_on_an_idle_path() {
    // Kuhn & Ros §IV-A: 87 kbps of 218-byte datagrams, 20.045977 ms apart. On an idle
    // path every datagram arrives, after the same propagation and serialization delay.
    let sc = parse(&format!("{ONE_LINK}\n[[flows]]\nname = \"voip\"\nkind = \"cbr\"\nstart = \"0.5s\"\nrate = \"87kbps\"\npacket_size = \"218B\"\n"), &[]);
    let o = run(&sc);
    let d = &o.datagrams;
    // datagrams k = 0.. with 0.5 s + floor(k * 1744e9 / 87000) ns < 20 s: k <= 972
    let sent = o.flows.segments_sent[0];
    assert_eq!(sent, 973);
    assert_eq!(d.time_ns.len() as u64, sent, "every datagram arrives on an idle path");
    for (i, (&t, &delay)) in d.time_ns.iter().zip(&d.delay_ns).enumerate() {
        assert_eq!(d.seq[i], i as u64);
        let sent_at = t - delay;
        let want = 500_000_000u128 + i as u128 * 1_744_000_000_000 / 87_000;
        assert_eq!(sent_at as u128, want, "datagram {i}");
    }
    // one-way delay: 1 + 10 + 1 ms of propagation, 218 B serialized at 100, 10, 100 Mbps
    let ser = 218 * 8 * 1_000_000_000u64;
    let want = 12_000_000 + ser / 100_000_000 + ser / 10_000_000 + ser / 100_000_000;
    assert!(d.delay_ns.iter().all(|&x| x.abs_diff(want) <= 2), "{} vs {want}", d.delay_ns[0]);
    assert_eq!(o.flows.bytes_delivered[0], 973 * 218);
    assert!(o.conservation.holds());
}

#[test]
fn onoff_sources_send_at_their_mean_rate_and_every_datagram_arrives_on_an_idle_path() {
    // 4 sources at 2 Mb/s of 1000 B, on 200 ms / off 800 ms (exponential): 0.4 Mb/s
    // each in the long run, 1.6 Mb/s together on a 10 Mb/s path (no queue to speak
    // of). Over 300 s each source's on fraction has a standard deviation of
    // sqrt((0.8^2 0.2^2 + 0.2^2 0.8^2) / 300) = 0.013 (delta method over 300 cycles
    // of 1 s), 26 kb/s of its rate: the four together 52 kb/s; 0.25 Mb/s is about 5.
    let text = format!(
        "{}\n[[flows]]\nname = \"oo\"\nkind = \"onoff\"\ncount = 4\nrate = \"2Mbps\"\npacket_size = \"1000B\"\non = {{ exponential = \"200ms\" }}\noff = {{ exponential = \"800ms\" }}\n",
        ONE_LINK.replace("duration = \"20s\"", "duration = \"300s\"")
    );
    let sc = parse(&text, &[]);
    let o = run(&sc);
    assert!(o.conservation.holds(), "{:?}", o.conservation);
    let sent: u64 = o.flows.segments_sent.iter().sum();
    let got = o.datagrams.time_ns.len() as u64;
    assert!(sent - got < 4, "sent {sent}, received {got}: only what is in flight at the end is missing");
    assert_eq!(o.flows.bytes_delivered.iter().sum::<u64>(), got * 1000);
    let mbps = sent as f64 * 8000.0 / 300.0 / 1e6;
    assert!((mbps - 1.6).abs() < 0.25, "{mbps} Mb/s");
    // each flow's datagrams are numbered from 0 without gaps, and sent while on: at
    // 2 Mb/s, 4 ms apart within a burst
    for f in 0..4u32 {
        let seqs: Vec<u64> = (0..got as usize).filter(|&i| o.datagrams.flow[i] == f).map(|i| o.datagrams.seq[i]).collect();
        assert!(seqs.iter().enumerate().all(|(k, &q)| q == k as u64), "flow {f}");
    }
    let gaps: Vec<u64> = {
        let f0: Vec<u64> = (0..got as usize).filter(|&i| o.datagrams.flow[i] == 0).map(|i| o.datagrams.time_ns[i] - o.datagrams.delay_ns[i]).collect();
        f0.windows(2).map(|w| w[1] - w[0]).collect()
    };
    assert!(gaps.iter().all(|&g| g >= 4_000_000), "no two datagrams closer than 8000 bits at 2 Mb/s");
    let in_burst = gaps.iter().filter(|&&g| g == 4_000_000).count();
    assert!(in_burst as f64 > 0.6 * gaps.len() as f64, "{in_burst} of {} gaps are exactly 4 ms", gaps.len());
    // the same seed, the same datagrams; another seed, others
    let again = run(&sc);
    assert_eq!((&again.datagrams.time_ns, &again.datagrams.delay_ns), (&o.datagrams.time_ns, &o.datagrams.delay_ns));
    let other = run(&parse(&text, &["seed=2"]));
    assert_ne!(other.datagrams.time_ns, o.datagrams.time_ns);
}

#[test]
fn udp_floods_are_counted_in_conservation_and_lose_what_does_not_fit() {
    // Pan et al.: two unresponsive 6 Mbps flows on a 10 Mbps link.
    let sc = builtin_scenario("pie-lab-udp", &["duration=\"20s\"", "bottleneck.aqm.kind=\"droptail\"", "bottleneck.buffer=\"100pkts\""]);
    let o = run(&sc);
    assert!(o.conservation.holds(), "{:?}", o.conservation);
    let udp: Vec<usize> = (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == 1).collect();
    let sent: u64 = udp.iter().map(|&i| o.flows.segments_sent[i]).sum();
    let got: u64 = udp.iter().map(|&i| o.flows.bytes_delivered[i]).sum::<u64>() / 1500;
    let dropped: u64 = udp.iter().map(|&i| o.flows.drops[i]).sum();
    // 12 Mbps offered into 10 Mbps: at least a sixth of the datagrams are dropped
    assert!(dropped as f64 > sent as f64 / 6.0 * 0.9, "sent {sent} dropped {dropped}");
    assert!(sent - got - dropped < 200, "the rest is in flight at the end");
}

#[test]
fn downloads_think_for_the_given_mean_between_files() {
    // Exponential think times of mean 9.5 s (Kuhn & Ros §IV-A) between tiny files: the
    // gap between a download's end and the flow's next request.
    let sc = parse(
        &format!(
            "{ONE_LINK}\n[[flows]]\nname = \"f\"\nkind = \"files\"\ncount = 100\nstart = {{ uniform = [\"0s\", \"10s\"] }}\nsizes = \"1KB\"\nthink = {{ exponential = \"9.5s\" }}\n"
        ),
        &["duration=\"600s\"", "record.packets=false", "record.flow_series=false"],
    );
    let o = run(&sc);
    let t = &o.transfers;
    let mut gaps = vec![];
    for i in 1..t.flow.len() {
        // rows are in request order; find the same flow's previous download
        if let Some(j) = (0..i).rev().find(|&j| t.flow[j] == t.flow[i]) {
            assert!(t.end_ns[j] >= 0);
            gaps.push((t.request_ns[i] as i64 - t.end_ns[j]) as f64 / 1e9);
        }
    }
    let n = gaps.len() as f64;
    assert!(n > 5000.0, "{n}");
    let mean = gaps.iter().sum::<f64>() / n;
    // standard error 9.5 / sqrt(n) ~ 0.13 s; allow 4 of them
    assert!((mean - 9.5).abs() < 0.55, "mean think time {mean} over {n}");
    assert!(gaps.iter().all(|&g| g >= 0.0));
    // and each download of one segment takes a little over half an RTT (no handshake)
    for i in 0..t.flow.len() {
        if t.end_ns[i] >= 0 {
            let dt = t.end_ns[i] - t.request_ns[i] as i64;
            assert!((12_900_000..20_000_000).contains(&dt), "{dt}");
        }
    }
}

#[test]
fn file_sizes_are_drawn_from_the_list_uniformly_and_pareto_sizes_have_their_median() {
    let o = run(&builtin_scenario("madpie-mix", &["duration=\"100s\"", "seed=3"]));
    let sizes: Vec<u64> = (0..o.transfers.flow.len()).map(|i| o.transfers.size_bytes[i]).collect();
    assert!(sizes.len() > 150);
    for s in [15_000, 44_000, 73_000, 102_000] {
        let c = sizes.iter().filter(|&&x| x == s).count() as f64 / sizes.len() as f64;
        assert!((c - 0.25).abs() < 0.12, "{s}: {c}");
    }
    assert!(sizes.iter().all(|s| [15_000, 44_000, 73_000, 102_000].contains(s)));
    // web: Pareto K = 2.3 KB, shape 1.3 (Jou, Tan & Baras §II): median K 2^(1/1.3)
    let text = format!(
        "{ONE_LINK}\n[[flows]]\nname = \"web\"\nkind = \"web\"\ncount = 200\nthink = {{ exponential = \"1s\" }}\nstart = {{ uniform = [\"0s\", \"1s\"] }}\n"
    );
    let o = run(&parse(&text, &["duration=\"60s\"", "record.packets=false", "bottleneck.rate=\"1Gbps\""]));
    let mut s: Vec<f64> = o.transfers.size_bytes.iter().map(|&x| x as f64).collect();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let med = s[s.len() / 2];
    let want = 2300.0 * 2f64.powf(1.0 / 1.3);
    assert!(s.len() > 3000, "{}", s.len());
    assert!((med - want).abs() / want < 0.05, "median {med} vs {want}");
    assert!(s[0] >= 2300.0);
}

#[test]
fn persistent_connections_reuse_one_connection_and_new_ones_count_up() {
    let text = format!("{ONE_LINK}\n[[flows]]\nname = \"web\"\nkind = \"web\"\ncount = 5\nthink = \"1s\"\nsizes = \"20KB\"\n");
    let o = run(&parse(&text, &[]));
    let t = &o.transfers;
    assert!(t.flow.len() >= 5 * 15);
    assert!(t.conn.iter().all(|&c| c == 0), "HTTP/1.1: one connection per client");
    let o = run(&parse(&text, &["flows.0.connection=\"new\""]));
    let t = &o.transfers;
    for f in 0..5u32 {
        let conns: Vec<u32> = (0..t.flow.len()).filter(|&i| t.flow[i] == f).map(|i| t.conn[i]).collect();
        assert_eq!(conns, (0..conns.len() as u32).collect::<Vec<_>>(), "a new connection per download");
        let done: u64 = (0..t.flow.len()).filter(|&i| t.flow[i] == f && t.end_ns[i] >= 0).map(|i| t.size_bytes[i]).sum();
        let all: u64 = (0..t.flow.len()).filter(|&i| t.flow[i] == f).map(|i| t.size_bytes[i]).sum();
        let got = o.flows.bytes_delivered[f as usize];
        assert!(got >= done && got <= all, "bytes over all connections: {done} <= {got} <= {all}");
    }
    assert!(o.conservation.holds());
}

#[test]
fn download_time_includes_the_handshake() {
    // One 1-segment file on an idle path: without a handshake, the data's one-way
    // trip; with one, a SYN / SYN-ACK round trip before it.
    let text = format!("{ONE_LINK}\n[[flows]]\nname = \"x\"\nkind = \"transfer\"\nsize = \"1000B\"\nstart = \"1s\"\n");
    let plain = run(&parse(&text, &[]));
    let hs = run(&parse(&text, &["flows.0.tcp.handshake=true"]));
    let d0 = plain.transfers.end_ns[0] - plain.transfers.request_ns[0] as i64;
    let d1 = hs.transfers.end_ns[0] - hs.transfers.request_ns[0] as i64;
    // 12 ms of propagation and 1040 B serialized at 100, 10 and 100 Mbps (1 ms)
    assert!((12_990_000..13_010_000).contains(&d0), "{d0}");
    assert!((d1 - d0 - 24_000_000).abs() < 200_000, "handshake adds one RTT (24 ms): {d0} {d1}");
    assert_eq!(plain.flows.end_ns[0], plain.transfers.end_ns[0]);
}

#[test]
fn a_trace_link_delivers_exactly_the_trace_s_opportunities() {
    // A Mahimahi trace of 5 opportunities per 10 ms (6 Mbps), saturated by a 20 Mbps
    // CBR flood of 1500-byte datagrams: every opportunity after the first arrival
    // carries exactly one datagram, at exactly its time.
    let ms = [1u64, 2, 2, 7, 10];
    let text = format!(
        "name = \"t\"\nduration = \"2s\"\n[bottleneck]\ndelay = \"5ms\"\nbuffer = \"1000pkts\"\ntrace = {{ ms = {ms:?} }}\n[[flows]]\nname = \"flood\"\nkind = \"cbr\"\nrate = \"20Mbps\"\n"
    );
    let sc = parse(&text, &[]);
    assert_eq!(sc.dumbbell().unwrap().rate.bps(), 6_000_000, "the mean rate of the trace");
    let o = run(&sc);
    assert!(o.conservation.holds());
    let p = &o.packets;
    let deq: Vec<u64> = (0..p.len()).filter(|&i| p.event[i] == 1).map(|i| p.time_ns[i]).collect();
    // the opportunities strictly after the first arrival at the bottleneck and up to 2 s
    let first_arrival = (0..p.len()).find(|&i| p.event[i] == 0).map(|i| p.time_ns[i]).unwrap();
    let mut opp = vec![];
    for cycle in 0..201u64 {
        for &m in &ms {
            let t = (cycle * 10 + m) * 1_000_000;
            if t > first_arrival && t <= 2_000_000_000 {
                opp.push(t);
            }
        }
    }
    assert_eq!(deq, opp, "one 1500-byte datagram per opportunity, at its time");
    // utilization counts opportunities: all used after the first second
    let ls = &o.link_series;
    for i in (0..ls.time_ns.len()).filter(|&i| ls.link[i] == 0 && ls.time_ns[i] > 100_000_000) {
        assert_eq!(ls.opportunities[i], 50, "5 per 10 ms in each 100 ms interval");
        assert_eq!(ls.opportunities_used[i], 50);
        assert_eq!(ls.capacity_bps[i], 6_000_000);
        assert_eq!(ls.tx_packets[i], 50);
    }
}

#[test]
fn small_packets_share_a_trace_opportunity_and_large_ones_span_two() {
    // Mahimahi: an opportunity carries up to 1500 bytes from several packets, and a
    // packet leaves when its last byte has been carried.
    let base = "name = \"t\"\nduration = \"1s\"\n[bottleneck]\ndelay = \"0ms\"\nbuffer = \"10000pkts\"\ntrace = { ms = [10] }\n[[flows]]\nname = \"c\"\nkind = \"cbr\"\nstart = \"0s\"\n";
    // 500-byte datagrams at 4.8 Mbps: 6 per 10 ms, 3 per 1500-byte opportunity
    let o = run(&parse(&format!("{base}rate = \"2.4Mbps\"\npacket_size = \"500B\"\n"), &[]));
    let p = &o.packets;
    let deq: Vec<u64> = (0..p.len()).filter(|&i| p.event[i] == 1).map(|i| p.time_ns[i]).collect();
    // 2.4 Mbps of 500 B: one every 1.667 ms, 6 per opportunity offered: 3 leave each time
    let per: Vec<usize> = (1..=99u64).map(|k| deq.iter().filter(|&&t| t == k * 10_000_000).count()).collect();
    assert!(per.iter().all(|&n| n == 3), "{per:?}");
    // 1000-byte datagrams, 1.5 per opportunity: departures alternate 1, 2, 1, 2 ...
    let o = run(&parse(&format!("{base}rate = \"2.4Mbps\"\npacket_size = \"1000B\"\n"), &[]));
    let p = &o.packets;
    let tx: Vec<u64> = (0..p.len()).filter(|&i| p.event[i] == 1).map(|i| p.time_ns[i]).collect();
    // 100 opportunities (10 ms ... 1 s) of 1500 B carry 150 datagrams of 1000 B: one
    // and a half each, the half finishing at the next opportunity
    assert_eq!(tx.len(), 150);
    for k in 1..=100u64 {
        let n = tx.iter().filter(|&&t| t == k * 10_000_000).count();
        assert_eq!(n, if k % 2 == 1 { 2 } else { 1 }, "opportunity {k}");
    }
    assert!(o.conservation.holds());
}

#[test]
fn the_capacity_schedule_changes_the_rate_at_the_given_time() {
    // Pan et al.: 50 Mbps, then 10 Mbps at 50 s; a 60 Mbps flood keeps the link busy.
    let text = "name = \"t\"\nduration = \"6s\"\n[bottleneck]\nrate = \"50Mbps\"\ndelay = \"1ms\"\nbuffer = \"100pkts\"\nschedule = [{ at = \"3s\", rate = \"10Mbps\" }]\n[[flows]]\nname = \"flood\"\nkind = \"cbr\"\nrate = \"60Mbps\"\n";
    let o = run(&parse(text, &["record.packets=false"]));
    let ls = &o.link_series;
    for i in (0..ls.time_ns.len()).filter(|&i| ls.link[i] == 0 && ls.time_ns[i] > 200_000_000) {
        let (t, bits) = (ls.time_ns[i], ls.tx_bytes[i] * 8);
        let want = if t <= 3_000_000_000 { 5_000_000 } else if t > 3_100_000_000 { 1_000_000 } else { continue };
        assert!(bits.abs_diff(want) <= 12_000, "at {t}: {bits} bits in 100 ms, want {want}");
        assert_eq!(ls.capacity_bps[i], want * 10);
        assert!(ls.busy_ns[i] >= 99_000_000);
    }
    assert_eq!(o.links[0].rate_bps, 10_000_000);
}

#[test]
fn groups_with_their_own_paths_have_their_own_base_rtts() {
    // Kuhn & Ros §V: senders 1 ms or 201 ms from R1, base RTTs of 100 and 500 ms.
    let sc = builtin_scenario("madpie-rtt-mix", &["duration=\"20s\""]);
    let rtts: Vec<u64> = (0..sc.flows.len()).map(|g| sc.base_rtt(g).as_nanos() / 1_000_000).collect();
    assert_eq!(rtts, vec![100, 100, 100, 500, 500, 500]);
    assert_eq!(sc.bdp_bytes(), 625_000, "the buffer is the BDP of the higher RTT");
    let o = run(&sc);
    assert!(o.conservation.holds());
    for i in 0..o.flows.flow.len() {
        let base = o.flows.base_rtt_ns[i] as i64;
        let min = o.flows.min_rtt_ns[i];
        if min >= 0 {
            assert!(min >= base && min < base + 60_000_000, "flow {i}: min RTT {min} vs base {base}");
        }
    }
    // CBR one-way delays at least the path's: 50 ms or 250 ms
    let d = &o.datagrams;
    for i in 0..d.flow.len() {
        let g = o.flows.group[d.flow[i] as usize];
        let floor = if g == 0 { 50_000_000 } else { 250_000_000 };
        assert!(d.delay_ns[i] >= floor, "{g}: {}", d.delay_ns[i]);
    }
}

#[test]
fn an_upstream_delay_sets_the_minimum_rtt() {
    // Popovsky §2: no delay downstream, 70 ms upstream: a minimum RTT of 70 ms.
    let o = run(&builtin_scenario("palermo-fifo-drs", &["duration=\"20s\""]));
    let min = o.flows.min_rtt_ns[0];
    assert!((70_000_000..72_000_000).contains(&min), "{min}");
    assert_eq!(o.flows.base_rtt_ns[0], 70_000_000);
}

#[test]
fn per_flow_delays_spread_base_rtts_over_the_interval() {
    // Jou, Tan & Baras §II: web RTTs uniform in (16, 240) ms.
    let sc = builtin_scenario("jou-web-droptail", &["duration=\"160s\"", "record.packets=false"]);
    assert_eq!(sc.base_rtt(1).as_nanos(), 240_000_000);
    let o = run(&sc);
    let web: Vec<f64> = (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == 1).map(|i| o.flows.base_rtt_ns[i] as f64 / 1e6).collect();
    assert_eq!(web.len(), 800);
    assert!(web.iter().all(|&r| (16.0..=240.0).contains(&r)));
    let mean = web.iter().sum::<f64>() / web.len() as f64;
    assert!((mean - 128.0).abs() < 8.0, "{mean}");
    // and the measured minimum RTT follows each flow's own delay
    for i in (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == 1 && o.flows.min_rtt_ns[i] >= 0) {
        assert!(o.flows.min_rtt_ns[i] as u64 >= o.flows.base_rtt_ns[i]);
    }
    assert!(o.conservation.holds());
}

#[test]
fn acks_can_be_queued_and_lost_on_a_reverse_bottleneck_with_its_own_aqm() {
    let sc = builtin_scenario(
        "madpie-proof",
        &[
            "duration=\"20s\"",
            "bottleneck.reverse_rate=\"100kbps\"",
            "bottleneck.reverse_buffer=\"20pkts\"",
            "bottleneck.reverse_aqm.kind=\"pie\"",
            "record.links=[\"bottleneck\", \"bottleneck_rev\"]",
        ],
    );
    let o = run(&sc);
    assert!(o.conservation.holds());
    assert_eq!(o.links[1].aqm, "pie");
    let ack_drops: u64 = o.flows.ack_drops.iter().sum();
    assert!(ack_drops > 100, "{ack_drops}");
    assert_eq!(o.links[1].stats.dropped(), ack_drops);
    assert_eq!(o.logged_links, vec!["bottleneck".to_string(), "bottleneck_rev".to_string()]);
    let p = &o.packets;
    let rev_drops = (0..p.len()).filter(|&i| p.link[i] == 1 && p.event[i] == 2 && p.kind[i] == 1).count() as u64;
    assert_eq!(rev_drops, ack_drops, "every ACK drop recorded on the reverse link, with its cause");
    let queued = (0..p.len()).filter(|&i| p.link[i] == 1 && p.event[i] == 1 && p.sojourn_ns[i] > 10_000_000).count();
    assert!(queued > 1000, "ACKs wait in the reverse queue: {queued}");
}

#[test]
fn a_stopped_bulk_flow_finishes_what_it_wrote_and_sends_no_more() {
    let text = format!("{ONE_LINK}\n[[flows]]\nname = \"b\"\nstop = \"5s\"\n");
    let o = run(&parse(&text, &["bottleneck.buffer=\"100pkts\""]));
    let end = o.flows.end_ns[0];
    assert!(end > 5_000_000_000 && end < 6_000_000_000, "{end}");
    let last_enqueue = (0..o.packets.len()).filter(|&i| o.packets.event[i] == 0).map(|i| o.packets.time_ns[i]).max().unwrap();
    assert!(last_enqueue < 6_000_000_000);
    assert!(o.conservation.holds());
}

#[test]
fn every_builtin_scenario_conserves_packets_for_a_few_seconds() {
    for (name, _) in builtin::SCENARIOS {
        let sc = builtin_scenario(name, &[]);
        // long enough for every group to start and every rate change to happen
        let starts = sc.flows.iter().map(|g| match g.common.start {
            aqmsim::scenario::StartSpec::At(t) => t,
            aqmsim::scenario::StartSpec::Uniform(_, b) => b,
        });
        let latest = starts.chain(sc.dumbbell().into_iter().flat_map(|b| b.schedule.iter().map(|s| s.at))).max().unwrap();
        let short = (latest + aqmsim::aqm::Duration::from_secs(3)).max(aqmsim::aqm::Duration::from_secs(5)).min(sc.duration);
        // (the warm-up must end before the run does)
        let sc = builtin_scenario(name, &[&format!("duration=\"{short}\""), "metrics.warmup=\"0s\"", "record.packets=false"]);
        let o = run(&sc);
        assert!(o.conservation.holds(), "{name}: {:?}", o.conservation);
        assert!(o.conservation.delivered > 0, "{name}");
    }
}

#[test]
fn mixed_traffic_is_deterministic_and_groups_draw_from_their_own_streams() {
    let sc = builtin_scenario("madpie-mix", &["duration=\"30s\""]);
    let a = run(&sc);
    let b = run(&sc);
    assert_eq!(a.events, b.events);
    assert_eq!(a.transfers.size_bytes, b.transfers.size_bytes);
    assert_eq!(a.transfers.end_ns, b.transfers.end_ns);
    assert_eq!(a.datagrams.delay_ns, b.datagrams.delay_ns);
    // Another group changes the network, not the files' sizes: each flow's n-th file
    // is the same size.
    let text = format!("{}\n[[flows]]\nname = \"extra\"\nkind = \"cbr\"\nrate = \"1Mbps\"\n", builtin::get("madpie-mix").unwrap());
    let c = run(&parse(&text, &["duration=\"30s\""]));
    let nth = |o: &RunOutput, f: u32, k: u32| (0..o.transfers.flow.len()).find(|&i| o.transfers.flow[i] == f && o.transfers.index[i] == k).map(|i| o.transfers.size_bytes[i]);
    let mut compared = 0;
    for f in 4..24u32 {
        for k in 0..3 {
            if let (Some(x), Some(y)) = (nth(&a, f, k), nth(&c, f, k)) {
                assert_eq!(x, y, "flow {f} file {k}");
                compared += 1;
            }
        }
    }
    assert!(compared > 30);
    assert_ne!(a.events, c.events);
}

#[test]
fn ecn_works_for_downloads_with_a_handshake() {
    let sc = builtin_scenario(
        "madpie-mix",
        &["duration=\"30s\"", "bottleneck.aqm.ecn=true", "flows.1.tcp.ecn=true", "flows.1.tcp.handshake=true", "flows.2.tcp.ecn=true"],
    );
    let o = run(&sc);
    let files: Vec<usize> = (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == 1).collect();
    let bulk: Vec<usize> = (0..o.flows.flow.len()).filter(|&i| o.flows.group[i] == 2).collect();
    let marks = |v: &[usize]| v.iter().map(|&i| o.flows.marks[i]).sum::<u64>();
    let reductions = |v: &[usize]| v.iter().map(|&i| o.flows.ecn_reductions[i]).sum::<u64>();
    assert!(marks(&bulk) > 0 && reductions(&bulk) > 0);
    assert!(marks(&files) > 0, "ECN negotiated on every new connection: CE marks, not drops");
    assert!(reductions(&files) > 0);
}

fn window_mean(o: &RunOutput, flow: u32, from_s: f64, to_s: f64, f: impl Fn(usize) -> f64) -> f64 {
    let fs = &o.flow_series;
    let v: Vec<f64> = (0..fs.time_ns.len())
        .filter(|&i| fs.flow[i] == flow && fs.time_ns[i] as f64 / 1e9 > from_s && fs.time_ns[i] as f64 / 1e9 <= to_s)
        .map(f)
        .collect();
    v.iter().sum::<f64>() / v.len() as f64
}

fn goodput_mbps(o: &RunOutput, flow: u32, from_s: f64, to_s: f64) -> f64 {
    let fs = &o.flow_series;
    let at = |t: f64| {
        (0..fs.time_ns.len()).filter(|&i| fs.flow[i] == flow && (fs.time_ns[i] as f64 / 1e9 - t).abs() < 1e-6).map(|i| fs.delivered_bytes[i]).next().unwrap_or(0)
    };
    (at(to_s) - at(from_s)) as f64 * 8.0 / (to_s - from_s) / 1e6
}

#[test]
fn palermo_receivers_keep_the_queue_short_and_share_fairly_where_drs_bloats_it() {
    // Popovsky Figs. 2-3: two CUBIC flows on a 10 Mbps FIFO with a 70 ms base RTT.
    let drs = run(&builtin_scenario("palermo-fifo-drs", &[]));
    let pal = run(&builtin_scenario("palermo-fifo-palermo", &[]));
    let srtt = |o: &RunOutput, f: u32| window_mean(o, f, 30.0, 60.0, |i| o.flow_series.srtt_ns[i] as f64 / 1e6);
    // DRS: the FIFO fills (about 1 s of RTT); the late flow gets a small share
    assert!(srtt(&drs, 0) > 800.0 && srtt(&drs, 1) > 800.0, "{} {}", srtt(&drs, 0), srtt(&drs, 1));
    let (a, b) = (goodput_mbps(&drs, 0, 20.0, 40.0), goodput_mbps(&drs, 1, 20.0, 40.0));
    assert!(b < 0.3 * a, "DRS: late flow {b} vs first {a}");
    // Palermo-like: RTT just above the base, a similar share
    assert!(srtt(&pal, 0) < 100.0 && srtt(&pal, 1) < 100.0, "{} {}", srtt(&pal, 0), srtt(&pal, 1));
    let (a, b) = (goodput_mbps(&pal, 0, 30.0, 60.0), goodput_mbps(&pal, 1, 30.0, 60.0));
    let jain = (a + b).powi(2) / (2.0 * (a * a + b * b));
    assert!(jain > 0.98 && a + b > 9.0, "Palermo: {a} + {b}, Jain {jain}");
    // the receivers limited the senders: advertised windows near the BDP (87.5 kB)
    let rwnd = window_mean(&pal, 0, 30.0, 60.0, |i| pal.flow_series.rwnd[i] as f64);
    assert!(rwnd > 30_000.0 && rwnd < 87_500.0, "{rwnd}");
    assert_eq!(pal.flows.drops.iter().sum::<u64>(), 0, "no losses: the queue never fills");
}

#[test]
fn a_palermo_receiver_reverts_to_drs_against_a_flooding_competitor_and_returns_after() {
    // Popovsky Fig. 4: a DRS competitor from 17 s to 45 s.
    let o = run(&builtin_scenario("palermo-mixed", &[]));
    assert_eq!(o.flows.receiver_reverts[0], 1);
    assert_eq!(o.flows.receiver_returns[0], 1);
    let srtt = |a: f64, b: f64| window_mean(&o, 0, a, b, |i| o.flow_series.srtt_ns[i] as f64 / 1e6);
    assert!(srtt(5.0, 17.0) < 100.0, "alone: a short queue");
    assert!(srtt(30.0, 45.0) > 500.0, "the competitor floods the FIFO");
    assert!(srtt(60.0, 70.0) < 100.0, "after it left: short again");
    // while in DRS mode the window does not limit the sender: twice its window or more
    let rw = window_mean(&o, 0, 35.0, 45.0, |i| o.flow_series.rwnd[i] as f64);
    let cwnd = window_mean(&o, 0, 35.0, 45.0, |i| o.flow_series.cwnd[i] * 1460.0);
    assert!(rw > 1.5 * cwnd, "rwnd {rw} vs cwnd {cwnd}");
}

#[test]
fn bbr_runs_in_the_simulator_and_its_group_names_it() {
    // `cc = "bbr"` is BBR v1 as Linux's tcp_bbr.c, for `aqmlab run` and `aqmlab emulate` alike
    let sc = builtin_scenario("madpie-proof", &["flows.0.tcp.cc=\"bbr\"", "flows.0.count=2", "duration=\"5s\"", "bottleneck.delay=\"48ms\""]);
    assert_eq!(sc.flows[0].traffic.tcp().unwrap().cc.kind(), "bbr");
    let o = aqmsim::run(&sc, &mut |_| true).unwrap();
    assert_eq!(o.groups[0].cc.as_deref(), Some("bbr"));
    // every flow makes progress and together they fill most of the 10 Mb/s for 5 s
    // (6.25 MB). How two BBR flows share the first seconds depends on the seed and on
    // the receiver (with SACK compression, as Linux, 4.97 MB and 0.49 MB at seed 1;
    // without, 4.16 MB and 1.43 MB): sharing is checked against the kernel by
    // `aqmlab validate linux`, not here.
    let d = &o.flows.bytes_delivered;
    assert!(d.iter().all(|&b| b > 200_000), "{d:?}");
    assert!(d.iter().sum::<u64>() > 4_700_000, "{d:?}");
}

//! Operation-sequence property tests for DualPI2, FQ-PIE, COBALT and CAKE in
//! aggressive settings (the shared `properties.rs` runs every kind with its defaults):
//! all four ECN codepoints (so that DualPI2's L queue is exercised), hosts and pure
//! TCP ACKs (CAKE's host isolation and ACK filter), and a shaped CAKE, whose dequeue
//! may hold packets back until its timer.
//!
//! * every packet offered comes back exactly once: dequeued, or dropped with a cause;
//! * the backlog never exceeds the buffer limit;
//! * only ECN-capable (or CE) packets are marked, and a marked packet leaves as CE;
//! * a drop probability, where the AQM has one, stays in [0, 1];
//! * the same seed gives the same decisions.

use std::collections::BTreeSet;

use aqm::{Admit, AqmSpec, Bytes, Ctx, Duration, Ecn, Limit, QPacket, Qdisc, Rate, TcpAck, Time, Transport};
use proptest::prelude::*;
use rand_xoshiro::rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone, Debug)]
struct P {
    id: u64,
    size: u32,
    flow: u64,
    ecn: Ecn,
    ack: Option<u32>,
}

impl QPacket for P {
    fn size_bytes(&self) -> u32 {
        self.size
    }
    fn flow_key(&self) -> u64 {
        self.flow
    }
    fn transport(&self) -> Transport {
        if self.flow == 7 { Transport::Udp } else { Transport::Tcp }
    }
    /// Three sending hosts, two receiving ones.
    fn src_host(&self) -> u64 {
        self.flow % 3
    }
    fn dst_host(&self) -> u64 {
        100 + self.flow % 2
    }
    fn tcp_ack(&self) -> Option<TcpAck> {
        self.ack.map(|a| TcpAck { ack: a, pure: true, ..TcpAck::default() })
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ce(&mut self) {
        self.ecn = Ecn::Ce;
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// time passes (µs), then a packet arrives; flow 6 sends pure ACKs
    Arrive { gap_us: u32, size: u32, flow: u8, ecn: u8 },
    /// time passes, then the link asks for a packet
    Depart { gap_us: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u32..3000, 40u32..1500, 0u8..8, 0u8..4).prop_map(|(gap_us, size, flow, ecn)| Op::Arrive { gap_us, size, flow, ecn }),
        (0u32..3000).prop_map(|gap_us| Op::Depart { gap_us }),
    ]
}

fn codepoint(x: u8) -> Ecn {
    [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce][x as usize % 4]
}

/// Variants that act often in short random sequences.
fn specs() -> Vec<AqmSpec> {
    use aqm::cake::{AckFilter, CakeParams, FlowMode, Framing};
    use aqm::cobalt::CobaltParams;
    use aqm::dualpi2::{DualPi2Params, StepThresh};
    use aqm::fq_pie::FqPieParams;
    let mut v = Vec::new();
    let hot_dual = DualPi2Params {
        target: Duration::from_millis(1),
        tupdate: Duration::from_millis(2),
        alpha: 5.0,
        beta: 50.0,
        step_thresh: StepThresh::Time(Duration::from_micros(100)),
        ..DualPi2Params::default()
    };
    v.push(AqmSpec::DualPi2(hot_dual.clone()));
    v.push(AqmSpec::DualPi2(DualPi2Params { drop_enqueue: true, any_ect: true, coupling_factor: 4.0, ..hot_dual.clone() }));
    v.push(AqmSpec::DualPi2(DualPi2Params {
        drop_on_overload: false,
        step_thresh: StepThresh::Packets(2),
        min_qlen_step: 1,
        classic_protection: 50,
        coupling_factor: 0.5,
        ..hot_dual.clone()
    }));
    v.push(AqmSpec::DualPi2(DualPi2Params { max_rtt: Some(Duration::from_millis(6)), classic_protection: 100, ..hot_dual }));
    let hot_fq_pie = FqPieParams {
        target: Duration::from_millis(1),
        tupdate: Duration::from_millis(2),
        alpha: 5.0,
        beta: 50.0,
        max_burst: Duration::ZERO,
        ecn: true,
        ecn_prob: 0.5,
        flows: 4,
        quantum: Bytes(300),
        ..FqPieParams::default()
    };
    v.push(AqmSpec::FqPie(hot_fq_pie.clone()));
    v.push(AqmSpec::FqPie(FqPieParams { dq_rate_estimator: true, ecn: false, bytemode: true, memory_limit: Bytes(3000), ..hot_fq_pie }));
    let hot_cobalt = CobaltParams { target: Duration::from_micros(500), interval: Duration::from_millis(5), blue_increment: 0.25, blue_decrement: 0.125, ecn: true };
    v.push(AqmSpec::Cobalt(hot_cobalt.clone()));
    v.push(AqmSpec::Cobalt(CobaltParams { ecn: false, ..hot_cobalt }));
    let hot_cake = CakeParams { rtt: Duration::from_millis(5), target: Some(Duration::from_micros(500)), ..CakeParams::default() };
    for m in [
        FlowMode::Flowblind,
        FlowMode::Srchost,
        FlowMode::Dsthost,
        FlowMode::Hosts,
        FlowMode::Flows,
        FlowMode::DualSrchost,
        FlowMode::DualDsthost,
        FlowMode::TripleIsolate,
    ] {
        v.push(AqmSpec::Cake(CakeParams { flow_mode: m, ..hot_cake.clone() }));
    }
    v.push(AqmSpec::Cake(CakeParams {
        bandwidth: Some(Rate::from_mbps(5)),
        overhead: 18,
        mpu: 64,
        framing: Framing::Atm,
        ack_filter: AckFilter::On,
        memlimit: Some(Bytes(30_000)),
        ..hot_cake.clone()
    }));
    v.push(AqmSpec::Cake(CakeParams { bandwidth: Some(Rate::from_mbps(2)), ingress: true, framing: Framing::Ptm, ack_filter: AckFilter::Aggressive, ..hot_cake.clone() }));
    v.push(AqmSpec::Cake(CakeParams { ack_filter: AckFilter::Aggressive, flow_mode: FlowMode::Flows, hash_perturbation: 5, ..hot_cake }));
    for s in &mut v {
        // what parsing does: fill in what is implied (DualPI2's autotuning, CAKE's target)
        let json = serde_json::to_value(&*s).unwrap();
        let kind = json["kind"].as_str().unwrap().to_string();
        let mut params = json;
        params.as_object_mut().unwrap().remove("kind");
        *s = AqmSpec::from_kind(&kind, params).unwrap_or_else(|e| panic!("{kind}: {e}"));
    }
    v
}

/// Run a sequence; returns the ids in the order they left with their fate.
fn play(spec: &AqmSpec, limit: Limit, ops: &[Op], seed: u64) -> Result<Vec<(u64, &'static str)>, TestCaseError> {
    let mut q: Qdisc<P> = Qdisc::new(spec, limit);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut now = Time::ZERO;
    let mut drops = Vec::new();
    let mut fate = Vec::new();
    let mut offered = BTreeSet::new();
    let mut next_id = 0u64;
    let mut next_ack = 0u32;
    let link = Rate::from_mbps(10);
    let check_departure = |d: &aqm::Departure<P>| -> Result<(), TestCaseError> {
        if d.marked.is_some() {
            prop_assert_eq!(d.pkt.ecn, Ecn::Ce, "a marked packet leaves as CE");
        }
        Ok(())
    };
    for op in ops {
        let gap = match op {
            Op::Arrive { gap_us, .. } | Op::Depart { gap_us } => Duration::from_micros(*gap_us as u64),
        };
        let target = now + gap;
        while let Some(t) = q.next_timer() {
            if t > target {
                break;
            }
            now = now.max(t);
            q.on_timer(&mut Ctx { now, rng: &mut rng, link_rate: link });
        }
        now = target;
        let mut ctx = Ctx { now, rng: &mut rng, link_rate: link };
        match *op {
            Op::Arrive { size, flow, ecn, .. } => {
                let ack = (flow == 6).then(|| {
                    next_ack += 1 + (size % 3);
                    next_ack
                });
                let ecn = codepoint(ecn);
                let p = P { id: next_id, size: if ack.is_some() { 52 } else { size }, flow: flow as u64, ecn, ack };
                offered.insert(next_id);
                next_id += 1;
                if let Admit::Marked(_) = q.enqueue(p, &mut ctx, &mut drops) {
                    prop_assert!(ecn != Ecn::NotEct, "only ECN-capable packets are marked");
                }
            }
            Op::Depart { .. } => {
                if let Some(d) = q.dequeue(&mut ctx, &mut drops) {
                    check_departure(&d)?;
                    fate.push((d.pkt.id, "dequeued"));
                }
            }
        }
        for d in drops.drain(..) {
            fate.push((d.pkt.id, d.cause.name()));
        }
        let b = q.backlog();
        prop_assert!(limit.packets.is_none_or(|p| b.packets <= p), "backlog {b:?} over {limit:?}");
        prop_assert!(limit.bytes.is_none_or(|x| b.bytes <= x), "backlog {b:?} over {limit:?}");
        if let Some(p) = q.probe().drop_prob {
            prop_assert!((0.0..=1.0).contains(&p), "drop probability {p}");
        }
        prop_assert!(q.conserved(), "counters {:?}", q.stats);
    }
    // drain: a held-back queue (CAKE's shaper) is asked again at its timer
    let mut idle = 0;
    while q.backlog().packets > 0 {
        now += Duration::from_micros(100);
        while let Some(t) = q.next_timer() {
            if t > now {
                break;
            }
            q.on_timer(&mut Ctx { now, rng: &mut rng, link_rate: link });
        }
        let mut ctx = Ctx { now, rng: &mut rng, link_rate: link };
        let d = q.dequeue(&mut ctx, &mut drops);
        for x in drops.drain(..) {
            fate.push((x.pkt.id, x.cause.name()));
        }
        match d {
            Some(d) => {
                check_departure(&d)?;
                fate.push((d.pkt.id, "dequeued"));
                idle = 0;
            }
            None => {
                idle += 1;
                prop_assert!(idle < 100_000, "a backlog of {:?} that never leaves", q.backlog());
            }
        }
    }
    // a last call finds the queues empty (COBALT's empty-queue bookkeeping)
    let mut ctx = Ctx { now: now + Duration::from_secs(1), rng: &mut rng, link_rate: link };
    prop_assert!(q.dequeue(&mut ctx, &mut drops).is_none());
    prop_assert!(drops.is_empty());
    let out: BTreeSet<u64> = fate.iter().map(|f| f.0).collect();
    prop_assert_eq!(out.len(), fate.len(), "a packet came back twice");
    prop_assert_eq!(out, offered, "every packet comes back exactly once");
    prop_assert!(q.conserved());
    Ok(fate)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn conserve_packets_and_respect_the_limit(ops in proptest::collection::vec(op(), 1..400), seed in any::<u64>(), pkts in 1u64..50, bytes in 1500u64..60_000) {
        for spec in specs() {
            play(&spec, Limit::packets(pkts), &ops, seed)?;
            play(&spec, Limit::bytes(bytes), &ops, seed)?;
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_decisions(ops in proptest::collection::vec(op(), 1..300), seed in any::<u64>()) {
        for spec in specs() {
            let a = play(&spec, Limit::packets(20), &ops, seed)?;
            let b = play(&spec, Limit::packets(20), &ops, seed)?;
            prop_assert_eq!(a, b);
        }
    }
}

#[test]
fn the_variants_do_act_in_such_sequences() {
    // An overloaded queue (arrivals twice as fast as departures, all four codepoints,
    // a flow of ACKs): each variant drops or marks by its own decision, not only by
    // overflow, so the properties above are not vacuous.
    let mut ops = Vec::new();
    for i in 0..3000u32 {
        ops.push(Op::Arrive { gap_us: 300, size: 1500, flow: (i % 8) as u8, ecn: (i / 8 % 4) as u8 });
        if i % 2 == 0 {
            ops.push(Op::Depart { gap_us: 300 });
        }
    }
    for spec in specs() {
        let mut q: Qdisc<P> = Qdisc::new(&spec, Limit::packets(1000));
        let fate = play(&spec, Limit::packets(1000), &ops, 7).unwrap();
        let own = fate.iter().filter(|f| f.1 == "random" || f.1 == "deterministic").count();
        // marks are counted by a second run through a Qdisc
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut now = Time::ZERO;
        let mut drops = Vec::new();
        for op in &ops {
            let gap = match op {
                Op::Arrive { gap_us, .. } | Op::Depart { gap_us } => Duration::from_micros(*gap_us as u64),
            };
            now += gap;
            while let Some(t) = q.next_timer() {
                if t > now {
                    break;
                }
                q.on_timer(&mut Ctx { now: t, rng: &mut rng, link_rate: Rate::from_mbps(10) });
            }
            let mut ctx = Ctx { now, rng: &mut rng, link_rate: Rate::from_mbps(10) };
            match *op {
                Op::Arrive { size, flow, ecn, .. } => {
                    q.enqueue(P { id: 0, size, flow: flow as u64, ecn: codepoint(ecn), ack: None }, &mut ctx, &mut drops);
                }
                Op::Depart { .. } => {
                    q.dequeue(&mut ctx, &mut drops);
                }
            }
            drops.clear();
        }
        let marks = q.stats.marked();
        assert!(own + marks as usize > 10, "{spec:?}: {own} drops and {marks} marks by the AQM's own decision");
    }
}

//! CAKE's parameters: the flow isolation modes, the shaper's overhead compensation
//! (`tc-cake(8)`) and the ACK filter's modes, with their defaults.

use serde::{Deserialize, Serialize};

use crate::time::Duration;
use crate::units::{Bytes, Rate};

/// What CAKE isolates (`tc-cake(8)` flow isolation keywords; sch_cake's bits:
/// source host 1, destination host 2, flows 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FlowMode {
    #[serde(rename = "flowblind")]
    Flowblind,
    #[serde(rename = "srchost")]
    Srchost,
    #[serde(rename = "dsthost")]
    Dsthost,
    #[serde(rename = "hosts")]
    Hosts,
    #[serde(rename = "flows")]
    Flows,
    #[serde(rename = "dual-srchost")]
    DualSrchost,
    #[serde(rename = "dual-dsthost")]
    DualDsthost,
    #[serde(rename = "triple-isolate")]
    TripleIsolate,
}

impl FlowMode {
    /// sch_cake's `CAKE_FLOW_*` value.
    pub fn bits(self) -> u8 {
        self as u8
    }
    pub(super) fn has(self, bit: u8) -> bool {
        self.bits() & bit != 0
    }
    /// Fairness between source hosts as well as flows (`cake_dsrc`).
    pub fn dual_src(self) -> bool {
        self.bits() & 5 == 5
    }
    /// Fairness between destination hosts as well as flows (`cake_ddst`).
    pub fn dual_dst(self) -> bool {
        self.bits() & 6 == 6
    }
}

pub(super) const SRC_IP: u8 = 1;
pub(super) const DST_IP: u8 = 2;
pub(super) const FLOWS: u8 = 4;

/// Link-layer framing of the shaper's accounting (`tc-cake(8)`: `noatm`, `atm`, `ptm`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Framing {
    /// No cell framing.
    None,
    /// ATM: 48 payload bytes per 53-byte cell (ADSL).
    Atm,
    /// PTM: 64b/65b coding (VDSL2).
    Ptm,
}

/// The ACK filter (`tc-cake(8)`: `no-ack-filter`, `ack-filter`, `ack-filter-aggressive`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckFilter {
    Off,
    On,
    Aggressive,
}

/// CAKE's parameters. Defaults are `tc-cake(8)`'s; the link's buffer plays the role of
/// Linux's packet limit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CakeParams {
    /// The shaper's rate; none: unlimited (tc-cake `unlimited`, the default).
    pub bandwidth: Option<Rate>,
    /// The RTT CAKE tunes COBALT's interval to (tc-cake `rtt`: 100 ms, "internet").
    pub rtt: Duration,
    /// COBALT's target (tc-cake: rtt / 20 = 5 ms).
    pub target: Option<Duration>,
    /// Flow isolation (tc-cake: triple-isolate).
    pub flow_mode: FlowMode,
    /// Bytes added to each packet's size for the shaper (tc-cake `overhead`: 0, raw).
    pub overhead: i32,
    /// Minimum packet size for the shaper (tc-cake `mpu`: 0).
    pub mpu: u32,
    /// Cell framing for the shaper (tc-cake: noatm).
    pub framing: Framing,
    /// The ACK filter (tc-cake: no-ack-filter).
    pub ack_filter: AckFilter,
    /// Ingress mode: drops count against the shaper (tc-cake `ingress`: off, egress).
    pub ingress: bool,
    /// Memory limit; none: tc-cake's automatic one (4 x bandwidth x rtt, at least 4 MB,
    /// at most 10240 MTUs; unlimited rate: 10240 MTUs).
    pub memlimit: Option<Bytes>,
    /// The device MTU (Linux `psched_mtu`: 1514 B on Ethernet).
    pub mtu: Bytes,
    /// Salt of the flow and host hashes (fixed for determinism; Linux: random).
    pub hash_perturbation: u64,
}

impl Default for CakeParams {
    fn default() -> Self {
        CakeParams {
            bandwidth: None,
            rtt: Duration::from_millis(100),
            target: None,
            flow_mode: FlowMode::TripleIsolate,
            overhead: 0,
            mpu: 0,
            framing: Framing::None,
            ack_filter: AckFilter::Off,
            ingress: false,
            memlimit: None,
            mtu: Bytes(1514),
            hash_perturbation: 0,
        }
    }
}

impl CakeParams {
    pub const DOC: &'static [(&'static str, &'static str)] = &[
        ("bandwidth", "shaper rate, e.g. \"9Mbps\"; absent: unlimited (tc-cake default)"),
        ("rtt", "RTT the COBALT interval is set to (tc-cake: 100 ms)"),
        ("target", "COBALT target (tc-cake: rtt/20 = 5 ms)"),
        ("flow_mode", "flowblind | srchost | dsthost | hosts | flows | dual-srchost | dual-dsthost | triple-isolate (tc-cake default)"),
        ("overhead", "bytes added per packet for the shaper (tc-cake overhead: 0)"),
        ("mpu", "minimum packet size for the shaper (tc-cake mpu: 0)"),
        ("framing", "none | atm (53/48 cells) | ptm (64b/65b) for the shaper (tc-cake: noatm)"),
        ("ack_filter", "off | on | aggressive (tc-cake: no-ack-filter)"),
        ("ingress", "ingress mode: drops are charged to the shaper (tc-cake: egress)"),
        ("memlimit", "memory limit; absent: tc-cake's automatic one"),
        ("mtu", "device MTU (Linux psched_mtu: 1514 B)"),
        ("hash_perturbation", "salt of the flow and host hashes (fixed for determinism)"),
    ];

    pub fn validate(&self) -> Result<(), String> {
        if self.rtt.is_zero() {
            return Err("rtt: must be greater than zero".into());
        }
        if self.target.is_some_and(|t| t.is_zero()) {
            return Err("target: must be greater than zero".into());
        }
        if self.bandwidth.is_some_and(|r| r.bps() < 8) {
            return Err("bandwidth: must be at least 8bps (leave it out for an unlimited CAKE)".into());
        }
        if !(-64..=256).contains(&self.overhead) {
            return Err(format!("overhead: must be in [-64, 256] bytes (as tc-cake), got {}", self.overhead));
        }
        if self.mpu > 256 {
            return Err(format!("mpu: must be at most 256 bytes (as tc-cake), got {}", self.mpu));
        }
        if self.mtu.0 == 0 || self.mtu.0 > 65_535 {
            return Err(format!("mtu: must be in [1, 65535] bytes, got {}", self.mtu.0));
        }
        if self.memlimit.is_some_and(|m| m.0 == 0) {
            return Err("memlimit: must be greater than zero".into());
        }
        Ok(())
    }

    /// tc-cake: `rtt` sets the target to rtt / 20 unless it is given.
    pub fn target(&self) -> Duration {
        self.target.unwrap_or(Duration::from_nanos((self.rtt.as_nanos() / 20).max(1_000)))
    }
}

/// The shaper's time per byte, as sch_cake `cake_set_rate` keeps it: `rate_ns >>
/// rate_shft` nanoseconds per byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaperRate {
    pub rate_ns: u64,
    pub rate_shft: u32,
}

impl ShaperRate {
    /// From a rate in bytes per second (sch_cake: at least 64 B/s).
    pub fn new(bytes_per_s: u64) -> ShaperRate {
        let mut shft = 34u32;
        let mut ns = (1_000_000_000u64 << shft) / bytes_per_s.max(64);
        while ns >> 34 != 0 {
            ns >>= 1;
            shft -= 1;
        }
        ShaperRate { rate_ns: ns, rate_shft: shft }
    }
    /// Time to send `len` bytes, ns.
    pub fn time(&self, len: u64) -> u64 {
        (len * self.rate_ns) >> self.rate_shft
    }
}

/// sch_cake `cake_calc_overhead` on an IP length (`off` = 0).
pub fn adjusted_len(p: &CakeParams, len: u32) -> u32 {
    let mut len = (len as i64 + p.overhead as i64).max(0) as u32;
    if len < p.mpu {
        len = p.mpu;
    }
    match p.framing {
        Framing::None => len,
        Framing::Atm => len.div_ceil(48) * 53,
        Framing::Ptm => len + len.div_ceil(64),
    }
}

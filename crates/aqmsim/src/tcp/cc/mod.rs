//! Congestion controllers: one file each, behind a small trait whose hooks default
//! to doing nothing (the shape of smoltcp's `congestion` module), picked through the
//! closed enum [`AnyCc`]. The one list in [`registry!`] below generates the scenario
//! schema ([`CcSpec`]), the enum and `aqmlab list`'s catalogue: adding a congestion
//! control is its own file (parameters with a [`CcParams`] impl, a
//! [`CongestionControl`] impl, its tests) and one line in that list.
//!
//! The window is counted in segments, as in Linux. It is kept as `f64`, but Linux's
//! controllers (Reno, CUBIC, BBR) keep it a whole number, growing it through
//! `snd_cwnd_cnt` ([`Window::cong_avoid_ai`]) as `tcp_cong.c` does. The sender may
//! transmit while `pipe < floor(cwnd)`.
//!
//! The trait's hooks are Linux's `struct tcp_congestion_ops`: `cong_avoid`
//! ([`CongestionControl::on_ack`]), `ssthresh` (`on_congestion`), `set_state` on a
//! timeout (`on_timeout`), `pkts_acked` (`on_rtt`), `cwnd_event`'s
//! `CA_EVENT_TX_START` (`on_tx_start`), `undo_cwnd`, `init` (`on_init`) and
//! `cong_control`. Each defaults to what Linux does for a controller that leaves it
//! out.
//!
//! A controller that sets cwnd and the pacing rate itself from delivery-rate samples,
//! as BBR does (Linux's `cong_control` hook), says so with
//! [`CongestionControl::controls_cwnd`]: the sender then measures the delivery rate
//! (`tcp/rate.rs`), hands it each ACK's [`RateSample`] with a view of the connection
//! ([`Conn`]), and leaves out PRR, the window's return to ssthresh at the end of a
//! reduction and the restart after idle, as Linux does for such a controller.
//!
//! ECN: every [`AckSample`] carries the ACK's congestion feedback as Linux counts it
//! (`delivered_ce`: the segments it reports CE-marked, from the ECE flag under RFC 3168
//! feedback or from the ACE counter under AccECN; [`RateSample::ece_delta`] and
//! [`Conn::delivered_ce`] for a controller that sets cwnd itself). A controller can
//! answer an ECN echo differently from a loss ([`CongestionControl::on_ecn`], DCTCP),
//! see every ACK before the sender's state machine ([`CongestionControl::in_ack_event`])
//! and follow the congestion state ([`CongestionControl::set_state`], Prague).

pub mod bbr;
pub mod cubic;
pub mod dctcp;
pub mod ledbat;
pub mod newreno;
pub mod prague;
pub mod reno;

use aqm::{Duration, Ecn, Time};
use serde::de::{DeserializeOwned, Deserializer};
use serde::{Deserialize, Serialize};

pub use super::rate::RateSample;
use crate::rng::SimRng;

pub use bbr::{Bbr, BbrParams};
pub use cubic::{Cubic, CubicParams};
pub use dctcp::{Dctcp, DctcpParams};
pub use prague::{Prague, PragueParams};
pub use newreno::{NewReno, NewRenoParams};
pub use reno::{Reno, RenoParams};

/// "Infinite" slow-start threshold (Linux `TCP_INFINITE_SSTHRESH`).
pub const INFINITE_SSTHRESH: f64 = 1e9;

/// Congestion window and slow-start threshold, in segments, and Linux's
/// `snd_cwnd_cnt`: the segments acked toward the next additive increase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    pub cwnd: f64,
    pub ssthresh: f64,
    /// Segments acknowledged since cwnd last grew in congestion avoidance
    /// (`tp->snd_cwnd_cnt`, reset whenever a reduction starts).
    pub cnt: u32,
}

impl Window {
    pub fn new(cwnd: f64, ssthresh: f64) -> Window {
        Window { cwnd, ssthresh, cnt: 0 }
    }
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
    /// RFC 5681 §3.1 slow start with appropriate byte counting (RFC 3465, L = all
    /// acked data), as Linux's `tcp_slow_start`: grow by the segments acked, up to
    /// ssthresh. Returns the acked segments left over for congestion avoidance.
    pub fn slow_start(&mut self, acked: f64) -> f64 {
        let room = (self.ssthresh - self.cwnd).max(0.0);
        let grow = acked.min(room);
        self.cwnd += grow;
        acked - grow
    }

    /// Linux `tcp_cong_avoid_ai`: one segment more for every `w` segments acked,
    /// counted in `cnt`, so that cwnd stays a whole number of segments.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cnt >= w {
            self.cnt = 0;
            self.cwnd += 1.0;
        }
        self.cnt += acked;
        if self.cnt >= w {
            let delta = self.cnt / w;
            self.cnt -= delta * w;
            self.cwnd += delta as f64;
        }
    }

    /// The shared first step of every controller's `on_ack`: no growth unless the
    /// sender is cwnd-limited; slow start takes what it can; returns the segments
    /// left for congestion avoidance, if any.
    pub fn after_slow_start(&mut self, s: &AckSample) -> Option<f64> {
        if !s.cwnd_limited {
            return None;
        }
        let mut acked = s.acked as f64;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
        }
        (acked > 0.0).then_some(acked)
    }
}

/// Linux's congestion states (`enum tcp_ca_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum CaState {
    #[default]
    Open,
    /// Some segments SACKed or duplicate ACKs seen, no loss detected yet.
    Disorder,
    /// Reducing after an ECN echo (RFC 3168 §6.1.2) or a loss repaired by a tail
    /// loss probe; cwnd set by PRR, no retransmission.
    Cwr,
    /// Fast recovery (RACK-TLP, RFC 8985; RFC 6675; RFC 6582), cwnd set by PRR.
    Recovery,
    /// After a retransmission timeout, until everything sent before it is acked.
    Loss,
}

impl CaState {
    /// The code of the flow series' `ca_state` column (results.py CA_STATES: open,
    /// recovery, loss, cwr); Disorder is recorded as open.
    pub fn code(self) -> u8 {
        match self {
            CaState::Open | CaState::Disorder => 0,
            CaState::Recovery => 1,
            CaState::Loss => 2,
            CaState::Cwr => 3,
        }
    }
}

/// What an ACK tells the controller, with the connection's state after it (the
/// fields of `struct tcp_sock` that Linux's controllers read).
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    pub now: Time,
    /// Segments newly delivered by this ACK (cumulatively acked or SACKed).
    pub acked: u32,
    /// Round-trip time sample from this ACK (of the most recently sent segment it
    /// delivered), if it gave one.
    pub rtt: Option<Duration>,
    /// Smallest RTT seen on the connection (`tcp_min_rtt`).
    pub min_rtt: Option<Duration>,
    /// Smoothed RTT.
    pub srtt: Option<Duration>,
    /// The sender was limited by cwnd (not by the application or the receiver), so
    /// growth is allowed (RFC 7661, Linux `tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
    /// Highest cumulatively acked segment and next new segment, for round tracking.
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Segments in flight (`tcp_packets_in_flight`) and outstanding (`packets_out`).
    pub in_flight: u64,
    pub packets_out: u64,
    pub ca_state: CaState,
    /// Payload bytes per segment.
    pub mss: u32,
    /// Initial window, segments.
    pub initial_window: u32,
    /// Linux's clock tick (1/HZ): controllers that count jiffies use it.
    pub tick: Duration,
    /// Segments this ACK reports delivered CE-marked (Linux's `delivered_ce` delta:
    /// all of `acked` when an RFC 3168 ACK carries ECE, the ACE counter's increase
    /// under AccECN, RFC 9768 §3.2.2.5).
    pub ce: u32,
    /// The ACK signals congestion by ECN (ECE set, or the ACE counter grew).
    pub ece: bool,
}

impl AckSample {
    /// Linux's `jiffies` at `t`: whole ticks since the start.
    pub fn jiffies(&self, t: Time) -> u64 {
        t.as_nanos() / self.tick.as_nanos().max(1)
    }
    /// Linux `usecs_to_jiffies`: a duration in ticks, rounded up.
    pub fn to_jiffies(&self, d: Duration) -> u64 {
        d.as_nanos().div_ceil(self.tick.as_nanos().max(1))
    }
    /// A sample at `now` that reports nothing: no delivery, no RTT, no ECN, limited
    /// by cwnd (tests start from it).
    pub fn at(now: Time) -> AckSample {
        AckSample { now, cwnd_limited: true, ..AckSample::default() }
    }
}

/// The connection as a controller that sets cwnd itself reads it on an ACK, after
/// the ACK's loss detection and state change (the fields of Linux's `tcp_sock` that
/// `tcp_bbr.c` reads).
#[derive(Clone, Copy, Debug, Default)]
pub struct Conn {
    pub now: Time,
    /// Payload bytes per segment (`mss_cache`).
    pub mss: u32,
    /// Smoothed RTT (`srtt_us`), none before the first sample.
    pub srtt: Option<Duration>,
    /// Smallest RTT seen (`tcp_min_rtt`).
    pub min_rtt: Option<Duration>,
    /// Segments in flight (`tcp_packets_in_flight`, RFC 6675 `pipe`).
    pub in_flight: u64,
    /// Segments delivered (acked or SACKed) and marked lost so far (`tp->delivered`,
    /// `tp->lost`), and when `delivered` last grew (`delivered_mstamp`).
    pub delivered: u64,
    pub lost: u64,
    pub delivered_mstamp: Time,
    /// Application-limited until `delivered` passes this (0: not limited;
    /// `tp->app_limited`). A controller may set it (BBR's PROBE_RTT does, so that
    /// its low-rate samples do not lower the bandwidth estimate).
    pub app_limited: u64,
    pub ca_state: CaState,
    /// Earliest departure time of the next segment (`tcp_wstamp_ns`).
    pub wstamp: Time,
    /// When data was last sent (`lsndtime`).
    pub lsndtime: Time,
    /// Linux's clock tick (1/HZ), for controllers that count jiffies.
    pub tick: Duration,
    /// Segments reported delivered CE-marked so far (`tp->delivered_ce`).
    pub delivered_ce: u64,
    /// Oldest unacknowledged and next new segment (`snd_una`, `snd_nxt`).
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// The sender was limited by cwnd (`tcp_is_cwnd_limited`).
    pub cwnd_limited: bool,
    /// Bytes on the wire per full segment (`tcp_mss_to_mtu`).
    pub packet_size: u32,
}

impl Conn {
    /// Linux's `jiffies` at `t`: whole ticks since the start.
    pub fn jiffies(&self, t: Time) -> u64 {
        t.as_nanos() / self.tick.as_nanos().max(1)
    }
}

pub trait CongestionControl {
    /// Grow the window on an ACK outside a reduction (Linux `cong_avoid`).
    fn on_ack(&mut self, w: &mut Window, s: &AckSample);
    /// A loss (or ECN) congestion event: return the new ssthresh (`ssthresh`). The
    /// caller sets cwnd (through PRR during recovery, RFC 6937).
    fn on_congestion(&mut self, w: &Window, now: Time) -> f64;
    /// A retransmission timeout: the connection enters the Loss state
    /// (`set_state(TCP_CA_Loss)`); the caller sets cwnd.
    fn on_timeout(&mut self, _w: &Window, _s: &AckSample) {}
    /// Every ACK that acknowledged or SACKed something, with its RTT sample if any
    /// (`pkts_acked`: HyStart watches delay in slow start).
    fn on_rtt(&mut self, _w: &mut Window, _s: &AckSample) {}
    /// A one-way delay sample, before `on_rtt`, from each ACK of new data that echoes
    /// a timestamp: its TSval minus its TSecr (LEDBAT, RFC 6817).
    fn on_delay(&mut self, _owd: Duration, _now: Time) {}
    /// Without SACK, end fast recovery on the first ACK of new data (RFC 5681 §3.2
    /// step 6) instead of on the ACK that covers the recovery point (RFC 6582 NewReno).
    fn rfc5681_recovery(&self) -> bool {
        false
    }
    /// A reduction turned out spurious: the cwnd to restore (`undo_cwnd`; Linux's
    /// `tcp_reno_undo_cwnd`, used by Reno and CUBIC: the larger of now and before).
    fn undo_cwnd(&mut self, w: &Window, prior_cwnd: f64, _c: &Conn) -> f64 {
        w.cwnd.max(prior_cwnd)
    }
    /// Every ACK, in any state, once its deliveries and ECN feedback are counted and
    /// before the sender's state machine runs (Linux's `in_ack_event`): DCTCP
    /// updates its estimate of the marked fraction here.
    fn in_ack_event(&mut self, _w: &Window, _s: &AckSample) {}
    /// An ECN echo starts a window reduction (the CWR state, RFC 3168 §6.1.2): return
    /// the new ssthresh. By default as for a loss.
    fn on_ecn(&mut self, w: &Window, now: Time) -> f64 {
        self.on_congestion(w, now)
    }
    /// The congestion state changes to `to` (Linux's `set_state`, called before the
    /// state takes effect and before the sender touches cwnd; a timeout's `Loss`
    /// also comes with `on_timeout`).
    fn set_state(&mut self, _w: &mut Window, _to: CaState, _now: Time) {}
    /// A retransmission timeout starts a new loss episode (Linux `CA_EVENT_LOSS`,
    /// sent by `tcp_enter_loss` once per episode, after `ssthresh`).
    fn on_loss_event(&mut self, _w: &Window, _now: Time) {}
    /// This controller sets cwnd and the pacing rate itself on every ACK from the
    /// delivery-rate sample ([`CongestionControl::cong_control`]; Linux: the
    /// `cong_control` hook is set).
    fn controls_cwnd(&self) -> bool {
        false
    }
    /// Set cwnd (and the pacing rate) from this ACK's rate sample (`cong_control`);
    /// called on every ACK when [`CongestionControl::controls_cwnd`], in every state.
    fn cong_control(&mut self, _w: &mut Window, _rs: &RateSample, _c: &mut Conn) {}
    /// The pacing rate in bytes per second if this controller sets its own, which
    /// also makes the sender pace (`sk_pacing_rate`, `SK_PACING_NEEDED`).
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// The fewest segments per burst (`min_tso_segs`), if this controller sets it.
    fn min_tso_segs(&self) -> Option<u32> {
        None
    }
    /// The segments per burst, if this controller sizes its bursts itself in place of
    /// `tcp_tso_autosize` (Linux's `tso_segs` hook: Prague's 250 µs bursts).
    fn tso_segs(&self) -> Option<u64> {
        None
    }
    /// The connection is established (`init`).
    fn on_init(&mut self, _w: &mut Window, _c: &Conn) {}
    /// A segment goes out with nothing in flight (`CA_EVENT_TX_START`).
    fn on_tx_start(&mut self, _w: &mut Window, _c: &Conn) {}
    /// A retransmission timeout put the connection in the Loss state
    /// (`set_state(TCP_CA_Loss)`), after `on_timeout`.
    fn on_enter_loss(&mut self, _c: &Conn) {}
    /// The controller's own random stream (BBR's starting phase of the gain cycle).
    fn set_rng(&mut self, _rng: SimRng) {}
}

/// What the registry needs from a congestion control's file, implemented on its
/// parameters (plain serde data with `deny_unknown_fields` and defaults from the
/// algorithm's source).
pub trait CcParams: Clone + std::fmt::Debug + PartialEq + Default + Serialize + DeserializeOwned {
    /// One-line description for `aqmlab list`.
    const TITLE: &'static str;
    /// The primary source, by authors and title (or RFC).
    const SOURCE: &'static str;
    /// One line per parameter: what it is and where its default comes from.
    const DOC: &'static [(&'static str, &'static str)];
    /// The Linux module that `aqmlab emulate` asks the kernel for, if any.
    const LINUX: Option<&'static str>;
    /// Whether the simulator models it (if not, only `aqmlab emulate` runs it).
    const SIMULATED: bool = true;
    /// It needs ECN whatever `tcp.ecn` says (Linux `TCP_CONG_NEEDS_ECN`: DCTCP, Prague).
    const NEEDS_ECN: bool = false;
    /// It needs AccECN feedback whatever `tcp.accecn` says (Linux
    /// `TCP_CONG_NEEDS_ACCECN`: Prague).
    const NEEDS_ACCECN: bool = false;
    /// A scalable controller that sends ECT(1), the L4S identifier (RFC 9331 §4.1;
    /// Linux `TCP_CONG_WANTS_ECT_1`), instead of ECT(0) (RFC 3168).
    const L4S: bool = false;
    type Algo: CongestionControl + Clone + std::fmt::Debug;
    /// Checks that cannot be expressed in types; the message starts with the field name.
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    fn build(&self) -> Self::Algo;
}

/// Name, description, source and parameter docs of a congestion control.
pub struct CcInfo {
    pub kind: &'static str,
    pub title: &'static str,
    pub source: &'static str,
    pub params: &'static [(&'static str, &'static str)],
    pub linux: Option<&'static str>,
    pub simulated: bool,
    pub needs_ecn: bool,
    pub needs_accecn: bool,
}

macro_rules! registry {
    ($($name:literal => $variant:ident($params:ty),)*) => {
        /// A congestion control and its parameters, as a scenario names it:
        /// `cc = "cubic"` or `cc = { kind = "cubic", beta = 0.7 }`.
        #[derive(Clone, Debug, PartialEq, Serialize)]
        #[serde(tag = "kind")]
        pub enum CcSpec {
            $( #[serde(rename = $name)] $variant($params), )*
        }

        /// Every built-in congestion control, dispatched by `match`.
        #[derive(Clone, Debug)]
        pub enum AnyCc {
            $( $variant(<$params as CcParams>::Algo), )*
        }

        impl CcSpec {
            /// Every kind, in the registry's order.
            pub const KINDS: &'static [CcInfo] = &[
                $( CcInfo {
                    kind: $name,
                    title: <$params as CcParams>::TITLE,
                    source: <$params as CcParams>::SOURCE,
                    params: <$params as CcParams>::DOC,
                    linux: <$params as CcParams>::LINUX,
                    simulated: <$params as CcParams>::SIMULATED,
                    needs_ecn: <$params as CcParams>::NEEDS_ECN,
                    needs_accecn: <$params as CcParams>::NEEDS_ACCECN,
                }, )*
            ];

            pub fn kind(&self) -> &'static str {
                match self { $( CcSpec::$variant(_) => $name, )* }
            }

            /// The default parameters of `kind`.
            pub fn default_for(kind: &str) -> Option<CcSpec> {
                match kind {
                    $( $name => Some(CcSpec::$variant(<$params>::default())), )*
                    _ => None,
                }
            }

            /// Deserialize the parameters of `kind` (the table without its `kind` key).
            pub fn from_kind<'de, D: Deserializer<'de>>(kind: &str, params: D) -> Result<CcSpec, D::Error> {
                use serde::de::Error;
                let spec = match kind {
                    $( $name => CcSpec::$variant(<$params>::deserialize(params)?), )*
                    other => {
                        let kinds: Vec<&str> = Self::KINDS.iter().map(|k| k.kind).collect();
                        return Err(D::Error::custom(format!("unknown congestion control \"{other}\", expected one of: {}", kinds.join(", "))));
                    }
                };
                Ok(spec)
            }

            /// Checks that cannot be expressed in types; the message starts with the field name.
            pub fn validate(&self) -> Result<(), String> {
                match self { $( CcSpec::$variant(p) => p.check(), )* }
            }

            pub fn build(&self) -> AnyCc {
                match self { $( CcSpec::$variant(p) => AnyCc::$variant(p.build()), )* }
            }

            /// The Linux module `aqmlab emulate` runs for it.
            pub fn linux(&self) -> Option<&'static str> {
                match self { $( CcSpec::$variant(_) => <$params as CcParams>::LINUX, )* }
            }

            /// Whether the simulator has this congestion control.
            pub fn simulated(&self) -> bool {
                match self { $( CcSpec::$variant(_) => <$params as CcParams>::SIMULATED, )* }
            }

            /// It needs ECN (and which feedback) whatever the TCP settings say.
            pub fn needs_ecn(&self) -> bool {
                match self { $( CcSpec::$variant(_) => <$params as CcParams>::NEEDS_ECN, )* }
            }
            pub fn needs_accecn(&self) -> bool {
                match self { $( CcSpec::$variant(_) => <$params as CcParams>::NEEDS_ACCECN, )* }
            }

            /// The ECN codepoint its packets carry when ECN is on: ECT(1) for an L4S
            /// controller (RFC 9331 §4.1), ECT(0) otherwise (RFC 3168).
            pub fn ect(&self) -> Ecn {
                let l4s = match self { $( CcSpec::$variant(_) => <$params as CcParams>::L4S, )* };
                if l4s { Ecn::Ect1 } else { Ecn::Ect0 }
            }
        }

        impl CongestionControl for AnyCc {
            #[inline]
            fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
                match self { $( AnyCc::$variant(c) => c.on_ack(w, s), )* }
            }
            fn on_congestion(&mut self, w: &Window, now: Time) -> f64 {
                match self { $( AnyCc::$variant(c) => c.on_congestion(w, now), )* }
            }
            fn on_timeout(&mut self, w: &Window, s: &AckSample) {
                match self { $( AnyCc::$variant(c) => c.on_timeout(w, s), )* }
            }
            #[inline]
            fn on_rtt(&mut self, w: &mut Window, s: &AckSample) {
                match self { $( AnyCc::$variant(c) => c.on_rtt(w, s), )* }
            }
            #[inline]
            fn on_delay(&mut self, owd: Duration, now: Time) {
                match self { $( AnyCc::$variant(c) => c.on_delay(owd, now), )* }
            }
            fn rfc5681_recovery(&self) -> bool {
                match self { $( AnyCc::$variant(c) => c.rfc5681_recovery(), )* }
            }
            fn undo_cwnd(&mut self, w: &Window, prior_cwnd: f64, c: &Conn) -> f64 {
                match self { $( AnyCc::$variant(x) => x.undo_cwnd(w, prior_cwnd, c), )* }
            }
            #[inline]
            fn in_ack_event(&mut self, w: &Window, s: &AckSample) {
                match self { $( AnyCc::$variant(c) => c.in_ack_event(w, s), )* }
            }
            fn on_ecn(&mut self, w: &Window, now: Time) -> f64 {
                match self { $( AnyCc::$variant(c) => c.on_ecn(w, now), )* }
            }
            fn set_state(&mut self, w: &mut Window, to: CaState, now: Time) {
                match self { $( AnyCc::$variant(c) => c.set_state(w, to, now), )* }
            }
            fn on_loss_event(&mut self, w: &Window, now: Time) {
                match self { $( AnyCc::$variant(c) => c.on_loss_event(w, now), )* }
            }
            fn controls_cwnd(&self) -> bool {
                match self { $( AnyCc::$variant(c) => c.controls_cwnd(), )* }
            }
            fn cong_control(&mut self, w: &mut Window, rs: &RateSample, c: &mut Conn) {
                match self { $( AnyCc::$variant(x) => x.cong_control(w, rs, c), )* }
            }
            #[inline]
            fn pacing_rate(&self) -> Option<u64> {
                match self { $( AnyCc::$variant(c) => c.pacing_rate(), )* }
            }
            fn min_tso_segs(&self) -> Option<u32> {
                match self { $( AnyCc::$variant(c) => c.min_tso_segs(), )* }
            }
            fn tso_segs(&self) -> Option<u64> {
                match self { $( AnyCc::$variant(c) => c.tso_segs(), )* }
            }
            fn on_init(&mut self, w: &mut Window, c: &Conn) {
                match self { $( AnyCc::$variant(x) => x.on_init(w, c), )* }
            }
            fn on_tx_start(&mut self, w: &mut Window, c: &Conn) {
                match self { $( AnyCc::$variant(x) => x.on_tx_start(w, c), )* }
            }
            fn on_enter_loss(&mut self, c: &Conn) {
                match self { $( AnyCc::$variant(x) => x.on_enter_loss(c), )* }
            }
            fn set_rng(&mut self, rng: SimRng) {
                match self { $( AnyCc::$variant(c) => c.set_rng(rng), )* }
            }
        }
    };
}

// The built-in congestion controls: kind => variant(parameters). One line each.
registry! {
    "cubic" => Cubic(cubic::CubicParams),
    "newreno" => NewReno(newreno::NewRenoParams),
    "reno" => Reno(reno::RenoParams),
    "bbr" => Bbr(bbr::BbrParams),
    "ledbat" => Ledbat(ledbat::LedbatParams),
    "dctcp" => Dctcp(dctcp::DctcpParams),
    "prague" => Prague(prague::PragueParams),
}

impl Default for CcSpec {
    fn default() -> Self {
        CcSpec::Cubic(Default::default())
    }
}

/// `cc = "cubic"` (the kind with its defaults) or `cc = { kind = "cubic", ... }`.
impl<'de> Deserialize<'de> for CcSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = toml::Value::deserialize(d)?;
        let (kind, rest) = match v {
            toml::Value::String(k) => (k, toml::Table::new()),
            toml::Value::Table(mut t) => match t.remove("kind") {
                Some(toml::Value::String(k)) => (k, t),
                Some(other) => {
                    return Err(D::Error::custom(format!("kind: expected a string, got {}", other.type_str())));
                }
                None => return Err(D::Error::custom("missing field `kind`")),
            },
            other => {
                return Err(D::Error::custom(format!("expected a congestion control name or {{ kind = \"...\", ... }}, got {}", other.type_str())));
            }
        };
        CcSpec::from_kind(&kind, toml::Value::Table(rest)).map_err(|e| D::Error::custom(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_listed_once_and_round_trip_through_their_schema() {
        let mut seen = std::collections::BTreeSet::new();
        for k in CcSpec::KINDS {
            assert!(seen.insert(k.kind), "{} listed twice", k.kind);
            let spec = CcSpec::default_for(k.kind).unwrap();
            assert_eq!(spec.kind(), k.kind);
            assert!(spec.validate().is_ok());
            let v = serde_json::to_value(&spec).unwrap();
            let mut fields: Vec<String> = v.as_object().unwrap().keys().filter(|f| *f != "kind").cloned().collect();
            fields.sort();
            let mut doc: Vec<String> = k.params.iter().map(|(n, _)| n.to_string()).collect();
            doc.sort();
            assert_eq!(fields, doc, "every parameter of {} documented, every doc a parameter", k.kind);
            let text = toml::to_string(&toml::Table::from_iter([("cc".to_string(), toml::Value::try_from(&spec).unwrap())])).unwrap();
            #[derive(Deserialize)]
            struct W {
                cc: CcSpec,
            }
            let again: W = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", k.kind));
            assert_eq!(again.cc, spec);
        }
    }

    #[test]
    fn a_name_alone_gives_the_defaults_and_errors_name_the_parameter() {
        #[derive(Deserialize, Debug)]
        struct W {
            #[allow(dead_code)]
            cc: CcSpec,
        }
        let w: W = toml::from_str("cc = \"reno\"").unwrap();
        assert_eq!(w.cc, CcSpec::default_for("reno").unwrap());
        let e = toml::from_str::<W>("cc = { kind = \"cubic\", betta = 0.5 }").unwrap_err().to_string();
        assert!(e.contains("betta"), "{e}");
        let e = toml::from_str::<W>("cc = \"vegas\"").unwrap_err().to_string();
        assert!(e.contains("vegas") && e.contains("cubic"), "{e}");
    }
}

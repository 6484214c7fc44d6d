//! TCP as Linux runs it: CUBIC or Reno senders with RACK-TLP loss detection
//! (RFC 8985; RFC 6675 selectable), proportional rate reduction (RFC 6937), undo of
//! spurious reductions (D-SACK, RFC 2883; F-RTO, RFC 5682; Eifel) and Linux's RTO;
//! receivers with Linux's delayed and quick ACKs, SACK and D-SACK.
//!
//! Both ends are deterministic state machines without a clock: time comes in as an
//! argument, packets go out through a `Vec`, and each end says when it next needs to
//! run (`poll_at`), as in smoltcp and quinn-proto.

pub mod cc;
pub mod jiffies;
pub mod minmax;
pub mod pacing;
pub mod rate;
pub mod rcvbuf;
pub mod receiver;
pub mod rtt;
pub mod sender;
pub mod tso;
pub mod window;

pub use window::palermo;

use aqm::{Bytes, Duration};
use serde::{Deserialize, Serialize};

pub use cc::{CcSpec, CubicParams};
pub use window::{PalermoParams, ReceiveWindow, ReceiverSpec};
pub use receiver::TcpReceiver;
pub use rtt::RtoStyle;
pub use sender::TcpSender;

/// ECN feedback of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnMode {
    /// Not-ECT packets; CE never seen.
    Off,
    /// RFC 3168: the receiver echoes ECE until the sender's CWR (or, under DCTCP,
    /// the CE state of the latest segment, RFC 8257 §3.2).
    Rfc3168,
    /// RFC 9768: the receiver counts CE-marked segments in the ACE field.
    AccEcn,
}

/// TCP settings of a flow group. Defaults follow Linux where the seeds' experiments
/// ran Linux TCP (Kuhn & Ros: the ns-2 TCP-Linux module, kernel 3.17).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Congestion control and its parameters: a name (`"cubic"`, `"newreno"`,
    /// `"reno"`, `"bbr"`) or
    /// `{ kind = "cubic", beta = 0.7, ... }` (registry: `cc/mod.rs`). The older form
    /// `tcp.cubic = { ... }` is still read (scenario.rs).
    pub cc: CcSpec,
    /// Payload bytes per segment (1460 B: 1500-byte packets with 40 bytes of headers).
    pub mss: Bytes,
    /// IPv4 + TCP header bytes added to every packet.
    pub header: Bytes,
    /// Initial window in segments (RFC 6928; Linux: 10).
    pub initial_window: u32,
    /// Selective acknowledgements (RFC 2018) and SACK-based recovery. Off: NewReno
    /// recovery (RFC 6582) on duplicate ACKs.
    pub sack: bool,
    /// Loss detection with SACK: "rack" (RACK-TLP, RFC 8985, as Linux since 4.18 and
    /// only Linux since 6.17: `net.ipv4.tcp_recovery = 1`) or "rfc6675" (DupThresh
    /// SACKed segments above a hole, RFC 6675 §4, as ns-2/ns-3 and older Linux).
    pub recovery: Recovery,
    /// Tail loss probes (RFC 8985 §7; Linux `net.ipv4.tcp_early_retrans = 3`).
    pub tlp: bool,
    /// F-RTO: detect spurious retransmission timeouts (RFC 5682, SACK-enhanced;
    /// Linux `net.ipv4.tcp_frto = 2`) and undo their reduction.
    pub frto: bool,
    /// The receiver reports duplicates with D-SACK blocks (RFC 2883; Linux
    /// `net.ipv4.tcp_dsack = 1`); the sender undoes reductions they prove spurious.
    pub dsack: bool,
    /// Duplicate-ACK threshold (RFC 5681 / RFC 6675 DupThresh, Linux's initial
    /// `tcp_reordering`: 3).
    pub dupthresh: u32,
    /// Delayed ACKs (RFC 5681 §4.2, RFC 1122).
    pub delayed_ack: bool,
    /// ACK at least every this many full-sized segments (RFC 5681 §4.2: 2).
    pub ack_every: u32,
    /// Delayed-ACK timeout, the least (Linux TCP_ATO_MIN = TCP_DELACK_MIN: 40 ms);
    /// Linux adapts it to the data's spacing, up to the RTT and 200 ms.
    pub delack_timeout: Duration,
    /// Segments ACKed immediately in quick-ACK mode: at connection start and after an
    /// idle period longer than the RTO (Linux TCP_MAX_QUICKACKS: 16).
    pub quickack: u32,
    /// SACK compression: past the first three duplicate ACKs for one cumulative ACK,
    /// the receiver ACKs at most every min(1 ms, RTT/20) (Linux tcp_comp_sack_nr 44).
    pub sack_compression: bool,
    /// Linux's clock tick, 1/HZ: its retransmission, probe and delayed-ACK timers
    /// fire on it (on the timer wheel's tick after their expiry) and its RTO is a
    /// whole number of ticks (this machine's kernel:
    /// HZ = 250, 4 ms; 0: exact timers).
    pub tick: Duration,
    /// Retransmission timeout formula: "linux" (default: SRTT + max(4 RTTVAR,
    /// rto_min), as `__tcp_set_rto`) or "rfc6298" (max(SRTT + 4 RTTVAR, rto_min)).
    pub rto_style: RtoStyle,
    /// Initial RTO (RFC 6298 §2.1: 1 s).
    pub rto_initial: Duration,
    /// RTO lower bound (Linux TCP_RTO_MIN: 200 ms, in place of RFC 6298's 1 s).
    pub rto_min: Duration,
    /// RTO upper bound (Linux TCP_RTO_MAX: 120 s).
    pub rto_max: Duration,
    /// Open connections with a SYN / SYN-ACK exchange before data.
    pub handshake: bool,
    /// Explicit Congestion Notification (RFC 3168): data sent ECT(0), CE echoed with
    /// ECE until CWR, at most one window reduction per RTT. Off by default (Linux's
    /// default `tcp_ecn = 2` only accepts ECN when asked).
    pub ecn: bool,
    /// Accurate ECN feedback (Briscoe, Kühlewind & Scheffenegger, RFC 9768): the
    /// receiver counts CE-marked segments and echoes the count in the 3-bit ACE
    /// field of every ACK, so the sender learns how many were marked, not only that
    /// one was. Implies `ecn`. Off: RFC 3168 feedback (ECE until CWR), or DCTCP's
    /// ECE state machine when the congestion control is `dctcp` (RFC 8257 §3.2).
    /// `prague` turns it on (Linux `TCP_CONG_NEEDS_ACCECN`), `dctcp` and `prague`
    /// turn `ecn` on (`TCP_CONG_NEEDS_ECN`).
    pub accecn: bool,
    /// A fixed cap on the advertised receive window; absent, the receive buffer's
    /// window (`receive_buffer`) alone, which never limits with "unlimited". With a
    /// Palermo receiver, the largest window it may advertise.
    pub receive_window: Option<Bytes>,
    /// How the receiver sizes its advertised window: "drs" (Dynamic Right-Sizing,
    /// never limits) or { kind = "palermo", ... } (Popovsky §2; docs/receivers.md).
    pub receiver: ReceiverSpec,
    /// The receiver's buffer: "linux" (default: Linux 6.18's receive buffer with
    /// autotuning and an application that reads each segment as it arrives: the
    /// window grows as data arrives and every segment that grows it is ACKed at once,
    /// reads send window updates and ACK pushed segments; `tcp/rcvbuf.rs`) or
    /// "unlimited" (no buffer, the window never limits and in-order data is ACKed
    /// every `ack_every` segments, as ns-2's and ns-3's receivers).
    pub receive_buffer: ReceiveBuffer,
    /// After an idle period longer than the RTO, halve cwnd per RTO of idle time,
    /// down to the initial window (RFC 2861 / RFC 7661; Linux `tcp_cwnd_restart`,
    /// `net.ipv4.tcp_slow_start_after_idle = 1`); and reduce a window the sender did
    /// not use for an RTO (RFC 2861's application-limited rule). Matters for
    /// persistent connections that wait between responses.
    pub slow_start_after_idle: bool,
    /// Pace the sender as Linux's internal pacing does (`tcp/pacing.rs`): bursts of
    /// about 1 ms of the pacing rate, spaced by their length over the rate. Linux
    /// paces CUBIC and Reno only under the fq qdisc or when asked, so off by default;
    /// a controller that sets its own pacing rate (BBR, Prague) paces whatever this says.
    pub pacing: bool,
    /// Pacing rate in slow start (cwnd below half of ssthresh), percent of cwnd per
    /// srtt (Linux `net.ipv4.tcp_pacing_ss_ratio`: 200).
    pub pacing_ss_ratio: u32,
    /// Pacing rate after slow start, percent of cwnd per srtt (Linux
    /// `net.ipv4.tcp_pacing_ca_ratio`: 120).
    pub pacing_ca_ratio: u32,
    /// Segment aggregation by the sending device (`tso.rs`): "linux" (default:
    /// Linux with GSO or TSO on, as every Linux host sends: skbs of about 1 ms of the
    /// pacing rate, `tcp_tso_autosize`, held back by `tcp_tso_should_defer` until the
    /// window opens enough, their segments back to back, the last of an skb of
    /// several with PSH) or "off" (every transmission is what the windows and pacing
    /// release, segment by segment, none with PSH, as ns-2's and ns-3's senders).
    pub gso: Gso,
}

/// Segment aggregation by the sending device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gso {
    /// Every transmission is what the windows and pacing release at that moment.
    Off,
    /// Linux's GSO skbs (`tcp_tso_autosize`, `tcp_tso_should_defer`, `tcp_write_xmit`).
    #[default]
    Linux,
}

/// The receiver's buffer model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReceiveBuffer {
    /// Linux's receive buffer and window (`tcp/rcvbuf.rs`).
    #[default]
    Linux,
    /// No buffer: the window never limits, no window-growth or window-update ACKs.
    Unlimited,
}

/// Loss detection with SACK.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// RACK-TLP (RFC 8985), Linux's.
    #[default]
    Rack,
    /// RFC 6675's DupThresh rule, with lost retransmissions detected as Linux's
    /// `tcp_mark_lost_retrans` did.
    Rfc6675,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            cc: CcSpec::default(),
            mss: Bytes(1460),
            header: Bytes(40),
            initial_window: 10,
            sack: true,
            recovery: Recovery::Rack,
            tlp: true,
            frto: true,
            dsack: true,
            dupthresh: 3,
            delayed_ack: true,
            ack_every: 2,
            delack_timeout: Duration::from_millis(40),
            quickack: 16,
            sack_compression: true,
            tick: Duration::from_millis(4),
            rto_style: RtoStyle::Linux,
            rto_initial: Duration::from_secs(1),
            rto_min: Duration::from_millis(200),
            rto_max: Duration::from_secs(120),
            handshake: false,
            ecn: false,
            accecn: false,
            receive_window: None,
            receiver: ReceiverSpec::Drs,
            receive_buffer: ReceiveBuffer::Linux,
            slow_start_after_idle: true,
            pacing: false,
            pacing_ss_ratio: 200,
            pacing_ca_ratio: 120,
            gso: Gso::Linux,
        }
    }
}

impl TcpConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.mss.0 == 0 || self.mss.0 > 65_000 {
            return Err(format!("mss: must be between 1B and 65000B, got {}", self.mss));
        }
        if self.initial_window == 0 {
            return Err("initial_window: must be at least 1 segment".into());
        }
        if self.dupthresh == 0 {
            return Err("dupthresh: must be at least 1".into());
        }
        if self.ack_every == 0 {
            return Err("ack_every: must be at least 1".into());
        }
        if self.rto_min.is_zero() || self.rto_min > self.rto_max {
            return Err(format!("rto_min: must be positive and at most rto_max ({}), got {}", self.rto_max, self.rto_min));
        }
        if self.tick > Duration::from_millis(100) {
            return Err(format!("tick: Linux's clock tick is 1/HZ (HZ 100 to 1000: 1 ms to 10 ms), got {}", self.tick));
        }
        // a zero initial timeout fires again and again at the same instant: the run
        // never advances (found by fuzzing)
        if self.rto_initial.is_zero() || self.rto_initial > self.rto_max {
            return Err(format!("rto_initial: must be positive and at most rto_max ({}), got {}", self.rto_max, self.rto_initial));
        }
        if let Some(w) = self.receive_window {
            if w.0 < self.mss.0 {
                return Err(format!("receive_window: must hold at least one segment ({}), got {w}", self.mss));
            }
        }
        for (name, v) in [("pacing_ss_ratio", self.pacing_ss_ratio), ("pacing_ca_ratio", self.pacing_ca_ratio)] {
            // Linux's sysctl accepts 0..=3000 %; 0 would leave the sender unpaced
            if !(1..=3000).contains(&v) {
                return Err(format!("{name}: must be between 1 and 3000 (percent), got {v}"));
            }
        }
        if let ReceiverSpec::Palermo(p) = &self.receiver {
            p.validate().map_err(|m| format!("receiver.{m}"))?;
        }
        self.cc.validate().map_err(|m| format!("cc.{m}"))
    }

    /// The feedback this connection uses, as both ends negotiate it from the shared
    /// settings (RFC 3168 §6.1.1, RFC 9768 §3.1): a congestion control that needs
    /// ECN or AccECN gets it whatever `ecn` and `accecn` say (as Linux's
    /// `TCP_CONG_NEEDS_ECN` / `TCP_CONG_NEEDS_ACCECN` override `tcp_ecn`).
    pub fn ecn_mode(&self) -> EcnMode {
        if self.accecn || self.cc.needs_accecn() {
            EcnMode::AccEcn
        } else if self.ecn || self.cc.needs_ecn() {
            EcnMode::Rfc3168
        } else {
            EcnMode::Off
        }
    }

    pub fn packet_size(&self) -> u32 {
        (self.mss.0 + self.header.0) as u32
    }
}

//! How a receiver sizes the window it advertises: one policy per file, behind
//! [`ReceiveWindow`]. The receiver (`tcp/receiver.rs`) asks its policy for the window
//! on every ACK and tells it what arrived; the policy never sees packets.
//!
//! - `drs`: Dynamic Right-Sizing (Fisk & Feng, "Dynamic right-sizing in TCP", 2001),
//!   the window of Linux's receive-buffer autotuning: it never limits the sender.
//! - `palermo`: a Palermo-like receiver (Popovsky, "New buffer bloat mitigation
//!   alternatives: infrastructure versus congestion control", §2): a window just above
//!   the path's bandwidth-delay product, back to DRS while a competitor floods the queue.
//!
//! A new policy is a file here, a variant of [`ReceiverSpec`] and its arm in
//! [`ReceiverSpec::build`] and [`ReceiverSpec::name`].

pub mod drs;
pub mod palermo;

use aqm::{Duration, Time};
use serde::{Deserialize, Serialize};

pub use drs::Drs;
pub use palermo::{Palermo, PalermoParams};

/// A receiver's window policy.
pub trait ReceiveWindow: Send {
    /// An RTT sample from a timestamp echo (RFC 7323 §4.3 at the receiver, Linux's
    /// `tcp_rcv_rtt_measure_ts`), with the payload bytes received so far.
    fn on_rtt(&mut self, _now: Time, _rtt: Duration, _bytes_received: u64) {}
    /// New (not duplicate) data arrived; `bytes_received` counts it.
    fn on_data(&mut self, _now: Time, _bytes_received: u64) {}
    /// The window this policy wants to advertise, in bytes; None: no limit of its own
    /// (the configured receive window, if any, applies).
    fn window(&self) -> Option<u64>;
    /// The policy's mode for the flow series' `receiver_mode` column (its code table
    /// is in record.rs): 0 for a policy without modes.
    fn mode_code(&self) -> u8 {
        0
    }
    /// Mode changes for the flow table: reverts to DRS and returns from it.
    fn reverts(&self) -> u32 {
        0
    }
    fn returns(&self) -> u32 {
        0
    }
}

/// The receiver's window policy, as a scenario names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReceiverSpec {
    /// Dynamic Right-Sizing (Fisk & Feng 2001): the window never limits the sender.
    #[default]
    Drs,
    /// A Palermo-like receiver (Popovsky §2): a window just above the estimated BDP.
    Palermo(PalermoParams),
}

impl ReceiverSpec {
    pub fn name(&self) -> &'static str {
        match self {
            ReceiverSpec::Drs => "drs",
            ReceiverSpec::Palermo(_) => "palermo",
        }
    }

    /// The policy for one receiver of segments of `mss` bytes.
    pub fn build(&self, mss: u64) -> Box<dyn ReceiveWindow> {
        match self {
            ReceiverSpec::Drs => Box::new(Drs),
            ReceiverSpec::Palermo(p) => Box::new(Palermo::new(p, mss)),
        }
    }
}

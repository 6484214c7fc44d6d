//! # aqmsim: aqmlab's packet-level simulator
//!
//! A deterministic discrete-event simulator of a dumbbell network: links with a
//! rate, a propagation delay and an egress queue run by an AQM from the [`aqm`]
//! crate; TCP endpoints (CUBIC and NewReno with SACK, PRR and RFC 6298 timers);
//! and the recording of what happens at the bottleneck.
//!
//! Time is an integer number of nanoseconds; equal-time events fire in the order
//! they were scheduled; every random draw comes from a stream derived from the run's
//! seed and the component's name. The same scenario and seed give the same output,
//! bit for bit.

pub mod budget;
pub mod builtin;
pub mod dist;
pub mod endpoint;
pub mod engine;
pub mod event;
pub mod hist;
pub mod net;
pub mod overrides;
pub mod packet;
pub mod record;
pub mod rng;
pub mod scenario;
pub mod sim;
pub mod tcp;

pub use aqm;
pub use record::RunOutput;
pub use scenario::{Scenario, ScenarioError};
pub use sim::{run, Sim, SimError};

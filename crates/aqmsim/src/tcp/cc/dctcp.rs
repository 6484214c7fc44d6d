//! DCTCP (Alizadeh, Greenberg, Maltz, Padhye, Patel, Prabhakar, Sengupta & Sridharan,
//! "Data Center TCP (DCTCP)", SIGCOMM 2010; Bensley, Thaler, Balasubramanian,
//! Eggert & Judd, RFC 8257) as Linux's `tcp_dctcp.c` runs it.
//!
//! The sender keeps `alpha`, an estimate of the fraction of its segments that are
//! marked, updated once per window of data (RFC 8257 §3.3):
//! `alpha = (1 - g) alpha + g F`, `g = 1/16`, with F the fraction of the segments
//! delivered in that window that the receiver reported CE-marked. An ECN echo
//! starts one window reduction (the CWR state, at most once per RTT) to
//! `cwnd (1 - alpha / 2)` (§3.3); a loss halves cwnd as Reno does (§3.4; Linux
//! `dctcp_react_to_loss`); the window grows as Reno's.
//!
//! Linux's integer arithmetic is kept: alpha in units of 1/1024
//! (`DCTCP_MAX_ALPHA`), starting at 1024, i.e. 1 (`dctcp_alpha_on_init`: the first
//! marks halve the window as a classic TCP would, until alpha has learnt the
//! marking level); the decay `alpha -= alpha >> 4` stops at zero
//! (`min_not_zero`); the reduction `cwnd - (cwnd alpha >> 11)`, at least 2 segments.
//! F counts segments (Linux's `delivered` and `delivered_ce` since 5.1), and a
//! window ends when the ACK covers what was sent when it began (`next_seq`).
//!
//! The receiver's side, its ECE state machine (RFC 8257 §3.2) or AccECN's counter,
//! is in `tcp/receiver.rs`; DCTCP needs ECN (`TCP_CONG_NEEDS_ECN`), so a `dctcp`
//! flow has it whatever `tcp.ecn` says.

use aqm::Time;

use serde::{Deserialize, Serialize};

use super::{AckSample, CaState, CcParams, CongestionControl, NewReno, Window};

/// `DCTCP_MAX_ALPHA`: alpha's unit is 1/1024.
pub const MAX_ALPHA: u32 = 1024;

/// DCTCP's parameters, Linux's module parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpParams {
    /// The gain g = 1/2^shift_g of alpha's moving average (Linux `dctcp_shift_g`: 4,
    /// g = 1/16; RFC 8257 §3.3).
    pub shift_g: u32,
    /// alpha's starting value in 1/1024 (Linux `dctcp_alpha_on_init`: 1024, i.e. 1).
    pub alpha_on_init: u32,
}

impl Default for DctcpParams {
    fn default() -> Self {
        DctcpParams { shift_g: 4, alpha_on_init: MAX_ALPHA }
    }
}

impl CcParams for DctcpParams {
    const TITLE: &'static str = "DCTCP: window cut in proportion to the fraction of CE-marked segments (alpha/2), once per RTT";
    const SOURCE: &'static str = "Alizadeh et al., \"Data Center TCP (DCTCP)\", SIGCOMM 2010; Bensley et al., RFC 8257 (Linux tcp_dctcp.c)";
    const DOC: &'static [(&'static str, &'static str)] = &[
        ("shift_g", "alpha's gain g = 1/2^shift_g (Linux dctcp_shift_g: 4, g = 1/16; RFC 8257 §3.3)"),
        ("alpha_on_init", "alpha's starting value in 1/1024 (Linux dctcp_alpha_on_init: 1024, i.e. alpha = 1)"),
    ];
    const LINUX: Option<&'static str> = Some("dctcp");
    const NEEDS_ECN: bool = true;
    type Algo = Dctcp;
    fn check(&self) -> Result<(), String> {
        // Linux: "If dctcp_shift_g == 1, a 32bit value would overflow" above 10
        if !(1..=10).contains(&self.shift_g) {
            return Err(format!("shift_g: must be between 1 and 10 (g = 1/2 to 1/1024), got {}", self.shift_g));
        }
        if self.alpha_on_init > MAX_ALPHA {
            return Err(format!("alpha_on_init: must be at most {MAX_ALPHA} (alpha = 1), got {}", self.alpha_on_init));
        }
        Ok(())
    }
    fn build(&self) -> Dctcp {
        Dctcp { shift_g: self.shift_g, alpha: self.alpha_on_init, next_seq: 0, delivered: 0, delivered_ce: 0, old_delivered: 0, old_delivered_ce: 0 }
    }
}

#[derive(Clone, Debug)]
pub struct Dctcp {
    shift_g: u32,
    /// The estimate of the marked fraction, in 1/1024.
    alpha: u32,
    /// The window under observation ends when snd_una reaches this.
    next_seq: u64,
    /// Segments delivered and reported CE-marked since the start (`tp->delivered`,
    /// `tp->delivered_ce`), and their values when the window began.
    delivered: u64,
    delivered_ce: u64,
    old_delivered: u64,
    old_delivered_ce: u64,
}

impl Dctcp {
    /// alpha as a fraction.
    pub fn alpha(&self) -> f64 {
        self.alpha as f64 / MAX_ALPHA as f64
    }
}

impl CongestionControl for Dctcp {
    /// Reno's growth (Linux: `.cong_avoid = tcp_reno_cong_avoid`).
    fn on_ack(&mut self, w: &mut Window, s: &AckSample) {
        NewReno.on_ack(w, s)
    }

    /// A loss: halve, as Reno (`dctcp_react_to_loss`, RFC 8257 §3.4).
    fn on_congestion(&mut self, w: &Window, _now: Time) -> f64 {
        (w.cwnd.floor() / 2.0).floor().max(2.0)
    }

    /// An ECN echo: `cwnd - cwnd alpha / 2` (`dctcp_ssthresh`, RFC 8257 §3.3).
    fn on_ecn(&mut self, w: &Window, _now: Time) -> f64 {
        let cwnd = w.cwnd.floor() as u64;
        (cwnd - ((cwnd * self.alpha as u64) >> 11)).max(2) as f64
    }

    /// A loss while reducing for an ECN echo still halves (Linux `dctcp_state`:
    /// entering Recovery reacts to the loss whatever the state before).
    fn set_state(&mut self, w: &mut Window, to: CaState, _now: Time) {
        if to == CaState::Recovery {
            w.ssthresh = (w.cwnd.floor() / 2.0).floor().max(2.0);
        }
    }

    /// `dctcp_update_alpha`, on every ACK: once snd_una passes the end of the window
    /// under observation, fold its marked fraction into alpha and start the next.
    fn in_ack_event(&mut self, _w: &Window, s: &AckSample) {
        self.delivered += s.acked as u64;
        self.delivered_ce += s.ce as u64;
        if s.snd_una < self.next_seq {
            return;
        }
        let delivered = self.delivered - self.old_delivered;
        let delivered_ce = self.delivered_ce - self.old_delivered_ce;
        let mut alpha = self.alpha;
        // alpha -= min_not_zero(alpha, alpha >> g): a small alpha decays to 0
        let decay = alpha >> self.shift_g;
        alpha -= if decay == 0 { alpha } else { decay };
        if delivered_ce > 0 {
            // F in 1/1024, times g: (delivered_ce << (10 - g)) / delivered
            let f = (delivered_ce << (10 - self.shift_g)) / delivered.max(1);
            alpha = (alpha as u64 + f).min(MAX_ALPHA as u64) as u32;
        }
        self.alpha = alpha;
        self.next_seq = s.snd_nxt;
        self.old_delivered = self.delivered;
        self.old_delivered_ce = self.delivered_ce;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(snd_una: u64, snd_nxt: u64, acked: u32, ce: u32) -> AckSample {
        AckSample { acked, ce, ece: ce > 0, snd_una, snd_nxt, ..AckSample::at(Time::ZERO) }
    }

    #[test]
    fn alpha_starts_at_one_and_follows_the_marked_fraction_with_gain_one_sixteenth() {
        let mut d = DctcpParams::default().build();
        let w = Window::new(100.0, 50.0);
        assert_eq!(d.alpha, 1024);
        // the first ACK ends the (empty) first window: 1024 - 64 = 960, no marks
        d.in_ack_event(&w, &ack(0, 10, 0, 0));
        assert_eq!(d.alpha, 960);
        // a window of 10 segments, 5 marked (F = 1/2): ACKs within it change nothing
        d.in_ack_event(&w, &ack(4, 20, 4, 2));
        assert_eq!(d.alpha, 960);
        // the ACK that covers snd_nxt of the window's start folds it in:
        // 960 - 60 + (5 << 6) / 10 = 900 + 32 = 932 (= 15/16 * 960 + 1/16 * 512)
        d.in_ack_event(&w, &ack(10, 20, 6, 3));
        assert_eq!(d.alpha, 932);
        // no marks for many windows: alpha decays geometrically, then to exactly 0
        let mut seq = 20;
        for _ in 0..200 {
            seq += 10;
            d.in_ack_event(&w, &ack(seq, seq + 10, 10, 0));
        }
        assert_eq!(d.alpha, 0, "min_not_zero: below 16, alpha drops to 0");
        // all marked: alpha climbs toward 1 by g of the gap each window, capped at 1024
        for _ in 0..200 {
            seq += 10;
            d.in_ack_event(&w, &ack(seq, seq + 10, 10, 10));
        }
        assert_eq!(d.alpha, 1024);
    }

    #[test]
    fn an_echo_cuts_by_alpha_over_two_and_a_loss_halves() {
        let mut d = DctcpParams::default().build();
        let w = Window::new(100.0, 1e9);
        // alpha = 1: the first echo halves, as a classic TCP
        assert_eq!(d.on_ecn(&w, Time::ZERO), 50.0);
        d.alpha = 256; // 1/4: cut by 1/8 (100 * 256 >> 11 = 12)
        assert_eq!(d.on_ecn(&w, Time::ZERO), 88.0);
        d.alpha = 0;
        assert_eq!(d.on_ecn(&w, Time::ZERO), 100.0);
        assert_eq!(d.on_ecn(&Window::new(2.5, 1e9), Time::ZERO), 2.0);
        // a loss halves whatever alpha says, and so does a loss during a reduction
        assert_eq!(d.on_congestion(&w, Time::ZERO), 50.0);
        let mut w2 = Window::new(80.0, 70.0);
        d.set_state(&mut w2, CaState::Recovery, Time::ZERO);
        assert_eq!(w2.ssthresh, 40.0);
        assert_eq!(d.on_congestion(&Window::new(3.0, 1e9), Time::ZERO), 2.0);
    }

    #[test]
    fn the_marked_fraction_is_the_steady_state_alpha() {
        // A constant marked fraction F: alpha converges to F (the EWMA's fixed point),
        // to within Linux's integer rounding.
        for (marked, per) in [(1u32, 10u32), (3, 10), (1, 2)] {
            let mut d = DctcpParams::default().build();
            let w = Window::new(100.0, 50.0);
            let mut seq = 0;
            for _ in 0..400 {
                d.in_ack_event(&w, &ack(seq, seq + per as u64, per, marked));
                seq += per as u64;
            }
            let f = marked as f64 / per as f64;
            assert!((d.alpha() - f).abs() < 0.02, "F {f}: alpha {}", d.alpha());
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        assert!(DctcpParams { shift_g: 0, ..Default::default() }.check().unwrap_err().starts_with("shift_g:"));
        assert!(DctcpParams { alpha_on_init: 2000, ..Default::default() }.check().unwrap_err().starts_with("alpha_on_init:"));
    }
}

//! The application's side: start (with or without a handshake), further writes on
//! an open connection, close; and how cwnd follows an application that does not
//! fill it (Linux `tcp_cwnd_validate`, RFC 7661; `tcp_cwnd_restart` after idle,
//! RFC 2861).

use aqm::{Duration, Time};

use crate::packet::{Kind, Packet};
use crate::tcp::EcnMode;
use crate::tcp::cc::{CaState, CongestionControl};
use super::{Pending, Rexmit, State, TcpSender};

impl TcpSender {
    /// Start the connection with `bytes` to send (`None`: unlimited, a bulk transfer).
    pub fn start(&mut self, now: Time, bytes: Option<u64>, out: &mut Vec<Packet>) {
        debug_assert_eq!(self.state, State::Idle);
        self.started_at = Some(now);
        self.snd_cwnd_stamp = now;
        match bytes {
            None => self.app_segments = u64::MAX,
            Some(b) => self.push_message(b),
        }
        if self.cfg.handshake {
            self.state = State::SynSent;
            self.send_syn(now, out);
        } else {
            // Without a handshake, ECN is as configured (both ends share the setting).
            let mode = self.cfg.ecn_mode();
            (self.ecn_ok, self.accecn) = (mode != EcnMode::Off, mode == EcnMode::AccEcn);
            self.established(now);
            self.push(now, out, Rexmit::None);
        }
    }

    /// The connection is open: the congestion control starts (`tcp_init_transfer`),
    /// with the handshake's RTT if there was one.
    pub(super) fn established(&mut self, now: Time) {
        self.state = State::Established;
        let c = self.conn(now);
        self.cc.on_init(&mut self.w, &c);
        // pacing if configured or asked for by the controller (`SK_PACING_NEEDED`)
        self.pacer.on = self.cfg.pacing || self.cc.pacing_rate().is_some();
        if self.pacer.on || self.gso() {
            self.update_pacing_rate();
        }
    }

    /// Segments needed for `bytes` of payload.
    pub fn segments_for(&self, bytes: u64) -> u64 {
        bytes.max(1).div_ceil(self.cfg.mss.0)
    }

    fn push_message(&mut self, bytes: u64) {
        let mss = self.cfg.mss.0;
        let b = bytes.max(1);
        let n = self.segments_for(b);
        let start = if self.app_segments == u64::MAX { self.snd_nxt } else { self.app_segments };
        self.app_segments = start + n;
        self.msgs.push_back((self.app_segments, (b - (n - 1) * mss) as u32));
    }

    /// The application writes `bytes` more on an open connection (HTTP/1.1: the next
    /// response on a persistent connection). After an idle period longer than the
    /// RTO, cwnd restarts (Linux `tcp_slow_start_after_idle_check`, RFC 2861).
    pub fn send_more(&mut self, now: Time, bytes: u64, out: &mut Vec<Packet>) {
        debug_assert!(self.app_segments != u64::MAX, "a bulk sender has unlimited data already");
        if self.rate_cc {
            // `tcp_rate_check_app_limited` on the application's write
            let (pipe, cwnd) = (self.pipe(), self.cwnd_segments());
            self.rate.check_app_limited(self.snd_nxt >= self.app_segments, pipe, cwnd, self.lost_out, self.retrans_out);
        }
        // Linux leaves a controller that sets cwnd itself alone
        // (`tcp_slow_start_after_idle_check`)
        if matches!(self.state, State::Established | State::Done) && self.cfg.slow_start_after_idle && self.outstanding() == 0 && !self.rate_cc {
            let idle = now.saturating_since(self.last_send);
            if idle > self.rtt.rto() {
                self.cwnd_restart(now, idle);
            }
        }
        self.push_message(bytes);
        if self.state == State::Done {
            self.state = State::Established;
            self.finished_at = None;
        }
        self.push(now, out, Rexmit::None);
    }

    /// The application stops writing (a bulk flow leaves): what was sent is still
    /// delivered, then the sender is done.
    pub fn close(&mut self, now: Time) {
        if self.app_segments == u64::MAX {
            self.app_segments = self.snd_nxt;
            self.msgs.push_back((self.snd_nxt, self.cfg.mss.0 as u32));
        }
        if self.state == State::Established && self.snd_una >= self.app_segments {
            self.state = State::Done;
            self.finished_at = Some(now);
            self.pending = Pending::None;
            self.pace_at = None;
        }
    }

    /// Segments the application has handed over so far (u64::MAX: unlimited).
    pub fn app_segments(&self) -> u64 {
        self.app_segments
    }

    pub(super) fn send_syn(&mut self, now: Time, out: &mut Vec<Packet>) {
        self.syn_sent_at = now;
        let mut syn = Packet::new(0, self.flow, Kind::Syn, self.cfg.header.0 as u32, now);
        // RFC 3168 §6.1.1: an ECN-setup SYN carries ECE and CWR; RFC 9768 §3.1.1: an
        // AccECN-setup SYN all three of AE, CWR and ECE.
        match self.cfg.ecn_mode() {
            EcnMode::Off => {}
            EcnMode::Rfc3168 => syn.set_ace(0b011),
            EcnMode::AccEcn => syn.set_ace(0b111),
        }
        out.push(syn);
        let rto = self.rtt.rto();
        self.set_timer(Pending::Rto, now, rto);
    }

    /// Linux `tcp_cwnd_validate` (RFC 7661): remember whether cwnd limited the current
    /// window; a window not fully used for an RTO shrinks toward what was used.
    pub(super) fn cwnd_validate(&mut self, now: Time, is_cwnd_limited: bool) {
        let out = self.outstanding();
        if self.snd_una >= self.cwnd_usage_seq || is_cwnd_limited || (!self.is_cwnd_limited && out > self.max_packets_out) {
            self.is_cwnd_limited = is_cwnd_limited;
            self.max_packets_out = out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
        if self.cwnd_limited() {
            self.snd_cwnd_used = 0;
            self.snd_cwnd_stamp = now;
        } else {
            self.snd_cwnd_used = self.snd_cwnd_used.max(out);
            if self.cfg.slow_start_after_idle && now.saturating_since(self.snd_cwnd_stamp) >= self.rtt.rto() && !self.rate_cc {
                self.cwnd_application_limited(now);
            }
        }
    }

    /// Linux `tcp_cwnd_application_limited` (RFC 2861 §3): a window the sender did
    /// not fill for an RTO shrinks to the mean of itself and what was used.
    fn cwnd_application_limited(&mut self, now: Time) {
        if self.ca_state == CaState::Open {
            let used = self.snd_cwnd_used.max(self.cfg.initial_window as u64);
            if (used as f64) < self.w.cwnd {
                self.w.ssthresh = self.current_ssthresh();
                self.w.cwnd = ((self.w.cwnd as u64 + used) >> 1) as f64;
            }
            self.snd_cwnd_used = 0;
        }
        self.snd_cwnd_stamp = now;
    }

    /// Linux `tcp_cwnd_restart` (RFC 2861 §3): halve cwnd for every RTO of idle time,
    /// not below the initial window; ssthresh keeps at least 3/4 of the old cwnd.
    fn cwnd_restart(&mut self, now: Time, idle: Duration) {
        self.w.ssthresh = self.current_ssthresh();
        let restart = (self.cfg.initial_window as f64).min(self.w.cwnd);
        let mut cwnd = self.w.cwnd as u64;
        let rto = self.rtt.rto().as_nanos().max(1);
        let mut delta = idle.as_nanos() as i128;
        loop {
            delta -= rto as i128;
            if delta <= 0 || (cwnd as f64) <= restart {
                break;
            }
            cwnd >>= 1;
        }
        self.w.cwnd = (cwnd as f64).max(restart);
        self.snd_cwnd_stamp = now;
        self.snd_cwnd_used = 0;
    }
}

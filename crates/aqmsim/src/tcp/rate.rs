//! Delivery-rate estimation, as Linux's `tcp_rate.c` does it (Cheng, Cardwell,
//! Hassas Yeganeh & Jacobson, draft-cheng-iccrg-delivery-rate-estimation): each
//! transmitted segment remembers how much had been delivered, and when, at its
//! send time; when it is acknowledged (or SACKed), the data delivered since then
//! over the longer of the send and the ACK intervals is a sample of the path's
//! delivery rate. BBR is built on these samples.
//!
//! The sender keeps one [`TxInfo`] per outstanding segment and one [`RateState`],
//! and only for a controller that asks for rate samples (BBR); segments count as
//! Linux's packets (`pcount`), sequence numbers as segments.

use aqm::{Duration, Time};

/// What a segment remembers of the connection when it is (re)transmitted
/// (`TCP_SKB_CB(skb)->tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxInfo {
    /// `delivered` when it was sent.
    pub delivered: u64,
    /// When `delivered` last changed, at its send time; `None` once the segment has
    /// given its sample (a SACKed segment is not used again at its cumulative ACK).
    pub delivered_mstamp: Option<Time>,
    /// The send time of the first segment of the current flight.
    pub first_tx: Time,
    /// The sender was application-limited when it was sent.
    pub app_limited: bool,
}

/// One ACK's rate sample (`struct rate_sample`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// `delivered` when the most recently sent of the segments this ACK delivered was
    /// sent (0: no segment gave a sample).
    pub prior_delivered: u64,
    /// When that `delivered` was reached.
    pub prior_mstamp: Option<Time>,
    /// Segments delivered over the sample's interval (`None`: no valid sample).
    pub delivered: Option<u64>,
    /// The sample's interval, the longer of the send and the ACK phases (`None`:
    /// invalid, e.g. shorter than the minimum RTT).
    pub interval: Option<Duration>,
    /// The sample was taken while application-limited.
    pub is_app_limited: bool,
    /// The sampled segment was a retransmission.
    pub is_retrans: bool,
    /// Segments newly acked or SACKed by this ACK.
    pub acked_sacked: u64,
    /// Segments newly marked lost while processing this ACK.
    pub losses: u64,
    /// Segments in flight before this ACK.
    pub prior_in_flight: u64,
    /// RTT of the most recently sent segment this ACK delivered.
    pub rtt: Option<Duration>,
    /// The ACK was likely delayed by the receiver.
    pub is_ack_delayed: bool,
    /// Segments this ACK reports CE-marked (`ece_delta`, Linux's AccECN patches:
    /// Prague grows only for the others).
    pub ece_delta: u64,
    /// Send phase of the interval.
    pub(crate) send_interval: Duration,
    /// Highest sequence (exclusive end) of the sampled segment, for ties.
    pub(crate) last_end_seq: u64,
    /// Send time of the sampled segment.
    pub(crate) tx_time: Time,
}

impl RateSample {
    /// The delivery rate in segments per second, if the sample is valid.
    pub fn rate(&self) -> Option<f64> {
        match (self.delivered, self.interval) {
            (Some(d), Some(i)) if !i.is_zero() => Some(d as f64 / i.as_secs_f64()),
            _ => None,
        }
    }
}

/// `tp->app_limited` of a new connection (Linux `tcp_init_sock`: `~0U`): the
/// segments sent before the first ACK are marked application-limited, and the first
/// sample clears the mark.
pub const APP_LIMITED_AT_START: u64 = u64::MAX;

/// The connection's side of rate estimation (`tp->delivered`, `delivered_mstamp`,
/// `first_tx_mstamp`, `app_limited`, `rate_delivered`, `rate_interval_us`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateState {
    /// Segments delivered (acked or SACKed, and D-SACKed retransmissions) so far.
    pub delivered: u64,
    /// When `delivered` last grew.
    pub delivered_mstamp: Time,
    /// Send time of the most recently sent segment that has been delivered (the
    /// start of the current send phase).
    pub first_tx: Time,
    /// Application-limited until `delivered` passes this (0: not limited).
    pub app_limited: u64,
    /// The last non-application-limited (or the fastest application-limited) sample.
    pub rate_delivered: u64,
    pub rate_interval: Duration,
    pub rate_app_limited: bool,
}

/// `a` was sent after `b` (by time, then by sequence: Linux `tcp_skb_sent_after`).
pub fn sent_after(t1: Time, t2: Time, seq1: u64, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

impl RateState {
    /// A new connection's state: nothing delivered, application-limited until the
    /// first ACK ([`APP_LIMITED_AT_START`]).
    pub fn new() -> RateState {
        RateState { app_limited: APP_LIMITED_AT_START, ..RateState::default() }
    }

    /// `tcp_rate_skb_sent`: a segment leaves at `now`, with `packets_out` segments
    /// outstanding before it.
    pub fn on_sent(&mut self, now: Time, packets_out: u64) -> TxInfo {
        if packets_out == 0 {
            // a new flight: its send phase and ACK phase start now
            self.first_tx = now;
            self.delivered_mstamp = now;
        }
        TxInfo { delivered: self.delivered, delivered_mstamp: Some(self.delivered_mstamp), first_tx: self.first_tx, app_limited: self.app_limited != 0 }
    }

    /// `tcp_rate_skb_delivered`: a segment sent at `sent_at` ending at `end_seq`
    /// (exclusive), retransmitted or not, is acked or SACKed; the most recently sent
    /// of an ACK's segments defines its sample. `sacked`: it was SACKed (not yet
    /// cumulatively acked), so it gives no sample again.
    pub fn on_delivered(&mut self, tx: &mut TxInfo, sent_at: Time, end_seq: u64, retrans: bool, sacked: bool, rs: &mut RateSample) {
        let Some(mstamp) = tx.delivered_mstamp else {
            return;
        };
        if rs.prior_delivered == 0 || sent_after(sent_at, self.first_tx, end_seq, rs.last_end_seq) {
            rs.prior_delivered = tx.delivered;
            rs.prior_mstamp = Some(mstamp);
            rs.is_app_limited = tx.app_limited;
            rs.is_retrans = retrans;
            rs.last_end_seq = end_seq;
            rs.tx_time = sent_at;
            // the send phase: from the first send of that flight to this send
            self.first_tx = sent_at;
            rs.send_interval = sent_at.saturating_since(tx.first_tx);
        }
        if sacked {
            tx.delivered_mstamp = None;
        }
    }

    /// `tcp_rate_gen`: complete the ACK's sample once `delivered` counts what it
    /// delivered (`newly`) and `lost` what it marked lost.
    pub fn generate(&mut self, now: Time, newly: u64, lost: u64, min_rtt: Option<Duration>, rs: &mut RateSample) {
        if self.app_limited != 0 && (self.app_limited == APP_LIMITED_AT_START || self.delivered > self.app_limited) {
            // the bubble of application-limited data has been delivered (Linux's
            // `after(delivered, ~0U)` holds at once: the start's mark lasts until
            // the first sample)
            self.app_limited = 0;
        }
        if newly > 0 {
            self.delivered_mstamp = now;
        }
        rs.acked_sacked = newly;
        rs.losses = lost;
        let Some(prior) = rs.prior_mstamp else {
            rs.delivered = None;
            rs.interval = None;
            return;
        };
        let delivered = self.delivered - rs.prior_delivered;
        rs.delivered = Some(delivered);
        // send and ACK phases of the window; the longer one, against ACK compression
        let ack_interval = now.saturating_since(prior);
        let interval = rs.send_interval.max(ack_interval);
        // an interval shorter than the minimum RTT is not a valid sample (a
        // spurious retransmission's ACK, for instance)
        if min_rtt.is_some_and(|m| interval < m) {
            rs.interval = None;
            return;
        }
        rs.interval = Some(interval);
        // keep the last non-app-limited sample, or a faster app-limited one
        if !rs.is_app_limited || delivered as u128 * self.rate_interval.as_nanos() as u128 >= self.rate_delivered as u128 * interval.as_nanos() as u128 {
            self.rate_delivered = delivered;
            self.rate_interval = interval;
            self.rate_app_limited = rs.is_app_limited;
        }
    }

    /// `tcp_rate_check_app_limited`: the application has less than a segment to
    /// send, the window is not full and every lost segment has been retransmitted:
    /// mark the flight application-limited until it has been delivered.
    pub fn check_app_limited(&mut self, nothing_to_send: bool, in_flight: u64, cwnd: u64, lost_out: u64, retrans_out: u64) {
        if nothing_to_send && in_flight < cwnd && lost_out <= retrans_out {
            self.app_limited = (self.delivered + in_flight).max(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Time {
        Time::from_millis(x)
    }

    #[test]
    fn a_steady_flight_samples_the_delivery_rate() {
        // 10 segments sent 1 ms apart from t = 0 (a new flight), acked one by one 50 ms
        // after their send: segment k's ACK at 50 + k ms. Segment 9 was sent when 0 had
        // been delivered, so its sample covers the 10 deliveries from the flight's
        // start, over max(send phase 9 ms, ACK phase 59 - 0 ms) = 59 ms.
        let mut st = RateState::default();
        let mut txs = Vec::new();
        for k in 0..10 {
            txs.push(st.on_sent(ms(k), k));
        }
        let mut last = RateSample::default();
        for k in 0..10u64 {
            let mut rs = RateSample::default();
            st.delivered += 1;
            st.on_delivered(&mut txs[k as usize], ms(k), k + 1, false, false, &mut rs);
            st.generate(ms(50 + k), 1, 0, Some(Duration::from_millis(50)), &mut rs);
            last = rs;
        }
        assert_eq!(last.delivered, Some(10));
        assert_eq!(last.interval, Some(Duration::from_millis(59)));
        assert!((last.rate().unwrap() - 10.0 / 0.059).abs() < 1e-9);
        // a second flight sent while those were being acked samples 1 segment per ms
        let mut tx = st.on_sent(ms(60), 0);
        st.delivered += 1;
        let mut rs = RateSample::default();
        st.on_delivered(&mut tx, ms(60), 11, false, false, &mut rs);
        st.generate(ms(110), 1, 0, Some(Duration::from_millis(50)), &mut rs);
        assert_eq!((rs.delivered, rs.interval), (Some(1), Some(Duration::from_millis(50))));
    }

    #[test]
    fn intervals_shorter_than_the_minimum_rtt_are_not_samples() {
        let mut st = RateState::default();
        let mut tx = st.on_sent(ms(0), 0);
        st.delivered += 1;
        let mut rs = RateSample::default();
        st.on_delivered(&mut tx, ms(0), 1, true, false, &mut rs);
        st.generate(ms(10), 1, 0, Some(Duration::from_millis(40)), &mut rs);
        assert_eq!(rs.delivered, Some(1));
        assert_eq!(rs.interval, None);
        assert!(rs.rate().is_none() && rs.is_retrans);
    }

    #[test]
    fn application_limited_marks_last_until_the_bubble_is_delivered() {
        let mut st = RateState { delivered: 100, ..RateState::default() };
        st.check_app_limited(true, 5, 10, 0, 0);
        assert_eq!(st.app_limited, 105);
        let tx = st.on_sent(ms(1), 5);
        assert!(tx.app_limited);
        // not limited while cwnd is full or losses await retransmission
        let mut st2 = RateState::default();
        st2.check_app_limited(true, 10, 10, 0, 0);
        st2.check_app_limited(true, 5, 10, 2, 1);
        assert_eq!(st2.app_limited, 0);
        // delivering past 105 ends it
        st.delivered = 106;
        let mut rs = RateSample::default();
        st.generate(ms(5), 1, 0, None, &mut rs);
        assert_eq!(st.app_limited, 0);
    }
}

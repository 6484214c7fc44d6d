//! Linux's jiffies timers: a `timer_list` armed for `d` from now expires on the tick
//! `jiffies + ceil(d / tick)` (`usecs_to_jiffies` rounds up), and the timer wheel
//! runs it on a later tick (Linux kernel/time/timer.c, the non-cascading wheel of
//! Linux 4.8 by Gleixner: `calc_wheel_index`, `calc_index`). The wheel "has to
//! guarantee that a timer does not fire early", so it rounds the expiry up by one
//! unit of the level's granularity: on level 0 (under `LVL_START(1)` = 63 jiffies
//! ahead) a timer runs one tick after its expiry; on level `l` (granularity 8^l
//! jiffies) on the first multiple of 8^l jiffies after it. TCP's retransmission
//! timer (RTO, tail loss probe, RACK's reordering timeout) and its delayed-ACK timer
//! are such timers (`icsk_retransmit_timer`, `icsk_delack_timer`); SACK compression
//! and pacing use hrtimers and are exact.

use aqm::{Duration, Time};

/// Linux `LVL_CLK_SHIFT`: each level of the wheel is 8 times coarser.
const LVL_CLK_SHIFT: u32 = 3;
/// Linux `LVL_SIZE`: buckets per level.
const LVL_SIZE: u64 = 64;
/// Linux `LVL_DEPTH` for HZ > 100.
const LVL_DEPTH: u32 = 9;

/// Linux `LVL_START(n)`: the first delta (in jiffies) a timer of level `n` has.
fn lvl_start(n: u32) -> u64 {
    (LVL_SIZE - 1) << ((n - 1) * LVL_CLK_SHIFT)
}

/// The tick a timer armed at `now` for `d` expires on (`jiffies + when`, with `when`
/// rounded up to whole ticks); `tick` zero or 1 ns: exact timers, `now + d`.
pub fn expiry(now: Time, d: Duration, tick: Duration) -> Time {
    let g = tick.as_nanos();
    if g <= 1 {
        return now + d;
    }
    Time::from_nanos((now.as_nanos() / g + d.as_nanos().div_ceil(g)) * g)
}

/// When the timer wheel runs a timer armed at `now` that expires on the tick
/// `expires` (from [`expiry`]): `calc_wheel_index` picks the level from the delta
/// to the wheel's clock (the current jiffy), `calc_index` rounds up to the level's
/// granularity, strictly after `expires`.
pub fn runs_at(now: Time, expires: Time, tick: Duration) -> Time {
    let g = tick.as_nanos();
    if g <= 1 {
        return expires;
    }
    let clk = now.as_nanos() / g;
    let exp = expires.as_nanos().div_ceil(g);
    let delta = exp.saturating_sub(clk);
    let lvl = (1..LVL_DEPTH).take_while(|&l| delta >= lvl_start(l)).count() as u32;
    let shift = lvl * LVL_CLK_SHIFT;
    let bucket = ((exp + (1 << shift)) >> shift) << shift;
    Time::from_nanos(bucket * g)
}

/// [`expiry`] then [`runs_at`]: when a timer armed at `now` for `d` runs.
pub fn fires_at(now: Time, d: Duration, tick: Duration) -> Time {
    runs_at(now, expiry(now, d, tick), tick)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(4);

    fn ms(t: Time) -> f64 {
        t.as_nanos() as f64 / 1e6
    }

    #[test]
    fn a_level_0_timer_runs_one_tick_after_its_expiry() {
        // armed at 1 ms (jiffy 0) for 40 ms (10 jiffies): expires on jiffy 10 (40 ms),
        // the wheel's bucket is 10 + 1: it runs at 44 ms
        let now = Time::from_millis(1);
        assert_eq!(ms(expiry(now, Duration::from_millis(40), TICK)), 40.0);
        assert_eq!(ms(fires_at(now, Duration::from_millis(40), TICK)), 44.0);
        // 7 ms from 5 ms (jiffy 1): ceil(7 / 4) = 2 jiffies, expires on jiffy 3 (12
        // ms), runs on jiffy 4 (16 ms)
        assert_eq!(ms(fires_at(Time::from_millis(5), Duration::from_millis(7), TICK)), 16.0);
        // 62 jiffies ahead is still level 0: expires jiffy 62, runs on 63
        assert_eq!(ms(fires_at(Time::ZERO, Duration::from_millis(248), TICK)), 252.0);
    }

    #[test]
    fn a_level_1_timer_runs_on_the_next_multiple_of_8_jiffies() {
        // 63 jiffies ahead (LVL_START(1)): level 1, granularity 8 jiffies; expires on
        // jiffy 63, (63 + 8) >> 3 << 3 = 64: 256 ms
        assert_eq!(ms(fires_at(Time::ZERO, Duration::from_millis(252), TICK)), 256.0);
        // expires on jiffy 64 (a multiple of 8): the next one, 72 (288 ms)
        assert_eq!(ms(fires_at(Time::ZERO, Duration::from_millis(256), TICK)), 288.0);
        // from jiffy 3 (12 ms) for 260 ms (65 jiffies): expires 68, runs on 72
        assert_eq!(ms(fires_at(Time::from_millis(12), Duration::from_millis(260), TICK)), 288.0);
        // 504 jiffies ahead (LVL_START(2)): level 2, 64 jiffies: expires 504, runs 512
        assert_eq!(ms(fires_at(Time::ZERO, Duration::from_millis(2016), TICK)), 2048.0);
    }

    #[test]
    fn without_a_tick_timers_are_exact() {
        let now = Time::from_micros(1234);
        let d = Duration::from_micros(40_321);
        assert_eq!(fires_at(now, d, Duration::ZERO), now + d);
        assert_eq!(expiry(now, d, Duration::ZERO), now + d);
    }
}

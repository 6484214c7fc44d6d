//! A windowed running minimum or maximum in constant space: Kathleen Nichols'
//! algorithm, as Linux's `lib/minmax.c` uses it for TCP's minimum RTT
//! (`tcp_min_rtt`, a 300 s window) and BBR's bandwidth filter (a window of rounds).
//!
//! Three samples are kept, best first, each taken later than the one before; when
//! the best falls out of the window the second takes its place. The window is
//! measured in the caller's unit of time (nanoseconds, or round trips for BBR).

/// One measurement and when it was taken.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Sample {
    t: u64,
    v: f64,
}

/// A windowed minimum (`MIN = true`) or maximum.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinMax<const MIN: bool> {
    s: [Sample; 3],
}

pub type RunningMin = MinMax<true>;
pub type RunningMax = MinMax<false>;

impl<const MIN: bool> MinMax<MIN> {
    /// A filter whose estimate is `v` from time `t`.
    pub fn new(t: u64, v: f64) -> Self {
        MinMax { s: [Sample { t, v }; 3] }
    }

    pub fn get(&self) -> f64 {
        self.s[0].v
    }

    pub fn reset(&mut self, t: u64, v: f64) -> f64 {
        self.s = [Sample { t, v }; 3];
        v
    }

    /// `a` is at least as good as `b` (no larger for a minimum, no smaller for a maximum).
    fn better(a: f64, b: f64) -> bool {
        if MIN {
            a <= b
        } else {
            a >= b
        }
    }

    /// Fold in a measurement `v` taken at `t` (times non-decreasing) over a window
    /// of `win`; returns the estimate.
    pub fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        let val = Sample { t, v };
        // a new best, or nothing left in the window: start afresh
        if Self::better(v, self.s[0].v) || t.saturating_sub(self.s[2].t) > win {
            return self.reset(t, v);
        }
        if Self::better(v, self.s[1].v) {
            self.s[2] = val;
            self.s[1] = val;
        } else if Self::better(v, self.s[2].v) {
            self.s[2] = val;
        }
        // as time passes, let the 2nd and 3rd choices take over
        let dt = t.saturating_sub(self.s[0].t);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if t.saturating_sub(self.s[0].t) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].t == self.s[0].t && dt > win / 4 {
            // a quarter of the window without a new 2nd choice: take one from now
            self.s[2] = val;
            self.s[1] = val;
        } else if self.s[2].t == self.s[1].t && dt > win / 2 {
            // half the window without a new 3rd choice
            self.s[2] = val;
        }
        self.s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_min_holds_the_best_and_forgets_it_after_the_window() {
        let mut m = RunningMin::new(0, 10.0);
        assert_eq!(m.update(100, 10, 12.0), 10.0);
        assert_eq!(m.update(100, 20, 8.0), 8.0);
        assert_eq!(m.update(100, 60, 9.0), 8.0);
        // 8 was taken at 20: at 125 it is out of the 100-long window; 9 (at 60) is next
        assert_eq!(m.update(100, 125, 11.0), 9.0);
        // and at 200 only the recent samples remain
        assert_eq!(m.update(100, 200, 11.5), 11.0);
    }

    #[test]
    fn running_max_is_the_window_maximum_of_a_random_walk() {
        // against a brute-force maximum over the window, on a deterministic walk: the
        // filter may keep a smaller value than the true window maximum (it keeps three
        // samples), never a larger one, and it is exact at every new maximum.
        let mut m = RunningMax::new(0, 0.0);
        let mut xs: Vec<(u64, f64)> = Vec::new();
        let mut v = 50.0f64;
        for t in 1..2000u64 {
            v += ((t * 7919) % 13) as f64 - 6.0;
            xs.push((t, v));
            let est = m.update(10, t, v);
            let truth = xs.iter().filter(|(s, _)| t - s <= 10).map(|x| x.1).fold(f64::MIN, f64::max);
            assert!(est <= truth + 1e-9, "t {t}: {est} > {truth}");
            if v >= truth {
                assert_eq!(est, v);
            }
            // within the last 2 windows
            let wider = xs.iter().filter(|(s, _)| t - s <= 20).map(|x| x.1).fold(f64::MIN, f64::max);
            assert!(est >= xs.iter().filter(|(s, _)| t - s <= 10).map(|x| x.1).fold(f64::MAX, f64::min) && est <= wider);
        }
    }
}

//! Random quantities in scenarios: file sizes, think times, on and off periods.
//!
//! Written as people write them, each form mapping to one distribution:
//!
//! | TOML | size ([`SizeDist`]) | time ([`TimeDist`]) |
//! |---|---|---|
//! | `"100KB"` / `"9.5s"` | always this value | always this value |
//! | `["15KB", "44KB"]` | one of these, each equally likely | – |
//! | `{ pareto = { scale = "2.3KB", shape = 1.3 } }` | Pareto type I, optional `max` cap | – |
//! | `{ exponential = "10KB" }` / `{ exponential = "9.5s" }` | exponential with this mean | exponential with this mean |
//! | `{ uniform = ["0s", "1s"] }` | – | uniform in the interval |
//! | `{ pareto = { mean = "500ms", shape = 1.5 } }` | – | Pareto type I with this mean (shape > 1) |
//!
//! Draws come from the caller's stream ([`crate::rng`]): each flow has its own, so
//! adding a flow leaves the others' sizes and think times unchanged.

use std::fmt;

use aqm::{Bytes, Duration};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

use crate::rng::{self, SimRng};

/// Pareto parameters: `P(X > x) = (scale / x)^shape` for `x >= scale`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParetoSize {
    /// The minimum (K in Jou, Tan & Baras §II: 2.3 KB).
    pub scale: Bytes,
    /// The tail index (Jou, Tan & Baras: 1.3; the mean is finite for shape > 1).
    pub shape: f64,
    /// Larger draws are cut to this size (none by default, as in ns-2's Pareto).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Bytes>,
}

/// A distribution of sizes in bytes (file sizes of downloads).
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    Fixed(Bytes),
    /// Uniformly one of the list (Kuhn & Ros §IV-A: "a new random value is taken for S").
    Choice(Vec<Bytes>),
    Pareto(ParetoSize),
    Exponential(Bytes),
}

/// Pareto times given by their mean, as ns-2's Pareto On/Off source gives its burst
/// and idle times (`burst_time_`, `idle_time_`, `shape_`): the scale (the minimum) is
/// `mean (shape - 1) / shape`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParetoTime {
    pub mean: Duration,
    /// The tail index; above 1 for a finite mean (ns-2's default: 1.5).
    pub shape: f64,
}

impl ParetoTime {
    /// The scale (the minimum draw), in nanoseconds.
    pub fn scale_ns(&self) -> f64 {
        self.mean.as_nanos() as f64 * (self.shape - 1.0) / self.shape
    }
}

/// A distribution of durations (think times, per-flow delays, on and off periods).
#[derive(Clone, Debug, PartialEq)]
pub enum TimeDist {
    Fixed(Duration),
    Exponential(Duration),
    Uniform(Duration, Duration),
    Pareto(ParetoTime),
}

impl SizeDist {
    /// One draw, in bytes (at least 1).
    pub fn sample(&self, r: &mut SimRng) -> u64 {
        let b = match self {
            SizeDist::Fixed(b) => b.0,
            SizeDist::Choice(v) => v[rng::below(r, v.len() as u64) as usize].0,
            SizeDist::Pareto(p) => {
                let x = rng::pareto(r, p.scale.0 as f64, p.shape).ceil() as u64;
                p.max.map_or(x, |m| x.min(m.0))
            }
            SizeDist::Exponential(m) => rng::exponential(r, m.0 as f64).round() as u64,
        };
        b.max(1)
    }

    /// The mean, where it exists (None for a Pareto with shape <= 1 and no cap).
    pub fn mean(&self) -> Option<f64> {
        match self {
            SizeDist::Fixed(b) | SizeDist::Exponential(b) => Some(b.0 as f64),
            SizeDist::Choice(v) => Some(v.iter().map(|b| b.0 as f64).sum::<f64>() / v.len() as f64),
            SizeDist::Pareto(p) if p.max.is_none() => (p.shape > 1.0).then(|| p.scale.0 as f64 * p.shape / (p.shape - 1.0)),
            SizeDist::Pareto(_) => None,
        }
    }

    /// The distinct sizes a list or a fixed size can take (None for continuous ones).
    pub fn support(&self) -> Option<Vec<u64>> {
        match self {
            SizeDist::Fixed(b) => Some(vec![b.0]),
            SizeDist::Choice(v) => {
                let mut s: Vec<u64> = v.iter().map(|b| b.0).collect();
                s.sort_unstable();
                s.dedup();
                Some(s)
            }
            _ => None,
        }
    }

    pub fn validate(&self) -> Result<(), String> {
        match self {
            SizeDist::Fixed(b) | SizeDist::Exponential(b) if b.0 == 0 => Err(format!("must be positive, got {b}")),
            SizeDist::Choice(v) if v.is_empty() => Err("the list of sizes is empty".into()),
            SizeDist::Choice(v) if v.iter().any(|b| b.0 == 0) => Err("every size in the list must be positive".into()),
            SizeDist::Pareto(p) if p.scale.0 == 0 => Err(format!("pareto.scale: must be positive, got {}", p.scale)),
            SizeDist::Pareto(p) if !(p.shape > 0.0 && p.shape.is_finite()) => Err(format!("pareto.shape: must be positive, got {}", p.shape)),
            SizeDist::Pareto(ParetoSize { scale, max: Some(m), .. }) if m < scale => {
                Err(format!("pareto.max: {m} is below the scale {scale}"))
            }
            _ => Ok(()),
        }
    }
}

impl TimeDist {
    pub fn sample(&self, r: &mut SimRng) -> Duration {
        match *self {
            TimeDist::Fixed(d) => d,
            TimeDist::Exponential(m) => Duration::from_nanos(rng::exponential(r, m.as_nanos() as f64).round() as u64),
            TimeDist::Uniform(a, b) => {
                let span = (b - a).as_nanos();
                a + Duration::from_nanos(if span == 0 { 0 } else { rng::below(r, span + 1) })
            }
            TimeDist::Pareto(ref p) => Duration::from_nanos(rng::pareto(r, p.scale_ns(), p.shape).round() as u64),
        }
    }

    pub fn mean(&self) -> Duration {
        match *self {
            TimeDist::Fixed(d) | TimeDist::Exponential(d) | TimeDist::Pareto(ParetoTime { mean: d, .. }) => d,
            TimeDist::Uniform(a, b) => Duration::from_nanos((a.as_nanos() + b.as_nanos()) / 2),
        }
    }

    /// The largest value a draw can take (None: unbounded).
    pub fn max(&self) -> Option<Duration> {
        match *self {
            TimeDist::Fixed(d) => Some(d),
            TimeDist::Exponential(_) | TimeDist::Pareto(_) => None,
            TimeDist::Uniform(_, b) => Some(b),
        }
    }
}

impl Serialize for SizeDist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            SizeDist::Fixed(b) => b.serialize(s),
            SizeDist::Choice(v) => v.serialize(s),
            SizeDist::Pareto(p) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("pareto", p)?;
                m.end()
            }
            SizeDist::Exponential(b) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("exponential", b)?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for SizeDist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SizeDist;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size (\"100KB\"), a list of sizes, { pareto = { scale = \"2.3KB\", shape = 1.3 } } or { exponential = \"10KB\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SizeDist, E> {
                v.parse::<Bytes>().map(SizeDist::Fixed).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<SizeDist, E> {
                Err(E::custom(format!("invalid value {v}: a unit is required, a size such as \"100KB\"")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<SizeDist, E> {
                self.visit_i64(v as i64)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<SizeDist, A::Error> {
                let mut v = Vec::new();
                while let Some(b) = s.next_element::<Bytes>()? {
                    v.push(b);
                }
                Ok(SizeDist::Choice(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<SizeDist, A::Error> {
                let Some(k) = m.next_key::<String>()? else {
                    return Err(de::Error::custom("an empty table: expected { pareto = {...} } or { exponential = \"...\" }"));
                };
                let out = match k.as_str() {
                    "pareto" => SizeDist::Pareto(m.next_value()?),
                    "exponential" => SizeDist::Exponential(m.next_value()?),
                    other => return Err(de::Error::unknown_field(other, &["pareto", "exponential"])),
                };
                if let Some(k) = m.next_key::<String>()? {
                    return Err(de::Error::custom(format!("one distribution per table, found `{k}` as well")));
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for TimeDist {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            TimeDist::Fixed(d) => d.serialize(s),
            TimeDist::Exponential(d) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("exponential", d)?;
                m.end()
            }
            TimeDist::Uniform(a, b) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("uniform", &[a, b])?;
                m.end()
            }
            TimeDist::Pareto(p) => {
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("pareto", p)?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for TimeDist {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TimeDist;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a time (\"9.5s\"), { exponential = \"9.5s\" }, { uniform = [\"0s\", \"1s\"] } or { pareto = { mean = \"1s\", shape = 1.5 } }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<TimeDist, E> {
                v.parse::<Duration>().map(TimeDist::Fixed).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TimeDist, E> {
                Err(E::custom(format!("invalid value {v}: a unit is required, a time such as \"9.5s\"")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<TimeDist, E> {
                self.visit_i64(v as i64)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<TimeDist, A::Error> {
                let Some(k) = m.next_key::<String>()? else {
                    return Err(de::Error::custom("an empty table: expected { exponential = \"...\" }, { uniform = [...] } or { pareto = {...} }"));
                };
                let out = match k.as_str() {
                    "exponential" => TimeDist::Exponential(m.next_value()?),
                    "uniform" => {
                        let [a, b]: [Duration; 2] = m.next_value()?;
                        if a > b {
                            return Err(de::Error::custom(format!("uniform: the interval [{a}, {b}] is empty (from > to)")));
                        }
                        TimeDist::Uniform(a, b)
                    }
                    "pareto" => {
                        let p: ParetoTime = m.next_value()?;
                        if !(p.shape > 1.0 && p.shape.is_finite()) {
                            return Err(de::Error::custom(format!("pareto.shape: must be greater than 1 (a finite mean), got {}", p.shape)));
                        }
                        if p.mean.is_zero() {
                            return Err(de::Error::custom("pareto.mean: must be positive"));
                        }
                        TimeDist::Pareto(p)
                    }
                    other => return Err(de::Error::unknown_field(other, &["exponential", "uniform", "pareto"])),
                };
                if let Some(k) = m.next_key::<String>()? {
                    return Err(de::Error::custom(format!("one distribution per table, found `{k}` as well")));
                }
                Ok(out)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(toml_value: &str) -> Result<SizeDist, String> {
        #[derive(Deserialize)]
        struct W {
            v: SizeDist,
        }
        toml::from_str::<W>(&format!("v = {toml_value}")).map(|w| w.v).map_err(|e| e.to_string())
    }

    fn time(toml_value: &str) -> Result<TimeDist, String> {
        #[derive(Deserialize)]
        struct W {
            v: TimeDist,
        }
        toml::from_str::<W>(&format!("v = {toml_value}")).map(|w| w.v).map_err(|e| e.to_string())
    }

    #[test]
    fn every_form_parses_and_round_trips() {
        for (text, want) in [
            ("\"100KB\"", SizeDist::Fixed(Bytes(100_000))),
            ("[\"15KB\", \"44KB\"]", SizeDist::Choice(vec![Bytes(15_000), Bytes(44_000)])),
            ("{ pareto = { scale = \"2.3KB\", shape = 1.3 } }", SizeDist::Pareto(ParetoSize { scale: Bytes(2300), shape: 1.3, max: None })),
            ("{ exponential = \"10KB\" }", SizeDist::Exponential(Bytes(10_000))),
        ] {
            let d = size(text).unwrap();
            assert_eq!(d, want);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(serde_json::from_str::<SizeDist>(&json).unwrap(), d, "{json}");
        }
        for (text, want) in [
            ("\"9.5s\"", TimeDist::Fixed(Duration::from_millis(9500))),
            ("{ exponential = \"50s\" }", TimeDist::Exponential(Duration::from_secs(50))),
            ("{ uniform = [\"1s\", \"2s\"] }", TimeDist::Uniform(Duration::from_secs(1), Duration::from_secs(2))),
            ("{ pareto = { mean = \"500ms\", shape = 1.5 } }", TimeDist::Pareto(ParetoTime { mean: Duration::from_millis(500), shape: 1.5 })),
        ] {
            let d = time(text).unwrap();
            assert_eq!(d, want);
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(serde_json::from_str::<TimeDist>(&json).unwrap(), d, "{json}");
        }
    }

    #[test]
    fn malformed_forms_are_errors_that_say_what_was_expected() {
        assert!(size("{ lognormal = \"1KB\" }").unwrap_err().contains("lognormal"));
        assert!(size("{ pareto = { scale = \"2KB\", shap = 1.3 } }").unwrap_err().contains("shap"));
        assert!(size("12").unwrap_err().contains("unit"));
        assert!(time("{ uniform = [\"2s\", \"1s\"] }").unwrap_err().contains("empty"));
        assert!(time("[\"1s\"]").is_err());
        assert!(time("{ pareto = { mean = \"1s\", shape = 1.0 } }").unwrap_err().contains("pareto.shape: must be greater than 1"));
        assert!(time("{ pareto = { mean = \"0s\", shape = 1.5 } }").unwrap_err().contains("pareto.mean"));
        assert!(time("{ pareto = { scale = \"1s\", shape = 1.5 } }").unwrap_err().contains("scale"));
        assert!(SizeDist::Choice(vec![]).validate().is_err());
        assert!(SizeDist::Pareto(ParetoSize { scale: Bytes(2300), shape: 0.0, max: None }).validate().unwrap_err().starts_with("pareto.shape"));
    }

    #[test]
    fn exponential_times_have_the_given_mean() {
        // Kuhn & Ros §IV-A: think time exponential of mean 9.5 s. The sample mean of
        // n draws has standard error mean / sqrt(n) = 0.3 % for n = 100 000.
        let d = TimeDist::Exponential(Duration::from_millis(9500));
        let mut r = rng::stream(3, "think");
        let n = 100_000;
        let m = (0..n).map(|_| d.sample(&mut r).as_secs_f64()).sum::<f64>() / n as f64;
        assert!((m - 9.5).abs() < 0.1, "mean {m}");
    }

    #[test]
    fn pareto_times_have_the_given_mean_and_minimum() {
        // ns-2's Pareto On/Off defaults: mean 500 ms, shape 1.5, so the scale is
        // 500 ms * 0.5 / 1.5 = 166.67 ms and the median scale * 2^(1/1.5) = 264.57 ms.
        // With shape 1.5 the variance is infinite: check the minimum and the median
        // closely and the mean loosely (over 10^6 draws it is within a few percent).
        let d = TimeDist::Pareto(ParetoTime { mean: Duration::from_millis(500), shape: 1.5 });
        assert_eq!((d.mean(), d.max()), (Duration::from_millis(500), None));
        let mut r = rng::stream(11, "on");
        let n = 1_000_000;
        let mut xs: Vec<f64> = (0..n).map(|_| d.sample(&mut r).as_millis_f64()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        xs.sort_by(f64::total_cmp);
        assert!(xs[0] >= 166.666, "{}", xs[0]);
        let med = xs[n / 2];
        let want = 500.0 / 3.0 * 2f64.powf(1.0 / 1.5);
        assert!((med - want).abs() / want < 0.005, "median {med} vs {want}");
        assert!((mean - 500.0).abs() < 25.0, "mean {mean}");
    }

    #[test]
    fn uniform_times_cover_the_interval_with_the_right_mean() {
        let d = TimeDist::Uniform(Duration::from_millis(8), Duration::from_millis(120));
        let mut r = rng::stream(3, "delay");
        let xs: Vec<f64> = (0..50_000).map(|_| d.sample(&mut r).as_millis_f64()).collect();
        assert!(xs.iter().all(|&x| (8.0..=120.0).contains(&x)));
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((m - 64.0).abs() < 0.6, "mean {m}");
    }

    #[test]
    fn pareto_sizes_have_the_given_mean_and_minimum() {
        // Jou, Tan & Baras §II: K = 2.3 KB, shape 1.3, mean K a / (a - 1) = 9.97 KB.
        // With shape 1.3 the variance is infinite and the sample mean converges slowly,
        // so check the mean of a capped Pareto (closed form below) over many draws and
        // the median of the uncapped one.
        let (k, a) = (2300.0f64, 1.3f64);
        let mut r = rng::stream(5, "sizes");
        let n = 400_000;
        let uncapped = SizeDist::Pareto(ParetoSize { scale: Bytes(2300), shape: a, max: None });
        assert!((uncapped.mean().unwrap() - k * a / (a - 1.0)).abs() < 1e-6);
        let mut xs: Vec<u64> = (0..n).map(|_| uncapped.sample(&mut r)).collect();
        xs.sort_unstable();
        assert!(xs[0] >= 2300);
        let med = xs[n / 2] as f64;
        let want = k * 2f64.powf(1.0 / a);
        assert!((med - want).abs() / want < 0.01, "median {med} vs {want}");
        // E[min(X, M)] = K a/(a-1) - K^a M^(1-a) / (a-1)
        let cap: f64 = 1_000_000.0;
        let capped = SizeDist::Pareto(ParetoSize { scale: Bytes(2300), shape: a, max: Some(Bytes(cap as u64)) });
        let want = k * a / (a - 1.0) - k.powf(a) * cap.powf(1.0 - a) / (a - 1.0);
        let m = (0..n).map(|_| capped.sample(&mut r) as f64).sum::<f64>() / n as f64;
        // draws are rounded up to whole bytes: +0.5 B on average
        assert!((m - want - 0.5).abs() / want < 0.02, "capped mean {m} vs {want}");
    }

    #[test]
    fn a_list_of_sizes_is_drawn_uniformly() {
        let d = SizeDist::Choice(vec![Bytes(15_000), Bytes(44_000), Bytes(73_000), Bytes(102_000)]);
        let mut r = rng::stream(9, "files");
        let mut counts = [0u32; 4];
        for _ in 0..40_000 {
            let s = d.sample(&mut r);
            counts[[15_000, 44_000, 73_000, 102_000].iter().position(|&x| x == s).unwrap()] += 1;
        }
        // each about 10 000; 5 standard deviations is about 430
        assert!(counts.iter().all(|&c| (c as i64 - 10_000).abs() < 450), "{counts:?}");
        assert_eq!(d.mean(), Some(58_500.0));
        assert_eq!(d.support(), Some(vec![15_000, 44_000, 73_000, 102_000]));
    }
}

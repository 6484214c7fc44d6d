//! Trace-driven links (Netravali et al., "Mahimahi: accurate record-and-replay for
//! HTTP", USENIX ATC 2015): each line of a trace is a millisecond timestamp at which
//! up to 1500 bytes may leave, and the trace repeats with the period of its last
//! timestamp. As in Mahimahi's `LinkQueue`, an opportunity can carry several small
//! packets, a packet can take its bytes from several opportunities, unused
//! opportunities are lost, and a packet can only use opportunities after its
//! arrival.

use std::path::Path;
use std::sync::Arc;

use aqm::{Rate, Time};
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

/// Bytes one trace opportunity may carry (the and Mahimahi's MTU-sized
/// packet; Mahimahi's own constant is 1504, the largest TUN payload).
pub const TRACE_BYTES: u32 = 1500;

const MS: u64 = 1_000_000;

/// A Mahimahi trace: opportunity times in ms within one period, non-decreasing.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkTrace {
    /// The file it came from (absolute after parsing), or None if given inline.
    pub file: Option<String>,
    pub ms: Arc<Vec<u64>>,
}

impl LinkTrace {
    /// Parse Mahimahi's format: one non-negative integer per line, non-decreasing,
    /// the last one positive (Mahimahi `LinkQueue`'s checks).
    pub fn from_text(text: &str) -> Result<Vec<u64>, String> {
        let mut v = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                if text.lines().skip(i).all(|l| l.trim().is_empty()) {
                    break; // trailing blank lines
                }
                return Err(format!("line {}: empty line", i + 1));
            }
            let ms: u64 = line.parse().map_err(|_| format!("line {}: \"{line}\" is not a whole number of milliseconds", i + 1))?;
            if v.last().is_some_and(|&l| ms < l) {
                return Err(format!("line {}: {ms} ms is before the previous line: timestamps must not decrease", i + 1));
            }
            v.push(ms);
        }
        Self::check(&v)?;
        Ok(v)
    }

    /// A trace given as its opportunity times in ms (checked as a file's would be).
    pub fn from_ms(ms: Vec<u64>) -> Result<LinkTrace, String> {
        Self::check(&ms)?;
        Ok(LinkTrace { file: None, ms: Arc::new(ms) })
    }

    fn check(v: &[u64]) -> Result<(), String> {
        if v.is_empty() {
            return Err("no timestamps".into());
        }
        if v.windows(2).any(|w| w[1] < w[0]) {
            return Err("timestamps must not decrease".into());
        }
        if *v.last().unwrap() == 0 {
            return Err("the trace must last a nonzero time (its last timestamp is 0)".into());
        }
        Ok(())
    }

    /// From a scenario value: `"file.trace"`, `{ file = "file.trace" }`, or
    /// `{ ms = [1, 2, 3] }`. Errors are (dotted path, message).
    pub fn parse(path: &str, v: toml::Value, base_dir: Option<&Path>) -> Result<LinkTrace, (String, String)> {
        let file_err = |m: String| (format!("{path}.file"), m);
        let load = |name: &str| -> Result<LinkTrace, (String, String)> {
            let p = Path::new(name);
            let full = match base_dir {
                Some(b) if p.is_relative() => b.join(p),
                _ => p.to_path_buf(),
            };
            let text = std::fs::read_to_string(&full).map_err(|e| file_err(format!("cannot read \"{}\": {e}", full.display())))?;
            let ms = Self::from_text(&text).map_err(|m| file_err(format!("\"{}\": {m}", full.display())))?;
            let abs = std::path::absolute(&full).unwrap_or(full);
            Ok(LinkTrace { file: Some(abs.display().to_string()), ms: Arc::new(ms) })
        };
        match v {
            toml::Value::String(name) => load(&name),
            toml::Value::Table(mut t) => {
                let out = match (t.remove("file"), t.remove("ms")) {
                    (Some(toml::Value::String(name)), None) => load(&name)?,
                    (None, Some(toml::Value::Array(a))) => {
                        let ms = a
                            .iter()
                            .enumerate()
                            .map(|(i, x)| match x {
                                toml::Value::Integer(n) if *n >= 0 => Ok(*n as u64),
                                other => Err((format!("{path}.ms[{i}]"), format!("expected a whole number of milliseconds, got {other}"))),
                            })
                            .collect::<Result<Vec<u64>, _>>()?;
                        Self::check(&ms).map_err(|m| (format!("{path}.ms"), m))?;
                        LinkTrace { file: None, ms: Arc::new(ms) }
                    }
                    (Some(other), None) => return Err(file_err(format!("expected a file name, got {other}"))),
                    _ => return Err((path.to_string(), "expected a file name, { file = \"...\" } or { ms = [...] }".into())),
                };
                if let Some(k) = t.keys().next() {
                    return Err((format!("{path}.{k}"), "unknown field, expected `file` or `ms`".into()));
                }
                Ok(out)
            }
            other => Err((path.to_string(), format!("expected a file name or a table, got {}", other.type_str()))),
        }
    }

    pub fn period_ns(&self) -> u64 {
        *self.ms.last().unwrap() * MS
    }

    /// The mean rate: every opportunity used by a full 1500-byte packet.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.ms.len() as u128 * TRACE_BYTES as u128 * 8 * 1000;
        Rate::from_bps((bits / *self.ms.last().unwrap() as u128) as u64)
    }

    /// Opportunities at times `<= t`.
    pub fn count_upto(&self, t: Time) -> u64 {
        let p = self.period_ns();
        let (c, r) = (t.as_nanos() / p, t.as_nanos() % p);
        c * self.ms.len() as u64 + self.ms.partition_point(|&m| m * MS <= r) as u64
    }

    /// The first opportunity strictly after `t`.
    pub fn next_after(&self, t: Time) -> Time {
        let p = self.period_ns();
        let (c, r) = (t.as_nanos() / p, t.as_nanos() % p);
        let i = self.ms.partition_point(|&m| m * MS <= r);
        Time::from_nanos(if i < self.ms.len() { c * p + self.ms[i] * MS } else { (c + 1) * p + self.ms[0] * MS })
    }
}

impl Serialize for LinkTrace {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        match &self.file {
            Some(f) => m.serialize_entry("file", f)?,
            None => m.serialize_entry("ms", &*self.ms)?,
        }
        m.end()
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_text_follows_mahimahi_s_rules() {
        assert_eq!(LinkTrace::from_text("1\n1\n3\n10\n\n").unwrap(), vec![1, 1, 3, 10]);
        assert!(LinkTrace::from_text("5\n3\n").unwrap_err().contains("line 2"));
        assert!(LinkTrace::from_text("0\n0\n").unwrap_err().contains("nonzero"));
        assert!(LinkTrace::from_text("1\n\n2\n").unwrap_err().contains("line 2"));
        assert!(LinkTrace::from_text("1.5\n").unwrap_err().contains("line 1"));
        assert!(LinkTrace::from_text("").is_err());
        assert_eq!(LinkTrace::from_ms(vec![1, 1, 3, 10]).unwrap().ms.as_slice(), [1, 1, 3, 10]);
        assert_eq!(LinkTrace::from_ms(vec![2, 1]).unwrap_err(), "timestamps must not decrease");
        assert!(LinkTrace::from_ms(vec![]).is_err() && LinkTrace::from_ms(vec![0]).is_err());
    }

    #[test]
    fn trace_opportunities_repeat_with_the_period_of_the_last_line() {
        let t = LinkTrace { file: None, ms: Arc::new(vec![1, 1, 3, 10]) };
        // 4 opportunities per 10 ms: 4 * 1500 * 8 bits / 10 ms = 4.8 Mbps
        assert_eq!(t.mean_rate().bps(), 4_800_000);
        assert_eq!(t.count_upto(Time::ZERO), 0);
        assert_eq!(t.count_upto(Time::from_millis(1)), 2);
        assert_eq!(t.count_upto(Time::from_micros(2999)), 2);
        assert_eq!(t.count_upto(Time::from_millis(10)), 4);
        assert_eq!(t.count_upto(Time::from_millis(11)), 6);
        assert_eq!(t.count_upto(Time::from_millis(1000)), 400);
        assert_eq!(t.next_after(Time::ZERO), Time::from_millis(1));
        assert_eq!(t.next_after(Time::from_millis(1)), Time::from_millis(3));
        assert_eq!(t.next_after(Time::from_millis(3)), Time::from_millis(10));
        assert_eq!(t.next_after(Time::from_millis(10)), Time::from_millis(11));
        assert_eq!(t.next_after(Time::from_micros(10_500)), Time::from_millis(11));
    }
}

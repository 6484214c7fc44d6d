//! Quantities written as people write them: `"20ms"`, `"10Mbps"`, `"1500B"`, `"64KB"`,
//! `"100pkts"`, `"1bdp"`.
//!
//! Each type parses from a string with a unit (a bare number is an error: `10` could be
//! bits or megabits) and prints back in the largest unit that represents it exactly, so
//! a value survives a round trip through a scenario file unchanged. Decimal prefixes are
//! SI (`k` = 1000); binary sizes use `KiB`, `MiB`, `GiB`.

use core::fmt;
use core::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::time::Duration;

/// A link rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Rate(u64);

/// A size in bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Bytes(pub u64);

/// A buffer limit as a scenario gives it: in packets, in bytes, or as a multiple of the
/// bandwidth-delay product of the link it sits on (resolved by the caller, who knows the
/// rate and the round-trip time).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
    Bdp(f64),
}

impl Rate {
    pub const fn from_bps(bps: u64) -> Rate {
        Rate(bps)
    }
    pub const fn from_kbps(k: u64) -> Rate {
        Rate(k * 1_000)
    }
    pub const fn from_mbps(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    pub fn mbps_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    /// Time to serialize `bytes` at this rate, rounded up to the next nanosecond.
    pub fn tx_time(self, bytes: u64) -> Duration {
        assert!(self.0 > 0, "zero rate");
        let num = bytes as u128 * 8 * 1_000_000_000;
        Duration::from_nanos(num.div_ceil(self.0 as u128) as u64)
    }
    /// Bytes carried in `d` at this rate (floor).
    pub fn bytes_in(self, d: Duration) -> u64 {
        (self.0 as u128 * d.as_nanos() as u128 / 8 / 1_000_000_000) as u64
    }
}

/// Error from parsing a quantity: names the value and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for UnitError {}

const DURATION_UNITS: &[(&str, u128)] = &[
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("min", 60_000_000_000),
];
const RATE_UNITS: &[(&str, u128)] = &[
    ("bps", 1),
    ("kbps", 1_000),
    ("Kbps", 1_000),
    ("Mbps", 1_000_000),
    ("Gbps", 1_000_000_000),
    ("Tbps", 1_000_000_000_000),
];
const SIZE_UNITS: &[(&str, u128)] = &[
    ("B", 1),
    ("kB", 1_000),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

/// Splits `"12.5ms"` into (`"12.5"`, `"ms"`), allowing spaces between them.
fn split_number(s: &str) -> (&str, &str) {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || ((c == '-' || c == '+') && i == 0)))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    (s[..end].trim(), s[end..].trim())
}

/// Exact decimal `number * scale`, rounded to the nearest integer; `None` if the
/// number is malformed or the product overflows `u64`.
fn scaled(number: &str, scale: u128) -> Option<u64> {
    let (int, frac) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.chars().all(|c| c.is_ascii_digit()) || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    if frac.len() > 18 {
        return None;
    }
    let int_v: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac_v: u128 = if frac.is_empty() { 0 } else { frac.parse().ok()? };
    let denom = 10u128.pow(frac.len() as u32);
    let whole = int_v.checked_mul(scale)?;
    let part = (frac_v.checked_mul(scale)? + denom / 2) / denom;
    u64::try_from(whole.checked_add(part)?).ok()
}

fn parse_quantity(what: &str, s: &str, units: &[(&str, u128)], example: &str) -> Result<u64, UnitError> {
    let unit_list = units.iter().map(|u| u.0).collect::<Vec<_>>().join(", ");
    let (num, unit) = split_number(s);
    if num.starts_with('-') {
        return Err(UnitError(format!("invalid {what} \"{s}\": must not be negative")));
    }
    let num = num.strip_prefix('+').unwrap_or(num);
    if unit.is_empty() {
        return Err(UnitError(format!(
            "invalid {what} \"{s}\": a unit is required, e.g. \"{example}\" (units: {unit_list})"
        )));
    }
    let Some(&(_, scale)) = units.iter().find(|u| u.0 == unit) else {
        return Err(UnitError(format!(
            "invalid {what} \"{s}\": unknown unit \"{unit}\" (units: {unit_list})"
        )));
    };
    scaled(num, scale).ok_or_else(|| {
        UnitError(format!("invalid {what} \"{s}\": expected a number with a unit, e.g. \"{example}\""))
    })
}

/// Writes `v` in the largest unit of `units` (largest first) that keeps it exact,
/// with up to three decimals, e.g. `1.5s`, `87kbps`.
pub(crate) fn fmt_scaled(f: &mut fmt::Formatter<'_>, v: u128, units: &[(u128, &str)]) -> fmt::Result {
    fmt_scaled_dec(f, v, units, 1000)
}

/// As [`fmt_scaled`] with `den` = 10^(decimals allowed).
fn fmt_scaled_dec(f: &mut fmt::Formatter<'_>, v: u128, units: &[(u128, &str)], den: u128) -> fmt::Result {
    if v == 0 {
        return write!(f, "0{}", units[0].1);
    }
    for &(scale, name) in units {
        if v >= scale {
            // exact with at most 3 decimals?
            if (v * den) % scale == 0 {
                let milli = v * 1000 / scale;
                let (i, fr) = (milli / 1000, milli % 1000);
                return if fr == 0 {
                    write!(f, "{i}{name}")
                } else {
                    let s = format!("{fr:03}");
                    write!(f, "{i}.{}{name}", s.trim_end_matches('0'))
                };
            }
        }
    }
    let last = units[units.len() - 1];
    write!(f, "{}{}", v / last.0, last.1)
}

/// The largest values a scenario may give: beyond them a value is surely a mistake,
/// and sums of a few of them (a path's delays, a time plus a delay, a rate times a
/// duration) stay far from the 64-bit limits of the integer clock and counters.
/// 10^7 s is 116 days of simulated time.
pub const MAX_DURATION: Duration = Duration::from_nanos(10_000_000 * 1_000_000_000);
/// 10 Tbps.
pub const MAX_RATE_BPS: u64 = 10_000_000_000_000;
/// 1 PB.
pub const MAX_BYTES: u64 = 1_000_000_000_000_000;

fn at_most(what: &str, s: &str, v: u64, max: u64, max_text: &str) -> Result<u64, UnitError> {
    if v > max {
        return Err(UnitError(format!("invalid {what} \"{s}\": at most {max_text}")));
    }
    Ok(v)
}

impl FromStr for Duration {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let v = parse_quantity("duration", s, DURATION_UNITS, "20ms")?;
        at_most("duration", s, v, MAX_DURATION.as_nanos(), "10000000s (116 days)").map(Duration::from_nanos)
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let v = parse_quantity("rate", s, RATE_UNITS, "10Mbps")?;
        at_most("rate", s, v, MAX_RATE_BPS, "10Tbps").map(Rate)
    }
}

impl FromStr for Bytes {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let v = parse_quantity("size", s, SIZE_UNITS, "1500B")?;
        at_most("size", s, v, MAX_BYTES, "1000000000000000B (1 PB)").map(Bytes)
    }
}

impl FromStr for QueueLimit {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let (num, unit) = split_number(s);
        let expected = "expected e.g. \"100pkts\", \"64KB\" or \"1bdp\"";
        if num.starts_with('-') {
            return Err(UnitError(format!("invalid buffer \"{s}\": must not be negative")));
        }
        match unit {
            "" => Err(UnitError(format!("invalid buffer \"{s}\": a unit is required, {expected}"))),
            "p" | "pkt" | "pkts" | "packets" => match scaled(num, 1) {
                Some(n) if num.chars().all(|c| c.is_ascii_digit()) => Ok(QueueLimit::Packets(n)),
                _ => Err(UnitError(format!("invalid buffer \"{s}\": a packet count must be a whole number"))),
            },
            "bdp" | "BDP" => match num.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Ok(QueueLimit::Bdp(x)),
                _ => Err(UnitError(format!("invalid buffer \"{s}\": {expected}"))),
            },
            _ => match parse_quantity("buffer", s, SIZE_UNITS, "64KB") {
                Ok(b) => Ok(QueueLimit::Bytes(b)),
                Err(_) => Err(UnitError(format!("invalid buffer \"{s}\": unknown unit \"{unit}\", {expected}"))),
            },
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_scaled(f, self.0 as u128, &[(1_000_000_000, "Gbps"), (1_000_000, "Mbps"), (1_000, "kbps"), (1, "bps")])
    }
}
impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // whole numbers only: 1500B, 64KB
        if self.0 == 0 {
            return f.write_str("0B");
        }
        fmt_scaled_dec(f, self.0 as u128, &[(1_000_000_000, "GB"), (1_000_000, "MB"), (1_000, "KB"), (1, "B")], 1)
    }
}
impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for QueueLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            QueueLimit::Packets(n) => write!(f, "{n}pkts"),
            QueueLimit::Bytes(b) => fmt::Display::fmt(&Bytes(b), f),
            QueueLimit::Bdp(x) => write!(f, "{x}bdp"),
        }
    }
}

/// serde support: every quantity is a string with a unit in scenario files.
macro_rules! string_serde {
    ($t:ty, $expecting:expr) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$t, E> {
                        v.parse().map_err(|e: UnitError| E::custom(e))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$t, E> {
                        Err(E::custom(format!("invalid value {v}: a unit is required, {}", $expecting)))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$t, E> {
                        Err(E::custom(format!("invalid value {v}: a unit is required, {}", $expecting)))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$t, E> {
                        Err(E::custom(format!("invalid value {v}: a unit is required, {}", $expecting)))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}
string_serde!(Duration, "a duration string such as \"20ms\"");
string_serde!(Rate, "a rate string such as \"10Mbps\"");
string_serde!(Bytes, "a size string such as \"1500B\"");
string_serde!(QueueLimit, "a buffer size such as \"100pkts\", \"64KB\" or \"1bdp\"");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly() {
        assert_eq!("20ms".parse::<Duration>().unwrap(), Duration::from_millis(20));
        assert_eq!("1.5s".parse::<Duration>().unwrap(), Duration::from_millis(1500));
        assert_eq!("0.1 s".parse::<Duration>().unwrap(), Duration::from_millis(100));
        assert_eq!("250us".parse::<Duration>().unwrap(), Duration::from_micros(250));
        assert_eq!("2min".parse::<Duration>().unwrap(), Duration::from_secs(120));
    }

    #[test]
    fn rates_and_sizes_parse_exactly() {
        assert_eq!("10Mbps".parse::<Rate>().unwrap().bps(), 10_000_000);
        assert_eq!("87kbps".parse::<Rate>().unwrap().bps(), 87_000);
        assert_eq!("1.5Gbps".parse::<Rate>().unwrap().bps(), 1_500_000_000);
        assert_eq!("64KB".parse::<Bytes>().unwrap().0, 64_000);
        assert_eq!("64KiB".parse::<Bytes>().unwrap().0, 65_536);
        assert_eq!("218B".parse::<Bytes>().unwrap().0, 218);
    }

    #[test]
    fn bad_quantities_name_the_value_and_the_problem() {
        let e = "10".parse::<Rate>().unwrap_err().to_string();
        assert!(e.contains("\"10\"") && e.contains("unit is required"), "{e}");
        let e = "-5ms".parse::<Duration>().unwrap_err().to_string();
        assert!(e.contains("\"-5ms\"") && e.contains("negative"), "{e}");
        let e = "5 parsecs".parse::<Duration>().unwrap_err().to_string();
        assert!(e.contains("unknown unit \"parsecs\""), "{e}");
        let e = "1.2.3s".parse::<Duration>().unwrap_err().to_string();
        assert!(e.contains("\"1.2.3s\""), "{e}");
    }

    #[test]
    fn queue_limits_in_three_units() {
        assert_eq!("100pkts".parse::<QueueLimit>().unwrap(), QueueLimit::Packets(100));
        assert_eq!("64KB".parse::<QueueLimit>().unwrap(), QueueLimit::Bytes(64_000));
        assert_eq!("1bdp".parse::<QueueLimit>().unwrap(), QueueLimit::Bdp(1.0));
        assert_eq!("0.5bdp".parse::<QueueLimit>().unwrap(), QueueLimit::Bdp(0.5));
        assert!("1.5pkts".parse::<QueueLimit>().is_err());
        assert!("100".parse::<QueueLimit>().is_err());
    }

    #[test]
    fn display_round_trips() {
        for s in ["20ms", "1.5s", "10Mbps", "87kbps", "1500B", "64KB", "100pkts", "1bdp"] {
            let shown = match s {
                x if x.ends_with("bps") => x.parse::<Rate>().unwrap().to_string(),
                x if x.ends_with("pkts") || x.ends_with("bdp") => x.parse::<QueueLimit>().unwrap().to_string(),
                x if x.ends_with('B') => x.parse::<Bytes>().unwrap().to_string(),
                x => x.parse::<Duration>().unwrap().to_string(),
            };
            assert_eq!(shown, s);
        }
    }

    #[test]
    fn serialization_time_is_rounded_up() {
        let r = Rate::from_mbps(10);
        assert_eq!(r.tx_time(1500), Duration::from_micros(1200));
        // 1500 B at 3 Mbps = 4 ms exactly; 1 B at 3 Mbps = 2666.67 ns -> 2667 ns
        assert_eq!(Rate::from_mbps(3).tx_time(1500), Duration::from_millis(4));
        assert_eq!(Rate::from_mbps(3).tx_time(1), Duration::from_nanos(2667));
    }
}

//! Built-in scenarios, compiled in from `scenarios/` so that `aqmlab run NAME`
//! works from any installation.

pub const SCENARIOS: &[(&str, &str)] = &[
    ("madpie-proof", include_str!("../../../scenarios/madpie-proof.toml")),
    ("madpie-proof-droptail", include_str!("../../../scenarios/madpie-proof-droptail.toml")),
    ("madpie-mix", include_str!("../../../scenarios/madpie-mix.toml")),
];

/// The scenario `aqmlab run` uses when given none (Kuhn & Ros §III, PIE, RTT 500 ms).
pub const DEFAULT: &str = "madpie-proof";

pub fn get(name: &str) -> Option<&'static str> {
    SCENARIOS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_scenario_parses() {
        for (name, text) in SCENARIOS {
            let s = crate::Scenario::from_toml(text, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(&s.name, name);
        }
    }
}

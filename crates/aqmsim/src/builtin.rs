//! Built-in scenarios, compiled in from `scenarios/` so that `aqmlab run NAME`
//! works from any installation.


pub const SCENARIOS: &[(&str, &str)] = &[
    ("madpie-proof", include_str!("../../../scenarios/madpie-proof.toml")),
    ("madpie-proof-droptail", include_str!("../../../scenarios/madpie-proof-droptail.toml")),
    ("madpie-proof-madpie", include_str!("../../../scenarios/madpie-proof-madpie.toml")),
    ("ietf88-ecn", include_str!("../../../scenarios/ietf88-ecn.toml")),
    ("madpie-mix", include_str!("../../../scenarios/madpie-mix.toml")),
    ("madpie-rtt-mix", include_str!("../../../scenarios/madpie-rtt-mix.toml")),
    ("pie-lab-5tcp", include_str!("../../../scenarios/pie-lab-5tcp.toml")),
    ("pie-lab-udp", include_str!("../../../scenarios/pie-lab-udp.toml")),
    ("pie-lab-intensity", include_str!("../../../scenarios/pie-lab-intensity.toml")),
    ("pie-lab-capacity", include_str!("../../../scenarios/pie-lab-capacity.toml")),
    ("khademi-light", include_str!("../../../scenarios/khademi-light.toml")),
    ("khademi-moderate", include_str!("../../../scenarios/khademi-moderate.toml")),
    ("khademi-heavy", include_str!("../../../scenarios/khademi-heavy.toml")),
    ("palermo-fifo-drs", include_str!("../../../scenarios/palermo-fifo-drs.toml")),
    ("palermo-codel-drs", include_str!("../../../scenarios/palermo-codel-drs.toml")),
    ("palermo-fifo-palermo", include_str!("../../../scenarios/palermo-fifo-palermo.toml")),
    ("palermo-mixed", include_str!("../../../scenarios/palermo-mixed.toml")),
    ("palermo-late-arrival", include_str!("../../../scenarios/palermo-late-arrival.toml")),
    ("jou-web-droptail", include_str!("../../../scenarios/jou-web-droptail.toml")),
    ("jou-web-ared", include_str!("../../../scenarios/jou-web-ared.toml")),
    ("jou-web-redtail", include_str!("../../../scenarios/jou-web-redtail.toml")),
    ("jou-ftp-20-20", include_str!("../../../scenarios/jou-ftp-20-20.toml")),
    ("jou-web-redtail-sliding", include_str!("../../../scenarios/jou-web-redtail-sliding.toml")),
    ("jou-ftp-20-20-fixed", include_str!("../../../scenarios/jou-ftp-20-20-fixed.toml")),
    ("gbps-1000-flows", include_str!("../../../scenarios/gbps-1000-flows.toml")),
    ("parking-lot", include_str!("../../../scenarios/parking-lot.toml")),
    ("aqm-series", include_str!("../../../scenarios/aqm-series.toml")),
    ("l4s-coexistence", include_str!("../../../scenarios/l4s-coexistence.toml")),
    ("cake-isolation", include_str!("../../../scenarios/cake-isolation.toml")),
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

    #[test]
    fn every_builtin_scenario_round_trips_through_its_resolved_json() {
        // scenario.json must repeat the run: every default and every traffic, path and
        // receiver setting survives the round trip
        for (name, text) in SCENARIOS {
            let s = crate::Scenario::from_toml(text, &[]).unwrap();
            let again = crate::Scenario::from_json(&s.to_json(), &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(s, again, "{name}");
        }
    }

    #[test]
    fn every_scenario_file_parses_and_is_named_after_its_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
                continue;
            }
            n += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let stem = path.file_stem().unwrap().to_str().unwrap();
            let s = crate::Scenario::from_toml_in(&text, &[], Some(&dir)).unwrap_or_else(|e| panic!("{stem}: {e}"));
            assert_eq!(s.name, stem, "the scenario's name is its file's");
            if let Some(text) = get(stem) {
                assert_eq!(text, std::fs::read_to_string(&path).unwrap());
            }
        }
        assert!(n >= SCENARIOS.len());
    }
}

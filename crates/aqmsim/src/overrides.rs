//! `--set KEY=VALUE`: override any scenario field by its dotted path before the
//! scenario is validated, e.g. `bottleneck.aqm.kind=codel`, `flows.0.count=20`,
//! `bottleneck.delay=248ms`.
//!
//! The value is read as a TOML value when it is one (`20`, `true`, `0.5`,
//! `["0s", "1s"]`) and as a string otherwise (`248ms`, `codel`). Setting a `kind`
//! to a different kind replaces its whole table, since the old kind's parameters
//! would not fit the new one.

use crate::scenario::ScenarioError;

fn err(path: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError { path: path.to_string(), message: message.into() }
}

fn parse_value(raw: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

pub fn apply(root: &mut toml::Value, assignment: &str) -> Result<(), ScenarioError> {
    let Some((key, raw)) = assignment.split_once('=') else {
        return Err(err("--set", format!("\"{assignment}\" is not KEY=VALUE")));
    };
    let key = key.trim();
    if key.is_empty() || key.split('.').any(str::is_empty) {
        return Err(err("--set", format!("\"{key}\" is not a dotted field path")));
    }
    let value = parse_value(raw.trim());
    let parts: Vec<&str> = key.split('.').collect();
    let mut node = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i + 1 == parts.len();
        let here = parts[..=i].join(".");
        // `aqm = "pie"` is shorthand for `aqm = { kind = "pie" }`: expand it to set a parameter.
        if let toml::Value::String(s) = node {
            let kind = std::mem::take(s);
            *node = toml::Value::Table(toml::Table::from_iter([("kind".to_string(), toml::Value::String(kind))]));
        }
        match node {
            toml::Value::Table(t) => {
                if last {
                    if *part == "kind" && t.get("kind").is_some_and(|old| *old != value) {
                        if parts.len() == 3 && parts[0] == "flows" {
                            // a flow group keeps its name, count, start, stop and path
                            t.retain(|k, _| crate::scenario::GROUP_COMMON_KEYS.contains(&k));
                        } else {
                            t.clear();
                        }
                    }
                    t.insert(part.to_string(), value);
                    return Ok(());
                }
                node = t.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            }
            toml::Value::Array(a) => {
                let idx: usize = part.parse().map_err(|_| err(&here, format!("\"{part}\" is not an index into a list")))?;
                let len = a.len();
                let slot = a.get_mut(idx).ok_or_else(|| err(&here, format!("index {idx} is out of range (the list has {len} entries)")))?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                node = slot;
            }
            other => return Err(err(&here, format!("cannot set a field inside a {}", other.type_str()))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> toml::Value {
        toml::Value::Table(
            toml::from_str(
                r#"
                [bottleneck]
                delay = "48ms"
                aqm = { kind = "pie", target = "20ms" }
                [[flows]]
                name = "a"
                count = 1
                "#,
            )
            .unwrap(),
        )
    }

    #[test]
    fn sets_strings_numbers_and_list_entries() {
        let mut d = doc();
        apply(&mut d, "bottleneck.delay=248ms").unwrap();
        apply(&mut d, "flows.0.count=20").unwrap();
        apply(&mut d, "record.packets=false").unwrap();
        assert_eq!(d["bottleneck"]["delay"].as_str(), Some("248ms"));
        assert_eq!(d["flows"][0]["count"].as_integer(), Some(20));
        assert_eq!(d["record"]["packets"].as_bool(), Some(false));
    }

    #[test]
    fn a_new_kind_replaces_the_table() {
        let mut d = doc();
        apply(&mut d, "bottleneck.aqm.kind=droptail").unwrap();
        assert_eq!(d["bottleneck"]["aqm"].as_table().unwrap().len(), 1);
        let mut d = doc();
        apply(&mut d, "bottleneck.aqm.kind=pie").unwrap();
        assert_eq!(d["bottleneck"]["aqm"]["target"].as_str(), Some("20ms"));
    }

    #[test]
    fn a_new_flow_kind_keeps_the_group_s_common_fields() {
        let mut d = doc();
        apply(&mut d, "flows.0.tcp.cc=reno").unwrap();
        apply(&mut d, "flows.0.kind=bulk").unwrap();
        apply(&mut d, "flows.0.kind=cbr").unwrap();
        let g = d["flows"][0].as_table().unwrap();
        assert_eq!(g["name"].as_str(), Some("a"));
        assert_eq!(g["count"].as_integer(), Some(1));
        assert_eq!(g["kind"].as_str(), Some("cbr"));
        assert!(!g.contains_key("tcp"), "the old kind's settings are gone");
    }

    #[test]
    fn shorthand_kind_expands() {
        let mut d = doc();
        apply(&mut d, "bottleneck.aqm=pie").unwrap();
        apply(&mut d, "bottleneck.aqm.tupdate=30ms").unwrap();
        assert_eq!(d["bottleneck"]["aqm"]["kind"].as_str(), Some("pie"));
        assert_eq!(d["bottleneck"]["aqm"]["tupdate"].as_str(), Some("30ms"));
    }

    #[test]
    fn bad_paths_are_named() {
        let mut d = doc();
        assert!(apply(&mut d, "flows.3.count=1").unwrap_err().to_string().contains("out of range"));
        assert!(apply(&mut d, "flows.x.count=1").unwrap_err().to_string().contains("not an index"));
        assert!(apply(&mut d, "nothing").unwrap_err().to_string().contains("KEY=VALUE"));
        assert!(apply(&mut d, "bottleneck..delay=1ms").is_err());
    }
}

//! `aqmlab._core`: the bindings. Data crosses once: the scenario goes in as text,
//! the whole run happens in Rust without the GIL, and the records come out as NumPy
//! arrays that take over the Rust vectors without copying.

use numpy::PyArray1;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use aqmsim::record::{Column, DatagramLog, FlowSeries, FlowTable, FlowTrace, HistTable, LinkSeries, PacketLog, RunOutput, Table, TransferLog};
use aqmsim::{Scenario, SimError};

pyo3::create_exception!(_core, ScenarioError, PyValueError, "A scenario that cannot run: the message names the field and the value.");
pyo3::create_exception!(_core, SimulationError, PyRuntimeError, "A simulation that broke an invariant (packet conservation): a bug.");

fn parse(text: &str, format: &str, overrides: &[String], seed: Option<u64>, base_dir: Option<&str>) -> PyResult<Scenario> {
    let base = base_dir.map(std::path::Path::new);
    let sc = match format {
        "toml" => Scenario::from_toml_in(text, overrides, base),
        "json" => Scenario::from_json_in(text, overrides, base),
        other => return Err(PyValueError::new_err(format!("format must be \"toml\" or \"json\", got \"{other}\""))),
    };
    let mut sc = sc.map_err(|e| ScenarioError::new_err(e.to_string()))?;
    if let Some(s) = seed {
        sc.seed = s;
    }
    Ok(sc)
}

/// Validate a scenario and return it with every default filled in, as JSON.
/// Relative file names in it (link traces) are taken from `base_dir`.
#[pyfunction]
#[pyo3(signature = (text, format = "toml", overrides = Vec::new(), seed = None, base_dir = None))]
fn resolve_scenario(text: &str, format: &str, overrides: Vec<String>, seed: Option<u64>, base_dir: Option<String>) -> PyResult<String> {
    Ok(parse(text, format, &overrides, seed, base_dir.as_deref())?.to_json())
}

/// A record table as a dict of NumPy arrays that take over the Rust vectors.
fn table<'py, T: Table>(py: Python<'py>, t: T) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, col) in t.into_columns() {
        match col {
            Column::U8(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Column::U16(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Column::U32(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Column::U64(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Column::I64(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Column::F64(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Column::Bool(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
        }
    }
    Ok(d)
}

/// The bottleneck's records, shared by simulated and emulated runs.
fn set_link_columns(py: Python<'_>, d: &Bound<'_, PyDict>, p: PacketLog, l: LinkSeries) -> PyResult<()> {
    d.set_item(PacketLog::NAME, table(py, p)?)?;
    d.set_item(LinkSeries::NAME, table(py, l)?)
}

fn to_python<'py>(py: Python<'py>, o: RunOutput) -> PyResult<Bound<'py, PyDict>> {
    let scenario: serde_json::Value = serde_json::from_str(&o.scenario_json).expect("scenario JSON");
    let meta = serde_json::json!({
        "scenario": scenario,
        "seed": o.seed,
        "sim_seconds": o.sim_ns as f64 / 1e9,
        "wall_seconds": o.wall_seconds,
        "events": o.events,
        "links": o.links,
        "logged_links": o.logged_links,
        "groups": o.groups,
        "conservation": o.conservation,
        "histograms": o.histograms,
        "version": env!("CARGO_PKG_VERSION"),
    });
    let d = PyDict::new(py);
    d.set_item("meta", meta.to_string())?;
    set_link_columns(py, &d, o.packets, o.link_series)?;
    d.set_item(HistTable::NAME, table(py, o.histogram_buckets)?)?;
    d.set_item(FlowSeries::NAME, table(py, o.flow_series)?)?;
    d.set_item(FlowTable::NAME, table(py, o.flows)?)?;
    d.set_item(FlowTrace::NAME, table(py, o.flow_trace)?)?;
    d.set_item(TransferLog::NAME, table(py, o.transfers)?)?;
    d.set_item(DatagramLog::NAME, table(py, o.datagrams)?)?;
    // the sinks' files for the run folder (record.pcap's captures), name -> bytes
    let files = PyDict::new(py);
    for f in o.files {
        files.set_item(f.name, pyo3::types::PyBytes::new(py, &f.bytes))?;
    }
    d.set_item("files", files)?;
    Ok(d)
}

/// Run a scenario. `progress(fraction)` is called about every 1 % of simulated time.
/// Returns a dict: `meta` (JSON text) and column dicts `packets`, `link_series`,
/// `flow_series`, `flows`, `flow_trace`, `transfers`, `datagrams`.
#[pyfunction]
#[pyo3(signature = (text, format = "toml", overrides = Vec::new(), seed = None, progress = None, base_dir = None))]
fn run<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    overrides: Vec<String>,
    seed: Option<u64>,
    progress: Option<Py<PyAny>>,
    base_dir: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(text, format, &overrides, seed, base_dir.as_deref())?;
    let mut py_err: Option<PyErr> = None;
    let result = py.detach(|| {
        let mut cb = |frac: f64| -> bool {
            Python::attach(|py| {
                if let Err(e) = py.check_signals() {
                    py_err = Some(e);
                    return false;
                }
                if let Some(p) = &progress {
                    if let Err(e) = p.call1(py, (frac,)) {
                        py_err = Some(e);
                        return false;
                    }
                }
                true
            })
        };
        aqmsim::run(&sc, &mut cb)
    });
    match result {
        Ok(o) => to_python(py, o),
        Err(SimError::Interrupted) => Err(py_err.unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted"))),
        Err(SimError::Scenario(e)) => Err(ScenarioError::new_err(e.to_string())),
        Err(e @ SimError::Conservation(_)) => Err(SimulationError::new_err(e.to_string())),
    }
}

/// Run the userspace bottleneck of `aqmlab emulate` on two TUN devices until the
/// control descriptor says `stop` or closes (see `aqmemu::Fds`). Flow `i`'s sender
/// port is `base_port + i`. `trace_ms`: a Mahimahi delivery trace for the forward
/// direction instead of the scenario's constant rate. `delays_ns`: each flow's one-way
/// path delays (data, return), else the scenario's plan. `groups`: the flow groups' names and
/// each flow's group, else the scenario's plan. Returns a dict: `meta` (JSON: links, logged
/// links, histograms, per-flow drops and marks, counters) and column dicts `packets`,
/// `link_series` and `histograms`. Runs without the GIL.
#[pyfunction]
#[pyo3(signature = (text, format, overrides, seed, tun_senders, tun_receivers, control, base_port, flows, spin_ns = None, trace_ms = None, base_dir = None, delays_ns = None, groups = None))]
#[allow(clippy::too_many_arguments)]
fn emulate_bottleneck<'py>(
    py: Python<'py>,
    text: &str,
    format: &str,
    overrides: Vec<String>,
    seed: Option<u64>,
    tun_senders: i32,
    tun_receivers: i32,
    control: i32,
    base_port: u16,
    flows: u32,
    spin_ns: Option<u64>,
    trace_ms: Option<Vec<u64>>,
    base_dir: Option<String>,
    delays_ns: Option<Vec<(u64, u64)>>,
    groups: Option<(Vec<String>, Vec<u16>)>,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = parse(text, format, &overrides, seed, base_dir.as_deref())?;
    let mut cfg = aqmemu::Config::from_scenario(&sc, aqmemu::FlowMap { base_port, flows }).map_err(ScenarioError::new_err)?;
    // the groups as the caller planned them (its own flows included)
    if let Some((names, of_flow)) = groups {
        if of_flow.len() != flows as usize || of_flow.iter().any(|&g| g as usize >= names.len()) {
            return Err(PyValueError::new_err(format!("groups: {} flows in groups 0..{}, expected {flows} flows", of_flow.len(), names.len())));
        }
        (cfg.groups, cfg.flow_group) = (names, of_flow);
    }
    // each flow's path delays as the caller planned them (its own flows included)
    if let Some(d) = delays_ns {
        cfg.pipes[0].flow_delays = d.iter().map(|x| aqm::Duration::from_nanos(x.0)).collect();
        cfg.pipes[1].flow_delays = d.iter().map(|x| aqm::Duration::from_nanos(x.1)).collect();
    }
    if let Some(ns) = spin_ns {
        cfg.spin = aqm::Duration::from_nanos(ns);
    }
    // a trace given here instead of the scenario's rate or `bottleneck.trace`
    if let Some(ms) = trace_ms {
        cfg = cfg.with_trace(ms).map_err(ScenarioError::new_err)?;
    }
    let fds = aqmemu::Fds { senders: tun_senders, receivers: tun_receivers, control };
    let o = py.detach(|| aqmemu::run(&cfg, fds)).map_err(PyRuntimeError::new_err)?;
    let meta = serde_json::json!({
        "links": o.links,
        "logged_links": o.logged_links,
        "recorded_seconds": o.recorded_ns as f64 / 1e9,
        "arrived": o.arrived,
        "delivered": o.delivered,
        "dropped": o.dropped,
        "in_flight": o.in_flight,
        "ignored": o.ignored,
        "write_errors": o.write_errors,
        "cpu_seconds": o.cpu_ns as f64 / 1e9,
        "realtime": o.realtime,
        "lateness_us": {"p50": o.lateness.quantile_us(0.5), "p99": o.lateness.quantile_us(0.99), "p999": o.lateness.quantile_us(0.999), "max_bucket": o.lateness.quantile_us(1.0)},
        "stalls": o.lateness.stalls,
        "histograms": o.histograms,
        "flow_drops": o.flow_drops,
        "flow_ack_drops": o.flow_ack_drops,
        "flow_marks": o.flow_marks,
    });
    let d = PyDict::new(py);
    d.set_item("meta", meta.to_string())?;
    set_link_columns(py, &d, o.packets, o.link_series)?;
    d.set_item(HistTable::NAME, table(py, o.histogram_buckets)?)?;
    Ok(d)
}

/// The traffic plan of an emulated run, as JSON (`aqmemu::plan::Plan`): the groups,
/// and per flow its start, stop, path delays, Linux congestion control and
/// application, drawn from the simulator's streams.
#[pyfunction]
#[pyo3(signature = (text, format = "toml", overrides = Vec::new(), seed = None, base_dir = None))]
fn emulation_plan(text: &str, format: &str, overrides: Vec<String>, seed: Option<u64>, base_dir: Option<String>) -> PyResult<String> {
    let sc = parse(text, format, &overrides, seed, base_dir.as_deref())?;
    let plan = aqmemu::plan::plan(&sc).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    Ok(serde_json::to_string(&plan).expect("plan serializes"))
}

/// The built-in scenarios as (name, TOML text) pairs; the first is the default.
#[pyfunction]
fn builtin_scenarios() -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = aqmsim::builtin::SCENARIOS.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    v.sort_by_key(|(n, _)| n != aqmsim::builtin::DEFAULT);
    v
}

/// The AQMs with their parameters: JSON list of {kind, title, source, marks_ecn,
/// params: [{name, default, doc}]}; `marks_ecn`: whether the AQM with its defaults
/// CE-marks ECN-capable packets instead of dropping them.
#[pyfunction]
fn aqm_catalog() -> String {
    let kinds: Vec<serde_json::Value> = aqm::AqmSpec::KINDS
        .iter()
        .map(|k| {
            let spec = aqm::AqmSpec::default_for(k.kind).unwrap();
            let marks_ecn = spec.marks_ecn();
            let defaults = serde_json::to_value(spec).unwrap();
            let params: Vec<serde_json::Value> = k
                .params
                .iter()
                .map(|(name, doc)| serde_json::json!({"name": name, "default": defaults[*name], "doc": doc}))
                .collect();
            serde_json::json!({"kind": k.kind, "title": k.title, "source": k.source, "marks_ecn": marks_ecn, "params": params})
        })
        .collect();
    serde_json::Value::Array(kinds).to_string()
}

/// The output schema, as JSON: every record table's columns (name, dtype, the code
/// table its values index, doc), the fixed code tables, and the traffic kinds
/// with their families. Python reads it instead of declaring any of it again.
#[pyfunction]
fn schema() -> String {
    let tables: serde_json::Map<String, serde_json::Value> = aqmsim::record::schema().into_iter().map(|(n, cols)| (n.to_string(), serde_json::to_value(cols).unwrap())).collect();
    let codes: serde_json::Map<String, serde_json::Value> = aqmsim::record::code_tables().into_iter().map(|(n, v)| (n.to_string(), serde_json::to_value(v).unwrap())).collect();
    let traffic: serde_json::Map<String, serde_json::Value> =
        aqmsim::endpoint::TrafficSpec::FAMILIES.iter().map(|(k, f)| (k.to_string(), serde_json::Value::String(f.to_string()))).collect();
    serde_json::json!({"tables": tables, "codes": codes, "traffic_families": traffic}).to_string()
}

/// The congestion controls with their parameters: JSON list of {kind, title, source,
/// linux, simulated, params: [{name, default, doc}]}.
#[pyfunction]
fn cc_catalog() -> String {
    let kinds: Vec<serde_json::Value> = aqmsim::tcp::CcSpec::KINDS
        .iter()
        .map(|k| {
            let defaults = serde_json::to_value(aqmsim::tcp::CcSpec::default_for(k.kind).unwrap()).unwrap();
            let params: Vec<serde_json::Value> = k.params.iter().map(|(name, doc)| serde_json::json!({"name": name, "default": defaults[*name], "doc": doc})).collect();
            serde_json::json!({"kind": k.kind, "title": k.title, "source": k.source, "linux": k.linux, "simulated": k.simulated, "params": params})
        })
        .collect();
    serde_json::Value::Array(kinds).to_string()
}

/// The traffic kinds and TCP settings with their defaults, as JSON.
#[pyfunction]
fn traffic_catalog() -> String {
    let tcp = serde_json::to_value(aqmsim::tcp::TcpConfig::default()).unwrap();
    let palermo = serde_json::to_value(aqmsim::tcp::PalermoParams::default()).unwrap();
    let palermo_doc: serde_json::Map<String, serde_json::Value> =
        aqmsim::tcp::PalermoParams::DOC.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect();
    serde_json::json!({"kinds": aqmsim::scenario::TrafficSpec::KINDS, "tcp": tcp, "palermo": palermo, "palermo_doc": palermo_doc}).to_string()
}

/// The memory a run of the scenario will take (`aqmsim::budget::estimate`), as JSON:
/// `{core_bytes, process_bytes, packets, parts: [{name, count, bytes, knob}]}`, the
/// parts largest first. Computed from the scenario alone, in microseconds.
#[pyfunction]
#[pyo3(signature = (text, format = "toml", overrides = Vec::new(), seed = None, base_dir = None))]
fn memory_estimate(text: &str, format: &str, overrides: Vec<String>, seed: Option<u64>, base_dir: Option<String>) -> PyResult<String> {
    let sc = parse(text, format, &overrides, seed, base_dir.as_deref())?;
    Ok(serde_json::to_string(&aqmsim::budget::estimate(&sc)).expect("the estimate serializes"))
}

#[pymodule]
mod _core {
    #[pymodule_export]
    use super::{aqm_catalog, builtin_scenarios, cc_catalog, schema, emulate_bottleneck, emulation_plan, memory_estimate, resolve_scenario, run, traffic_catalog, ScenarioError, SimulationError};

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods;
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}

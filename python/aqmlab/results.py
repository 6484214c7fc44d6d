"""A run's results: tables (Arrow, pandas), the summary, and writing them to disk.

Files written (DESIGN.md "What a run writes"; every column in docs/outputs.md):
`summary.json`, `packets.parquet`, `flows.parquet`, `timeseries.parquet`,
`transfers.parquet` (one row per download or transfer), `datagrams.parquet` (one
row per UDP datagram received), `flow_trace.parquet` (one row per ACK of the flows
in `record.flow_trace`), `histograms.parquet` (the streaming histograms of the
bottleneck's queueing delay, kept in every run), `scenario.json` (the scenario with all defaults, so that a
run can be redrawn or repeated years later) and `report.html` with its figures. A run folder is written to a temporary sibling first and moved
into place, so a killed run leaves no half-written folder.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from . import measures
from .folders import TABLES, Run

FORMAT_VERSION = 1


def _dict_col(codes: np.ndarray, names: list[str], null_code: int | None = None) -> pa.Array:
    idx = pa.array(codes.astype(np.int32))
    if null_code is not None:
        idx = pa.array(codes.astype(np.int32), mask=codes == null_code)
    return pa.DictionaryArray.from_arrays(idx, pa.array(names))


def _ms(ns: np.ndarray) -> pa.Array:
    """Nanoseconds (with -1 for 'none') to milliseconds with nulls."""
    ns = np.asarray(ns)
    return pa.array(ns / 1e6, mask=ns < 0)


# Per-flow loss-recovery counters only the simulator has (docs/outputs.md).
SIM_RECOVERY_COUNTERS = ("loss_probes", "loss_probe_recoveries", "dsacks", "undos", "spurious_rtos", "lost_retransmits")
_DTYPES = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "i64": np.int64, "f64": np.float64, "bool": np.bool_}


@functools.cache
def schema() -> dict[str, Any]:
    """The raw records' schema, declared once in the Rust core (record.rs): every
    table's columns (name, dtype, the code table its values index, doc), the fixed
    code tables (`kind`, `event`, `cause`, `ca_state`, `receiver_mode`) and the
    traffic kinds' families."""
    from . import _core

    return json.loads(_core.schema())


def codes(name: str) -> list[str]:
    """A fixed code table of the raw records, by the name the schema gives it."""
    return schema()["codes"][name]


def _with_defaults(raw: dict[str, Any]) -> dict[str, Any]:
    """Fill in what a producer of raw records does not have (the emulator records the
    bottleneck and the flows, not downloads, datagrams or ACK traces): an absent
    table is empty; an absent column holds its "none" value (-1 for signed columns,
    0 otherwise), both with the schema's types."""
    for table, cols in schema()["tables"].items():
        if table not in raw:
            raw[table] = {c["name"]: np.array([], dtype=_DTYPES[c["dtype"]]) for c in cols}
            continue
        t = raw[table]
        n = max((len(v) for v in t.values()), default=0)
        for c in cols:
            if c["name"] not in t or len(t[c["name"]]) != n:
                t[c["name"]] = np.full(n, -1 if c["dtype"] == "i64" else 0, dtype=_DTYPES[c["dtype"]])
    return raw


class RunResult(Run):
    """The outcome of one run, in memory: a `Run` (summary, tables, `plot`, `table`)
    that can also `write` its folder. `summary` is the dict written to summary.json;
    `packets`, `flows`, `timeseries`... are Arrow tables (`.to_pandas()` for pandas)."""

    path = None

    def __init__(self, raw: dict[str, Any]):
        self.raw = _with_defaults(raw)
        self.meta: dict[str, Any] = json.loads(raw["meta"])
        self.params: dict[str, Any] = {}
        self._frames: dict[Any, Any] = {}

    @property
    def scenario(self) -> dict[str, Any]:
        return self.meta["scenario"]

    @cached_property
    def summary(self) -> dict[str, Any]:
        return measures.summarize(self)

    @property
    def manifest(self) -> dict[str, Any] | None:
        return self.__dict__.get("_manifest")

    def _has(self, name: str) -> bool:
        return name in TABLES

    def _arrow(self, name: str):
        return getattr(self, name) if name in TABLES else None

    def _read(self, name: str, columns, filters):
        import pyarrow.compute as pc

        t = self._arrow(name)
        if t is None or not set(columns) <= set(t.column_names) or not all(f[0] in t.column_names for f in filters or []):
            return None
        mask = None
        for col, op, value in filters or []:
            if op not in ("=", "=="):
                raise ValueError(f"table filter: only equality is supported in memory, not {op!r}")
            m = pc.equal(t[col], value)
            mask = m if mask is None else pc.and_(mask, m)
        t = t.select(list(columns))
        if mask is not None:
            t = t.filter(mask)
        return t.to_pandas()

    @cached_property
    def flow_class(self) -> np.ndarray:
        """Group index of each flow id."""
        return self.raw["flows"]["group"]

    @property
    def class_names(self) -> list[str]:
        return [g["name"] for g in self.meta["groups"]]

    def _class_col(self, flow: np.ndarray) -> pa.Array:
        groups = self.flow_class[flow] if len(flow) else np.array([], dtype=np.int32)
        return _dict_col(groups, self.class_names)

    @cached_property
    def packets(self) -> pa.Table:
        p = self.raw["packets"]
        logged = self.meta["logged_links"] or ["bottleneck"]
        return pa.table(
            {
                "time_s": pa.array(p["time_ns"] / 1e9),
                "link": _dict_col(p["link"], logged),
                "flow": pa.array(p["flow"]),
                "class": self._class_col(p["flow"]),
                "kind": _dict_col(p["kind"], codes("kind")),
                "uid": pa.array(p["uid"]),
                "size_bytes": pa.array(p["size"]),
                "event": _dict_col(p["event"], codes("event")),
                "cause": _dict_col(p["cause"], codes("cause"), null_code=0),
                "sojourn_ms": _ms(p["sojourn_ns"]),
                "backlog_bytes": pa.array(p["backlog_bytes"]),
                "aqm_delay_ms": _ms(p["aqm_delay_ns"]),
            }
        )

    @cached_property
    def histograms(self) -> pa.Table:
        """The streaming histograms' non-empty buckets: one row per bucket
        `[lo_ms, hi_ms)` of each named histogram (see docs/outputs.md)."""
        h = self.raw["histograms"]
        names = [x["name"] for x in self.meta.get("histograms", [])]
        return pa.table(
            {
                "name": _dict_col(h["hist"], names),
                "lo_ms": pa.array(h["lo_ns"] / 1e6),
                "hi_ms": pa.array(h["hi_ns"] / 1e6),
                "count": pa.array(h["count"]),
            }
        )

    @cached_property
    def flows(self) -> pa.Table:
        f = self.raw["flows"]
        groups = self.meta["groups"]
        sim_s = self.meta["sim_seconds"]
        start_s = f["start_ns"] / 1e9
        end = f["end_ns"]
        span = np.where(end >= 0, end / 1e9, sim_s) - start_s
        goodput = np.where(span > 0, f["bytes_delivered"] * 8 / np.maximum(span, 1e-12) / 1e6, 0.0)
        sent = f["segments_sent"].astype(float)
        return pa.table(
            {
                "flow": pa.array(f["flow"]),
                "class": _dict_col(f["group"], self.class_names),
                "kind": pa.array([groups[g]["kind"] for g in f["group"]]),
                "cc": pa.array([groups[g]["cc"] for g in f["group"]]),
                "start_s": pa.array(start_s),
                "end_s": pa.array(end / 1e9, mask=end < 0),
                "bytes_delivered": pa.array(f["bytes_delivered"]),
                "goodput_mbps": pa.array(goodput),
                "packets_sent": pa.array(f["segments_sent"]),
                "retransmits": pa.array(f["retransmits"]),
                "timeouts": pa.array(f["timeouts"]),
                "recoveries": pa.array(f["recoveries"]),
                "ecn_reductions": pa.array(f["ecn_reductions"]),
                # the simulator's loss-recovery counters (an emulated run's are the
                # kernel's, in summary.json's emulation block)
                **{k: pa.array(f[k]) for k in SIM_RECOVERY_COUNTERS if k in f},
                "drops": pa.array(f["drops"]),
                "ack_drops": pa.array(f["ack_drops"]),
                "marks": pa.array(f["marks"]),
                "loss_rate": pa.array(np.where(sent > 0, f["drops"] / np.maximum(sent, 1), np.nan)),
                "min_rtt_ms": _ms(f["min_rtt_ns"]),
                "srtt_ms": _ms(f["srtt_ns"]),
                "base_rtt_ms": pa.array(f["base_rtt_ns"] / 1e6),
                "receiver": pa.array([groups[g].get("receiver") for g in f["group"]], type=pa.string()),
                "transfers": pa.array(f["transfers"]),
                "receiver_reverts": pa.array(f["receiver_reverts"]),
                "receiver_returns": pa.array(f["receiver_returns"]),
            }
        )

    @cached_property
    def transfers(self) -> pa.Table:
        """One row per download (files, web) or transfer."""
        t = self.raw["transfers"]
        req = t["request_ns"]
        end = t["end_ns"]
        done = end >= 0
        return pa.table(
            {
                "flow": pa.array(t["flow"]),
                "class": _dict_col(t["group"], self.class_names),
                "index": pa.array(t["index"]),
                "conn": pa.array(t["conn"]),
                "size_bytes": pa.array(t["size_bytes"]),
                "request_s": pa.array(req / 1e9),
                "end_s": pa.array(end / 1e9, mask=~done),
                "download_time_s": pa.array((end - req.astype(np.int64)) / 1e9, mask=~done),
                "retransmits": pa.array(t["retransmits"], mask=~done),
                "timeouts": pa.array(t["timeouts"], mask=~done),
            }
        )

    @cached_property
    def datagrams(self) -> pa.Table:
        """One row per UDP datagram received, with its one-way delay."""
        d = self.raw["datagrams"]
        return pa.table(
            {
                "time_s": pa.array(d["time_ns"] / 1e9),
                "flow": pa.array(d["flow"]),
                "class": self._class_col(d["flow"]),
                "seq": pa.array(d["seq"]),
                "size_bytes": pa.array(d["size"]),
                "one_way_delay_ms": pa.array(d["delay_ns"] / 1e6),
                "ce": pa.array(d["ce"]),
            }
        )

    @cached_property
    def flow_trace(self) -> pa.Table:
        """One row per ACK reaching a traced sender (record.flow_trace)."""
        x = self.raw["flow_trace"]
        rw = x["rwnd"]
        return pa.table(
            {
                "time_s": pa.array(x["time_ns"] / 1e9),
                "flow": pa.array(x["flow"]),
                "class": self._class_col(x["flow"]),
                "conn": pa.array(x["conn"]),
                "acked_bytes": pa.array(x["acked_bytes"]),
                "snd_una": pa.array(x["snd_una"]),
                "snd_nxt": pa.array(x["snd_nxt"]),
                "cwnd_segments": pa.array(x["cwnd"]),
                "in_flight_segments": pa.array(x["in_flight"]),
                "unacked_segments": pa.array(x["unacked"]),
                "rtt_ms": _ms(x["rtt_ns"]),
                "srtt_ms": _ms(x["srtt_ns"]),
                "rwnd_bytes": pa.array(rw, mask=rw < 0),
            }
        )

    @cached_property
    def timeseries(self) -> pa.Table:
        """Link rows (scope = "link") and flow rows (scope = "flow") per interval."""
        ls = self.raw["link_series"]
        fs = self.raw["flow_series"]
        interval_s = measures.duration_ns(self.scenario["record"]["interval"]) / 1e9
        links = [l["name"] for l in self.meta["links"]]
        nl, nf = len(ls["time_ns"]), len(fs["time_ns"])

        def cat(a: Any, b: Any) -> pa.Array:
            return pa.concat_arrays([a, b])

        def nulls(n: int, typ: pa.DataType) -> pa.Array:
            return pa.nulls(n, typ)

        f64, u64 = pa.float64(), pa.uint64()
        # delivered goodput per interval, per flow
        gp = np.zeros(nf)
        if nf:
            order = np.lexsort((fs["time_ns"], fs["flow"]))
            d = fs["delivered_bytes"][order].astype(float)
            same = np.r_[False, fs["flow"][order][1:] == fs["flow"][order][:-1]]
            delta = np.where(same, np.diff(np.r_[0.0, d]), d)
            gp[order] = delta * 8 / interval_s / 1e6
        cols = {
            "time_s": cat(pa.array(ls["time_ns"] / 1e9), pa.array(fs["time_ns"] / 1e9)),
            "scope": pa.DictionaryArray.from_arrays(pa.array(np.r_[np.zeros(nl), np.ones(nf)].astype(np.int32)), pa.array(["link", "flow"])),
            "link": cat(_dict_col(ls["link"], links), pa.DictionaryArray.from_arrays(pa.nulls(nf, pa.int32()), pa.array(links))),
            "flow": cat(nulls(nl, pa.uint32()), pa.array(fs["flow"])),
            "class": cat(pa.DictionaryArray.from_arrays(pa.nulls(nl, pa.int32()), pa.array(self.class_names)), self._class_col(fs["flow"])),
            "utilization": cat(pa.array(measures.link_utilization(ls, interval_s)), nulls(nf, f64)),
            "throughput_mbps": cat(pa.array(ls["tx_bytes"] * 8 / interval_s / 1e6), nulls(nf, f64)),
            "capacity_mbps": cat(pa.array(ls["capacity_bps"] / 1e6), nulls(nf, f64)),
            "opportunities": cat(pa.array(ls["opportunities"]), nulls(nf, u64)),
            "opportunities_used": cat(pa.array(ls["opportunities_used"]), nulls(nf, u64)),
            "arrivals": cat(pa.array(ls["arrivals"]), nulls(nf, u64)),
            "drops_overflow": cat(pa.array(ls["drops_overflow"]), nulls(nf, u64)),
            "drops_random": cat(pa.array(ls["drops_random"]), nulls(nf, u64)),
            "drops_deterministic": cat(pa.array(ls["drops_deterministic"]), nulls(nf, u64)),
            "marks": cat(pa.array(ls["marks"]), nulls(nf, u64)),
            "backlog_bytes": cat(pa.array(ls["backlog_bytes"]), nulls(nf, u64)),
            "backlog_packets": cat(pa.array(ls["backlog_packets"]), nulls(nf, u64)),
            "drop_prob": cat(pa.array(ls["drop_prob"], mask=np.isnan(ls["drop_prob"])), nulls(nf, f64)),
            "aqm_delay_ms": cat(_ms(ls["aqm_delay_ns"]), nulls(nf, f64)),
            "cwnd_segments": cat(nulls(nl, f64), pa.array(fs["cwnd"])),
            "ssthresh_segments": cat(nulls(nl, f64), pa.array(fs["ssthresh"], mask=np.isnan(fs["ssthresh"]))),
            "srtt_ms": cat(nulls(nl, f64), _ms(fs["srtt_ns"])),
            "rtt_ms": cat(nulls(nl, f64), _ms(fs["rtt_ns"])),
            "rto_ms": cat(nulls(nl, f64), pa.array(fs["rto_ns"] / 1e6)),
            "in_flight_segments": cat(nulls(nl, u64), pa.array(fs["in_flight"])),
            "delivered_bytes": cat(nulls(nl, u64), pa.array(fs["delivered_bytes"])),
            "goodput_mbps": cat(nulls(nl, f64), pa.array(gp)),
            "retransmits": cat(nulls(nl, u64), pa.array(fs["retransmits"])),
            "ca_state": cat(
                pa.DictionaryArray.from_arrays(pa.nulls(nl, pa.int32()), pa.array(codes("ca_state"))),
                _dict_col(fs["ca_state"], codes("ca_state")),
            ),
            "rwnd_bytes": cat(nulls(nl, pa.int64()), pa.array(fs["rwnd"], mask=fs["rwnd"] < 0)),
            "receiver_mode": cat(
                pa.DictionaryArray.from_arrays(pa.nulls(nl, pa.int32()), pa.array(codes("receiver_mode"))),
                _dict_col(fs["receiver_mode"], codes("receiver_mode"), null_code=0),
            ),
        }
        return pa.table(cols)

    def table_metadata(self) -> dict[bytes, bytes]:
        """Self-describing files: scenario, seed and format version in every Parquet file."""
        return {
            b"aqmlab.format_version": str(FORMAT_VERSION).encode(),
            b"aqmlab.version": self.meta["version"].encode(),
            b"aqmlab.seed": str(self.meta["seed"]).encode(),
            b"aqmlab.scenario": json.dumps(self.scenario).encode(),
        }

    def write(self, out_dir: str | os.PathLike[str], report: bool = True, *, manifest: dict[str, Any] | None = None, progress: Any = None) -> Path:
        """Write the run folder atomically (tables, summary.json, scenario.json,
        manifest.json, report.html); returns its path. `progress(done, total, what)`
        is called while the report's figures are drawn."""
        out = check_out_dir(out_dir)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        try:
            self._write_into(tmp, report, manifest, progress)
            _replace_dir(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return out

    def _write_into(self, d: Path, report: bool, manifest: dict[str, Any] | None, progress: Any) -> None:
        import threading

        from . import manifest as _manifest

        md = self.table_metadata()
        tables = [(name, getattr(self, name)) for name in TABLES]  # built here, before the writer thread reads them
        failure: list[BaseException] = []

        def write_tables() -> None:  # pyarrow releases the GIL: the tables are written while the figures are drawn
            try:
                for name, table in tables:
                    table = table.replace_schema_metadata({**(table.schema.metadata or {}), **md})
                    pq.write_table(table, d / f"{name}.parquet", compression="zstd", compression_level=1)
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                failure.append(e)

        writer = threading.Thread(target=write_tables, name="aqmlab-write-tables")
        try:
            man = manifest or _manifest.make(started=self.__dict__.get("started"), wall_seconds=self.meta["wall_seconds"])
            self.__dict__["_manifest"] = man
            (d / "scenario.json").write_text(json.dumps(self.scenario, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            (d / _manifest.NAME).write_text(json.dumps(man, indent=2) + "\n")
            if report:
                from . import report as _report

                _report.write_report(self, d, progress, on_started=writer.start)  # the writer starts after the report's fork
            else:
                writer.start()
            if writer.ident is None:  # a report without figures to draw never started it
                writer.start()
        finally:
            if writer.ident is not None:
                writer.join()
        if failure:
            raise failure[0]
        (d / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")  # last: a folder with a summary is whole


RUN_FILES = {
    "summary.json",
    "scenario.json",
    "packets.parquet",
    "flows.parquet",
    "timeseries.parquet",
    "transfers.parquet",
    "datagrams.parquet",
    "flow_trace.parquet",
    "histograms.parquet",
    "report.html",
    "figures",
    "manifest.json",
    "series.csv",
}


def is_run_dir(d: Path) -> bool:
    """An existing folder that holds a previous run (and nothing else)."""
    entries = {e.name for e in d.iterdir()}
    return "summary.json" in entries and entries <= RUN_FILES


def check_out_dir(dest: str | os.PathLike[str]) -> Path:
    """Refuse an output folder that would overwrite something other than a run."""
    d = Path(dest)
    if d.exists():
        if not d.is_dir():
            raise FileExistsError(f"--out: \"{d}\" exists and is not a directory")
        if any(d.iterdir()) and not is_run_dir(d):
            raise FileExistsError(f"--out: \"{d}\" is not empty and does not hold an aqmlab run; choose another folder")
    return d


def _replace_dir(new: Path, dest: Path) -> None:
    """Move `new` to `dest`, replacing a previous run folder there."""
    if dest.exists():
        check_out_dir(dest)
        old = dest.with_name(f".{dest.name}.old-{os.getpid()}")
        os.replace(dest, old)
        os.replace(new, dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(new, dest)


def load_summary(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    return json.loads((Path(run_dir) / "summary.json").read_text())

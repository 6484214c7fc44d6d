"""A run's results: tables (Arrow, pandas), the summary, and writing them to disk.

Files written (DESIGN.md "What a run writes"; every column in docs/outputs.md):
`summary.json`, `packets.parquet`, `flows.parquet`, `timeseries.parquet`,
`transfers.parquet` (one row per download or transfer), `datagrams.parquet` (one
row per UDP datagram received), `flow_trace.parquet` (one row per ACK of the flows
in `record.flow_trace`), `histograms.parquet` (the streaming histograms of the
bottleneck's queueing delay, kept in every run), `scenario.json` (the scenario with all defaults, so that a
run can be redrawn or repeated years later), `conservation.ok` (the packet balances
that were checked, see `aqmlab.conservation`) and `report.html` with its figures. A run folder is written to a temporary sibling first and moved
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

from . import conservation, measures
from .folders import CAPTURE, RUN_FILES, TABLES, Run, _replace_dir, check_out_dir, is_run_dir  # noqa: F401  (the folder checks live with the folders)

FORMAT_VERSION = 1


def _arr(values: Any, mask: np.ndarray | None = None) -> pa.Array:
    """An Arrow array of a numpy array (sharing its memory; `mask` True marks nulls) or
    of a list of strings (None for null), built from buffers: `pa.array` would import
    pandas (0.3 s) to look at its input, and writing a run's tables needs no pandas."""
    if isinstance(values, list):
        return _strings(values)
    a = np.ascontiguousarray(values)
    if a.dtype == np.bool_:
        typ, data = pa.bool_(), pa.py_buffer(np.packbits(a, bitorder="little"))
    else:
        typ, data = pa.from_numpy_dtype(a.dtype), pa.py_buffer(a)
    validity, nulls = _validity(mask, len(a))
    return pa.Array.from_buffers(typ, len(a), [validity, data], null_count=nulls)


def _validity(mask: Any, n: int) -> tuple[pa.Buffer | None, int]:
    if mask is None:
        return None, 0
    m = np.broadcast_to(np.asarray(mask, bool), (n,))
    nulls = int(m.sum())
    return (pa.py_buffer(np.packbits(~m, bitorder="little")) if nulls else None), nulls


def _strings(values: list[Any]) -> pa.Array:
    enc = [b"" if v is None else str(v).encode("utf-8") for v in values]
    offsets = np.zeros(len(enc) + 1, np.int32)
    offsets[1:] = np.cumsum([len(b) for b in enc], dtype=np.int64)
    validity, nulls = _validity([v is None for v in values], len(enc))
    return pa.Array.from_buffers(pa.string(), len(enc), [validity, pa.py_buffer(offsets), pa.py_buffer(b"".join(enc))], null_count=nulls)


def _dict_col(codes: np.ndarray, names: list[str], null_code: int | None = None) -> pa.Array:
    idx = _arr(codes.astype(np.int32), mask=None if null_code is None else codes == null_code)
    return pa.DictionaryArray.from_arrays(idx, _strings(list(names)))


def _null_dict(n: int, names: list[str]) -> pa.Array:
    """A dictionary column of `n` nulls over `names`."""
    return pa.DictionaryArray.from_arrays(pa.nulls(n, pa.int32()), _strings(list(names)))


def _ms(ns: np.ndarray) -> pa.Array:
    """Nanoseconds (with -1 for 'none') to milliseconds with nulls."""
    ns = np.asarray(ns)
    return _arr(ns / 1e6, mask=ns < 0)


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
        # every run's packets balance, or the run fails here (SimulationError)
        self.conservation: list[str] = conservation.check(self.meta)

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
        t = self._arrow(name)
        if t is None or not set(columns) <= set(t.column_names) or not all(f[0] in t.column_names for f in filters or []):
            return None
        t = t.select(list(columns))
        if filters:
            t = t.filter(self._mask(name, tuple((c, op, v) for c, op, v in filters)))
        return t.to_pandas()

    def _mask(self, name: str, filters: tuple) -> pa.Array:
        """The rows of table NAME that match every (column, "=", value), kept for the
        next read with the same filters (the figures filter the packets alike). A
        dictionary column is compared by its codes: a hundred times faster than
        comparing its strings."""
        import pyarrow.compute as pc

        key = ("mask", name, filters)
        if key in self._frames:
            return self._frames[key]
        t = self._arrow(name)
        mask: Any = None
        for col, op, value in filters:
            if op not in ("=", "=="):
                raise ValueError(f"table filter: only equality is supported in memory, not {op!r}")
            c = t[col]
            if pa.types.is_dictionary(c.type):
                parts = []
                for ch in c.chunks:
                    names = ch.dictionary.to_pylist()
                    code = names.index(value) if value in names else -1
                    parts.append(ch.indices.to_numpy(zero_copy_only=False) == code)
                m = np.concatenate(parts) if parts else np.zeros(0, bool)
            else:
                m = pc.fill_null(pc.equal(c, value), False).to_numpy(zero_copy_only=False)  # a null never matches
            mask = m if mask is None else mask & m
        self._frames[key] = out = _arr(mask)
        return out

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
                "time_s": _arr(p["time_ns"] / 1e9),
                "link": _dict_col(p["link"], logged),
                "flow": _arr(p["flow"]),
                "class": self._class_col(p["flow"]),
                "kind": _dict_col(p["kind"], codes("kind")),
                "uid": _arr(p["uid"]),
                "size_bytes": _arr(p["size"]),
                "event": _dict_col(p["event"], codes("event")),
                "cause": _dict_col(p["cause"], codes("cause"), null_code=0),
                "sojourn_ms": _ms(p["sojourn_ns"]),
                "backlog_bytes": _arr(p["backlog_bytes"]),
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
                "lo_ms": _arr(h["lo_ns"] / 1e6),
                "hi_ms": _arr(h["hi_ns"] / 1e6),
                "count": _arr(h["count"]),
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
                "flow": _arr(f["flow"]),
                "class": _dict_col(f["group"], self.class_names),
                "kind": _strings([groups[g]["kind"] for g in f["group"]]),
                "cc": _strings([groups[g]["cc"] for g in f["group"]]),
                "start_s": _arr(start_s),
                "end_s": _arr(end / 1e9, mask=end < 0),
                "bytes_delivered": _arr(f["bytes_delivered"]),
                "goodput_mbps": _arr(goodput),
                "packets_sent": _arr(f["segments_sent"]),
                "retransmits": _arr(f["retransmits"]),
                "timeouts": _arr(f["timeouts"]),
                "recoveries": _arr(f["recoveries"]),
                "ecn_reductions": _arr(f["ecn_reductions"]),
                # the simulator's loss-recovery counters (an emulated run's are the
                # kernel's, in summary.json's emulation block)
                **{k: _arr(f[k]) for k in SIM_RECOVERY_COUNTERS if k in f},
                "drops": _arr(f["drops"]),
                "ack_drops": _arr(f["ack_drops"]),
                "marks": _arr(f["marks"]),
                **{f"{d}_{cp}": _arr(f[f"{d}_{cp}"]) for d in ("sent", "received") for cp in measures.ecn_codepoints()},
                "loss_rate": _arr(np.where(sent > 0, f["drops"] / np.maximum(sent, 1), np.nan)),
                "min_rtt_ms": _ms(f["min_rtt_ns"]),
                "srtt_ms": _ms(f["srtt_ns"]),
                "base_rtt_ms": _arr(f["base_rtt_ns"] / 1e6),
                "receiver": _strings([groups[g].get("receiver") for g in f["group"]]),
                "transfers": _arr(f["transfers"]),
                "receiver_reverts": _arr(f["receiver_reverts"]),
                "receiver_returns": _arr(f["receiver_returns"]),
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
                "flow": _arr(t["flow"]),
                "class": _dict_col(t["group"], self.class_names),
                "index": _arr(t["index"]),
                "conn": _arr(t["conn"]),
                "size_bytes": _arr(t["size_bytes"]),
                "request_s": _arr(req / 1e9),
                "end_s": _arr(end / 1e9, mask=~done),
                "download_time_s": _arr((end - req.astype(np.int64)) / 1e9, mask=~done),
                "retransmits": _arr(t["retransmits"], mask=~done),
                "timeouts": _arr(t["timeouts"], mask=~done),
            }
        )

    @cached_property
    def datagrams(self) -> pa.Table:
        """One row per UDP datagram received, with its one-way delay."""
        d = self.raw["datagrams"]
        return pa.table(
            {
                "time_s": _arr(d["time_ns"] / 1e9),
                "flow": _arr(d["flow"]),
                "class": self._class_col(d["flow"]),
                "seq": _arr(d["seq"]),
                "size_bytes": _arr(d["size"]),
                "one_way_delay_ms": _arr(d["delay_ns"] / 1e6),
                "ce": _arr(d["ce"]),
            }
        )

    @cached_property
    def flow_trace(self) -> pa.Table:
        """One row per ACK reaching a traced sender (record.flow_trace)."""
        x = self.raw["flow_trace"]
        rw = x["rwnd"]
        return pa.table(
            {
                "time_s": _arr(x["time_ns"] / 1e9),
                "flow": _arr(x["flow"]),
                "class": self._class_col(x["flow"]),
                "conn": _arr(x["conn"]),
                "acked_bytes": _arr(x["acked_bytes"]),
                "snd_una": _arr(x["snd_una"]),
                "snd_nxt": _arr(x["snd_nxt"]),
                "cwnd_segments": _arr(x["cwnd"]),
                "in_flight_segments": _arr(x["in_flight"]),
                "unacked_segments": _arr(x["unacked"]),
                "rtt_ms": _ms(x["rtt_ns"]),
                "srtt_ms": _ms(x["srtt_ns"]),
                "rwnd_bytes": _arr(rw, mask=rw < 0),
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
            "time_s": cat(_arr(ls["time_ns"] / 1e9), _arr(fs["time_ns"] / 1e9)),
            "scope": _dict_col(np.r_[np.zeros(nl), np.ones(nf)].astype(np.int32), ["link", "flow"]),
            "link": cat(_dict_col(ls["link"], links), _null_dict(nf, links)),
            "flow": cat(nulls(nl, pa.uint32()), _arr(fs["flow"])),
            "class": cat(_null_dict(nl, self.class_names), self._class_col(fs["flow"])),
            "utilization": cat(_arr(measures.link_utilization(ls, interval_s)), nulls(nf, f64)),
            "throughput_mbps": cat(_arr(ls["tx_bytes"] * 8 / interval_s / 1e6), nulls(nf, f64)),
            "capacity_mbps": cat(_arr(ls["capacity_bps"] / 1e6), nulls(nf, f64)),
            "opportunities": cat(_arr(ls["opportunities"]), nulls(nf, u64)),
            "opportunities_used": cat(_arr(ls["opportunities_used"]), nulls(nf, u64)),
            "arrivals": cat(_arr(ls["arrivals"]), nulls(nf, u64)),
            "drops_overflow": cat(_arr(ls["drops_overflow"]), nulls(nf, u64)),
            "drops_random": cat(_arr(ls["drops_random"]), nulls(nf, u64)),
            "drops_deterministic": cat(_arr(ls["drops_deterministic"]), nulls(nf, u64)),
            "marks": cat(_arr(ls["marks"]), nulls(nf, u64)),
            "backlog_bytes": cat(_arr(ls["backlog_bytes"]), nulls(nf, u64)),
            "backlog_packets": cat(_arr(ls["backlog_packets"]), nulls(nf, u64)),
            "drop_prob": cat(_arr(ls["drop_prob"], mask=np.isnan(ls["drop_prob"])), nulls(nf, f64)),
            "aqm_delay_ms": cat(_ms(ls["aqm_delay_ns"]), nulls(nf, f64)),
            "cwnd_segments": cat(nulls(nl, f64), _arr(fs["cwnd"])),
            "ssthresh_segments": cat(nulls(nl, f64), _arr(fs["ssthresh"], mask=np.isnan(fs["ssthresh"]))),
            "srtt_ms": cat(nulls(nl, f64), _ms(fs["srtt_ns"])),
            "rtt_ms": cat(nulls(nl, f64), _ms(fs["rtt_ns"])),
            "rto_ms": cat(nulls(nl, f64), _arr(fs["rto_ns"] / 1e6)),
            "in_flight_segments": cat(nulls(nl, u64), _arr(fs["in_flight"])),
            "delivered_bytes": cat(nulls(nl, u64), _arr(fs["delivered_bytes"])),
            "goodput_mbps": cat(nulls(nl, f64), _arr(gp)),
            "retransmits": cat(nulls(nl, u64), _arr(fs["retransmits"])),
            "ca_state": cat(
                _null_dict(nl, codes("ca_state")),
                _dict_col(fs["ca_state"], codes("ca_state")),
            ),
            "rwnd_bytes": cat(nulls(nl, pa.int64()), _arr(fs["rwnd"], mask=fs["rwnd"] < 0)),
            "receiver_mode": cat(
                _null_dict(nl, codes("receiver_mode")),
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
        from .inputs import writable_dir

        out = writable_dir(check_out_dir(out_dir), "out")
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

        # pyarrow registers most of its compute kernels when pyarrow.compute is first
        # imported, into a registry that lookups do not lock; the Parquet writer looks
        # kernels up ("unique", "take") with the GIL released. Were the first import to
        # happen in another thread (the report's drawing, the CLI's prewarm) while the
        # writer runs, a lookup could miss: "No function registered with name: unique".
        # Importing it here, before the writer starts, closes that window (the import
        # waits for another thread's import of it to finish).
        import pyarrow.compute  # noqa: F401

        md = self.table_metadata()
        tables = [(name, getattr(self, name)) for name in TABLES]  # built here, before the writer thread reads them
        failure: list[BaseException] = []

        def write_tables() -> None:  # pyarrow releases the GIL: the tables are written while the report is drawn
            try:
                for name, table in tables:
                    write_parquet(table.replace_schema_metadata({**(table.schema.metadata or {}), **md}), d / f"{name}.parquet")
            except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
                failure.append(e)

        writer = threading.Thread(target=write_tables, name="aqmlab-write-tables")
        try:
            from . import report as _report

            if not report or not _report.run_report_forks():
                writer.start()  # no figure drawn by a forked process: nothing to wait for
            man = manifest or _manifest.make(started=self.__dict__.get("started"), wall_seconds=self.meta["wall_seconds"])
            self.__dict__["_manifest"] = man
            (d / "scenario.json").write_text(json.dumps(self.scenario, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            (d / _manifest.NAME).write_text(json.dumps(man, indent=2) + "\n")
            if report:
                _report.write_report(self, d, progress, on_started=None if writer.ident is not None else writer.start)
            if writer.ident is None:  # a report without figures to draw never started it
                writer.start()
        finally:
            if writer.ident is not None:
                writer.join()
        if failure:
            raise failure[0]
        for name, data in (self.raw.get("files") or {}).items():  # record.pcap's captures
            if not CAPTURE.fullmatch(name):
                raise ValueError(f"a run's file cannot be named {name!r}")
            (d / name).write_bytes(data)
        (d / conservation.FILE).write_text("\n".join(self.conservation) + "\n")
        (d / "summary.json").write_text(json.dumps(self.summary, indent=2) + "\n")  # last: a folder with a summary is whole


def write_parquet(table: pa.Table, path: Path) -> None:
    """One table as Parquet: zstd at its fastest level, dictionary encoding for the
    columns that are dictionaries already (codes, names) and none for the rest (the
    writer would try it on every column and give it up on most: a quarter of the
    time for the packets table, which also comes out smaller)."""
    dicts = [f.name for f in table.schema if pa.types.is_dictionary(f.type)]
    pq.write_table(table, path, compression="zstd", compression_level=1, use_dictionary=dicts or False)


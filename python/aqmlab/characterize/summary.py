"""summary.json: every section's figures for every AQM (docs/characterize.md).

``sections[KEY]`` holds the section's ``title``, what the RFC asks (``rfc``), what
aqmlab runs (``aqmlab``), the figures' meanings (``metrics``), its ``dimensions`` and
``levels`` when it has several cases, ``notes`` per AQM (cases not run and why), and
``aqms``: per AQM label, the figures as ``{"mean", "sd", "n"}`` over the seeds, per
level when the section has levels (``aqms[AQM][LEVEL][FIGURE]``), else directly
(``aqms[AQM][FIGURE]``)."""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Optional, Sequence

import numpy as np

from .. import _core, measures
from . import analysis as A
from .sections import Length, Section, ect1_note, sensitivity_param
from .variants import Variant, aqm_catalog

FORMAT_VERSION = 1


def level_of(run: Any, dims: Sequence[str]) -> str:
    vals = [(d, run.params.get(d)) for d in dims]
    vals = [(d, v) for d, v in vals if v is not None and str(v) != "–"]
    if len(vals) == 1:
        return str(vals[0][1])
    return ", ".join(f"{d}={v}" for d, v in vals)


def _by_aqm_level(runs: Sequence[Any], dims: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
    out: dict[str, dict[str, list[Any]]] = {}
    for r in runs:
        out.setdefault(str(r.params["aqm"]), {}).setdefault(level_of(r, dims) if dims else "", []).append(r)
    return out


def _measured(section: str, run: Any) -> dict[str, Any]:
    """A run's figures; its tables are dropped after (835 runs' packets would not fit)."""
    try:
        return A.per_run(section, run)
    finally:
        run._frames.clear()


def build(sections: Sequence[Section], variants: Sequence[Variant], runs: Sequence[Any], built: Any, length: Length,
          progress: Optional[Callable[[int, int, str], None]] = None) -> dict[str, Any]:
    by_section: dict[str, list[Any]] = {}
    for r in runs:
        by_section.setdefault(str(r.params["section"]), []).append(r)
    out_sections: dict[str, Any] = {}
    n = len(sections)
    for i, sec in enumerate(sections):
        if progress:
            progress(i, n, f"§{sec.key}")
        entry: dict[str, Any] = {"title": sec.title, "rfc": sec.asks, "aqmlab": sec.does}
        doc = dict(A.SECTION_DOC.get(sec.key, {}))
        if sec.cases is not None:
            doc = {**A.COMMON_DOC, **doc}
        entry["metrics"] = doc
        if sec.cases is not None:
            dims = built.dims.get(sec.key, [])
            entry["dimensions"] = dims
            groups = _by_aqm_level(by_section.get(sec.key, []), dims)
            levels = list(dict.fromkeys(lv for g in groups.values() for lv in g))
            if dims:
                entry["levels"] = levels
            aqms: dict[str, Any] = {}
            for v in variants:
                g = groups.get(v.label, {})
                per_level = {lv: A.aggregate([_measured(sec.key, r) for r in rs]) for lv, rs in g.items()}
                aqms[v.label] = per_level if dims else per_level.get("", {})
            entry["aqms"] = aqms
            notes = {lab: list(x) for lab, x in (built.skipped.get(sec.key) or {}).items()}
            entry["notes"] = notes
        out_sections[sec.key] = entry
    _derived(out_sections, variants, by_section)
    if progress:
        progress(n, n, "")
    return {
        "format_version": FORMAT_VERSION,
        "aqmlab_version": _core.__version__,
        "rfc": "RFC 7928: Kuhn, Natarajan, Khademi & Ros, Characterization Guidelines for Active Queue Management (AQM)",
        "quick": length.quick,
        "seeds": length.seeds,
        "duration_s": length.duration,
        "aqms": [{"label": v.label, "kind": v.kind, "params": v.params} for v in variants],
        "sections": out_sections,
    }


def _ellipse(p: Any) -> Optional[dict[str, Any]]:
    """§2.7: the 1-σ ellipse `aqmlab.plots.goodput_delay` draws (`plots.ellipse`), as
    its centre, semi-axes (along the angle's axis, then across) and angle in degrees."""
    from ..plots import ellipse

    if p is None or len(p) < 3:
        return None
    mu, w, h, angle = ellipse(p)
    return {"center": [float(mu[0]), float(mu[1])], "semi_axes": [w / 2, h / 2], "angle_deg": float(angle)}


def _points(run: Any) -> Any:
    try:
        return measures.goodput_delay_points(run)
    finally:
        run._frames.clear()


def _derived(S: dict[str, Any], variants: Sequence[Variant], by_section: dict[str, list[Any]]) -> None:
    """The sections that read other sections' runs, and the per-AQM notes."""
    if "2.7" in S:
        aqms = {}
        for v in variants:
            pts = [p for p in (_points(r) for r in by_section.get("2", []) if str(r.params["aqm"]) == v.label) if p is not None and len(p)]
            p = np.concatenate(pts) if pts else None
            aqms[v.label] = None if p is None else {"delay_ms": float(p[:, 0].mean()), "goodput_mbps": float(p[:, 1].mean()), "points": int(len(p)), "ellipse": _ellipse(p)}
        S["2.7"]["aqms"] = aqms
    if "4.3" in S and "2" in S:
        keep = ("goodput_mbps", "delay_p50_ms", "delay_p95_ms", "delay_p99_ms", "jitter_ms", "loss_rate", "utilization", "fct_p50_s", "startup_p50_s", "loss_sync")
        S["4.3"]["aqms"] = {lab: {k: m.get(k) for k in keep} for lab, m in S["2"]["aqms"].items()}
        S["4.3"]["metrics"] = {k: ({**A.COMMON_DOC, **A.SECTION_DOC["2"]})[k] for k in keep}
    if "4.5" in S:
        for v in variants:
            m = S["4.5"]["aqms"].get(v.label) or {}
            marks = ((m.get("ecn") or {}).get("marks") or {}).get("mean")
            drops = ((m.get("drop") or {}).get("drops") or {}).get("mean")
            m["mark_drop_ratio"] = marks / drops if marks is not None and drops else None
            why = ect1_note(v)
            if why:
                S["4.5"]["notes"].setdefault(v.label, []).append(why)
            if v.marks_ecn_always:
                S["4.5"]["notes"].setdefault(v.label, []).append(f"{v.kind} has no ecn switch and marks ECN-capable packets always: its drop and ecn cases differ only in the senders' ECN")
            elif not v.has_ecn:
                S["4.5"]["notes"].setdefault(v.label, []).append(f"{v.kind} has no ecn parameter: it drops ECN-capable packets as any other")
    if "4.6" in S:
        for v in variants:
            fq = v.fq_form()
            S["4.6"]["notes"].setdefault(v.label, []).append(
                f"FQ form: {fq['kind']}" + (" (the AQM is its own FQ form)" if fq["kind"] == v.kind else "") if fq else f"{v.kind} has no FQ form: only the single queue ran")
    if "8.3" in S:
        for v in variants:
            name, value = sensitivity_param(v)
            m = S["8.3"]["aqms"].get(v.label)
            if m is not None:
                m["parameter"] = {"name": name, "value": value}
    if "12" in S:
        cat = aqm_catalog()
        aqms = {}
        for v in variants:
            params = [{"name": p["name"], "default": p["default"], "value": v.params.get(p["name"], p["default"]), "doc": p.get("doc", "")} for p in cat[v.kind]["params"]]
            entry: dict[str, Any] = {"parameters": params, "main": sensitivity_param(v)[0]}
            sens = (S.get("8.3") or {}).get("aqms", {}).get(v.label) or {}
            scales, rows = [], []
            for lv, m in sens.items():
                mm = re.fullmatch(r"x([0-9.]+)", lv)
                if mm and isinstance(m, dict):
                    scales.append(float(mm.group(1)))
                    rows.append(m)
            if scales:
                entry["elasticity"] = {f: A.elasticity(scales, [((r.get(f) or {}).get("mean")) for r in rows]) for f in ("delay_p95_ms", "goodput_mbps", "loss_rate")}
            aqms[v.label] = entry
        S["12"]["aqms"] = aqms


def cost(variants: Sequence[Variant], quick: bool, progress: Optional[Callable[[int, int, str], None]] = None) -> dict[str, Any]:
    """§11: the CPU time of one fixed run per bottleneck packet, per AQM and DropTail:
    the least over 5 rounds (quick: 3), each round running every AQM once in turn, so
    that a change of the machine's speed touches them all alike. The CPU time of the
    thread that runs the simulation (`time.thread_time`), not the wall time `aqmlab
    bench` reports, which moves with the other processes' load."""
    import time

    rounds = 3 if quick else 5
    kinds = [("droptail", {"kind": "droptail"})] + [(v.label, v.spec) for v in variants if v.label != "droptail"]
    base = {
        "name": "rfc7928-§11", "duration": "30s" if quick else "60s",
        "bottleneck": {"rate": "10Mbps", "delay": "48ms", "buffer": "1bdp"},
        "access": {"rate": "100Mbps", "delay": "1ms"},
        "flows": [{"name": "tcp", "kind": "bulk", "count": 16, "start": {"uniform": ["0s", "1s"]}}],
        "record": {"packets": False, "datagrams": False, "flow_series": False},
    }
    texts = {}
    for label, spec in kinds:
        sc = json.loads(json.dumps(base))
        sc["bottleneck"]["aqm"] = spec
        texts[label] = json.dumps(sc)
    best: dict[str, float] = {label: float("inf") for label, _ in kinds}
    meta: dict[str, Any] = {}
    for i in range(rounds):
        for label, _ in kinds:
            if progress:
                progress(i, rounds, label)
            t0 = time.thread_time()
            raw = _core.run(texts[label], "json", [], 1, None)
            cpu = time.thread_time() - t0
            best[label] = min(best[label], cpu)
            meta.setdefault(label, json.loads(raw["meta"]))
            del raw
    rows: dict[str, Any] = {}
    for label, _ in kinds:
        pk = meta[label]["links"][0]["stats"]["dequeued"]
        rows[label] = {"cpu_s": best[label], "packets": int(pk), "events": int(meta[label]["events"]), "ns_per_packet": best[label] / pk * 1e9 if pk else None}
    ref = rows["droptail"]["ns_per_packet"]
    for label, r in rows.items():
        r["ns_per_packet_over_droptail"] = r["ns_per_packet"] - ref if r["ns_per_packet"] is not None and ref is not None else None
    if progress:
        progress(rounds, rounds, "")
    return {v.label: rows[v.label] for v in variants}

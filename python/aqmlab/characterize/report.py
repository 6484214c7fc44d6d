"""report.html: one part per RFC 7928 section (what the RFC asks, what aqmlab ran, the
figures' table per AQM, the section's figures from `aqmlab.plots`), after a table
comparing the AQMs on each section's main figure."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from .. import report as R
from ..plots import Options
from .sections import Section
from .variants import Variant

# each section's main figures, in the comparison table (section, figure, column title, digits)
HEADLINE = [
    ("2", "delay_p95_ms", "§2 delay p95 (ms)", 1),
    ("2", "goodput_mbps", "§2 goodput (Mb/s)", 2),
    ("2", "fct_p50_s", "§2.1 FCT p50 (s)", 3),
    ("2", "loss_sync", "§2.4 loss sync", 2),
    ("2", "jitter_ms", "§2.6 jitter (ms)", 2),
    ("4.4", "small_large_ratio", "§4.4 small/large", 2),
    ("4.6", "sparse_owd_p99_ms", "§4.6 sparse p99 (ms)", 1),
    ("5.2", "aggressive_share", "§5.2 aggressive share", 2),
    ("5.3", "tcp_goodput_mbps", "§5.3 TCP goodput (Mb/s)", 2),
    ("5.4", "lbe_share", "§5.4 lbe_share", 2),
    ("7", "iw10_fct_p95_s", "§7 IW10 FCT p95 (s)", 3),
    ("9.1", "voip_owd_p99_ms", "§9.1 VoIP p99 (ms)", 1),
    ("10", "jain", "§10 Jain", 3),
]
COMMON_COLS = ("goodput_mbps", "delay_p50_ms", "delay_p95_ms", "loss_rate", "mark_rate")


def _mean(x: Any) -> Any:
    return x.get("mean") if isinstance(x, dict) and "mean" in x else x


def _first_level(m: dict[str, Any], prefer: Sequence[str] = ()) -> dict[str, Any]:
    """A section's figures for one AQM: the flat dict, or its first (preferred) level."""
    if not m or any(isinstance(v, dict) and "mean" in v for v in m.values()):
        return m or {}
    for p in prefer:
        if p in m:
            return m[p]
    return next((v for v in m.values() if isinstance(v, dict)), {})


def headline_rows(summ: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    S = summ["sections"]
    cols = [(k, f, t, d) for k, f, t, d in HEADLINE if k in S]
    head = ["AQM"] + [t for _, _, t, _ in cols]
    rows = []
    for a in summ["aqms"]:
        row: list[Any] = [a["label"]]
        for k, f, _, d in cols:
            m = _first_level((S[k].get("aqms") or {}).get(a["label"]) or {}, ("single queue", "FQ"))
            v = _mean(m.get(f))
            row.append("–" if v is None else f"{v:.{d}f}")
        rows.append(row)
    return head, rows


def console_table(console: Any, summ: dict[str, Any]) -> None:
    """The comparison table, one row per figure and a column per AQM (narrow terminals)."""
    from rich.table import Table

    head, rows = headline_rows(summ)
    t = Table(title="RFC 7928: each section's main figure (means over seeds)", title_justify="left")
    t.add_column("figure")
    for r in rows:
        t.add_column(str(r[0]), justify="right")
    for j, h in enumerate(head[1:], start=1):
        t.add_row(h, *[str(r[j]) for r in rows])
    console.print(t)


def _cell(x: Any, digits: int = 3) -> str:
    if isinstance(x, dict) and "mean" in x:
        v, sd = x.get("mean"), x.get("sd")
        if v is None:
            return "–"
        d = digits if abs(v) < 10 else 1
        return f"{v:.{d}f}" + (f" ± {sd:.{d}f}" if sd is not None and not math.isnan(sd) else "")
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def section_table(sec: Section, entry: dict[str, Any], variants: Sequence[Variant]) -> str:
    aqms = entry.get("aqms") or {}
    if sec.key == "2.7":
        rows = [[lab, _cell(m.get("delay_ms")), _cell(m.get("goodput_mbps")), m.get("points"),
                 "–" if not m.get("ellipse") else "center ({:.1f}, {:.2f}), axes ({:.2f}, {:.2f}), {:.0f}°".format(*m["ellipse"]["center"], *m["ellipse"]["semi_axes"], m["ellipse"]["angle_deg"])]
                for lab, m in aqms.items() if m]
        return R._table(["AQM", "delay (ms)", "goodput (Mb/s)", "points", "1-σ ellipse"], rows)
    if sec.key == "11":
        rows = [[lab, _cell(m.get("ns_per_packet"), 0), _cell(m.get("ns_per_packet_over_droptail"), 0), _cell(m.get("cpu_s"), 3), m.get("packets")] for lab, m in aqms.items()]
        return R._table(["AQM", "ns per packet", "over DropTail (ns)", "CPU (s)", "packets"], rows)
    if sec.key == "12":
        parts = []
        for lab, m in aqms.items():
            el = m.get("elasticity") or {}
            parts.append(f"<h4>{R.esc(lab)}</h4><p>main parameter: <code>{R.esc(m.get('main'))}</code>; elasticity over §8.3 "
                         + ", ".join(f"{R.esc(k)} {_cell(v, 2)}" for k, v in el.items()) + "</p>")
            parts.append(R._table(["parameter", "default", "value", "meaning"], [[p["name"], str(p["default"]), str(p["value"]), p["doc"]] for p in m.get("parameters", [])]))
        return "".join(parts)
    specific = [k for k in entry.get("metrics", {}) if k not in COMMON_COLS and not k.startswith("delay_p99") and k not in ("delay_mean_ms", "jitter_ms", "utilization", "parameter", "fq_form", "mark_drop_ratio")]
    cols = specific + [c for c in COMMON_COLS if c in entry.get("metrics", {})]
    rows = []
    for lab, m in aqms.items():
        if not m:
            continue
        levels = m if entry.get("levels") else {"": m}
        for lv, mm in levels.items():
            if not isinstance(mm, dict) or lv in ("parameter", "mark_drop_ratio"):
                continue
            if not any(isinstance(v, dict) and "mean" in v for v in mm.values()):
                continue
            rows.append([lab] + ([lv] if entry.get("levels") else []) + [_cell(mm.get(c)) for c in cols])
    head = ["AQM"] + (["case"] if entry.get("levels") else []) + cols
    # leave out the figures no run has (e.g. §4.5's ECT(1) ones where no case ran)
    fixed = len(head) - len(cols)
    keep = [j for j in range(len(head)) if j < fixed or any(r[j] != "–" for r in rows)]
    head = [head[j] for j in keep]
    rows = [[r[j] for j in keep] for r in rows]
    extra = ""
    if sec.key == "4.5":
        notes = entry.get("notes") or {}

        def ect1(lab: str, m: dict[str, Any]) -> str:
            if isinstance(m.get("ect1"), dict):
                return "ran (case ect1)"
            why = [n for n in notes.get(lab, []) if n.startswith("signal ect1")]
            return why[0].split(": ", 1)[1] if why else "–"

        extra = R._table(["AQM", "marks with ECN / drops without", "ECT(1)"], [[lab, _cell(m.get("mark_drop_ratio"), 2), ect1(lab, m)] for lab, m in aqms.items()])
    if sec.key == "8.3":
        extra = R._table(["AQM", "parameter", "value at x1"], [[lab, (m.get("parameter") or {}).get("name", "–"), str((m.get("parameter") or {}).get("value", "–"))] for lab, m in aqms.items()])
    return R._table(head, rows) + extra


def _custom_figures(summ: dict[str, Any]) -> list[tuple[str, str, bytes]]:
    """The RFC's line plots that the catalogue has no kind for: §6's goodput ratio
    against RTT2 and §8.3's figures against the parameter's scale."""
    from .. import plots

    out = []
    S = summ["sections"]

    def lines(key: str, parse: Callable[[str], float], figs: Sequence[tuple[str, str]], xlabel: str, logx: bool, title: str) -> Optional[bytes]:
        aqms = (S.get(key) or {}).get("aqms") or {}
        if not aqms:
            return None
        fig = plots.figure_class()(figsize=(4.6 * len(figs), 3.4), layout="constrained")
        axes = fig.subplots(1, len(figs), squeeze=False)[0]
        colors = plots.palette(len(aqms))
        for ax, (f, ylabel) in zip(axes, figs):
            seen: set[float] = set()
            for (lab, m), c in zip(aqms.items(), colors):
                pts = sorted((parse(lv), (mm.get(f) or {}).get("mean"), (mm.get(f) or {}).get("sd")) for lv, mm in m.items() if isinstance(mm, dict) and isinstance(mm.get(f), dict))
                pts = [p for p in pts if p[1] is not None]
                if not pts:
                    continue
                xs, ys, sds = zip(*pts)
                seen.update(xs)
                ax.errorbar(xs, ys, yerr=[s or 0 for s in sds], marker="o", color=c, label=lab, capsize=3)
            if logx:
                ax.set_xscale("log")
                ax.minorticks_off()
                ax.set_xticks(sorted(seen), [f"{x:g}" for x in sorted(seen)])
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.suptitle(title, fontsize=10)
        return plots.png_bytes(fig)

    png = lines("6", lambda lv: float(lv.rstrip("ms")), [("goodput_ratio", "goodput RTT2 / RTT 100 ms"), ("jain", "Jain's index")], "RTT2 (ms)", True,
                "§6: the second flow's goodput against its RTT (mean ± sd over seeds)")
    if png:
        out.append(("s6-goodput-ratio", "RFC 7928 §6: goodput ratio and Jain's index of the two flows against the second flow's RTT.", png))
    png = lines("8.3", lambda lv: float(lv.lstrip("x")), [("delay_p95_ms", "queueing delay p95 (ms)"), ("goodput_mbps", "goodput (Mb/s)"), ("loss_rate", "loss rate")],
                "main parameter, x its value", True, "§8.3: sensitivity to the main parameter (16 flows)")
    if png:
        out.append(("s8.3-sensitivity", "RFC 7928 §8.3: queueing delay, goodput and loss against the AQM's main parameter (DropTail: the buffer), scaled.", png))
    return out


def write(out: Path, summ: dict[str, Any], sections: Sequence[Section], variants: Sequence[Variant], runs: Sequence[Any],
          progress: Optional[Callable[[int, int, str], None]] = None, parallel: bool = True) -> Path:
    from .. import comparison, plots

    # one set of series over all sections: every run gets every dimension ("–" where
    # its section has none) so that runs group by (section, AQM, case)
    dims = list(dict.fromkeys(k for r in runs for k in r.params))
    for r in runs:  # one key order for all (group() compares the keys as tuples)
        r.params = {d: r.params.get(d, "–") for d in dims}
    label = lambda vals: ", ".join(str(v) for k, v in vals.items() if k != "section" and str(v) not in ("–", "None"))  # noqa: E731
    series = comparison.group(list(runs), label) if runs else []
    by_sec: dict[str, list[Any]] = {}
    for s in series:
        by_sec.setdefault(str(s.runs[0].params["section"]), []).append(s)
    for ss in by_sec.values():  # colours per section, in the AQMs' order
        order = {v.label: i for i, v in enumerate(variants)}
        ss.sort(key=lambda s: (order.get(str(s.runs[0].params["aqm"]), 99), s.label()))
        for s, c in zip(ss, plots.palette(len(ss))):
            s.color = c
    # a few sections at a time (6 figures or more: two processes draw them), each
    # section's runs' tables dropped once no later section reads them, so that the
    # full run's tables do not all sit in memory at once
    last_use = {}
    for i, sec in enumerate(sections):
        last_use[sec.uses or sec.key] = i
    total = sum(len(sec.figures) for sec in sections)
    pngs: dict[str, tuple[str, bytes]] = {}
    chunk: list[tuple[str, str, Options]] = []
    sources: list[str] = []
    for i, sec in enumerate(sections):
        src = sec.uses or sec.key
        if by_sec.get(src):
            chunk += [(name, kind, Options(facet=kw.get("facet"), where={"section": src, **kw.get("where", {})}, title=f"§{sec.key}: {sec.title}"))
                      for name, kind, kw in sec.figures]
            sources.append(src)
        if chunk and (len(chunk) >= 6 or i == len(sections) - 1):
            ss = [s for k in dict.fromkeys(sources) for s in by_sec.get(k, [])]
            done = len(pngs)
            step = (lambda d, n, what, done=done: progress(done + d, total, what)) if progress else None
            for (name, kind, _), png in zip(chunk, comparison.render(ss, chunk, progress=step, parallel=parallel)):
                if png is not None:
                    pngs[name] = (plots.KINDS[kind].caption, png)
            chunk, sources = [], []
            for key, j in last_use.items():
                if j <= i:
                    for s in by_sec.get(key, []):
                        s.__dict__.pop("_memo", None)
                        for r in s.runs:
                            r._frames.clear()
    for name, cap, png in _custom_figures(summ):
        pngs[name] = (cap, png)
    (out / "figures").mkdir(exist_ok=True)
    for name, (_, png) in pngs.items():
        (out / "figures" / f"{name}.png").write_bytes(png)

    S = summ["sections"]
    title = "RFC 7928 characterization: " + ", ".join(v.label for v in variants)
    runs_info = summ.get("runs", {})
    body = [f"<h1>{R.esc(title)}</h1>",
            f"<p class='meta'>{R.esc(summ['rfc'])}. {'Quick run (a first look; the full run is the one to cite): ' if summ['quick'] else ''}"
            f"{len(summ['seeds'])} seed(s), runs of {summ['duration_s']:g} s; {runs_info.get('planned', len(runs))} runs, {runs_info.get('failed', 0)} failed; aqmlab {R.esc(summ['aqmlab_version'])}.</p>",
            "<p>" + " · ".join(f"<a href='#s{R.esc(k)}'>§{R.esc(k)}</a>" for k in S) + "</p>",
            "<h2>The AQMs side by side</h2>"]
    head, rows = headline_rows(summ)  # one row per figure, a column per AQM
    body.append(R._table(["figure"] + [str(r[0]) for r in rows], [[h] + [r[j] for r in rows] for j, h in enumerate(head[1:], start=1)]))
    custom = {"6": ["s6-goodput-ratio"], "8.3": ["s8.3-sensitivity"]}
    for sec in sections:
        e = S[sec.key]
        body.append(f"<section id='s{R.esc(sec.key)}'><h2>§{R.esc(sec.key)} {R.esc(sec.title)}</h2>")
        body.append(f"<p><b>RFC 7928 asks:</b> {R.esc(sec.asks)}</p><p><b>aqmlab:</b> {R.esc(sec.does)}</p>")
        body.append(section_table(sec, e, variants))
        notes = [f"{lab}: {n}" for lab, ns in (e.get("notes") or {}).items() for n in ns]
        if notes:
            body.append("<div class='note'><ul>" + "".join(f"<li>{R.esc(n)}</li>" for n in notes) + "</ul></div>")
        for name in [n for n, _, _ in sec.figures] + custom.get(sec.key, []):
            if name in pngs:
                body.append(R._figure_html(name, pngs[name][0], pngs[name][1]))
        doc = e.get("metrics") or {}
        if doc:
            body.append("<details><summary>figures in summary.json</summary>" + R._table(["name", "meaning"], [[k, v] for k, v in doc.items()]) + "</details>")
        body.append("</section>")
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{R.esc(title)} — aqmlab</title><style>{R.CSS}</style></head><body>{''.join(body)}</body></html>")
    path = out / "report.html"
    tmp = path.with_name(f".report.html.tmp-{os.getpid()}")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
    return path

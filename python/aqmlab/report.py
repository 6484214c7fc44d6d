"""report.html: one page for one run, a sweep or any comparison of runs.

The run report is the comparison of one run (`aqmlab.comparison.compare`), with the
run's detailed tables added. Figures are SVG drawn into the page (`aqmlab.svg`; a
kind without an SVG drawing is a PNG data URI), so the file stands alone and needs
no script or network; they scale with the page, and tables scroll sideways on a
narrow screen instead of overflowing it.
"""

from __future__ import annotations

import base64
import html
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence, Union

from . import measures

if TYPE_CHECKING:
    from .comparison import Series


def esc(v: Any) -> str:
    return html.escape(str(v))


def cell(v: Any, sd: Any = None, digits: int = 2) -> str:
    """A number as a table cell: fixed digits, ± the standard deviation when given."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    txt = f"{v:.{digits}f}"
    if isinstance(sd, float) and not math.isnan(sd):
        txt += f" ± {sd:.{digits}f}"
    return txt


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]], digits: int = 2) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{esc(c) if isinstance(c, str) else cell(c, digits=digits)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"


def headline_html(df) -> str:
    digits = {n: d for n, _, d in measures.HEADLINE}
    cols = [c for c in df.columns if not c.endswith(" sd")]
    rows = []
    for _, row in df.iterrows():
        rows.append("<tr>" + "".join(f"<td>{esc(cell(row[c], row.get(c + ' sd'), digits.get(c, 2)))}</td>" for c in cols) + "</tr>")
    head = "".join(f"<th>{esc(c)}</th>" for c in cols)
    return f"<div class='scroll'><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"


def run_tables(s: dict[str, Any]) -> str:
    """The detailed tables of one run's summary.json."""
    b = measures.headline(s)
    q, u, p, d = b.get("queue_delay_ms") or {}, b.get("utilization") or {}, b["packets"], b["drops"]
    buf = f"{b['buffer_packets']} packets" if b.get("buffer_packets") else f"{b.get('buffer_bytes')} B"
    parts = ["<h2>Bottleneck</h2>" if "bottleneck" in s else f"<h2>Link {esc(s['primary_link'])}</h2>"]
    parts.append(_table(["AQM", "rate (Mbps)", "one-way delay (ms)", "buffer", "drop rate"], [[b["aqm"], b["rate_mbps"], b["delay_ms"], buf, b["drop_rate"]]], 3))
    keys = ["p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "max", "mean"]
    parts.append(_table(["queueing delay (ms)"] + keys, [["per packet"] + [q.get(k) for k in keys]]))
    if b.get("queue_delay_note"):
        parts.append(f"<p class='meta'>{esc(b['queue_delay_note'])}</p>")
    ukeys = ["mean", "p5", "p25", "p50", "p75", "p95"]
    parts.append(_table(["utilization"] + ukeys, [["per interval"] + [u.get(k) for k in ukeys]], 3))
    parts.append(_table(["packets", "arrived", "enqueued", "dequeued", "dropped", "marked", "overflow", "random", "deterministic"],
                        [["count", p["arrived"], p["enqueued"], p["dequeued"], p["dropped"], p["marked"], d["overflow"], d["random"], d["deterministic"]]]))
    parts.append(links_table(s))
    parts.append("<h2>Traffic classes</h2>")
    rows = []
    for name, c in s["classes"].items():
        qd = c.get("queue_delay_ms") or next(iter((c.get("queue_delay_ms_by_link") or {}).values()), {})
        rows.append([name, c["kind"], c["flows"], c.get("cc") or "–", c["goodput_mbps"], c["goodput_mbps_per_flow"]["mean"], c["jain_index"], c["loss_rate"],
                     c["retransmits"], c["timeouts"], f"{cell(qd.get('p50'), digits=1)} / {cell(qd.get('p95'), digits=1)}"])
    parts.append(_table(["class", "kind", "flows", "cc", "goodput (Mbps)", "per flow (Mbps)", "Jain", "loss rate", "retransmits", "timeouts", "queue p50 / p95 (ms)"], rows, 3))
    cbr = {n: c for n, c in s["classes"].items() if c["kind"] in measures.kinds_of("datagrams")}
    if cbr:
        ks = ["p5", "p25", "p50", "p75", "p95", "p99", "max", "mean"]
        rows = [[n, c.get("rate_kbps"), None if c["goodput_mbps_per_flow"]["mean"] is None else c["goodput_mbps_per_flow"]["mean"] * 1e3, c["loss_rate"]]
                + [c["one_way_delay_ms"].get(k) for k in ks] for n, c in cbr.items()]
        parts.append("<h3>UDP sources: one-way delay (ms) and goodput</h3>" + _table(["class", "mean rate (kbps)", "goodput per flow (kbps)", "loss rate"] + ks, rows))
    dl = {n: c for n, c in s["classes"].items() if "download_time_s" in c}
    if dl:
        ks = ["p5", "p25", "p50", "p75", "p95", "mean"]
        rows = []
        for n, c in dl.items():
            dt = c["download_time_s"]
            for label, blk in [("all", dt["all"])] + list(dt["by_size"].items()):
                rows.append([n, label, blk["completed"], blk["unfinished"]] + [blk.get(k) for k in ks])
        parts.append("<h3>Download times (s)</h3>" + _table(["class", "size", "completed", "unfinished"] + ks, rows, 3))
    ks = ["p10", "p25", "p50", "p75", "p90", "mean"]
    rows = []
    for n, c in s["classes"].items():
        g = c["goodput_per_interval_mbps"]
        rows.append([n, g["interval_s"], "per flow"] + [g["per_flow"].get(k) for k in ks])
        rows.append([n, g["interval_s"], "class"] + [g["class"].get(k) for k in ks])
    parts.append("<h3>Goodput per interval (Mbps)</h3>" + _table(["class", "interval (s)", "of"] + ks, rows, 3))
    return "\n".join(parts)


def links_table(s: dict[str, Any]) -> str:
    """Every link's figures (summary.json's `links`): one row per link side that
    carried packets."""
    rows = []
    for name, b in (s.get("links") or {}).items():
        p = b["packets"]
        if not p["arrived"]:
            continue
        q = b.get("queue_delay_ms") or {}
        u = (b.get("utilization") or {}).get("mean")
        rows.append([name, b["aqm"], b["rate_mbps"], b["delay_ms"], u, q.get("p50"), q.get("p99"), p["arrived"], p["dropped"], p["marked"], b["drop_rate"]])
    if not rows:
        return ""
    head = ["link", "AQM", "rate (Mbps)", "delay (ms)", "utilization", "queue p50 (ms)", "queue p99 (ms)", "arrived", "dropped", "marked", "drop rate"]
    per_class = ""
    by = {n: c["queue_delay_ms_by_link"] for n, c in s["classes"].items() if c.get("queue_delay_ms_by_link")}
    if by:
        crow = [[n, link, d.get("p50"), d.get("p95"), d.get("p99")] for n, links in by.items() for link, d in links.items()]
        per_class = "<h3>Queueing delay by class and link (ms)</h3>" + _table(["class", "link", "p50", "p95", "p99"], crow)
    return "<h2>Links</h2>" + _table(head, rows, 3) + per_class


def manifest_html(man: Optional[dict[str, Any]]) -> str:
    if not man:
        return ""
    rows = [
        ("command", " ".join(man.get("command") or [])),
        ("aqmlab", f"{man.get('aqmlab_version')} (commit {man.get('commit') or 'unknown'}{', modified' if man.get('dirty') else ''})"),
        ("started", man.get("started")),
        ("wall time", f"{man['wall_seconds']:.2f} s" if isinstance(man.get("wall_seconds"), (int, float)) else "–"),
        ("host", f"{man.get('host')} · {man.get('os')} · Python {man.get('python')} · {man.get('rustc') or 'rustc unknown'}"),
    ]
    body = "".join(f"<tr><th>{esc(k)}</th><td class='left'>{esc(v)}</td></tr>" for k, v in rows)
    return f"<details><summary>How this was made (manifest.json)</summary><div class='scroll'><table>{body}</table></div></details>"


def scenario_html(scenario: dict[str, Any]) -> str:
    from .scenario import to_toml

    return ("<details><summary>Scenario, every default filled in (TOML; <code>aqmlab run</code> runs it)</summary>"
            f"<pre>{esc(to_toml(scenario))}</pre></details>")


CSS = """
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 0 auto; padding: 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.6em 0; }
table { border-collapse: collapse; font-size: 0.85em; }
td, th { border: 1px solid #ccc; padding: 3px 7px; text-align: right; white-space: nowrap; }
th { background: #f3f3f3; }
td:first-child, th:first-child, td.left { text-align: left; }
td.left { white-space: normal; }
figure { margin: 1.5em 0; }
figure img, figure svg { display: block; max-width: 100%; height: auto; }
figure svg text { font-variant-numeric: tabular-nums; }
figcaption { font-size: 0.85em; color: #555; overflow-wrap: anywhere; }
.meta { color: #555; font-size: 0.9em; } .note { background: #fff8e0; padding: 0.5em 0.8em; }
.agrees { color: #1a7f37; } .differs { color: #b42318; } .close { color: #9a6700; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
details { margin: 1em 0; }
"""


def _figure_html(name: str, caption: str, fig: Union[str, bytes]) -> str:
    """A figure of the page: an inline `<svg>` element (str), or PNG bytes embedded as
    a data URI."""
    if isinstance(fig, str):
        body = fig.replace("<svg ", f"<svg aria-label='{esc(name)}' ", 1)
    else:
        from struct import unpack

        w, h = unpack(">II", fig[16:24])  # the PNG's IHDR: width and height, so the page does not reflow
        data = base64.b64encode(fig).decode("ascii")
        body = f"<img src='data:image/png;base64,{data}' width='{w}' height='{h}' alt='{esc(name)}'>"
    return f"<figure id='fig-{esc(name)}'>{body}<figcaption><b>{esc(name)}</b>: {esc(caption)}</figcaption></figure>"


def page(title: str, series: Sequence["Series"], table: Any, figures: Sequence[tuple[str, str, Union[str, bytes]]], *, intro_html: str = "",
         base: Optional[Path] = None) -> str:
    """The report page: title, headline table, (one run: its tables), figures, series."""
    from .plots import seeds_note

    runs = [r for s in series for r in s.runs]
    one = len(runs) == 1
    body = [f"<h1>{esc(title)}</h1>", intro_html]
    if one:
        r = runs[0]
        s = r.summary
        if r.scenario.get("description"):
            body.append(f"<p>{esc(r.scenario['description'])}</p>")
        body.append(f"<p class='meta'>seed {s['seed']} · {s['sim_seconds']:.0f} s simulated in {s['wall_seconds']:.3f} s ({s['events']:,} events) · aqmlab {esc(s['aqmlab_version'])}</p>")
    else:
        body.append(f"<p class='meta'>{len(runs)} runs in {len(series)} series · {seeds_note(series)} · values are means over seeds ± standard deviation</p>")
    body += ["<h2>Headline figures</h2>", headline_html(table)]
    if one:
        body.append(run_tables(runs[0].summary))
    body.append("<h2>Figures</h2>")
    body += [_figure_html(n, c, png) for n, c, png in figures]
    if one:
        body.append(manifest_html(runs[0].manifest))
        body.append(scenario_html(runs[0].scenario))
    else:
        rows = []
        for s in series:
            folders = ", ".join(os.path.relpath(r.path, base) if base is not None and r.path is not None else r.name for r in sorted(s.runs, key=lambda r: r.seed)[:6])
            rows.append([s.label(), ", ".join(map(str, s.seeds)), folders + (" …" if len(s.runs) > 6 else "")])
        body.append("<h2>Series</h2>" + _table(["series", "seeds", "run folders"], rows))
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{esc(title)} — aqmlab</title><style>{CSS}</style></head><body>{''.join(body)}</body></html>")


def run_title(r: Any) -> str:
    return f"{r.scenario.get('name')} (seed {r.seed}, {measures.headline(r.summary)['aqm']})"


def run_report_forks() -> bool:
    """Whether a run's report draws figures in a forked process (some default kind
    has no SVG drawing, so matplotlib draws it as PNG)."""
    from . import plots

    return any(plots.KINDS[k].svg is None for k in plots.default_kinds())


def write_report(r: Any, out_dir: Path, progress: Any = None, on_started: Any = None) -> Path:
    """report.html of one run: the comparison of that run, in `out_dir` (figures as
    SVG; `on_started` as in `compare`)."""
    from .comparison import compare

    return compare([], out_dir, title=run_title(r), runs=[r], files=False, progress=progress, parallel=True, on_started=on_started).report


def run_card(r: Any) -> str:
    """A run's headline figures as HTML (a notebook's view of a `Run`)."""
    s = r.summary
    b = measures.headline(s)
    q = b.get("queue_delay_ms") or {}
    rows = [
        ("AQM", b["aqm"]),
        ("queueing delay p50 / p90 / p99 (ms)", " / ".join(cell(q.get(k), digits=1) for k in ("p50", "p90", "p99"))),
        ("utilization (mean)", cell((b.get("utilization") or {}).get("mean"), digits=3)),
        ("drop rate", cell(b["drop_rate"], digits=4)),
    ] + [(f"{n}: goodput (Mbps), Jain", f"{cell(c['goodput_mbps'])}, {cell(c['jain_index'], digits=3)}") for n, c in s["classes"].items()]
    body = "".join(f"<tr><th style='text-align:left'>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in rows)
    where = f"<br><code>{esc(r.path)}</code>" if r.path is not None else ""
    return f"<div><b>{esc(run_title(r))}</b>{where}<table>{body}</table></div>"


def series_card(series: Sequence["Series"], title: str = "") -> str:
    from .comparison import headline

    if not series:
        return f"<div><b>{esc(title)}</b>: no finished runs</div>"
    return f"<div><b>{esc(title)}</b>{headline_html(headline(list(series)))}</div>"

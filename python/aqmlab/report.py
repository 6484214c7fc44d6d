"""report.html: the run's headline figures and its plots on one page."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .results import RunResult


def _fmt(v: Any, digits: int = 2) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return html.escape(str(v))


def _row(cells: list[Any], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{_fmt(c) if not isinstance(c, str) else html.escape(c)}</{tag}>" for c in cells) + "</tr>"


def summary_tables(s: dict[str, Any]) -> str:
    b = s["bottleneck"]
    q = b["queue_delay_ms"]
    u = b["utilization"]
    parts = ["<h2>Bottleneck</h2><table>"]
    parts.append(_row(["AQM", "rate (Mbps)", "one-way delay (ms)", "buffer", "drop rate"], "th"))
    buf = f"{b['buffer_packets']} pkts" if b["buffer_packets"] else f"{b['buffer_bytes']} B"
    parts.append(_row([b["aqm"], b["rate_mbps"], b["delay_ms"], buf, b["drop_rate"]]))
    parts.append("</table><table>")
    keys = ["p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "max", "mean"]
    parts.append(_row(["queueing delay (ms)"] + keys, "th"))
    parts.append(_row(["per packet"] + [q[k] for k in keys]))
    parts.append("</table><table>")
    ukeys = ["mean", "p5", "p25", "p50", "p75", "p95"]
    parts.append(_row(["utilization"] + ukeys, "th"))
    parts.append(_row(["per interval"] + [u[k] for k in ukeys]))
    parts.append("</table><table>")
    parts.append(_row(["packets", "arrived", "enqueued", "dequeued", "dropped", "marked", "overflow", "random", "deterministic"], "th"))
    p, d = b["packets"], b["drops"]
    parts.append(_row(["count", p["arrived"], p["enqueued"], p["dequeued"], p["dropped"], p["marked"], d["overflow"], d["random"], d["deterministic"]]))
    parts.append("</table><h2>Traffic classes</h2><table>")
    parts.append(_row(["class", "kind", "flows", "cc", "goodput (Mbps)", "per flow mean", "Jain", "loss rate", "retransmits", "timeouts", "queue delay p50/p95 (ms)"], "th"))
    for name, c in s["classes"].items():
        qd = c.get("queue_delay_ms") or {}
        qtxt = f"{_fmt(qd.get('p50'), 1)} / {_fmt(qd.get('p95'), 1)}"
        parts.append(
            _row([name, c["kind"], c["flows"], c["cc"] or "–", c["goodput_mbps"], c["goodput_mbps_per_flow"]["mean"], c["jain_index"], c["loss_rate"], c["retransmits"], c["timeouts"], qtxt])
        )
    parts.append("</table>")
    cbr = {n: c for n, c in s["classes"].items() if c["kind"] == "cbr"}
    if cbr:
        parts.append("<h3>CBR: one-way delay (ms) and goodput</h3><table>")
        ks = ["p5", "p25", "p50", "p75", "p95", "p99", "max", "mean"]
        parts.append(_row(["class", "rate (kbps)", "goodput per flow (kbps)", "loss rate"] + ks, "th"))
        for n, c in cbr.items():
            d = c["one_way_delay_ms"]
            gp = c["goodput_mbps_per_flow"]["mean"]
            parts.append(_row([n, c["rate_kbps"], None if gp is None else gp * 1e3, c["loss_rate"]] + [d[k] for k in ks]))
        parts.append("</table>")
    dl = {n: c for n, c in s["classes"].items() if "download_time_s" in c}
    if dl:
        parts.append("<h3>Download times (s)</h3><table>")
        ks = ["p5", "p25", "p50", "p75", "p95", "mean"]
        parts.append(_row(["class", "size", "completed", "unfinished"] + ks, "th"))
        for n, c in dl.items():
            d = c["download_time_s"]
            for label, b in [("all", d["all"])] + list(d["by_size"].items()):
                parts.append(_row([n, label, b["completed"], b["unfinished"]] + [b[k] for k in ks]))
        parts.append("</table>")
    parts.append("<h3>Goodput per interval (Mbps)</h3><table>")
    ks = ["p10", "p25", "p50", "p75", "p90", "mean"]
    parts.append(_row(["class", "interval (s)", "of"] + ks, "th"))
    for n, c in s["classes"].items():
        g = c["goodput_per_interval_mbps"]
        parts.append(_row([n, g["interval_s"], "per flow"] + [g["per_flow"][k] for k in ks]))
        parts.append(_row([n, g["interval_s"], "class"] + [g["class"][k] for k in ks]))
    parts.append("</table>")
    return "\n".join(parts)


CSS = """
body { font-family: system-ui, sans-serif; max-width: 1000px; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.9em; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; }
td:first-child, th:first-child { text-align: left; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; }
figcaption { font-size: 0.85em; color: #555; }
.meta { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.8em; }
"""


def write_report(r: "RunResult", out_dir: Path) -> Path:
    from . import plots

    figs = plots.draw_all(r, out_dir / "figures")
    s = r.summary
    sc = r.scenario
    body = [
        f"<h1>{html.escape(sc['name'])}</h1>",
        f"<p>{html.escape(sc.get('description', ''))}</p>",
        f"<p class='meta'>seed {s['seed']} · {s['sim_seconds']:.0f} s simulated in {s['wall_seconds']:.3f} s "
        f"({s['events']} events) · aqmlab {html.escape(s['aqmlab_version'])}</p>",
        summary_tables(s),
        "<h2>Figures</h2>",
    ]
    for name, files, caption in figs:
        img = next((f for f in files if f.endswith(".svg")), files[0])
        body.append(f"<figure><img src='figures/{img}' alt='{name}'><figcaption>{html.escape(caption)} "
                    f"Files: {', '.join(files)}</figcaption></figure>")
    body.append("<h2>Scenario</h2><pre>" + html.escape(json.dumps(sc, indent=2)) + "</pre>")
    page = f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(sc['name'])} — aqmlab</title><style>{CSS}</style></head><body>{''.join(body)}</body></html>"
    path = out_dir / "report.html"
    path.write_text(page, encoding="utf-8")
    return path

"""Generated reference pages of the docs site (run by mkdocs-gen-files at build time):
the command line from the argparse parser, the scenario schema from the Rust core's
catalogues, and the figure kinds from aqmlab.plots. Needs aqmlab installed."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import mkdocs_gen_files

from aqmlab import _core
from aqmlab.cli import build_parser
from aqmlab.scenario import to_toml

ROOT = Path(__file__).resolve().parent.parent


def _commands(p: argparse.ArgumentParser, prefix: str):
    yield prefix, p
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                yield from _commands(sp, f"{prefix} {name}")


def cli_page() -> str:
    out = ["# Command line", "", "Every command and option, as `aqmlab COMMAND --help` prints them (generated from the parser).", ""]
    for name, p in _commands(build_parser(), "aqmlab"):
        p.prog = name
        p.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=100)
        out += [f"## `{name}`", "", "```text", p.format_help().rstrip(), "```", ""]
    return "\n".join(out)


def schema_page() -> str:
    aqms = json.loads(_core.aqm_catalog())
    traffic = json.loads(_core.traffic_catalog())
    scen = _core.builtin_scenarios()
    out = [
        "# Scenario schema",
        "",
        "Generated from the Rust core, the one place that declares the schema (`aqmlab list` prints the same).",
        "[Scenario files](../scenario.md) explains the fields and their units; unknown fields are errors.",
        "",
        "## AQMs (`bottleneck.aqm`)",
        "",
    ]
    for k in aqms:
        page = ROOT / "docs" / "aqm" / f"{k['kind']}.md"
        more = f" How it works, how it was tested: [{k['kind']}](../aqm/{k['kind']}.md)." if page.exists() else ""
        out += [f"### `{k['kind']}`: {k['title']}", "", f"Source: {k['source']}.{more}", ""]
        if k["params"]:
            out += ["| parameter | default | meaning and source |", "|---|---|---|"]
            for p in k["params"]:
                doc = str(p["doc"]).replace("|", "\\|").replace("\n", " ")
                out.append(f"| `{p['name']}` | `{json.dumps(p['default'])}` | {doc} |")
        else:
            out.append("No parameters: the limit is the link's buffer.")
        out.append("")
    out += ["## Flows (`[[flows]]`)", "", "Kinds: " + ", ".join(f"`{k}`" for k in traffic["kinds"]) + ".", "",
            "### TCP settings (`flows.N.tcp`)", "", "| setting | default |", "|---|---|"]
    out += [f"| `{k}` | `{json.dumps(v)}` |" for k, v in traffic["tcp"].items()]
    out += ["", "### Palermo-like receiver (`tcp.receiver = { kind = \"palermo\", ... }`)", "", "| parameter | default | meaning |", "|---|---|---|"]
    out += [f"| `{k}` | `{json.dumps(v)}` | {traffic['palermo_doc'].get(k, '')} |" for k, v in traffic["palermo"].items()]
    name, text = scen[0]
    out += ["", f"## A scenario with every default filled in: `{name}`", "", "`aqmlab show` prints this for any scenario; `aqmlab run` reads it back.", "",
            "```toml", to_toml(json.loads(_core.resolve_scenario(text))).rstrip(), "```", "", "## Built-in scenarios", "", "| name | description |", "|---|---|"]
    for n, t in scen:
        d = json.loads(_core.resolve_scenario(t)).get("description", "").replace("|", "\\|")
        out.append(f"| `{n}` | {d} |")
    return "\n".join(out) + "\n"


def figures_page() -> str:
    from aqmlab import plots

    out = ["# Figure kinds", "", "Every kind of `aqmlab plot --kind`, `Run.plot` and `aqmlab.plots.figure` (generated from `aqmlab.plots.kinds()`).",
           "Reports draw the kinds marked *report* when the runs have their data, as SVG in the page (`aqmlab.plots.draw_svg`: the same data, colours and labels,",
           "without matplotlib); a comparison with files also writes them to `figures/*.png` with matplotlib.", "", "| kind | in reports | what |", "|---|---|---|"]
    for name, k in plots.kinds().items():
        out.append(f"| `{name}` | {'report' if k.default else '–'} | {k.caption.replace('|', '/')} |")
    return "\n".join(out) + "\n"


for path, text in (("reference/cli.md", cli_page()), ("reference/schema.md", schema_page()), ("reference/figures.md", figures_page()),
                   ("changelog.md", (ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))):
    with mkdocs_gen_files.open(path, "w") as f:
        f.write(text)

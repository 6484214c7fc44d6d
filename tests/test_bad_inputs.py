"""A catalogue of bad inputs: for each, the command (or Python call), what its one-line
error must say (the field and the value), the exit code, and that nothing was written.

Every case runs in a fresh, empty working folder, with its input files (if any) in a
folder beside it; afterwards the working folder must still be empty, the input files
unchanged, and the error a single line that names the field and the value. The
command-line cases run `aqmlab.cli.main` in this process (they fail before any run,
in milliseconds); the Python API cases check the exception's type and message.
The memory budget is pinned (AQMLAB_MEMORY_BUDGET=16GB) so that the refusals of runs
too large to fit do not depend on the machine.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

import aqmlab
from aqmlab import cli

GB16 = "16GB"


@dataclass
class Case:
    id: str
    argv: list[str]
    says: list[str]  # substrings of the one error line: the field and the value
    code: int = 2
    files: dict[str, bytes] = field(default_factory=dict)  # input files, in the inputs folder ({IN})
    env: dict[str, Optional[str]] = field(default_factory=dict)
    hide: tuple[str, ...] = ()  # modules to make unimportable (a missing optional dependency)


def run_case(c: Case, tmp_path: Path, monkeypatch, capsys) -> tuple[int, str, str, Path, Path, dict[str, bytes]]:
    work, inp = tmp_path / "work", tmp_path / "in"
    work.mkdir()
    inp.mkdir()
    for name, data in c.files.items():
        p = inp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    monkeypatch.chdir(work)
    monkeypatch.setenv("AQMLAB_MEMORY_BUDGET", GB16)
    for k, v in c.env.items():
        if v is None:
            monkeypatch.delenv(k, raising=False)
        else:
            monkeypatch.setenv(k, v)
    for mod in c.hide:
        monkeypatch.setitem(sys.modules, mod, None)
    before = snapshot(inp)
    argv = [a.replace("{IN}", str(inp)) for a in c.argv]
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err, work, inp, before


def snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(d.rglob("*"))}


NOT_UTF8 = b'name = "caf\xe9"\nduration = "5s"\n'
SMALL = b'name = "s"\nduration = "5s"\n[bottleneck]\nrate = "5Mbps"\ndelay = "10ms"\nbuffer = "50pkts"\n[[flows]]\nname = "bulk"\ncount = 2\n'
SWEEP_JSON = json.dumps({"format_version": 1, "grid": {"name": "other"}, "runs": [{"run": "other-run_0badcafe", "hash": "0badcafe", "seed": 1, "params": {}, "overrides": []}]}).encode()


def S(*sets: str) -> list[str]:
    """`aqmlab run` with overrides on a 5 s version of the default scenario."""
    out = ["run", "--set", "duration=5s"]
    for x in sets:
        out += ["--set", x]
    return out


def P(*sets: str) -> list[str]:
    """`aqmlab run` with overrides on a 20 s version of the parking lot (a topology of
    [[links]] with a route per flow group)."""
    out = ["run", "parking-lot", "--set", "duration=20s"]
    for x in sets:
        out += ["--set", x]
    return out


CASES: list[Case] = [
    # -- scenario fields, through --set (the Rust core names the field by its path)
    Case("unknown-field", S("colour=red"), ["colour"]),
    Case("rate-without-unit", S("bottleneck.rate=10"), ["bottleneck.rate", "10"]),
    Case("rate-negative", S("bottleneck.rate=-5Mbps"), ["bottleneck.rate", "-5Mbps"]),
    Case("rate-zero", S("bottleneck.rate=0Mbps"), ["bottleneck.rate", "zero"]),
    Case("rate-unknown-unit", S("bottleneck.rate=5furlongs"), ["bottleneck.rate", "5furlongs"]),
    Case("rate-a-number", S("bottleneck.rate=5"), ["bottleneck.rate", "5"]),
    Case("delay-negative", S("bottleneck.delay=-5ms"), ["bottleneck.delay", "-5ms"]),
    Case("delay-bad-unit", S("bottleneck.delay=5parsecs"), ["bottleneck.delay", "5parsecs"]),
    Case("delay-a-table", S("bottleneck.delay={a=1}"), ["bottleneck.delay"]),
    Case("buffer-zero", S("bottleneck.buffer=0pkts"), ["bottleneck.buffer", "0pkts"]),
    Case("buffer-negative-bdp", S("bottleneck.buffer=-1bdp"), ["bottleneck.buffer", "-1bdp"]),
    Case("buffer-words", S("bottleneck.buffer=lots"), ["bottleneck.buffer", "lots"]),
    Case("aqm-unknown-kind", S("bottleneck.aqm.kind=nosuch"), ["bottleneck.aqm.kind", "nosuch"]),
    Case("aqm-target-without-unit", S("bottleneck.aqm.target=20"), ["bottleneck.aqm.target", "20"]),
    Case("aqm-tupdate-1ns", S("bottleneck.aqm.tupdate=1ns"), ["bottleneck.aqm.tupdate", "1ns"]),
    Case("aqm-tupdate-zero", S("bottleneck.aqm.tupdate=0s"), ["bottleneck.aqm.tupdate", "0s"]),
    Case("aqm-alpha-negative", S("bottleneck.aqm.alpha=-1.0"), ["bottleneck.aqm.alpha", "-1"]),
    Case("aqm-unknown-parameter", S("bottleneck.aqm.tarrget=5ms"), ["bottleneck.aqm", "tarrget"]),
    Case("aqm-wrong-type", S("bottleneck.aqm.ecn=yes"), ["bottleneck.aqm.ecn", "yes"]),
    Case("red-thresholds-crossed", S("bottleneck.aqm.kind=red", "bottleneck.aqm.min_th=30pkts", "bottleneck.aqm.max_th=20pkts"), ["bottleneck.aqm.max_th"]),
    Case("red-max-p-above-one", S("bottleneck.aqm.kind=red", "bottleneck.aqm.max_p=1.5"), ["bottleneck.aqm.max_p", "1.5"]),
    Case("codel-interval-zero", S("bottleneck.aqm.kind=codel", "bottleneck.aqm.interval=0s"), ["bottleneck.aqm.interval"]),
    Case("fq-codel-no-flows", S("bottleneck.aqm.kind=fq_codel", "bottleneck.aqm.flows=0"), ["bottleneck.aqm.flows", "got 0"]),
    Case("fq-codel-four-billion-flows", S("bottleneck.aqm.kind=fq_codel", "bottleneck.aqm.flows=4294967295"), ["bottleneck.aqm.flows", "4294967295"]),
    Case("dualpi2-coupling-zero", S("bottleneck.aqm.kind=dualpi2", "bottleneck.aqm.coupling_factor=0"), ["bottleneck.aqm.coupling_factor", "0"]),
    Case("dualpi2-protection-150", S("bottleneck.aqm.kind=dualpi2", "bottleneck.aqm.classic_protection=150"), ["bottleneck.aqm.classic_protection", "150"]),
    Case("fq-pie-no-flows", S("bottleneck.aqm.kind=fq_pie", "bottleneck.aqm.flows=0"), ["bottleneck.aqm.flows", "got 0"]),
    Case("cake-overhead-300", S("bottleneck.aqm.kind=cake", "bottleneck.aqm.overhead=300"), ["bottleneck.aqm.overhead", "300"]),
    Case("cake-mtu-zero", S("bottleneck.aqm.kind=cake", "bottleneck.aqm.mtu=0B"), ["bottleneck.aqm.mtu", "0"]),
    Case("cake-bandwidth-zero", S("bottleneck.aqm.kind=cake", "bottleneck.aqm.bandwidth=0Mbps"), ["bottleneck.aqm.bandwidth"]),
    Case("cobalt-increment-above-one", S("bottleneck.aqm.kind=cobalt", "bottleneck.aqm.blue_increment=2.0"), ["bottleneck.aqm.blue_increment", "2"]),
    Case("pie-scale-gains-a-word", S("bottleneck.aqm.scale_gains=maybe"), ["bottleneck.aqm.scale_gains", "maybe"]),
    Case("ared-interval-1ns", S("bottleneck.aqm.kind=ared", "bottleneck.aqm.interval=1ns"), ["bottleneck.aqm.interval", "1ns"]),
    Case("reverse-rate-zero", S("bottleneck.reverse_rate=0Mbps"), ["bottleneck.reverse_rate"]),
    Case("reverse-aqm-unknown", S("bottleneck.reverse_aqm=nosuch"), ["bottleneck.reverse_aqm", "nosuch"]),
    Case("schedule-after-the-end", S('bottleneck.schedule=[{at = "9s", rate = "5Mbps"}]'), ["bottleneck.schedule[0].at", "9s"]),
    Case("schedule-out-of-order", S('bottleneck.schedule=[{at = "2s", rate = "5Mbps"}, {at = "1s", rate = "2Mbps"}]'), ["bottleneck.schedule[1].at", "1s"]),
    Case("schedule-rate-zero", S('bottleneck.schedule=[{at = "2s", rate = "0Mbps"}]'), ["bottleneck.schedule[0].rate"]),
    Case("trace-missing-file", S("bottleneck.trace=no-such.trace"), ["bottleneck.trace", "no-such.trace"]),
    Case("access-rate-zero", S("access.rate=0Mbps"), ["access.rate"]),
    Case("access-buffer-zero", S("access.buffer=0pkts"), ["access.buffer", "0pkts"]),
    Case("tcp-unknown-cc", S("flows.0.tcp.cc=vegas"), ["flows[0].tcp.cc", "vegas"]),
    Case("tcp-mss-zero", S("flows.0.tcp.mss=0B"), ["flows[0].tcp.mss"]),
    Case("tcp-window-below-a-segment", S("flows.0.tcp.receive_window=1B"), ["flows[0].tcp.receive_window", "1B"]),
    Case("tcp-unknown-receiver", S("flows.0.tcp.receiver.kind=psychic"), ["flows[0].tcp.receiver", "psychic"]),
    Case("tcp-unknown-setting", S("flows.0.tcp.turbo=true"), ["flows[0].tcp", "turbo"]),
    Case("count-zero", S("flows.0.count=0"), ["flows[0].count", "0"]),
    Case("count-negative", S("flows.0.count=-3"), ["flows[0].count", "-3"]),
    Case("count-a-string", S("flows.0.count=many"), ["flows[0].count", "many"]),
    Case("flow-kind-unknown", S("flows.0.kind=carrier_pigeon"), ["flows[0].kind", "carrier_pigeon"]),
    Case("start-after-the-end", S("flows.0.start=9s"), ["flows[0].start", "9s"]),
    Case("start-interval-reversed", S('flows.0.start={uniform = ["3s", "1s"]}'), ["flows[0].start"]),
    Case("stop-before-start", S("flows.0.stop=0.5s"), ["flows[0].stop", "500ms"]),
    Case("flow-index-out-of-range", S("flows.5.count=1"), ["flows.5", "5"]),
    Case("flow-index-not-a-number", S("flows.x.count=1"), ["flows.x", "x"]),
    Case("cbr-rate-zero", S("flows.0.kind=cbr", "flows.0.rate=0Mbps"), ["flows[0].rate"]),
    Case("cbr-packet-too-small", S("flows.0.kind=cbr", "flows.0.rate=1Mbps", "flows.0.packet_size=10B"), ["flows[0].packet_size", "10B"]),
    Case("transfer-size-zero", S("flows.0.kind=transfer", "flows.0.size=0B"), ["flows[0].size"]),
    Case("files-pareto-shape-zero", S("flows.0.kind=files", 'flows.0.sizes={pareto = {scale = "2KB", shape = 0.0}}'), ["flows[0].sizes", "shape"]),
    Case("duration-zero", S("duration=0s"), ["duration"]),
    Case("duration-words", S("duration=forever"), ["duration", "forever"]),
    Case("warmup-equals-duration", S("metrics.warmup=5s"), ["metrics.warmup", "5s"]),
    Case("warmup-after-the-end", S("metrics.warmup=1000s"), ["metrics.warmup", "1000s"]),
    Case("utilization-interval-not-a-multiple", S("metrics.utilization_interval=150ms"), ["metrics.utilization_interval", "150ms"]),
    Case("record-interval-zero", S("record.interval=0s"), ["record.interval"]),
    Case("record-unknown-link", S('record.links=["router"]'), ["record.links", "router"]),
    Case("pcap-unknown-link", S('record.pcap=["bottleneck", "router"]'), ["record.pcap[1]", "router"]),
    Case("pcap-link-twice", S('record.pcap=["bottleneck", "bottleneck"]'), ["record.pcap[1]", "bottleneck", "twice"]),
    Case("pcap-not-a-list", S('record.pcap="bottleneck"'), ["record.pcap", "bottleneck", "list of link names"]),
    Case("pcap-true-without-recorded-links", S("record.links=[]", "record.pcap=true"), ["record.pcap", "record.links"]),
    Case("flow-trace-missing-flow", S("record.flow_trace=[99]"), ["record.flow_trace[0]", "99"]),
    Case("flow-trace-missing-group", S('record.flow_trace=["nobody"]'), ["record.flow_trace[0]", "nobody"]),
    Case("seed-field-negative", S("seed=-1"), ["seed", "-1"]),
    Case("set-not-an-assignment", S("duration"), ["--set", "duration"]),
    Case("set-empty-key", S("=5"), ["--set"]),
    Case("set-empty-path-part", S("bottleneck..rate=5Mbps"), ["--set", "bottleneck..rate"]),
    Case("set-inside-a-string", S("duration.x=1"), ["duration", "string"]),
    # -- topologies of [[links]] (the parking lot)
    Case("link-rate-zero", P("links.0.rate=0Mbps"), ["links[0].rate", "zero"]),
    Case("link-buffer-zero", P("links.0.buffer=0pkts"), ["links[0].buffer", "0pkts"]),
    Case("link-delay-negative", P("links.0.delay=-1ms"), ["links[0].delay", "-1ms"]),
    Case("link-aqm-unknown", P("links.0.aqm.kind=nosuch"), ["links[0].aqm.kind", "nosuch"]),
    Case("link-aqm-bad-parameter", P("links.0.aqm.kind=fq_codel", "links.0.aqm.flows=0"), ["links[0].aqm.flows", "got 0"]),
    Case("link-reverse-unknown-key", P("links.0.reverse.colour=red"), ["links[0].reverse.colour"]),
    Case("link-name-twice", P('links.1.name="b1"'), ["links[1].name", "b1"]),
    Case("link-to-itself", P('links.0.to="r1"'), ["links[0].to", "r1"]),
    Case("links-empty", P("links=[]"), ["links", "at least one link"]),
    Case("link-index-out-of-range", P("links.9.rate=1Mbps"), ["links.9", "9"]),
    Case("links-and-bottleneck", P("bottleneck.rate=10Mbps"), ["links", "[bottleneck]", "not both"]),
    Case("route-unknown-link", P('flows.0.route=["al", "zz"]'), ["flows[0].route[1]", "zz"]),
    Case("route-not-connected", P('flows.0.route=["al", "b2"]'), ["flows[0].route[1]", "b2"]),
    Case("route-crosses-a-link-twice", P('flows.0.route=["al", "b1", "b1"]'), ["flows[0].route[2]", "b1"]),
    Case("route-empty", P("flows.0.route=[]"), ["flows[0].route", "at least one link"]),
    Case("route-a-string", P('flows.0.route="al"'), ["flows[0].route", "al"]),
    Case("record-unknown-link-side", P('record.links=["bottleneck"]'), ["record.links[0]", "bottleneck"]),
    Case("topology-too-big-for-memory", P("flows.0.count=10000000"), ["memory", "10,000,008 flows", "fewer flows"]),
    # -- command-line values
    Case("seed-negative", ["run", "--seed", "-1"], ["--seed", "-1"]),
    Case("seed-2-to-the-70", ["run", "--seed", str(2**70)], ["--seed", str(2**70)]),
    Case("seed-2-to-the-64", ["run", "--seed", str(2**64)], ["--seed", str(2**64)]),
    Case("seed-an-expression", ["run", "--seed", "2**70"], ["--seed", "2**70"]),
    Case("seed-a-word", ["run", "--seed", "abc"], ["--seed", "abc"]),
    Case("seed-a-fraction", ["run", "--seed", "1.5"], ["--seed", "1.5"]),
    Case("out-in-proc", S("duration=5s") + ["--out", "/proc/x"], ["--out", "/proc/x"]),
    Case("out-under-a-file", S() + ["--out", "{IN}/file.txt/run"], ["--out", "file.txt"], files={"file.txt": b"x"}),
    Case("out-is-a-file", S() + ["--out", "{IN}/file.txt"], ["--out", "file.txt"], files={"file.txt": b"x"}),
    Case("out-not-a-run-folder", S() + ["--out", "{IN}/thesis"], ["--out", "thesis"], files={"thesis/chapter1.tex": b"precious"}),
    Case("scenario-missing-file", ["run", "no-such.toml"], ["scenario", "no-such.toml"]),
    Case("scenario-a-folder", ["run", "{IN}/folder.toml"], ["scenario", "folder.toml", "directory"], files={"folder.toml/x": b""}),
    Case("scenario-not-utf8", ["run", "{IN}/latin1.toml"], ["scenario", "latin1.toml", "UTF-8", "0xe9"], files={"latin1.toml": NOT_UTF8}),
    Case("scenario-not-toml", ["run", "{IN}/broken.toml"], ["TOML"], files={"broken.toml": b"duration = \n"}),
    Case("scenario-empty", ["run", "{IN}/empty.toml"], ["duration"], files={"empty.toml": b""}),
    Case("scenario-without-flows", ["run", "{IN}/noflows.toml"], ["flows"], files={"noflows.toml": SMALL.split(b"[[flows]]")[0]}),
    Case("scenario-flows-not-a-list", ["run", "{IN}/flows5.toml"], ["flows", "integer"], files={"flows5.toml": b"flows = 5\n" + SMALL.split(b"[[flows]]")[0]}),
    Case("scenario-duplicate-group", ["run", "{IN}/dup.toml"], ["flows[1].name", "bulk"], files={"dup.toml": SMALL + b'[[flows]]\nname = "bulk"\n'}),
    Case("scenario-binary", ["run", "{IN}/random.toml"], ["random.toml", "UTF-8"], files={"random.toml": bytes(range(256))}),
    Case("too-many-flows-for-memory", S("flows.0.count=10000000"), ["memory", "10,000,000 flows", "fewer flows", "16.0 GB"]),
    Case("too-many-packets-for-memory", S("duration=3000s", "bottleneck.rate=10Gbps", "access.rate=40Gbps", "record.flow_series=false"), ["memory", "packet records", "record.packets = false"]),
    Case("too-many-samples-for-memory", S("duration=1000s", "flows.0.count=100000", "record.packets=false"), ["memory", "flow samples", "record.flow_series = false"]),
    Case("memory-budget-unreadable", S(), ["AQMLAB_MEMORY_BUDGET", "lots"], env={"AQMLAB_MEMORY_BUDGET": "lots"}),
    Case("unknown-option", ["run", "--turbo"], ["--turbo"]),
    Case("two-scenarios", ["run", "madpie-proof", "madpie-mix"], ["madpie-mix"]),
    Case("no-command", [], ["COMMAND"]),
    Case("unknown-command", ["frobnicate"], ["frobnicate"]),
    Case("show-seed-negative", ["show", "--seed", "-1"], ["--seed", "-1"]),
    Case("show-unknown-field", ["show", "--set", "colour=red"], ["colour"]),
    Case("show-not-utf8", ["show", "{IN}/latin1.toml"], ["latin1.toml", "UTF-8"], files={"latin1.toml": NOT_UTF8}),
    Case("bench-repeat-zero", ["bench", "--repeat", "0"], ["--repeat", "0"]),
    Case("bench-seed-huge", ["bench", "--seed", str(2**64)], ["--seed", str(2**64)]),
    Case("emulate-seed-negative", ["emulate", "--seed", "-1"], ["--seed", "-1"]),
    Case("emulate-unknown-field", ["emulate", "--set", "colour=red"], ["colour"]),
    Case("emulate-out-in-proc", ["emulate", "--set", "duration=3s", "--out", "/proc/x"], ["--out", "/proc/x"]),
    Case("emulate-trace-missing", ["emulate", "--trace", "no-such.trace"], ["--trace", "no-such.trace"]),
    Case("emulate-trace-malformed", ["emulate", "--trace", "{IN}/bad.trace"], ["--trace", "bad.trace", "abc"], files={"bad.trace": b"1\nabc\n"}),
    # -- sweeps
    Case("sweep-jobs-zero", ["sweep", "madpie-proof", "--vary", "bottleneck.delay=1ms,2ms", "--jobs", "0", "--out", "s"], ["--jobs", "0"]),
    Case("sweep-jobs-negative", ["sweep", "madpie-proof", "--vary", "bottleneck.delay=1ms,2ms", "--jobs", "-3", "--out", "s"], ["--jobs", "-3"]),
    Case("sweep-jobs-a-word", ["sweep", "madpie-proof", "--jobs", "all", "--out", "s"], ["--jobs", "all"]),
    Case("sweep-nothing-to-sweep", ["sweep", "--out", "s"], ["sweep"]),
    Case("sweep-out-missing", ["sweep", "madpie-proof"], ["--out"]),
    Case("sweep-vary-not-an-assignment", ["sweep", "madpie-proof", "--vary", "bottleneck.delay", "--out", "s"], ["--vary", "bottleneck.delay"]),
    Case("sweep-vary-bad-value", ["sweep", "madpie-proof", "--vary", "bottleneck.aqm.kind=pie,nosuch", "--out", "s"], ["bottleneck.aqm.kind", "nosuch"]),
    Case("sweep-vary-unknown-field", ["sweep", "madpie-proof", "--vary", "colour=red,blue", "--out", "s"], ["colour"]),
    Case("sweep-set-bad-value", ["sweep", "madpie-proof", "--set", "duration=-1s", "--out", "s"], ["duration", "-1s"]),
    Case("sweep-seeds-zero", ["sweep", "madpie-proof", "--seeds", "0", "--out", "s"], ["--seeds", "0"]),
    Case("sweep-seeds-a-word", ["sweep", "madpie-proof", "--seeds", "abc", "--out", "s"], ["--seeds", "abc"]),
    Case("sweep-seeds-bad-list", ["sweep", "madpie-proof", "--seeds", "1,x", "--out", "s"], ["--seeds", "1,x"]),
    Case("sweep-seed-2-to-the-64", ["sweep", "madpie-proof", "--seeds", f"1,{2**64}", "--out", "s"], ["seeds", str(2**64)]),
    Case("sweep-seeds-repeated", ["sweep", "madpie-proof", "--seeds", "1,1", "--out", "s"], ["seeds", "1, 1"]),
    Case("sweep-zip-unequal", ["sweep", "madpie-proof", "--zip", "bottleneck.delay=1ms,2ms;flows.0.count=1", "--out", "s"], ["zip", "bottleneck.delay"]),
    Case("sweep-spec-not-utf8", ["sweep", "{IN}/grid.toml", "--out", "s"], ["grid.toml", "UTF-8"], files={"grid.toml": b'name = "\xff"\n[vary]\n'}),
    Case("sweep-spec-not-toml", ["sweep", "{IN}/grid.toml", "--out", "s"], ["grid.toml", "TOML"], files={"grid.toml": b"[vary\n"}),
    Case("sweep-spec-unknown-key", ["sweep", "{IN}/grid.toml", "--out", "s"], ["grid.toml", "varry"], files={"grid.toml": b'scenario = "madpie-proof"\n[varry]\n"bottleneck.delay" = ["1ms"]\n'}),
    Case("sweep-spec-vary-not-a-list", ["sweep", "{IN}/grid.toml", "--out", "s"], ["bottleneck.delay", "1ms"], files={"grid.toml": b'scenario = "madpie-proof"\n[vary]\n"bottleneck.delay" = "1ms"\n'}),
    Case("sweep-spec-no-file", ["sweep", "no-such-grid.toml", "--out", "s"], ["no-such-grid.toml"]),
    Case("sweep-out-in-proc", ["sweep", "madpie-proof", "--vary", "bottleneck.delay=1ms,2ms", "--out", "/proc/x"], ["--out", "/proc/x"]),
    Case("sweep-out-is-a-file", ["sweep", "madpie-proof", "--vary", "bottleneck.delay=1ms,2ms", "--out", "{IN}/file.txt"], ["--out", "file.txt"], files={"file.txt": b"x"}),
    Case("sweep-out-not-a-sweep", ["sweep", "madpie-proof", "--vary", "bottleneck.delay=1ms,2ms", "--out", "{IN}/thesis"], ["--out", "thesis"], files={"thesis/ch1.tex": b"x"}),
    Case("sweep-into-a-different-sweep", ["sweep", "madpie-proof", "--vary", "bottleneck.delay=1ms,2ms", "--set", "duration=5s", "--out", "{IN}/old"], ["--out", "old", "different sweep", "--force"], files={"old/sweep.json": SWEEP_JSON, "old/runs/other-run_0badcafe/summary.json": b"{}"}),
    Case("sweep-into-an-unreadable-sweep", ["sweep", "madpie-proof", "--vary", "bottleneck.delay=1ms,2ms", "--set", "duration=5s", "--out", "{IN}/old"], ["--out", "old", "sweep.json"], files={"old/sweep.json": b"{not json"}),
    Case("sweep-too-big-for-memory", ["sweep", "madpie-proof", "--vary", "flows.0.count=10,10000000", "--out", "s"], ["memory", "10,000,000 flows"]),
    Case("query-without-duckdb", ["query", "{IN}", "select 1"], ["duckdb", "pip install"], hide=("duckdb",)),
    Case("query-not-a-sweep", ["query", "{IN}", "select 1"], ["index.parquet"]),
    Case("query-no-sql", ["query", "{IN}"], ["query", "SQL"]),
    Case("query-bad-format", ["query", "{IN}", "select 1", "--format", "xml"], ["--format", "xml"]),
    # -- comparisons, reproductions, validation, analyses
    Case("compare-missing-folder", ["compare", "no-such-run"], ["no-such-run"]),
    Case("compare-unknown-figure", ["compare", "{IN}", "--figures", "pie_chart"], ["--figures", "pie_chart"]),
    Case("compare-no-runs", ["compare", "{IN}/empty", "--out", "c"], ["empty", "neither a run folder"], files={"empty/x.txt": b"x"}),
    Case("compare-out-in-proc", ["compare", "{IN}", "--out", "/proc/x"], ["--out", "/proc/x"]),
    Case("reproduce-unknown", ["reproduce", "no-such-paper"], ["no-such-paper"]),
    Case("reproduce-jobs-zero", ["reproduce", "madpie-proof", "--jobs", "0"], ["--jobs", "0"]),
    Case("reproduce-seeds-zero", ["reproduce", "madpie-proof", "--seeds", "0"], ["--seeds", "0"]),
    Case("reproduce-out-in-proc", ["reproduce", "madpie-proof", "--quick", "--out", "/proc/x"], ["out", "/proc/x"]),
    Case("validate-one-seed", ["validate", "ns3", "--seeds", "1"], ["--seeds", "1"]),
    Case("validate-jobs-zero", ["validate", "ns3", "--jobs", "0"], ["--jobs", "0"]),
    Case("validate-linux-one-repeat", ["validate", "linux", "--repeats", "1"], ["--repeats", "1"]),
    Case("validate-linux-unknown-case", ["validate", "linux", "nosuchcase", "--sim-only"], ["nosuchcase"]),
    Case("validate-unknown-reference", ["validate", "omnet"], ["omnet"]),
    Case("analyze-seed-negative", ["analyze", "pie-fluid", "--seed", "-1", "--out", "a"], ["--seed", "-1"]),
    Case("analyze-out-in-proc", ["analyze", "pie-fluid", "--no-sim", "--out", "/proc/x"], ["/proc/x"]),
    Case("analyze-unknown-field", ["analyze", "pie-fluid", "--set", "colour=red", "--out", "a"], ["colour"]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_command_line_input_is_one_line_and_writes_nothing(case, tmp_path, monkeypatch, capsys):
    code, out, err, work, inp, before = run_case(case, tmp_path, monkeypatch, capsys)
    lines = err.strip("\n").split("\n")
    assert code == case.code, f"exit code {code}, stderr: {err!r}"
    assert len(lines) == 1 and lines[0], f"not one line: {err!r}"
    assert lines[0].startswith("aqmlab: error: "), lines[0]
    assert "Traceback" not in err + out
    for s in case.says:
        assert s in lines[0], f"{s!r} not in {lines[0]!r}"
    assert list(work.iterdir()) == [], f"written: {[p.name for p in work.iterdir()]}"
    assert snapshot(inp) == before, "the input files changed"


# -- the Python API: the same checks, as exceptions -------------------------------------


@dataclass
class ApiCase:
    id: str
    call: Callable[[Path], Any]
    error: type
    says: list[str]


def _sweep(d: Path, **kw: Any) -> Any:
    args = {"vary": {"bottleneck.delay": ["1ms", "2ms"]}, "set": {"duration": "5s"}, "out": d / "s"}
    args.update(kw)
    return aqmlab.sweep("madpie-proof", **args)


API_CASES = [
    ApiCase("run-overrides-a-string", lambda d: aqmlab.run(overrides="duration=5s"), aqmlab.ScenarioError, ["overrides", "duration=5s"]),
    ApiCase("run-overrides-not-strings", lambda d: aqmlab.run(overrides=[5]), aqmlab.ScenarioError, ["overrides", "5"]),
    ApiCase("run-overrides-an-object", lambda d: aqmlab.run(overrides={"duration": object()}), aqmlab.ScenarioError, ["overrides.duration"]),
    ApiCase("run-seed-negative", lambda d: aqmlab.run(seed=-1), aqmlab.ScenarioError, ["seed", "-1"]),
    ApiCase("run-seed-2-to-the-70", lambda d: aqmlab.run(seed=2**70), aqmlab.ScenarioError, ["seed", str(2**70)]),
    ApiCase("run-seed-a-string", lambda d: aqmlab.run(seed="1"), aqmlab.ScenarioError, ["seed", "'1'"]),
    ApiCase("run-unknown-scenario", lambda d: aqmlab.run("no-such-scenario"), aqmlab.ScenarioError, ["no-such-scenario"]),
    ApiCase("run-dict-without-bottleneck", lambda d: aqmlab.run({"duration": "5s", "flows": [{"name": "a"}]}), aqmlab.ScenarioError, ["bottleneck"]),
    ApiCase("run-too-big", lambda d: aqmlab.run(overrides={"flows.0.count": 10_000_000}), aqmlab.ScenarioError, ["memory", "fewer flows"]),
    ApiCase("resolve-overrides-a-string", lambda d: aqmlab.resolve("madpie-proof", overrides="duration=5s"), aqmlab.ScenarioError, ["overrides", "duration=5s"]),
    ApiCase("sweep-vary-a-string", lambda d: _sweep(d, vary="bottleneck.delay"), aqmlab.ScenarioError, ["vary", "bottleneck.delay"]),
    ApiCase("sweep-vary-values-a-string", lambda d: _sweep(d, vary={"bottleneck.delay": "48ms"}), aqmlab.ScenarioError, ['vary."bottleneck.delay"', "48ms"]),
    ApiCase("sweep-zip-values-a-string", lambda d: _sweep(d, vary=None, zip={"bottleneck.delay": "48ms"}), aqmlab.ScenarioError, ['zip."bottleneck.delay"', "48ms"]),
    ApiCase("sweep-set-a-string", lambda d: _sweep(d, set="duration=5s"), aqmlab.ScenarioError, ["set", "duration=5s"]),
    ApiCase("sweep-seeds-a-string", lambda d: _sweep(d, seeds="3"), aqmlab.ScenarioError, ["seeds", "'3'"]),
    ApiCase("api-sweep-jobs-zero", lambda d: _sweep(d, jobs=0), aqmlab.ScenarioError, ["jobs", "0"]),
    ApiCase("api-sweep-jobs-negative", lambda d: _sweep(d, jobs=-3), aqmlab.ScenarioError, ["jobs", "-3"]),
    ApiCase("api-sweep-out-in-proc", lambda d: _sweep(d, out="/proc/x"), aqmlab.ScenarioError, ["out", "/proc/x"]),
    ApiCase("api-reproduce-jobs-zero", lambda d: aqmlab.reproduce("madpie-proof", quick=True, jobs=0, out=d / "r"), aqmlab.ScenarioError, ["jobs", "0"]),
    ApiCase("api-query-not-a-sweep", lambda d: aqmlab.query(d, "select 1"), FileNotFoundError, ["index.parquet"]),
]


@pytest.mark.parametrize("case", API_CASES, ids=[c.id for c in API_CASES])
def test_bad_python_api_input_raises_one_line_and_writes_nothing(case, tmp_path, monkeypatch):
    monkeypatch.setenv("AQMLAB_MEMORY_BUDGET", GB16)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(case.error) as e:
        case.call(tmp_path)
    msg = str(e.value)
    assert msg and "\n" not in msg, repr(msg)
    for s in case.says:
        assert s in msg, f"{s!r} not in {msg!r}"
    assert list(tmp_path.iterdir()) == [], [p.name for p in tmp_path.iterdir()]


def test_writing_a_run_where_it_cannot_be_written_is_one_line(tmp_path):
    r = aqmlab.run(overrides={"duration": "2s", "record.packets": False})
    with pytest.raises(aqmlab.ScenarioError) as e:
        r.write("/proc/x")
    assert "out" in str(e.value) and "/proc/x" in str(e.value) and "\n" not in str(e.value)


def test_the_catalogue_is_large():
    assert len(CASES) + len(API_CASES) >= 100
    assert len({c.id for c in CASES} | {c.id for c in API_CASES}) == len(CASES) + len(API_CASES)

"""The report's SVG figures (aqmlab.svg, aqmlab.plots_svg) and the pandas-free tables:
ticks and labels, path data that decodes back to the points, dense lines reduced
without changing what is drawn, well-formed SVG, and every kind drawn from the same
data with the same texts as its matplotlib twin."""

import math
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import aqmlab
from aqmlab import comparison, plots, results, svg
from conftest import fig_texts

NS = "{http://www.w3.org/2000/svg}"


def test_nice_ticks_cover_the_range_at_round_steps():
    assert svg.nice_ticks(0, 1.02, 6).tolist() == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert svg.nice_ticks(0, 1.02, 5).tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    assert svg.nice_ticks(0, 300, 7).tolist() == [0, 50, 100, 150, 200, 250, 300]
    assert svg.nice_ticks(-3.2, 7.9, 6).tolist() == [-2, 0, 2, 4, 6]
    assert svg.nice_ticks(0, 12.5, 5).tolist() == [0, 2.5, 5, 7.5, 10, 12.5]
    for lo, hi in ((0, 1e-3), (17, 23), (1e5, 3.3e6), (-1, 1)):
        t = svg.nice_ticks(lo, hi, 6)
        assert 2 <= len(t) <= 7 and lo - 1e-12 <= t[0] and t[-1] <= hi + 1e-12
        step = np.diff(t)[0]
        assert np.allclose(np.diff(t), step)
        mant = step / 10 ** math.floor(math.log10(step))
        assert any(math.isclose(mant, k) for k in (1, 2, 2.5, 5)), step


def test_tick_labels_use_the_fewest_decimals():
    assert svg.tick_labels(np.array([0, 0.25, 0.5, 0.75, 1.0])) == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    assert svg.tick_labels(np.array([0, 50, 100])) == ["0", "50", "100"]
    assert svg.tick_labels(np.array([-0.0, 0.2])) == ["0.0", "0.2"]
    assert svg.log_ticks(3, 3000).tolist() == [10, 100, 1000]
    assert svg.log_ticks(1, 50).tolist() == [1, 2, 5, 10, 20, 50]


def _decode_polyline(d: str) -> np.ndarray:
    """Points of "M x y l dx dy dx dy ..." (tenths of a pixel) in pixels."""
    head, _, rest = d.partition("l")
    x0, y0 = map(int, head[1:].split())
    deltas = np.array(list(map(int, rest.split())), dtype=np.int64).reshape(-1, 2)
    pts = np.vstack([[x0, y0], np.array([x0, y0]) + np.cumsum(deltas, axis=0)])
    return pts / 10


def test_path_data_decodes_back_to_the_points_within_a_twentieth_of_a_pixel():
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 900, 500))
    y = rng.uniform(-50, 300, 500)
    got = _decode_polyline(svg.polyline_d(x, y))
    assert got.shape == (500, 2) and np.abs(got - np.column_stack([x, y])).max() <= 0.05 + 1e-9
    dots = svg.dots_d(np.array([1.0, 5.5, 3.3]), np.array([2.0, 2.0, 7.0]))
    assert dots == "M10 20h0m45 0h0m-22 50h0"


def test_a_dense_line_keeps_each_columns_extremes_and_ends():
    rng = np.random.default_rng(1)
    px = np.sort(rng.uniform(0, 100, 20_000))
    py = rng.normal(0, 10, 20_000)
    qx, qy = svg.decimate(px, py, res=0.5)
    assert len(qx) < len(px) / 5
    assert qx[0] == px[0] and qx[-1] == px[-1] and np.all(np.diff(qx) >= 0)
    col = np.floor(px / 0.5)
    for c in np.unique(col)[::37]:  # every column's lowest and highest point survive
        sel = col == c
        kept = np.floor(qx / 0.5) == c
        assert py[sel].min() == qy[kept].min() and py[sel].max() == qy[kept].max()
    # a line that goes back and forth is left as it is
    back = np.r_[px, px[::-1]]
    assert len(svg.decimate(back, np.r_[py, py])[0]) == len(back)


def test_a_figure_is_well_formed_svg_with_unique_ids_and_scales():
    f = svg.Figure(500, title="A title that is long enough to be wrapped onto a second line of the figure's width", cols=2)
    for i in range(3):
        ax = f.axes(120)
        ax.line([0, 1, 2], [0, 1, np.nan], "#0072B2", label="a & b")
        ax.dots([0.5, 1.5], [0.2, 0.4], "#E69F00")
        ax.box(1, [0, 1, 2, 3, 4], 0.5, "#009E73")
        ax.set(xlabel="x <ms>", ylabel="y", title=f"panel {i}")
    f.legend([svg.line_entry("a & b", "#0072B2"), svg.patch_entry("c", "#000"), svg.marker_entry("d", "#111", "X")])
    text = f.render("t1")
    root = ET.fromstring(text)
    assert root.tag == NS + "svg" and root.get("viewBox").startswith("0 0 500 ")
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids)) == 3 and all(i.startswith("t1-") for i in ids)
    texts = [e.text for e in root.iter(NS + "text")]
    assert "x <ms>" in texts and "panel 2" in texts and "a & b" in texts
    assert len([t for t in texts if t and t.startswith("A title")]) == 1 and len(f.title) > len(texts[0])  # wrapped


@pytest.fixture(scope="module")
def mix():
    return comparison.group([aqmlab.run("madpie-mix", overrides={"duration": "10s"})])


@pytest.fixture(scope="module")
def two():
    runs = [aqmlab.run("madpie-proof", seed=s, overrides={"duration": "6s", "bottleneck.aqm.kind": k}) for k in ("pie", "droptail") for s in (1, 2)]
    return comparison.group(runs)


@pytest.mark.parametrize("which", ["mix", "two"])
def test_every_kind_draws_as_svg_where_matplotlib_draws_with_the_same_texts(which, request):
    series = request.getfixturevalue(which)
    drawn = 0
    for name, kind in plots.kinds().items():
        assert kind.svg is not None, name
        fig = plots.draw(name, series)
        out = plots.draw_svg(name, series, ident=f"t-{name}")
        assert (fig is None) == (out is None), name
        if fig is None:
            continue
        drawn += 1
        root = ET.fromstring(out)
        texts = " ".join(t for t in (e.text for e in root.iter(NS + "text")) if t)
        title = fig.get_suptitle()
        assert " ".join(svg.wrap(title, 1e9, 12)) in " ".join(texts.split()) or title.split(" (")[0] in texts, (name, title)
        for ax in fig.axes:
            for label in (ax.get_xlabel(), ax.get_ylabel()):
                if label and "\n" not in label:
                    assert label in texts, (name, label)
        # the series' colours are the matplotlib figure's
        own = {"causes_time", "flow_traces", "transfer_rate_by_size"} | ({"cwnd_time", "drop_causes"} if len(series) == 1 else set())
        if name not in own:  # colours of their own: causes, flows, experiments
            assert series[0].color in out, name  # (later series may lack this kind's data)
        assert "<title>" in out
        fig_texts(fig)  # the matplotlib figure itself draws
    assert drawn >= (9 if which == "mix" else 7)


def test_arrays_built_from_buffers_equal_pyarrows():
    rng = np.random.default_rng(0)
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64, np.int32, np.int64, np.float64, np.bool_):
        a = (rng.uniform(0, 100, 37)).astype(dtype)
        mask = rng.uniform(size=37) < 0.3
        for m in (None, mask, np.zeros(37, bool)):
            got, want = results._arr(a, mask=m), pa.array(a, mask=m)
            assert got.type == want.type and got.null_count == want.null_count and got.equals(want), (dtype, m is None)
    strs = ["pie", None, "", "ünïcode", "x" * 40]
    assert results._strings(strs).equals(pa.array(strs, type=pa.string()))
    assert results._strings([]).equals(pa.array([], type=pa.string()))
    d = results._dict_col(np.array([2, 0, 1, 0], np.uint8), ["none", "a", "b"], null_code=0)
    assert d.to_pylist() == ["b", None, "a", None] and d.type == pa.dictionary(pa.int32(), pa.string())


def test_writing_a_runs_tables_imports_no_pandas(tmp_path):
    code = ("import sys, aqmlab\n"
            "r = aqmlab.run('madpie-mix', overrides={'duration': '5s'})\n"
            f"r.write({str(tmp_path / 'run')!r}, report=False)\n"
            "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert (tmp_path / "run" / "packets.parquet").exists()


def test_in_memory_filters_match_pyarrows_and_are_kept(mix):
    r = mix[0].runs[0]
    for name, cols, filters in [("packets", ["time_s", "sojourn_ms", "class"], [("link", "=", "bottleneck"), ("event", "=", "dequeue")]),
                                ("packets", ["cause", "backlog_bytes"], [("event", "=", "drop")]),
                                ("timeseries", ["time_s", "cwnd_segments"], [("scope", "=", "flow"), ("flow", "=", 3)]),
                                ("timeseries", ["time_s"], [("link", "=", "no such link")])]:
        t = getattr(r, name)
        want = None
        for c, _, v in filters:
            m = pc.fill_null(pc.equal(t[c], v), False)
            want = m if want is None else pc.and_(want, m)
        got = r._read(name, cols, filters)
        assert got.equals(t.select(cols).filter(want).to_pandas()), (name, filters)
        assert ("mask", name, tuple(filters)) in r._frames
    with pytest.raises(ValueError, match="only equality"):
        r._read("packets", ["time_s"], [("time_s", ">", 1.0)])


def test_the_report_page_embeds_svg_figures_and_no_matplotlib(tmp_path):
    code = ("import sys, aqmlab\n"
            "r = aqmlab.run('madpie-proof', overrides={'duration': '5s'})\n"
            f"r.write({str(tmp_path / 'run')!r})\n"
            "print(any(m == 'matplotlib' or m.startswith('matplotlib.') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    html = (tmp_path / "run" / "report.html").read_text()
    figs = re.findall(r"<figure id='fig-([a-z_]+)'><svg ", html)
    assert {"queue_delay_cdf", "utilization_cdf", "goodput_delay", "queue_delay_time", "goodput", "cwnd_time"} <= set(figs)
    assert "data:image/png" not in html and "<script" not in html


def test_a_kind_without_an_svg_drawing_is_embedded_as_png(mix, tmp_path, monkeypatch):
    from aqmlab import plots_svg

    monkeypatch.delitem(plots_svg.KINDS, "utilization_cdf")
    res = comparison.compare([], tmp_path / "cmp", runs=mix[0].runs, figures=["queue_delay_cdf", "utilization_cdf"], files=False)
    html = res.report.read_text()
    assert re.search(r"<figure id='fig-queue_delay_cdf'><svg ", html)
    assert re.search(r"<figure id='fig-utilization_cdf'><img src='data:image/png;base64,", html)
    assert not (tmp_path / "cmp" / "figures").exists()

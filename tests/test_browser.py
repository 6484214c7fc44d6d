"""The run report and the sweep report in a real headless browser (Debian's chromium
and chromedriver, driven by Selenium): no console errors, every figure loaded (an
inline SVG with its axes and marks, or an image) and visible, nothing overlapping or
overflowing at 1280 px and at a phone's width."""

import os
import shutil
from pathlib import Path

import pytest

import aqmlab

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
DRIVER = shutil.which("chromedriver")
if os.environ.get("CI") != "true":  # CI installs them (.ci/run): there a missing browser fails
    if not (CHROMIUM and DRIVER):
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)", allow_module_level=True)
    pytest.importorskip("selenium")
from selenium import webdriver  # noqa: E402

WIDTHS = (1280, 390)  # a laptop, a phone

LAYOUT = """
const out = {problems: [], figures: 0, svg: document.querySelectorAll('figure > svg').length};
const vw = document.documentElement.clientWidth;
if (document.documentElement.scrollWidth > vw + 1) out.problems.push(`page wider than the window: ${document.documentElement.scrollWidth} > ${vw}`);
for (const img of document.querySelectorAll('figure > img, figure > svg')) {
  out.figures += 1;
  const r = img.getBoundingClientRect();
  const name = img.alt || img.getAttribute('aria-label');
  if (img.tagName === 'IMG' && (!img.complete || img.naturalWidth === 0)) out.problems.push(`${name}: not loaded`);
  if (img.tagName.toLowerCase() === 'svg') {
    // drawn: axes, tick labels and marks with a size on the screen
    const marks = [...img.querySelectorAll('path, circle, rect')].filter(e => { const b = e.getBoundingClientRect(); return b.width > 0 || b.height > 0; });
    if (marks.length < 3 || img.querySelectorAll('text').length < 4) out.problems.push(`${name}: not drawn (${marks.length} marks)`);
    for (const t of img.querySelectorAll('text')) {  // no text outside its figure
      const b = t.getBoundingClientRect();
      if (b.left < r.left - 1 || b.right > r.right + 1 || b.top < r.top - 1 || b.bottom > r.bottom + 1) out.problems.push(`${name}: text "${t.textContent}" outside the figure`);
    }
  }
  if (r.width < 50 || r.height < 50) out.problems.push(`${name}: drawn ${r.width}x${r.height}`);
  if (r.left < -1 || r.right > vw + 1) out.problems.push(`${name}: outside the window (${r.left}..${r.right} of ${vw})`);
  if (getComputedStyle(img).visibility !== 'visible' || getComputedStyle(img).display === 'none') out.problems.push(`${name}: hidden`);
}
// the page's blocks follow one another: none overlaps the next
const blocks = [...document.body.children].filter(e => e.getBoundingClientRect().height > 0);
for (let i = 1; i < blocks.length; i++) {
  const a = blocks[i - 1].getBoundingClientRect(), b = blocks[i].getBoundingClientRect();
  if (b.top < a.bottom - 1) out.problems.push(`${blocks[i - 1].tagName} overlaps ${blocks[i].tagName}: ${a.bottom} > ${b.top}`);
}
// a table never spills out of its scrolling box; text never out of the body
for (const e of document.querySelectorAll('h1, h2, h3, p, figcaption, summary, .scroll')) {
  const r = e.getBoundingClientRect();
  if (r.right > vw + 1) out.problems.push(`${e.tagName}.${e.className}: ends at ${r.right} > ${vw}`);
}
return out;
"""


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"):
        opts.add_argument(a)
    if CHROMIUM:
        opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(service=Service(DRIVER), options=opts)  # the system driver: nothing is downloaded
    yield d
    d.quit()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    d = tmp_path_factory.mktemp("reports")
    mix = aqmlab.run("madpie-mix", overrides={"duration": "20s"})
    mix.write(d / "run")
    aqmlab.sweep("madpie-proof", vary={"bottleneck.aqm.kind": ["pie", "droptail"]}, seeds=2, set={"duration": "10s"}, out=d / "sweep", jobs=1, progress=False)
    return {"run": d / "run" / "report.html", "sweep": d / "sweep" / "report.html"}


def _check(browser, page: Path, width: int) -> dict:
    browser.set_window_size(width, 900)
    browser.get(page.as_uri())
    browser.execute_script("return document.readyState")
    browser.execute_async_script("const done = arguments[arguments.length - 1]; Promise.all([...document.images].map(i => i.decode().catch(() => null))).then(() => done(true));")
    found = browser.execute_script(LAYOUT)
    errors = [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    return {"found": found, "errors": errors}


def test_the_checks_catch_a_broken_page(browser, tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><head><meta charset='utf-8'></head><body><h1>x</h1>"
                   "<figure><img src='missing.png' alt='gone' width='2000' height='100'></figure>"
                   "<figure><svg aria-label='blank' width='300' height='200'><text>a</text></svg></figure>"
                   "<p style='margin-top:-80px'>over the figure</p><div style='width:3000px'>too wide</div>"
                   "<script>console.error('boom')</script></body></html>")
    got = _check(browser, bad, 1280)
    assert any("boom" in e["message"] for e in got["errors"])
    text = " ".join(got["found"]["problems"])
    assert "gone: not loaded" in text and "page wider than the window" in text and "FIGURE overlaps P" in text
    assert "blank: not drawn" in text


@pytest.mark.parametrize("which", ["run", "sweep"])
@pytest.mark.parametrize("width", WIDTHS)
def test_report_in_a_browser(browser, reports, which, width):
    got = _check(browser, reports[which], width)
    assert got["errors"] == []
    assert got["found"]["figures"] >= 5, got
    assert got["found"]["problems"] == []
    assert got["found"]["svg"] == got["found"]["figures"]  # the report draws its figures in the page
    # every figure scrolled into view is painted: its centre pixel belongs to it
    for fig in browser.execute_script("return [...document.querySelectorAll('figure')].map(f => f.id)"):
        hit = browser.execute_script(
            "const i = document.getElementById(arguments[0]).firstElementChild; i.scrollIntoView({block: 'center'});"
            "const r = i.getBoundingClientRect(); const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);"
            "return e === i || i.contains(e);", fig)
        assert hit, f"{which} at {width} px: {fig} is covered"

"""How quickly does Episode 3 answer a slider, against a bare Panel slider app?

Serves two apps from one Panel server process on this machine:

- ``bare``: three FloatSliders and one Bokeh line whose data follows the first slider
  (the floor: Panel's event debounce, the websocket and one Bokeh repaint);
- ``ep3``: the real Episode 3 page, where every move re-simulates 2,000 rounds and
  updates two figures and the numbers.

Then drives each in Debian's Chromium with Playwright: focuses the first slider's
handle and presses ArrowRight / ArrowLeft alternately (one slider step per press, the
smallest step of a drag), and times in the page, from the keydown event:

- *data*: the first change the server pushes into the browser's Bokeh document;
- *pixels*: the last canvas pixel change caused by that press (canvases are sampled every
  animation frame; "last" = no further change for 400 ms), i.e. the page fully redrawn. The
  numbers' text arrives in the same websocket message and is swapped in before that paint.

Prints a markdown table (median and p95 in ms) and the ratio of the p95s, against the
target: Episode 3 within 1.2x of the bare app. This measures; it asserts nothing.

Run: ``python benchmarks/bench_ep3_latency.py [--samples 60] [--warmup 5] [--blocks 3]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

from _local import CHROMIUM_ARGS, free_port, wait_live

TARGET = 1.2

# Installed once per page: from each keydown, sample the page's canvases every animation frame
# (scaled down to a small scratch canvas, so a sample costs the same few pixels whatever the
# figure size) and note the first server change to the Bokeh document and the last pixel change.
_PROBE = """
() => {
  const scratch = document.createElement('canvas');
  scratch.width = 128; scratch.height = 64;
  const sctx = scratch.getContext('2d', {willReadFrequently: true});
  const find = () => {
    const out = [];
    const walk = (n) => {
      if (n.nodeName === 'CANVAS') out.push(n);
      if (n.shadowRoot) walk(n.shadowRoot);
      for (const c of n.children || []) walk(c);
    };
    walk(document.body);
    return out.filter(c => c.width > 50 && c.height > 50);
  };
  const sums = (list) => list.map(c => {
    sctx.clearRect(0, 0, 128, 64);
    sctx.drawImage(c, 0, 0, 128, 64);
    const d = sctx.getImageData(0, 0, 128, 64).data;
    let h = 0;
    for (let i = 0; i < d.length; i += 1) h = (h * 31 + d[i]) | 0;
    return h;
  });
  const B = window.__bench = {t0: null, data: null, pixels: null, last: null, list: [], active: false};
  // sync === false: a change that came from the server (the slider's own change is sync === true).
  Bokeh.documents[0].on_change((ev) => {
    if (B.active && B.data === null && ev.sync === false) B.data = performance.now();
  });
  // Sample only while a press is being measured, and only the canvases found at the keydown,
  // so the probe costs both apps the same little and nothing between presses.
  window.addEventListener('keydown', () => {
    B.list = find(); B.t0 = performance.now(); B.data = null; B.pixels = null;
    B.last = sums(B.list); B.active = true;
  }, true);
  const tick = () => {
    if (B.active) {
      const now = sums(B.list);
      const t = performance.now();
      if (now.some((h, i) => h !== B.last[i])) { B.pixels = t; B.last = now; }
      if (B.pixels === null ? t - B.t0 > 5000 : t - B.pixels > 400) B.active = false;
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
"""

_RESULT = """
() => { const B = window.__bench;
  return {data: B.data === null ? null : B.data - B.t0,
          pixels: B.pixels === null ? null : B.pixels - B.t0,
          active: B.active}; }
"""


# --- the served apps --------------------------------------------------------------------------


def bare_app():
    """Three sliders and one line: the least a Panel slider-to-chart app can do."""
    import numpy as np
    import panel as pn
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    xs = np.linspace(0, 1, 50)
    src = ColumnDataSource(dict(x=xs, y=xs * 0.8), name="bare-line")
    fig = figure(height=330, sizing_mode="stretch_width", tools="", toolbar_location=None,
                 y_range=(0, 1))
    fig.line("x", "y", source=src, line_width=3)
    sliders = [pn.widgets.FloatSlider(name=n, start=0, end=1, step=0.01, value=v)
               for n, v in (("a", 0.8), ("b", 0.4), ("c", 0.1))]
    sliders[0].param.watch(lambda e: setattr(src, "data", dict(x=xs, y=xs * e.new)), "value")
    return pn.Column(*sliders, pn.pane.Bokeh(fig, sizing_mode="stretch_width"),
                     sizing_mode="stretch_width", max_width=1100)


def ep3_app():
    from specdec_playable.episodes import ep3
    from specdec_playable.kit.page import safe_page

    return safe_page(ep3.page)


def serve(port: int) -> None:
    import panel as pn

    pn.serve({"bare": bare_app, "ep3": ep3_app}, port=port, address="127.0.0.1",
             websocket_origin=[f"127.0.0.1:{port}"], show=False, liveness=True,
             admin=False, autoreload=False)


# --- the measurement -------------------------------------------------------------------------


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    i = (len(xs) - 1) * p
    lo, hi = int(i), min(int(i) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def measure(page, url: str, samples: int, warmup: int, *, between=None,
            redraw_timeout_s: float = 5.0) -> dict[str, list[float]]:
    """Step the page's first slider ``warmup + samples`` times; the probe's times of the samples.

    ``between``, if given, is called before every press (another visitor's work), and the page
    is brought back to the front and its handle focused again after it.
    """
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
    page.wait_for_selector(".noUi-handle", timeout=30_000)
    page.wait_for_timeout(1500)
    page.evaluate(_PROBE)
    handle = page.locator(".noUi-handle").first
    handle.focus()
    out: dict[str, list[float]] = {"data": [], "pixels": []}
    for i in range(warmup + samples):
        if between is not None:
            between()
            page.bring_to_front()
            handle.focus()
        handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        deadline = time.monotonic() + redraw_timeout_s
        while True:
            page.wait_for_timeout(50)
            r = page.evaluate(_RESULT)
            if r["pixels"] is not None and not r["active"]:  # 400 ms without a further change
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"no redraw seen after press {i} on {url}: {r}")
        if i >= warmup and r["data"] is not None:
            out["data"].append(r["data"])
            out["pixels"].append(r["pixels"])
        page.wait_for_timeout(100 + (i * 37) % 120)  # do not fall into step with anything periodic
    return out


def print_table(results: dict, rows: tuple, first: str, ratio_title: str, target: float) -> None:
    """The latency table of ``rows`` ((key, label), ...) and the p95 ratio of the second row's
    redraws to the first's, against ``target``."""
    print(f"| {first} | N | data in browser: median | p95 | pixels redrawn: median | p95 |")
    print("|---|---|---|---|---|---|")
    for name, label in rows:
        r = results[name]
        print(f"| {label} | {len(r['pixels'])} | {statistics.median(r['data']):.0f} ms | "
              f"{_pct(r['data'], 0.95):.0f} ms | {statistics.median(r['pixels']):.0f} ms | "
              f"{_pct(r['pixels'], 0.95):.0f} ms |")
    (base, _), (other, _) = rows
    ratio = _pct(results[other]["pixels"], 0.95) / _pct(results[base]["pixels"], 0.95)
    med = statistics.median(results[other]["pixels"]) / statistics.median(results[base]["pixels"])
    print(f"\n{ratio_title}, pixels p95: {ratio:.2f}x (median {med:.2f}x); target <= {target}x: "
          f"{'met' if ratio <= target else 'NOT met'}.")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=3,
                    help="alternate the apps in this many blocks, so load drift hits both alike")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("Chromium is needed: apt-get install -y chromium", file=sys.stderr)
        return 2
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_live(url, proc)
        results = {}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            per_block = max(1, args.samples // args.blocks)
            for name in ("bare", "ep3") * args.blocks:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.bring_to_front()
                got = measure(page, f"{url}/{name}", per_block, args.warmup)
                page.close()
                for key, vals in got.items():
                    results.setdefault(name, {}).setdefault(key, []).extend(vals)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)

    import bokeh
    import panel

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Slider step -> browser, {platform.machine()} {platform.system()}, "
          f"{os.cpu_count()} CPUs (load average {load} at the end), Python "
          f"{platform.python_version()}, panel {panel.__version__}, bokeh {bokeh.__version__}, "
          "Chromium headless; times from keydown in the page.\n")
    print_table(results, (("bare", "bare Panel slider app (1 line)"),
                          ("ep3", "Episode 3 (2,000 rounds, 2 figures, numbers)")),
                "app", "Episode 3 / bare", TARGET)
    return 0


if __name__ == "__main__":
    sys.exit(main())

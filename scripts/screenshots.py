"""Screenshot every page at a desktop and a phone width, with seeded randomness.

Usage: ``.venv/bin/python scripts/screenshots.py OUT_DIR [--only WORD]``
(``--only playing`` takes only the shots whose name contains "playing").

Pages are served from this process with fixed seeds, so two runs of the same code
give the same pixels, and ``scripts/pixel_diff.py`` can compare the shots of two
versions of the code. Besides each page at rest it takes a few states in motion:
Episodes 1 and 2 part-way through playing (the page's clock is Playwright's fake
clock, advanced by a fixed time), Episode 2 after two "Step one round" presses with
reduced motion, Episode 5 after three presses of Simulate, and two pages opened from links.
"""

from __future__ import annotations

import argparse
import shutil
import socket
from pathlib import Path

import panel as pn
from playwright.sync_api import sync_playwright

from specdec_playable.episodes import EPISODES
from specdec_playable.app.site import SERVICE, index_page

WIDTHS = (1280, 390)
SEED = 1
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
#: Pages opened from a shared link: a setup where speculation loses, and a bad link (Episode 2's
#: draft quality under its first URL key) that the page corrects and says so.
LINKS = [("ep3-slower", "/ep3_the_quality_dial?q=0.25&k=12&c=0.3"),
         ("ep2-badlink", "/ep2_the_relay?quality=2&k=99&seed=5")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _apps() -> dict:
    apps = {"/": index_page}
    for ep in EPISODES:
        apps[ep.slug] = (lambda ep=ep: ep.page(seed=SEED, service=SERVICE))  # fresh, seeded, as served
    return apps


def _settle(page, ms: int = 1500) -> None:
    page.bring_to_front()  # a tab in the background gets no animation frames
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
    page.wait_for_load_state("networkidle")
    _scroll_through(page)
    page.evaluate("document.fonts.ready")
    page.wait_for_timeout(ms)


def _scroll_through(page) -> None:
    """Scroll down a screen at a time to the end, so every part built on scroll is built (the
    page grows as parts arrive), then back to the top."""
    y = 0
    for _ in range(100):
        height = page.evaluate("() => document.documentElement.scrollHeight")
        if y >= height:
            break
        y += page.viewport_size["height"]
        page.evaluate(f"() => window.scrollTo(0, {y})")
        page.wait_for_timeout(400)
    # Then wait until no part still holds its loading mark (a slot of class sdp-near whose first
    # child is the mark, a component with a ``near`` flag).
    page.wait_for_function("""() => ![...Bokeh.documents[0].all_models].some(m =>
        (m.css_classes || []).includes('sdp-near') && m.children && m.children[0]
        && m.children[0].data && typeof m.children[0].data.near === 'boolean')""", timeout=60_000)
    page.wait_for_load_state("networkidle")
    page.evaluate("() => window.scrollTo(0, 0)")


def main(out: Path, only: str = "") -> None:
    if out.exists() and not only:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    server = pn.serve(_apps(), port=port, address="127.0.0.1", show=False, threaded=True,
                      websocket_origin=[f"127.0.0.1:{port}"])
    url = f"http://127.0.0.1:{port}"
    slugs = [("index", "/")] + [(f"ep{e.number}", f"/{e.slug}") for e in EPISODES] + LINKS
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=CHROMIUM_ARGS)
            for width in WIDTHS:
                ctx = browser.new_context(viewport={"width": width, "height": 900})
                page = ctx.new_page()
                for name, path in slugs:
                    if only not in f"{name}-{width}":
                        continue
                    page.goto(url + path)
                    _settle(page)
                    page.screenshot(path=out / f"{name}-{width}.png", full_page=True)
                    print(f"{name}-{width}.png", flush=True)
                # Episodes 1 and 2 part-way through a run, on a fake clock.
                # The fake clock fires animation frames every 16 ms at a phase set by when
                # the page loaded; a whole number of frame periods gives the same number of
                # frames (and so the same picture) whatever that phase.
                for name, path, run_ms in (("ep1", "/ep1_writing_vs_checking", 94 * 16),
                                           ("ep2", "/ep2_the_relay", 156 * 16)):
                    if only not in f"{name}-playing-{width}":
                        continue
                    # A context of its own: Playwright's fake clock belongs to the whole
                    # context, and it must not stop the shots after this one.
                    clock_ctx = browser.new_context(viewport={"width": width, "height": 900})
                    fake = clock_ctx.new_page()
                    fake.clock.install()
                    fake.goto(url + path)
                    _settle(fake)
                    # From here the page's time moves only when run_for moves it.
                    fake.clock.pause_at(fake.evaluate("Date.now()") + 1000)
                    fake.get_by_role("button", name="Play").click()
                    fake.clock.run_for(run_ms)
                    fake.get_by_role("button", name="Pause").click()
                    fake.clock.run_for(1500)
                    fake.mouse.move(0, 0)
                    fake.screenshot(path=out / f"{name}-playing-{width}.png", full_page=True)
                    clock_ctx.close()
                    print(f"{name}-playing-{width}.png", flush=True)
                # Episode 5 with three simulated points.
                if only in f"ep5-points-{width}":
                    _ep5_points(page, url, out, width)
                ctx.close()
                if only in f"ep2-stepped-{width}":
                    _ep2_stepped(browser, url, out, width)
            browser.close()
    finally:
        server.stop()


def _ep5_points(page, url, out, width):
    page.goto(url + "/ep5_the_break_even_map")
    _settle(page)
    for n in range(1, 4):
        page.get_by_role("button", name="Simulate 400 rounds").click()
        page.wait_for_function(
            "n => Bokeh.documents[0].get_model_by_name('ep5-points').data.q.length === n", arg=n)
    page.mouse.move(0, 0)
    page.wait_for_timeout(800)
    page.screenshot(path=out / f"ep5-points-{width}.png", full_page=True)
    print(f"ep5-points-{width}.png", flush=True)


def _ep2_stepped(browser, url, out, width):
    """Episode 2 stepped twice, without motion."""
    ctx = browser.new_context(viewport={"width": width, "height": 900},
                              reduced_motion="reduce")
    page = ctx.new_page()
    page.goto(url + "/ep2_the_relay")
    _settle(page)
    page.get_by_role("button", name="Restart").click()
    for _ in range(2):
        page.get_by_role("button", name="Step one round").click()
        page.wait_for_timeout(300)
    page.mouse.move(0, 0)
    page.wait_for_timeout(800)
    page.screenshot(path=out / f"ep2-stepped-{width}.png", full_page=True)
    print(f"ep2-stepped-{width}.png", flush=True)
    ctx.close()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", default="", help="take only shots whose name contains this")
    args = ap.parse_args()
    main(args.out, args.only)

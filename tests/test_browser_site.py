"""Browser tier: the index and Episode 1, served and driven in Chromium."""

from __future__ import annotations

import pytest
from conftest import assert_clean, model_data, page_text, wait_for_bokeh, wait_for_text

from specdec_playable.sim import clocks
from specdec_playable.episodes import EPISODES

pytestmark = pytest.mark.browser


def test_index_lists_every_built_episode_in_order(page, site, console, artifacts):
    page.goto(site.url + "/")
    wait_for_bokeh(page)
    page.wait_for_selector("ol.sdp-episodes a")
    hrefs = page.eval_on_selector_all("ol.sdp-episodes a", "els => els.map(e => e.getAttribute('href'))")
    assert hrefs == [f"./{e.slug}" for e in EPISODES]
    page.screenshot(path=artifacts / "index.png", full_page=True)
    assert_clean(page, console)
    # Every link leads to a page that renders.
    page.locator("ol.sdp-episodes a").first.click()
    wait_for_bokeh(page, "ep1-bars")
    assert page.url.split("?")[0].endswith("/" + EPISODES[0].slug)


def _clock_values(page):
    return model_data(page, "ep1-clocks")


def test_episode1_play_runs_both_clocks_to_the_simulated_times(page, site, console, artifacts):
    page.goto(site.url + "/ep1_writing_vs_checking")
    wait_for_bokeh(page, "ep1-bars")
    page.bring_to_front()
    expected = clocks.sequential_vs_parallel(6, 600.0)
    page.get_by_role("button", name="Play").click()
    page.wait_for_timeout(800)
    mid = _clock_values(page)
    # Mid-run: the writing clock is still running, the checking clock has not passed 600 ms.
    assert 0 < mid["x"][0] < expected.sequential_ms
    assert mid["x"][1] <= expected.parallel_ms
    # The big clocks beside the lanes run with them (not the finish times), and the ratio
    # waits until writing is done.
    big = page.locator("[data-sdp-live] [data-clock]").all_text_contents()
    assert len(big) == 2 and big[0] != "3,600 ms"
    assert int(big[0].replace(",", "").split()[0]) < expected.sequential_ms
    assert page.locator("[data-sdp-live] [data-after]").is_hidden()
    page.screenshot(path=artifacts / "ep1-playing.png", full_page=True)
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep1-play').label === 'Play'", timeout=15_000)
    end = _clock_values(page)
    assert end["x"] == [expected.sequential_ms, expected.parallel_ms]
    assert end["text"][0].startswith("3,600 ms") and end["text"][1].startswith("600 ms")
    page.screenshot(path=artifacts / "ep1.png", full_page=True)
    assert_clean(page, console)


def test_episode1_slider_recomputes_timeline_from_core(page, site, console):
    page.goto(site.url + "/ep1_writing_vs_checking")
    wait_for_bokeh(page, "ep1-bars")
    handle = page.locator(".noUi-handle").first
    handle.focus()
    handle.press("End")  # N = 16
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep1-clocks').data.lane_end[0] === 9600",
        timeout=10_000)
    bars = model_data(page, "ep1-bars")
    expected = clocks.sequential_vs_parallel(16, 600.0)
    seq_end = [e for e, lane in zip(bars["end"], bars["lane"]) if lane == "sequential"]
    assert seq_end == expected.sequential.end_ms.tolist()
    # Not played yet: the page rests on the start of the run, the result hidden until Play.
    assert "writing 16 tokens: 16 passes, one after another" in page_text(page)
    assert model_data(page, "ep1-clocks")["x"] == [0, 0]
    # The lede states the pass time the slider is set to.
    assert "a simulated 600 ms per pass" in page_text(page)
    page.locator(".noUi-handle").nth(1).focus()
    page.locator(".noUi-handle").nth(1).press("ArrowRight")  # 650 ms
    wait_for_text(page, "a simulated 650 ms per pass")
    assert "a simulated 600 ms per pass" not in page_text(page)
    assert_clean(page, console)


def test_one_episode_served_alone_with_panel_serve(page, console, artifacts):
    """`panel serve episodes/<slug>.py` serves that episode at /<slug>."""
    import subprocess
    import sys
    import time
    import urllib.request

    from conftest import ROOT, free_port

    ep = EPISODES[0]
    port = free_port()
    log = open(artifacts / "panel-serve-single.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", f"episodes/{ep.slug}.py", "--address", "127.0.0.1",
         "--port", str(port), "--allow-websocket-origin", f"127.0.0.1:{port}", "--liveness"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/liveness", timeout=2)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "panel serve did not start"
                time.sleep(0.3)
        page.goto(f"http://127.0.0.1:{port}/{ep.slug}")
        wait_for_bokeh(page, "ep1-bars")
        assert "Episode 1" in page_text(page)
        assert_clean(page, console)
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def test_a_page_says_when_its_connection_is_lost_and_offers_a_reload(page, console, artifacts):
    """The summary of a server of its own (it is stopped on purpose): first the model's status
    line (not loaded: this server loads it with the first run), then, once the server is gone, a
    banner at the top that says the page no longer answers, with a reload button of a touch
    target's height."""
    from conftest import Server

    server = Server(log_path=artifacts / "server-connection-lost.log")
    try:
        page.goto(f"{server.url}/summary")
        wait_for_bokeh(page)
        wait_for_text(page, "The model: not loaded yet; the first run loads it")
        assert page.locator("#sdp-connection-banner").count() == 0
        assert_clean(page, console)
    finally:
        server.stop()
    banner = page.locator("#sdp-connection-banner")
    banner.wait_for(state="visible", timeout=15_000)
    assert banner.get_attribute("role") == "alert"
    assert "connection to the server was lost" in banner.inner_text()
    box = banner.bounding_box()
    assert box["y"] <= 1 and box["width"] >= page.viewport_size["width"] - 1  # across the top
    button = banner.get_by_role("button", name="Reload the page")
    assert button.bounding_box()["height"] >= 44
    page.screenshot(path=artifacts / "connection-lost.png")

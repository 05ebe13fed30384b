"""Browser tier: Episodes 3 and 5 served and driven in Chromium.

Sliders are moved with the keyboard on their noUiSlider handles (order on the page:
q, k, c); what the browser draws is read back from the named Bokeh sources and
compared with ``sim.theory``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from playwright.sync_api import expect
from conftest import (
    assert_clean,
    model_data,
    page_text,
    slider_handle,
    wait_data,
    wait_for_bokeh,
    wait_for_text,
)

from specdec_playable.sim import theory
from specdec_playable.episodes import ep3, ep5
from specdec_playable.kit import presets
from specdec_playable.episodes.ep5.state import Q_GRID

pytestmark = pytest.mark.browser

EP3 = "/" + ep3.EPISODE.slug
EP5 = "/" + ep5.EPISODE.slug


# --- Episode 3 ---------------------------------------------------------------------------


def test_ep3_sliders_resimulate_and_redraw_against_theory(page, site, console, artifacts):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + EP3)
    wait_for_bokeh(page, "ep3-hist")
    bars = model_data(page, "ep3-bars")
    np.testing.assert_allclose(bars["theory"], theory.expected_speedup(0.8, np.arange(1, 17), 0.1),
                               rtol=1e-12)
    best = model_data(page, "ep3-best")
    assert best["k"] == [theory.best_k(0.8, 0.1)] == [6]
    text = page_text(page)
    assert "2.40×" in text and "theory" in text and "k = 6" in text
    page.screenshot(path=artifacts / "ep3.png", full_page=True)

    # k to 16: the histogram gets 17 bars (0..16 accepted) and the measured point moves to k = 16.
    k = slider_handle(page, 1)
    k.focus()
    k.press("End")
    wait_data(page, "ep3-hist", "d.a.length === 17")
    assert k.get_attribute("aria-valuetext").startswith("16")
    hist = model_data(page, "ep3-hist")
    np.testing.assert_allclose(hist["theory"], theory.accepted_pmf(0.8, 16), rtol=1e-12)
    assert sum(hist["rounds"]) == 2000
    assert model_data(page, "ep3-measured")["k"] == [16]

    # q down to 0.25: speculating is now slower, and the page says so in words.
    q = slider_handle(page, 0)
    q.focus()
    q.press("Home")
    for _ in range(25):
        q.press("ArrowRight")
    assert q.get_attribute("aria-valuetext") == "0.25"
    wait_data(page, "ep3-bars", "Math.abs(d.theory[0] - %r) < 1e-12"
               % theory.expected_speedup(0.25, 1, 0.1))
    wait_for_text(page, "slower than not speculating")
    measured = model_data(page, "ep3-measured")
    assert measured["speedup"][0] < 1
    assert measured["lo"][0] < measured["speedup"][0] < measured["hi"][0]
    assert model_data(page, "ep3-best")["k"] == [theory.best_k(0.25, 0.1)]
    page.screenshot(path=artifacts / "ep3-slower.png", full_page=True)
    assert_clean(page, console)


def test_ep3_run_again_draws_fresh_rounds(page, site, console, artifacts):
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(site.url + EP3)
    wait_for_bokeh(page, "ep3-hist")
    before = model_data(page, "ep3-hist")["rounds"]
    page.get_by_role("button", name="Run 2,000 new rounds").click()
    page.wait_for_function(
        "b => JSON.stringify(Array.from(Bokeh.documents[0].get_model_by_name('ep3-hist').data.rounds))"
        " !== b", arg=str(before).replace(" ", ""), timeout=10_000)
    after = model_data(page, "ep3-hist")["rounds"]
    assert after != before and sum(after) == 2000
    page.screenshot(path=artifacts / "ep3-800.png", full_page=True)
    assert_clean(page, console)


# --- Episode 5 ---------------------------------------------------------------------------


def _assert_curves_are_theory(page, c):
    curves = model_data(page, "ep5-curves")
    assert set(curves["k"]) >= {1, 2, 3, 4, 6, 8, 12}
    for k, xs, ys in zip(curves["k"], curves["xs"], curves["ys"]):
        np.testing.assert_allclose(xs, Q_GRID, rtol=0, atol=0)
        np.testing.assert_allclose(ys, theory.expected_speedup(Q_GRID, k, c), rtol=1e-12)
    be = model_data(page, "ep5-breakeven")
    for k, q in zip(be["k"], be["q"]):
        assert q == pytest.approx(theory.break_even_q(k, c), abs=1e-12)
    return curves, be


def test_ep5_curves_and_break_even_markers_are_theory(page, site, console, artifacts):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + EP5)
    wait_for_bokeh(page, "ep5-curves")
    _, be = _assert_curves_are_theory(page, 0.15)
    marked = {k: round(q, 2) for k, q in zip(be["k"], be["q"])}
    assert {k: marked[k] for k in (1, 2, 4, 6)} == {1: 0.15, 2: 0.24, 4: 0.38, 6: 0.48}
    page.screenshot(path=artifacts / "ep5.png", full_page=True)

    # Draft cost c one step right: every curve and marker moves to the new theory.
    c = slider_handle(page, 2)
    c.focus()
    c.press("ArrowRight")
    wait_data(page, "ep5-breakeven", "Math.abs(d.q[0] - %r) < 1e-12" % theory.break_even_q(1, 0.16))
    _assert_curves_are_theory(page, 0.16)
    # k to 5: a curve for k = 5 appears and is drawn strongest.
    k = slider_handle(page, 1)
    k.focus()
    k.press("ArrowRight")
    wait_data(page, "ep5-curves", "d.k.includes(5)")
    curves = model_data(page, "ep5-curves")
    widths = dict(zip(curves["k"], curves["width"]))
    assert widths[5] == max(widths.values()) and sorted(widths.values())[-2] < widths[5]
    assert_clean(page, console)


def test_ep5_simulate_adds_points_and_clear_removes_them(page, site, console, artifacts):
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(site.url + EP5)
    wait_for_bokeh(page, "ep5-points")
    simulate = page.get_by_role("button", name="Simulate 400 rounds")
    for n in (1, 2, 3, 4, 5, 6):
        simulate.click()
        wait_data(page, "ep5-points", f"d.q.length === {n}")
    pts = model_data(page, "ep5-points")
    expected = theory.expected_speedup(0.6, 4, 0.15)
    assert pts["q"] == [0.6] * 6 and pts["k"] == [4] * 6
    assert all(t == pytest.approx(expected, rel=1e-12) for t in pts["theory"])
    assert all(lo < s < hi for lo, s, hi in zip(pts["lo"], pts["speedup"], pts["hi"]))
    # Fresh randomness on every press: six identical measurements would mean a reused stream.
    assert len(set(pts["speedup"])) > 1
    misses = sum(not (lo <= t <= hi) for lo, t, hi in zip(pts["lo"], pts["theory"], pts["hi"]))
    wait_for_text(page, "6 simulated points")
    assert f"{misses} of them" in page_text(page)
    page.screenshot(path=artifacts / "ep5-points-800.png", full_page=True)

    page.get_by_role("button", name="Clear points").click()
    wait_data(page, "ep5-points", "d.q.length === 0")
    wait_for_text(page, "No simulated points yet")
    assert_clean(page, console)


def test_ep5_presets_set_the_sliders_and_show_their_source(page, site, console, artifacts):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + EP5)
    wait_for_bokeh(page, "ep5-curves")
    p = presets.by_key()

    page.get_by_role("button", name=p["chinchilla"].label).click()
    wait_data(page, "ep5-breakeven", "Math.abs(d.q[0] - %r) < 1e-12" % theory.break_even_q(1, 0.13))
    # the handles follow the sliders' values a moment after the data on a loaded machine: wait
    expect(slider_handle(page, 1)).to_have_attribute("aria-valuetext", re.compile(r"^4"))  # k from the source
    expect(slider_handle(page, 2)).to_have_attribute("aria-valuetext", "0.13")
    expect(slider_handle(page, 0)).to_have_attribute("aria-valuetext", "0.60")  # q kept
    wait_for_text(page, "Chen, Borgeaud")
    assert "not given by the source" in page_text(page)

    page.get_by_role("button", name=p["t5"].label).click()
    wait_data(page, "ep5-you", "Math.abs(d.q[0] - 0.75) < 1e-12")
    expect(slider_handle(page, 0)).to_have_attribute("aria-valuetext", "0.75")
    expect(slider_handle(page, 2)).to_have_attribute("aria-valuetext", "0.02")
    # A screen reader hears the exact value, not noUiSlider's one-decimal rounding (0.8, 0).
    assert slider_handle(page, 0).get_attribute("aria-valuenow") == "0.75"
    assert slider_handle(page, 2).get_attribute("aria-valuenow") == "0.02"
    assert (slider_handle(page, 2).get_attribute("aria-valuemin"), slider_handle(page, 2).get_attribute("aria-valuemax")) \
        == ("0", "1")
    wait_for_text(page, "Leviathan, Kalman and Matias, “Fast")

    page.get_by_role("button", name=p["h200-1b"].label).click()
    wait_data(page, "ep5-breakeven", "Math.abs(d.q[0] - %r) < 1e-12" % theory.break_even_q(1, 0.236))
    _assert_curves_are_theory(page, 0.236)
    wait_for_text(page, "NVIDIA H200")
    assert "c = 0.236" in page_text(page)
    assert slider_handle(page, 0).get_attribute("aria-valuetext") == "0.75"  # q kept from before
    page.screenshot(path=artifacts / "ep5-preset.png", full_page=True)
    assert_clean(page, console)

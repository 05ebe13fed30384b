"""Browser tier: Episode 6 served and driven in Chromium.

Part 1: a real context's p against the draft head's q; pick another context, push the
bias to the favourite to its end, pick 100,000 samples, draw; the browser's chart data follows
the real p (checked against the state's own numbers) and the page reports the test.
Part 2: change the draft cost and press "New randomness"; the five lines and the table
are redrawn, each policy's line ends at the stream's length.
"""

from __future__ import annotations

import importlib

import time

import numpy as np
import pytest
from conftest import assert_clean, model_data, page_text, wait_for_bokeh, wait_for_text

from specdec_playable.data import measured
from specdec_playable.episodes import ep6
from specdec_playable.episodes.ep6.state import RACE_TEXTS, REPEATS, FinePrint, draft_distribution
from specdec_playable.kit.tokens import token_label
ep6_page = importlib.import_module("specdec_playable.episodes.ep6.page")

pytestmark = pytest.mark.browser

PATH = "/" + ep6.EPISODE.slug
N_STREAM = len(measured.measured_stream(RACE_TEXTS, REPEATS))


def _open(page, site, width=1280):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(site.url + PATH)
    wait_for_bokeh(page, "ep6-wall-4")
    page.wait_for_timeout(500)


def test_ep6_part1_samples_follow_real_p_whatever_q(page, site, console, artifacts):
    _open(page, site)
    start = measured.context(FinePrint.param.context.default)
    models = model_data(page, "ep6-models")
    np.testing.assert_allclose(models["p_big"], start.p)
    np.testing.assert_allclose(models["p_draft"], start.q, rtol=1e-12)
    assert models["word"][-1] == measured.REST
    assert models["word"][0] == token_label(start.labels[0])
    text = page_text(page)
    assert "theory: q = sum over x of min(p" in text and f"After “{start.context}”" in text

    # Another context: the Python one, where the draft agrees with the model.
    ctx = measured.context(measured.CONTEXTS[-1])
    page.get_by_label("Context").select_option(index=len(measured.CONTEXTS) - 1)
    page.wait_for_function(
        "w => Bokeh.documents[0].get_model_by_name('ep6-models').data.word[0] === w",
        arg=token_label(ctx.labels[0]), timeout=10_000)
    np.testing.assert_allclose(model_data(page, "ep6-models")["p_big"], ctx.p)

    # Bias to its end (0.9): the draft now proposes the big model's 2nd token at least 90 % of
    # the time. Handles: temperature, favourite, bias.
    bias = page.locator(".noUi-handle").nth(2)
    bias.focus()
    bias.press("End")
    q9 = draft_distribution(ctx.context, 1.0, 2, 0.9)
    page.wait_for_function(
        "q => Math.abs(Bokeh.documents[0].get_model_by_name('ep6-models').data.p_draft[1] - q) < 1e-9",
        arg=float(q9[1]), timeout=10_000)
    assert q9[1] >= 0.9

    # 100,000 samples, then a fresh draw with the button.
    page.get_by_label("Samples N").select_option(label="100,000")
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep6-out').data.count.reduce((a, b) => a + b) === 100000",
        timeout=15_000)
    before = model_data(page, "ep6-out")["count"]
    page.get_by_role("button", name="Draw N new samples").click()
    page.wait_for_function(
        "b => JSON.stringify(Array.from(Bokeh.documents[0].get_model_by_name('ep6-out').data.count)) !== b",
        arg=str(before).replace(" ", ""), timeout=15_000)
    out = model_data(page, "ep6-out")
    counts = np.array(out["count"])
    assert counts.sum() == 100_000
    freq = counts / counts.sum()
    # Within 1 percentage point of the real p everywhere (binomial sd at 100,000 draws is < 0.16
    # points), and far from q for the favourite token.
    assert np.abs(freq - ctx.p).max() < 0.01
    assert abs(freq[1] - q9[1]) > 0.5
    wait_for_text(page, "Measured on 100,000 draws")
    text = page_text(page)
    theory = np.minimum(ctx.p, q9).sum()
    assert f"{theory:.1%}" in text
    page.screenshot(path=artifacts / "ep6-part1.png", full_page=True)
    assert_clean(page, console)


def test_ep6_part2_race_redraws_on_cost_and_new_randomness(page, site, console, artifacts):
    _open(page, site)
    first = [model_data(page, f"ep6-wall-{i}") for i in range(5)]
    for d in first:
        assert d["x"][-1] == N_STREAM  # every policy writes the whole stream
        assert all(b >= a for a, b in zip(d["y"], d["y"][1:]))  # the clock never runs backwards
    text = page_text(page)
    for label in ("fixed k = 4", "+2 / −1 heuristic", "best k from estimate",
                  "best k, off below break-even", "k from the match length", "★ fastest"):
        assert label in text

    # Draft cost c: the handle after temperature, favourite and bias; End = 0.60.
    c = page.locator(".noUi-handle").nth(3)
    c.focus()
    c.press("End")
    assert c.get_attribute("aria-valuetext") == "0.60"
    page.wait_for_function(
        "y => Bokeh.documents[0].get_model_by_name('ep6-wall-0').data.y.at(-1) !== y",
        arg=first[0]["y"][-1], timeout=10_000)
    k_off = model_data(page, "ep6-k-3")
    assert 0 in k_off["y"]  # at c = 0.6 the off-switch policy does switch off in the poem
    k_match = model_data(page, "ep6-k-4")  # the match-length policy: off where nothing matches
    assert 0 in k_match["y"] and max(k_match["y"]) >= 2

    seed_before = page.get_by_role("textbox", name="Race seed").input_value()
    page.get_by_role("button", name="New randomness").click()
    wait_for_text(page, "Every policy saw the same draw (seed")
    deadline = time.monotonic() + 10
    while f"(seed {seed_before})" in page_text(page):
        assert time.monotonic() < deadline, "the race seed never changed"
        page.wait_for_timeout(50)
    assert page.get_by_role("textbox", name="Race seed").input_value() != seed_before
    for i in range(5):
        assert model_data(page, f"ep6-wall-{i}")["x"][-1] == N_STREAM
    page.screenshot(path=artifacts / "ep6-part2.png", full_page=True)
    assert_clean(page, console)


def test_ep6_fits_a_phone(page, site, console, artifacts):
    _open(page, site, width=390)
    scroll, client = page.evaluate(
        "() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
    page.screenshot(path=artifacts / "ep6-390.png", full_page=True)
    assert scroll <= client
    assert_clean(page, console)

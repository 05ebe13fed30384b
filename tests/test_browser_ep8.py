"""Browser tier: Episode 8 served and driven in Chromium.

Sliders are moved with the keyboard on their noUiSlider handles (order on the page: q, k,
c, B, then the tree's q, w, d); what the browser draws is read back from the named Bokeh
sources and compared with the core.
"""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect
from conftest import (
    assert_clean,
    model_data,
    near_marks,
    page_text,
    reveal_all,
    slider_handle,
    wait_data,
    wait_for_bokeh,
    wait_for_text,
)

from specdec_playable.data import hardware, tree_table
from specdec_playable.sim import batching, trees
from specdec_playable.episodes import ep8
from specdec_playable.episodes.ep8.state import BATCH_MAX, BusyAndTrees

pytestmark = pytest.mark.browser

URL = "/" + ep8.EPISODE.slug


def test_ep8_batch_slider_reprices_and_the_page_says_so(page, site, console, artifacts):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + URL)
    wait_for_bokeh(page, "ep8-here")
    curve = hardware.measured_curve()
    here = model_data(page, "ep8-here")
    want = float(batching.batch_costs(0.8, 4, 0.05, 1, curve).speedup[()])
    assert here["b"] == [1] and here["s"][0] == pytest.approx(want, rel=1e-9)
    line = model_data(page, "ep8-you-line")
    assert len(line["b"]) == BATCH_MAX
    wait_for_text(page, f"{want:.2f}×")
    page.screenshot(path=artifacts / "ep8.png", full_page=True)

    b = slider_handle(page, 3)
    b.focus()
    for want in (2, 4, 8):  # one arrow step is the next power of two, so small batches are easy to hit
        b.press("ArrowRight")
        wait_data(page, "ep8-here", f"d.b[0] === {want}")
        expect(b).to_have_attribute("aria-valuetext", str(want))
    b.press("End")
    wait_data(page, "ep8-here", f"d.b[0] === {BATCH_MAX}")
    expect(b).to_have_attribute("aria-valuetext", f"{BATCH_MAX:,}")
    # At the end of its track the handle stays clear of the words beside the controls.
    handle = b.bounding_box()
    text_box = page.locator(".sdp-stat").first.bounding_box()  # the first number beside the sliders
    assert handle["x"] + handle["width"] <= text_box["x"], (handle, text_box)
    slow = float(batching.batch_costs(0.8, 4, 0.05, BATCH_MAX, curve).speedup[()])
    assert slow < 1.0
    assert model_data(page, "ep8-here")["s"][0] == pytest.approx(slow, rel=1e-9)
    wait_for_text(page, f"speculation is slower: {slow:.2f}× as fast as plain decoding")
    edge = batching.break_even_batch(0.8, 4, 0.05, curve)
    assert f"stops paying at batch {edge:,}" in page_text(page)
    marks = model_data(page, "ep8-marks")
    assert marks["n"] == [BATCH_MAX, BATCH_MAX * 5]
    assert_clean(page, console)


def test_ep8_tree_controls_redraw_the_tree_and_its_mask(page, site, console, artifacts):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + URL + "?width=2&depth=3")
    wait_for_bokeh(page, "ep8-mask")
    mask = model_data(page, "ep8-mask")
    want = trees.ancestor_mask(trees.spine_tree(2, 3))
    assert len(mask["v"]) == want.size
    np.testing.assert_array_equal(np.array(mask["v"]).reshape(want.shape), want.astype(int))
    w = slider_handle(page, 5)
    w.focus()
    w.press("End")                                   # four candidates per level
    want = trees.ancestor_mask(trees.spine_tree(4, 3))
    wait_data(page, "ep8-mask", f"d.v.length === {want.size}")
    mask = model_data(page, "ep8-mask")
    np.testing.assert_array_equal(np.array(mask["v"]).reshape(want.shape), want.astype(int))
    nodes = model_data(page, "ep8-nodes")
    assert len(nodes["x"]) == 1 + 12
    wait_for_text(page, "score 12 positions")
    dots = model_data(page, "ep8-tree-dots")
    assert dots["what"] == ["chain of 12", "tree 4 × 3"]
    assert_clean(page, console)


@pytest.mark.parametrize("size", [(390, 844), (800, 600)], ids=["phone", "iframe"])
def test_ep8_fits_small_screens(page, site, console, artifacts, size):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(site.url + URL)
    wait_for_bokeh(page, "ep8-tree-dots")
    page.wait_for_timeout(500)
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"page is {overflow}px wider than the {size[0]}px screen"
    page.screenshot(path=artifacts / f"ep8-{size[0]}.png", full_page=True)
    assert_clean(page, console)


def test_ep8_part3_draws_the_recorded_real_step_and_the_measured_table(page, site, console,
                                                                       artifacts):
    from specdec_playable.episodes.ep8.state import cpu_curve, real_tree_step, real_tree_table
    from specdec_playable.episodes.ep8 import real_tree as real

    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + URL)
    wait_for_bokeh(page, "ep8-real-nodes")
    step = real_tree_step()
    nodes = model_data(page, "ep8-real-nodes")
    # Each node shows its token, and every drafted node and the model's own token its verdict's
    # mark (colour is never the only cue): ✓ kept, ✗ rejected, – not checked; the model's own last.
    tokens = [real.token_label(t) for t in (step.root_text, *step.texts, step.text)]
    assert nodes["text"][0] == tokens[0]
    status = real.STATUS
    for shown, token, a, j in zip(nodes["text"][1:-1], tokens[1:-1], step.accepted, step.judged):
        mark = status["accepted" if a else "rejected" if j else "discarded"]["mark"]
        assert shown == f"{mark} {token}", (shown, token)
    assert nodes["text"][-1].endswith(tokens[-1]) and nodes["text"][-1] != tokens[-1]
    assert len({status[k]["mark"] for k in ("accepted", "rejected", "discarded")}) == 3
    assert nodes["fill"].count(real.theme.ACCEPTED) == len(step.path)
    mask = model_data(page, "ep8-real-mask")
    size = len(step.tokens) + 1
    grid = np.zeros((size, size), int)
    grid[mask["i"], mask["j"]] = mask["v"]
    np.testing.assert_array_equal(grid > 0, step.mask)
    table = real_tree_table()
    words = real.table_sentence(table, tree_table.pass_costs(table, cpu_curve()))
    wait_for_text(page, words.split(";")[0])                # the sentence, as computed
    text = page_text(page)
    assert f"one pass of {size} positions" in text
    assert_clean(page, console)


def test_ep8_parts_further_down_are_built_as_the_visitor_scrolls_to_them(page, site, console):
    # A visitor who does not scroll gets the first screen and the part within one screen below
    # it (the rest of part 1); each part further down is built when it comes within a screen
    # of the visible page, and then works like the rest.
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(site.url + URL)
    page.wait_for_function(
        "() => window.Bokeh && Bokeh.documents.length > 0 && "
        "Bokeh.documents[0].get_model_by_name('ep8-here') !== null", timeout=30_000)
    page.wait_for_timeout(1500)  # time enough for anything built at load to arrive
    has = lambda n: page.evaluate(  # noqa: E731
        "n => Bokeh.documents[0].get_model_by_name(n) !== null", n)
    assert near_marks(page) == 2
    assert not has("ep8-tree-lines") and not has("ep8-real-nodes")
    wait_for_text(page, "Loading this part of the page…")
    marks = page.locator(".sdp-near-mark")
    marks.nth(0).scroll_into_view_if_needed()  # part 2
    page.wait_for_function("() => Bokeh.documents[0].get_model_by_name('ep8-tree-lines') !== null",
                           timeout=15_000)
    chain, tree = BusyAndTrees().tree_curves()  # the page's defaults
    drawn = model_data(page, "ep8-tree-lines")
    np.testing.assert_allclose(drawn["chain"], chain, rtol=1e-9)
    np.testing.assert_allclose(drawn["tree"], tree, rtol=1e-9)
    assert not has("ep8-real-nodes")  # part 3 waits for its own turn
    reveal_all(page)
    assert near_marks(page) == 0 and has("ep8-real-nodes")
    assert_clean(page, console)

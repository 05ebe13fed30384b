"""Browser tier: Episode 4 served and driven in Chromium.

Every number the page shows is checked against the state class run with the
seed the page reports, so a wrong wire-up fails, not just a missing chart. The
page shows the real model's tokens with their measured acceptance; a pasted text
is scored by the real model on the server's worker.
"""

from __future__ import annotations

import time

import pytest
from conftest import assert_clean, model_data, page_text, wait_for_bokeh, wait_for_text

from specdec_playable.runtime import service as interface

from specdec_playable.runtime import jobs
from specdec_playable.kit.follower import RunFollower
from specdec_playable.data import measured, texts
from specdec_playable.episodes.ep4.state import BoilerplateVsPoetry

pytestmark = pytest.mark.browser

URL = "/ep4_boilerplate_vs_poetry"
PAYLOAD = '<script>window.__pwned=1</script>\n<img src=x onerror="window.__pwned=2">'


@pytest.fixture
def server_log(site):
    """Fails the test if the server logged a traceback while it ran (the page would not show it)."""
    start = len(site.log())
    yield
    new = site.log()[start:]
    assert "Traceback" not in new, new[-3000:]


def _bars(page, side):
    return model_data(page, f"ep4-bars-{side}")


def _wait_bars(page, side, condition, timeout=10_000):
    """Wait until the named bars source satisfies a JS condition on its ``d`` (data)."""
    page.wait_for_function(
        f"() => {{ const d = Bokeh.documents[0].get_model_by_name('ep4-bars-{side}').data; "
        f"return d.seed.length > 0 && ({condition}); }}", timeout=timeout)


def _scored(s, paste):
    """Score ``paste`` for the state ``s`` with the real model, as the page's worker does."""
    q = jobs.JobQueue(workers=1, max_waiting=1)
    try:
        s.follower = RunFollower(interface.ModelService(queue=lambda: q))
        assert s.use_paste(paste)
        assert s.follower.job.wait(300)
        s.poll()
        assert s.scoring == "done"
    finally:
        q.shutdown()


def _check_against_state(page, *, k=6, c=0.02, paste=None):
    """The page's bars and token marks are those of the state run with the page's seed.

    The two sides' sources reach the browser one after the other: wait until both hold the same
    run (a side that never catches up fails here, by the timeout)."""
    page.wait_for_function(
        """k => { const d = n => Bokeh.documents[0].get_model_by_name('ep4-bars-' + n).data;
                  const l = d('left'), r = d('right');
                  return l.seed.length > 0 && r.seed.length > 0 && l.seed[0] === r.seed[0]
                         && l.k[0] === k && r.k[0] === k; }""", arg=k, timeout=10_000)
    left, right = _bars(page, "left"), _bars(page, "right")
    seed = left["seed"][0]
    assert right["seed"][0] == seed and left["k"][0] == k
    s = BoilerplateVsPoetry(seed=seed, left=left["text_id"][0], right=right["text_id"][0], k=k, c=c)
    if paste is not None:
        _scored(s, paste)
    for side, data, run in zip(("left", "right"), (left, right), s.runs):
        assert data["total_ms"] == [run.wall_ms, run.baseline_ms]
        assert data["big_ms"] == [run.verify_ms, run.baseline_ms]
        # The marked text arrives apart from the bars: wait for this run's (else a timeout fails).
        pre = page.locator(f'pre.ep4-tokens[data-side="{side}"][data-seed="{seed}"]')
        pre.wait_for(timeout=10_000)
        assert page.locator(f'pre.ep4-tokens[data-side="{side}"]').count() == 1
        assert pre.text_content() == run.text.source
        assert pre.locator("span.a").count() == sum(
            st == "accepted" and tok.strip() != "" for st, tok in zip(run.status, run.text.tokens))
        # One box per model token (those with more than whitespace), in order, each with its
        # measured acceptance in its hover text and as the thickness of its bar.
        shown = [(tok.strip(), q) for tok, q in zip(run.text.tokens, run.text.q) if tok.strip()]
        spans = pre.locator("span")
        assert spans.count() == len(shown)
        for i in (0, len(shown) // 2, len(shown) - 1):
            tok, q = shown[i]
            span = spans.nth(i)
            assert span.text_content() == tok
            assert span.get_attribute("title").startswith(f"measured acceptance {q:.2f}.")
            assert f"m{min(int(q * 5), 4)}" in span.get_attribute("class").split()
    text = page_text(page)
    for run in s.runs:
        assert f"{run.acceptance_rate:.0%}" in text
        assert f"{run.tokens_per_round:.1f}" in text and f"{run.speedup:.2f}×" in text
    return seed, s


def test_episode4_code_vs_poem_and_run_again(page, site, console, artifacts, server_log):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(site.url + URL)
    wait_for_bokeh(page, "ep4-bars-right")
    _wait_bars(page, "right", "true")
    left, right = _bars(page, "left"), _bars(page, "right")
    assert (left["text_id"][0], right["text_id"][0]) == ("py-account", "poem-kettle")
    seed, s = _check_against_state(page)
    text = page_text(page)
    assert "green, underlined" in text and "gold, dashed box" in text  # the key names both cues
    assert "a thick bar above" in text  # ... and the measured acceptance
    assert "Break-even" in text and "1 + 6 × 0.02 = 1.12" in text
    # The histogram has one group of bars per measured text, and the table their means.
    hist = model_data(page, "ep4-hist")
    assert len(hist["y"]) == 5 * len(measured.text_ids())
    for tid, m in measured.genre_means().items():
        assert f"{m['alpha']:.3f}" in text
    assert "SmolLM2-135M-Instruct" in text and "python scripts/score_texts.py" in text
    assert "tier" not in text
    page.screenshot(path=artifacts / "ep4-code-vs-poem-1280.png", full_page=True)
    page.locator('pre.ep4-tokens[data-side="left"]').screenshot(path=artifacts / "ep4-code-run.png")
    page.locator('pre.ep4-tokens[data-side="right"]').screenshot(path=artifacts / "ep4-poem-run.png")

    page.get_by_role("button", name="Run again").click()
    _wait_bars(page, "left", f"d.seed[0] !== {seed}")
    new_seed, _ = _check_against_state(page)
    assert new_seed != seed
    # The seed field shows the run's seed, so it can be typed back in.
    assert page.get_by_label("Seed", exact=True).input_value() == str(new_seed)
    page.set_viewport_size({"width": 800, "height": 900})
    page.wait_for_timeout(400)
    page.screenshot(path=artifacts / "ep4-code-vs-poem-800.png", full_page=True)
    assert_clean(page, console)


def test_episode4_switch_text_seed_and_draft_length(page, site, console, server_log):
    page.goto(site.url + URL + "?seed=4242")
    wait_for_bokeh(page, "ep4-bars-right")
    _wait_bars(page, "right", "d.seed[0] === 4242")
    page.locator("select").nth(1).select_option(label="A JSON record")
    _wait_bars(page, "right", "d.text_id[0] === 'json-record'")
    seed, _ = _check_against_state(page)
    assert seed == 4242  # switching a text keeps the seed
    assert "A JSON record" in page_text(page)

    seed_box = page.get_by_label("Seed", exact=True)
    seed_box.fill("123456")
    seed_box.press("Enter")
    _wait_bars(page, "left", "d.seed[0] === 123456")
    _check_against_state(page)

    handle = page.locator(".noUi-handle").first  # draft length k
    handle.focus()
    handle.press("End")
    _wait_bars(page, "left", "d.k[0] === 12")
    _check_against_state(page, k=12)
    assert "1 + 12 × 0.02 = 1.24" in page_text(page)
    assert_clean(page, console)


def test_episode4_paste_is_shown_as_text_and_runs_nothing(page, site, console, artifacts,
                                                          server_log):
    page.goto(site.url + URL + "?seed=99")
    wait_for_bokeh(page, "ep4-bars-right")
    _wait_bars(page, "right", "d.seed[0] === 99")
    box = page.locator("textarea")
    box.fill(PAYLOAD)
    page.get_by_role("button", name="Score and run my text").click()
    _wait_bars(page, "right", "d.text_id[0] === 'pasted'", timeout=300_000)
    pre = page.locator('pre.ep4-tokens[data-side="right"]')
    assert pre.text_content() == PAYLOAD
    assert pre.locator("img, script").count() == 0
    page.wait_for_timeout(500)  # time for an injected onerror to fire, were there one
    assert page.evaluate("() => window.__pwned") is None
    flat = page_text(page).replace(" ", "")
    assert "<script>window.__pwned=1</script>" in flat
    assert '<imgsrc=xonerror="window.__pwned=2">' in flat
    _check_against_state(page, paste=PAYLOAD)
    # The paste joins the histogram.
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep4-hist').data.name.includes('your text')")
    page.screenshot(path=artifacts / "ep4-pasted.png", full_page=True)

    box.fill("x" * (texts.PASTE_MAX_CHARS + 1))
    page.get_by_role("button", name="Score and run my text").click()
    page.get_by_role("alert").wait_for(timeout=10_000)
    assert "Your text must be at most 2,000 characters; got 2,001." in page_text(page)
    # The page keeps working: the previous paste is still shown and still runs.
    assert pre.text_content() == PAYLOAD
    page.get_by_role("button", name="Run again").click()
    _wait_bars(page, "left", "d.seed[0] !== 99")
    assert pre.text_content() == PAYLOAD and _bars(page, "right")["text_id"][0] == "pasted"
    assert page.evaluate("() => window.__pwned") is None
    page.screenshot(path=artifacts / "ep4-paste-too-long.png", full_page=True)
    assert_clean(page, console)


def test_episode4_scoring_shows_progress_and_can_be_cancelled(page, site, console, artifacts,
                                                              server_log):
    page.goto(site.url + URL + "?seed=7")
    wait_for_bokeh(page, "ep4-bars-right")
    _wait_bars(page, "right", "d.seed[0] === 7")
    long_text = (measured.load_measured().texts["form-letter"].source + "\n") * 20
    page.locator("textarea").fill(long_text[:texts.PASTE_MAX_CHARS])
    page.get_by_role("button", name="Score and run my text").click()
    wait_for_text(page, "The model is scoring your text", timeout=180)
    wait_for_text(page, " tokens.", timeout=60)
    page.screenshot(path=artifacts / "ep4-scoring.png", full_page=True)
    assert page.locator(".bk-panel-models-widgets-Progress, progress").count() >= 1
    page.get_by_role("button", name="Cancel").click()
    wait_for_text(page, "Scoring cancelled.", timeout=15)
    # The notice and the scoring line may arrive in two messages; the scoring line must go.
    deadline = time.monotonic() + 5
    while "The model is scoring your text" in page_text(page):
        assert time.monotonic() < deadline, "the scoring line stayed after Cancel"
        page.wait_for_timeout(50)
    # Nothing was replaced: both sides still show the bundled texts.
    assert _bars(page, "right")["text_id"][0] == "poem-kettle"
    assert page.get_by_role("button", name="Score and run my text").is_enabled()
    assert_clean(page, console)

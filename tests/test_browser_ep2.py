"""Browser tier for Episode 2: the relay played in Chromium, checked against sim.relay."""

from __future__ import annotations

import math

import pytest
from conftest import assert_clean, model_data, wait_for_bokeh
from playwright.sync_api import expect

from specdec_playable.episodes.ep2.state import BIG_PASS_MS, DEFAULT_SEED, TOKENS, Relay

pytestmark = pytest.mark.browser

URL = "/ep2_the_relay"
TARGET = "".join(TOKENS)

# What the page shows, read from its DOM (inside Panel's shadow roots).
_SHOWN = """el => {
  const vis = s => !s.hidden;
  const kept = [...el.querySelectorAll('.tk.kept')].filter(vis).map(s => s.textContent).join('');
  const drafts = [...el.querySelectorAll('.tk-draft')].filter(vis).map(s => s.textContent);
  return {kept, drafts};
}"""


def open_ep2(page, site):
    page.goto(site.url + URL)
    wait_for_bokeh(page, "ep2-bars")
    page.bring_to_front()
    page.locator(".ep2-text-live").wait_for(state="attached")


def shown_text(page) -> dict:
    return page.locator(".ep2-text-live").evaluate(_SHOWN)


def clocks(page) -> dict:
    out = {}
    for key in ("relay", "alone", "speedup", "when"):
        out[key] = page.locator(f".ep2-clocks [data-k={key}]").text_content()
    return out


def ms(text: str) -> int:
    assert text.endswith(" ms"), text
    return int(text[:-3].replace(",", ""))


def bars_key(page):
    b = model_data(page, "ep2-bars")
    return list(zip(b["lane"], b["start"], b["end"], b["status"], b["tip_a"]))


def wait_until_paused(page, timeout=20_000):
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep2-play').label === 'Play'", timeout=timeout)


def cursor_x(page) -> float:
    return model_data(page, "ep2-cursor")["x"][0]


def assert_ratio_shown(c: dict) -> None:
    """The speedup on the page is the ratio of the two clocks on the page."""
    relay_ms, alone_ms = ms(c["relay"]), ms(c["alone"])
    assert c["speedup"] == f"{alone_ms / relay_ms:.2f}×", c


def test_seeded_run_plays_to_the_end(page, site, console, artifacts):
    expected = Relay()  # the page's defaults: seed 23, k 4, q 0.8
    open_ep2(page, site)
    page.locator("select").select_option("8×")
    page.get_by_role("button", name="Restart").click()
    start = shown_text(page)
    assert start == {"kept": "", "drafts": []}
    assert clocks(page)["relay"] == "0 ms"

    page.get_by_role("button", name="Play").click()
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep2-cursor').data.x[0] > 3000", timeout=10_000)
    page.get_by_role("button", name="Pause").click()
    mid = shown_text(page)
    t = cursor_x(page)
    assert 0 < len(mid["kept"]) < len(TARGET) and TARGET.startswith(mid["kept"])
    assert 0 < t < expected.result.wall_ms
    c = clocks(page)
    assert_ratio_shown(c)
    page.screenshot(path=artifacts / "ep2-mid-run.png", full_page=True)

    page.get_by_role("button", name="Play").click()
    wait_until_paused(page)
    assert cursor_x(page) == expected.result.wall_ms
    end = shown_text(page)
    assert end["kept"] == TARGET            # the displayed text is the big model's text
    assert end["drafts"] == []
    c = clocks(page)
    assert ms(c["relay"]) == expected.result.wall_ms
    assert ms(c["alone"]) == expected.result.baseline_ms == len(TOKENS) * 600
    assert_ratio_shown(c)
    check = page.locator(".ep2-check [data-k=result]")
    assert check.is_visible()
    assert f"all {len(TOKENS)} tokens are identical" in check.text_content()
    page.screenshot(path=artifacts / "ep2-end.png", full_page=True)
    assert_clean(page, console)


def test_step_one_round_stops_at_each_round_end(page, site, console):
    s = Relay()
    p = s.progress
    open_ep2(page, site)
    page.locator("select").select_option("8×")
    page.get_by_role("button", name="Restart").click()
    assert not page.locator(".ep2-check [data-k=result]").is_visible()
    for i in (1, 2, 3):
        page.get_by_role("button", name="Step one round").click()
        page.wait_for_function(
            "x => Bokeh.documents[0].get_model_by_name('ep2-cursor').data.x[0] === x",
            arg=float(p.end_ms[i]), timeout=10_000)
        wait_until_paused(page)
        c = clocks(page)
        assert ms(c["relay"]) == p.end_ms[i]
        assert ms(c["alone"]) == p.tokens[i] * 600
        assert c["when"].startswith(f"After round {i} of {len(p) - 1}")
        assert_ratio_shown(c)
        assert shown_text(page)["kept"] == "".join(TOKENS[: p.tokens[i]])
    # The default run's second round is a bad one: its band and running cost appear.
    assert p.bad[2]
    assert page.locator(".ep2-clocks [data-k=badbox]").is_visible()
    assert page.locator(".ep2-clocks [data-k=bad]").text_content().startswith("1 bad round so far: 840 ms")
    assert_clean(page, console)


def test_moving_k_changes_the_number_of_draft_slots(page, site, console):
    open_ep2(page, site)

    def drafts_per_round():
        b = model_data(page, "ep2-bars")
        first_pass = min(s for s, lane in zip(b["start"], b["lane"]) if lane == "big")
        return sum(1 for e, lane in zip(b["end"], b["lane"]) if lane == "draft" and e <= first_pass)

    assert drafts_per_round() == 4
    handle = page.locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    expected = Relay(k=6)
    page.wait_for_function(
        "x => Bokeh.documents[0].get_model_by_name('ep2-stops').data.t.at(-1) === x",
        arg=expected.result.wall_ms, timeout=10_000)
    assert drafts_per_round() == 6
    b = model_data(page, "ep2-bars")
    assert b["lane"].count("draft") == expected.result.rounds["drafted"].sum()
    # Not played yet, so the new run rests at its start too (its cursor may reach the page a
    # message after its bars on a busy machine: waited for, up to 10 s).
    page.wait_for_function(
        "() => Bokeh.documents[0].get_model_by_name('ep2-cursor').data.x[0] === 0", timeout=10_000)
    assert cursor_x(page) == 0 and ms(clocks(page)["relay"]) == 0
    assert_clean(page, console)


def test_opens_on_the_start_of_the_run_with_the_result_hidden(page, site, console, artifacts):
    open_ep2(page, site)
    assert cursor_x(page) == 0
    assert shown_text(page) == {"kept": "", "drafts": []}
    c = clocks(page)
    assert (c["relay"], c["alone"], c["speedup"]) == ("0 ms", "0 ms", "–")
    assert c["when"].endswith("press Play to run it")
    assert not page.locator(".ep2-check [data-k=result]").is_visible()
    assert model_data(page, "ep2-bars")["alpha"] == [0] * len(model_data(page, "ep2-bars")["alpha"])
    page.screenshot(path=artifacts / "ep2-open.png", full_page=True)
    assert_clean(page, console)


def test_a_link_opens_its_setup_at_the_start_and_plays_it(page, site, console):
    expected = Relay(k=8, q=0.3, seed=5)
    page.goto(site.url + URL + "?k=8&q=0.3&seed=5")
    wait_for_bokeh(page, "ep2-bars")
    page.bring_to_front()
    page.locator(".ep2-text-live").wait_for(state="attached")
    assert page.locator("input.bk-input").first.input_value() == "5"
    assert cursor_x(page) == 0 and clocks(page)["speedup"] == "–"
    page.locator("select").select_option("8×")
    page.get_by_role("button", name="Play").click()
    wait_until_paused(page, timeout=30_000)
    assert cursor_x(page) == expected.result.wall_ms
    c = clocks(page)
    assert ms(c["relay"]) == expected.result.wall_ms
    assert c["speedup"] == f"{expected.result.speedup:.2f}×"
    # Once played, a new run shows its end state at once, as before.
    handle = page.locator(".noUi-handle").first
    handle.focus()
    handle.press("ArrowLeft")
    again = Relay(k=7, q=0.3, seed=5)
    page.wait_for_function(
        "x => Bokeh.documents[0].get_model_by_name('ep2-cursor').data.x[0] === x",
        arg=again.result.wall_ms, timeout=10_000)
    assert_clean(page, console)


def test_same_seed_same_run(page, site, console):
    open_ep2(page, site)
    seed_input = page.locator("input.bk-input").first
    assert seed_input.input_value() == str(DEFAULT_SEED)
    first = bars_key(page)
    page.get_by_role("button", name="New run").click()
    expect(seed_input).not_to_have_value(str(DEFAULT_SEED), timeout=10_000)
    new_seed = int(seed_input.input_value())
    assert new_seed != DEFAULT_SEED
    page.wait_for_function("k => Bokeh.documents[0].get_model_by_name('ep2-bars').data.tip_a.join('|') !== k",
                           arg="|".join(t[4] for t in first), timeout=10_000)
    assert bars_key(page) == bars_key_expected(Relay(seed=new_seed))
    # Type the first seed back in: the first run comes back, box for box.
    seed_input.fill(str(DEFAULT_SEED))
    seed_input.press("Enter")
    page.wait_for_function("k => Bokeh.documents[0].get_model_by_name('ep2-bars').data.tip_a.join('|') === k",
                           arg="|".join(t[4] for t in first), timeout=10_000)
    assert bars_key(page) == first
    # What is not a seed is refused in words, and the run stays as it is.
    for bad in ("-5", "3.7", "1e12"):
        seed_input.fill(bad)
        seed_input.press("Enter")
        message = page.get_by_text(f"“{bad}” is not a seed: a seed is a whole number from 0 to 999,999.")
        expect(message).to_be_visible(timeout=10_000)
        assert f"The page still uses seed {DEFAULT_SEED}." in message.text_content()
        assert bars_key(page) == first
    seed_input.fill("7")
    seed_input.press("Enter")
    page.wait_for_function("k => Bokeh.documents[0].get_model_by_name('ep2-bars').data.tip_a.join('|') !== k",
                           arg="|".join(t[4] for t in first), timeout=10_000)
    expect(page.get_by_text("is not a seed")).to_be_hidden(timeout=10_000)
    assert_clean(page, console)


def bars_key_expected(state: Relay):
    from specdec_playable.episodes.ep2.view import relay_timeline

    return [(b.lane, b.start, b.end, b.status, b.tip)
            for b in relay_timeline(state.result, pass_ms=BIG_PASS_MS).boxes]


def test_playing_sends_no_message_per_frame(page, site):
    sent: list[str] = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(payload)))
    open_ep2(page, site)
    page.wait_for_timeout(500)
    sent.clear()
    page.get_by_role("button", name="Play").click()
    page.wait_for_timeout(1500)            # ~90 frames at 60 fps
    frames = model_data(page, "ep2-cursor")["x"][0]
    assert frames > 0
    # The Play click and the button's label change, not one message per frame.
    assert len(sent) <= 8, sent


def test_reduced_motion_jumps_instead_of_animating(browser, site):
    context = browser.new_context(reduced_motion="reduce")
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        open_ep2(page, site)
        s = Relay()
        page.get_by_role("button", name="Restart").click()
        page.get_by_role("button", name="Step one round").click()   # straight to round 1's end
        assert cursor_x(page) == s.progress.end_ms[1]
        assert shown_text(page)["kept"] == "".join(TOKENS[: s.progress.tokens[1]])
        page.get_by_role("button", name="Play").click()             # straight to the end
        assert cursor_x(page) == s.result.wall_ms
        assert shown_text(page)["kept"] == TARGET
        assert model_data(page, "ep2-cursor")["playing"] == [0]
        assert errors == []
    finally:
        context.close()


def test_headline_clock_is_the_lane_cursor_mid_run(page, site, console):
    # The relay's big clock runs with the lanes: paused mid-run, it shows the cursor's time,
    # not the end of the last finished round.
    open_ep2(page, site)
    page.get_by_role("button", name="Play").click()
    page.wait_for_timeout(1200)
    page.get_by_role("button", name="Pause").click()
    wait_until_paused(page)
    t = cursor_x(page)
    total = Relay().result.wall_ms
    assert 0 < t < total
    headline = page.locator(".ep2-clocks [data-clock]").text_content()
    # The page rounds halves up (Intl.NumberFormat), Python's round() to even.
    assert ms(headline) == math.floor(t + 0.5)
    # The speedup beside it is the one of the last finished round, and says so.
    assert "end of round" in page.locator(".ep2-clocks [data-k=speedup_label]").text_content()
    assert ms(clocks(page)["relay"]) <= t
    assert_clean(page, console)

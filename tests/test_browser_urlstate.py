"""Browser tier: a link restores a setup, and the address bar follows the controls.

Episode 3 is opened from a link with its three knobs in the query; its sliders must
show them. Then a slider moves: once the controls have been still for the settle
delay, the address bar holds the new setup, and opening that address in a fresh page
restores it. While a slider moves faster than the settle delay, the address bar does
not change at all, so a drag costs the page no URL traffic.
"""

from __future__ import annotations

import importlib

import urllib.parse

import pytest
from conftest import assert_clean, page_text, wait_for_bokeh
from playwright.sync_api import expect

from specdec_playable.episodes import ep3
from specdec_playable.kit.urlstate import URL_SETTLE_MS
ep3_page = importlib.import_module("specdec_playable.episodes.ep3.page")

pytestmark = pytest.mark.browser

EP3 = "/" + ep3.EPISODE.slug
_SLIDERS = """() => {
  const out = {};
  for (const m of Bokeh.documents[0].all_models)
    if (m.type === 'Slider') out[m.title] = m.value;
  return out;
}"""


def _query(url: str) -> dict[str, str]:
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def _sliders(page) -> dict[str, float]:
    return page.evaluate(_SLIDERS)


def test_link_restores_and_address_bar_follows_after_settling(page, site, console, browser):
    page.goto(f"{site.url}{EP3}?q=0.7&k=6&c=0.15")
    wait_for_bokeh(page, "ep3-hist")
    assert _sliders(page) == {"Draft quality q": 0.7, "Draft length k": 6, "Draft cost c": 0.15}
    page.wait_for_function("() => location.search.includes('k=6')", timeout=10_000)
    assert _query(page.url) == {"q": "0.7", "k": "6", "c": "0.15"}

    handle = page.locator(".noUi-handle").nth(1)  # k
    handle.focus()
    # Three quick steps, each well inside the settle delay: the address bar must not move.
    for _ in range(3):
        handle.press("ArrowRight")
        page.wait_for_timeout(URL_SETTLE_MS // 4)
        assert _query(page.url)["k"] == "6"
    # Still for longer than the delay: the address bar now holds the last value.
    page.wait_for_function("() => location.search.includes('k=9')", timeout=10_000)
    shared = page.url
    assert _query(shared) == {"q": "0.7", "k": "9", "c": "0.15"}

    fresh = browser.new_page()
    try:
        fresh.goto(shared)
        wait_for_bokeh(fresh, "ep3-hist")
        assert _sliders(fresh) == {"Draft quality q": 0.7, "Draft length k": 9, "Draft cost c": 0.15}
        assert "Some settings in the link were changed" not in page_text(fresh)
    finally:
        fresh.close()
    assert_clean(page, console)


def test_the_changed_link_notice_goes_once_a_control_moves(page, site, console):
    # k=99 is out of range: the page runs k = 16 and says so, until the visitor moves a slider.
    page.goto(f"{site.url}{EP3}?q=0.5&k=99&c=0.1")
    wait_for_bokeh(page, "ep3-hist")
    notice = page.get_by_text("Some settings in the link were changed")
    expect(notice).to_be_visible(timeout=10_000)
    handle = page.locator(".noUi-handle").nth(0)  # q
    handle.focus()
    handle.press("ArrowRight")
    expect(notice).to_be_hidden(timeout=10_000)
    assert_clean(page, console)


def test_episode7_restores_a_custom_prompt_from_a_link_as_plain_text(page, site, console):
    from specdec_playable.episodes import ep7

    text = "Write a haiku about <b>tea</b> & rain"
    page.goto(f"{site.url}/{ep7.EPISODE.slug}?task=custom&prompt={urllib.parse.quote(text)}")
    box = page.locator("textarea").first
    expect(box).to_have_value(text, timeout=30_000)
    assert page.locator("b", has_text="tea").count() == 0  # shown as text, never as markup
    assert "Some settings in the link were changed" not in page_text(page)
    assert_clean(page, console)

"""Browser tier: a part built on scroll starts building when it comes within one screen of view.

Episode 8 holds three parts built when near (``kit/deferred.when_near``), two of them more
than a screen below its first one. Without scrolling, every part whose mark is within one
screen height below the window is built, and a part further down is not; scrolling one screen
builds the next.
"""

from __future__ import annotations

import time

import pytest
from conftest import assert_clean, near_marks

from specdec_playable.episodes import ep8
from specdec_playable.kit import deferred

pytestmark = pytest.mark.browser

#: Where each part still waiting for the visitor has its mark, relative to the window's top (px).
_MARK_TOPS = """() => { const out = [];
  const walk = (n) => { if (n.classList && n.classList.contains('sdp-near-mark')) out.push(n);
    if (n.shadowRoot) walk(n.shadowRoot); for (const c of n.children || []) walk(c); };
  walk(document.body); return out.map(m => m.getBoundingClientRect().top); }"""


def _settled(page, reach: float) -> list[float]:
    """Wait until no mark is left within ``reach`` px of the window's top, and none has come
    within it 1.5 s later (a part built above a mark can move it up; on a loaded machine that
    can take a while); the marks left."""
    deadline = time.monotonic() + 60
    while True:
        page.wait_for_function(f"() => ({_MARK_TOPS})().every(t => t > {reach})", timeout=30_000)
        page.wait_for_timeout(1500)  # a part that should not be built has had time to be
        tops = page.evaluate(_MARK_TOPS)
        if all(t > reach for t in tops) or time.monotonic() > deadline:
            return tops


def test_parts_within_one_screen_are_built_before_the_visitor_scrolls(page, site, console):
    assert deferred.AHEAD_SCREENS == 1.0
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site.url}/{ep8.EPISODE.slug}")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0", timeout=30_000)
    page.wait_for_function("() => document.body.scrollHeight > 3000", timeout=30_000)
    reach = 2 * 900  # the window plus one screen below it
    left = _settled(page, reach)
    assert left, "every part was built although some are more than a screen below"
    assert all(t > reach for t in left)
    assert near_marks(page) == len(left) < 3  # the part within reach was built unscrolled
    # One screen further down, the next part comes within reach and is built.
    page.evaluate(f"() => window.scrollBy(0, {min(left) - reach + 100})")
    after = _settled(page, reach)
    assert len(after) < len(left)
    assert_clean(page, console)

"""Browser tier: the room each later-built part reserves (kit/heights.py) is the room it takes.

Every page is opened at 1280 px in Chromium, scrolled like a reader until every part is built,
and each part's drawn height is compared with its reservation: a part that changes its content
must change its reservation too, or the page jumps when the part arrives.
"""

from __future__ import annotations

import pytest
from conftest import wait_for_bokeh

from specdec_playable.episodes import EPISODES
from specdec_playable.kit.deferred import slot_class
from specdec_playable.kit.heights import RESERVED_PX, TOLERANCE_PX, TOLERANCE_SHARE

pytestmark = pytest.mark.browser

EPISODES = {e.number: e.slug for e in EPISODES}


def _slots(number: int) -> list[str]:
    return [n for n in RESERVED_PX if n.startswith(f"ep{number}-")]


def test_every_reserved_slot_belongs_to_an_episode():
    assert {int(n[2]) for n in RESERVED_PX} <= set(EPISODES)
    assert all(_slots(n) for n in EPISODES), "every episode builds at least one part later"


@pytest.mark.parametrize("number", sorted(EPISODES))
def test_reserved_heights_match_the_drawn_parts(number, page, site):
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site.url}/{EPISODES[number]}")
    wait_for_bokeh(page)
    page.wait_for_timeout(300)  # the last part's layout settles
    off = {}
    for name in _slots(number):
        box = page.locator(f".{slot_class(name)}").first.bounding_box()
        assert box is not None, f"{name} is not on the page"
        drawn, want = round(box["height"]), RESERVED_PX[name]
        if abs(drawn - want) > max(TOLERANCE_PX, TOLERANCE_SHARE * want):
            off[name] = (want, drawn)
    assert not off, ("reserved vs drawn heights (px) differ; set kit/heights.RESERVED_PX to the "
                     f"drawn values: {off}")

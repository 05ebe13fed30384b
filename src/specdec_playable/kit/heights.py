"""The room each part built later holds on the page before it arrives, in px at 1280 px wide.

One table for every slot of :mod:`.deferred` (keyed by the slot's name), so the page does not
jump when a part arrives. The values are the parts' heights as Chromium drew them;
``tests/test_browser_heights.py`` measures every part again and fails when a reservation is off
by more than :data:`TOLERANCE_PX` (or :data:`TOLERANCE_SHARE` of it), so a change to a part's
content comes with a change here.
"""

from __future__ import annotations

#: Reserved height (px, at a 1280 px wide window) of each deferred slot, by name.
RESERVED_PX: dict[str, int] = {
    "ep1-view-slot": 590,
    "ep1-hw-slot": 950,
    "ep2-view-slot": 1100,
    "ep3-view-slot": 1352,
    "ep4-view-slot": 2356,
    "ep4-lower-slot": 1005,
    "ep5-view-slot": 1137,
    "ep5-presets-slot": 226,
    "ep6-view-slot": 4141,
    "ep6-charts": 333,
    "ep6-part2": 2493,
    "ep7-view-slot": 651,
    "ep8-view-slot": 7818,
    "ep8-part1-rest": 2356,
    "ep8-part2": 2000,
    "ep8-part3": 2790,
    # Each episode's questions (kit/exercises.py), at the foot of its page.
    "ep1-exercises-slot": 385,
    "ep2-exercises-slot": 411,
    "ep3-exercises-slot": 411,
    "ep4-exercises-slot": 437,
    "ep5-exercises-slot": 437,
    "ep6-exercises-slot": 437,
    "ep7-exercises-slot": 411,
    "ep8-exercises-slot": 437,
}
#: How far a reservation may be from the drawn part: this many px, or this share of it.
TOLERANCE_PX = 60
TOLERANCE_SHARE = 0.08


def reserved(name: str) -> int:
    """The room reserved for the slot ``name``."""
    try:
        return RESERVED_PX[name]
    except KeyError:
        raise KeyError(f"no reserved height for the slot {name!r}; add it to "
                       "kit/heights.RESERVED_PX (tests/test_browser_heights.py measures it)") from None

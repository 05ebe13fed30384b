"""Lanes on one wall clock, played in the browser.

The server describes a run once per change as a :class:`Timeline` of :class:`Box`
records (:mod:`.timeline`, plain Python and numpy) and hands it to
:class:`LanePlayer`, which draws it (:mod:`.figure`) and plays it with a
``requestAnimationFrame`` loop in the browser (:mod:`.controls` and
``kit/static/lanes.js``), so a frame never needs a server round trip. An episode
can hook its own drawing into every frame (a ``frame_hook`` file in
``kit/static``), for page elements outside the figure, and give the player stops
(round ends) for a "step" button.

The Bokeh parts are imported on first use, so ``kit.lanes.timeline`` (and the
records exported here) work without Bokeh.
"""

from .timeline import (Box, Lane, Timeline, bar_columns, clock_columns, label_color, line_color,
                       resolve_styles)

_BOKEH_PARTS = {"LanePlayer": "player", "PlayerControls": "controls", "SPEEDS": "controls",
                "LaneSources": "figure", "lanes_figure": "figure"}

__all__ = ["Box", "Lane", "Timeline", "bar_columns", "clock_columns", "label_color", "line_color",
           "resolve_styles", *_BOKEH_PARTS]


def __getattr__(name: str):
    if name in _BOKEH_PARTS:
        from importlib import import_module

        return getattr(import_module(f".{_BOKEH_PARTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""The lane player: a lanes figure with its controls, shown a new :class:`Timeline` on every change."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import panel as pn

from .. import theme
from .controls import PlayerControls
from .figure import LaneSources, lanes_figure
from .timeline import (Lane, Timeline, at_time_zero, bar_columns, clock_columns, cursor_columns,
                       hatch_patterns, resolve_styles)


class LanePlayer:
    """Lanes on one wall clock, played in the browser, with Play/Pause, Restart, a speed choice
    and, optionally, a step button.

    Build one per session; call :meth:`show` with a new :class:`Timeline` whenever the
    server recomputes. ``name`` prefixes the Bokeh model names, so tests can find
    ``<name>-bars``, ``<name>-clocks``, ``<name>-cursor``, ``<name>-play``,
    ``<name>-restart``, ``<name>-speed`` and ``<name>-step``.

    Parameters
    ----------
    lanes : sequence of Lane
    styles : mapping, optional
        Extra statuses (same keys as :data:`theme.STATUS`) for this figure.
    label_size : str
        Font size of a box's label unless the box sets its own.
    lane_clocks : bool
        Draw each lane's running clock beside its last box.
    min_label_px : float
        If > 0, a label is drawn only where its box is at least this wide, and wide
        enough for the label's text, on screen.
    cursor_label : bool
        Write the wall clock's time beside the cursor (leave it off when the lanes'
        own clocks already show it).
    live : str
        The key of HTML elsewhere on the page that follows the clock: the player
        updates the elements inside ``[data-sdp-live="<live>"]`` on every frame (see
        ``kit/static/lanes.js``), so numbers outside the figure run with it.
    rest_labels : sequence of str
        Statuses whose boxes keep their labels in the finished run on a figure too narrow
        to show them all (a phone): it then shows the end of the run, as much as fits them,
        with a note that the lanes drag sideways to the rest.
    opens_at_start : bool
        Until the visitor first plays or steps, a new timeline rests at its start (empty lanes,
        clocks at zero) instead of its end, so the page does not give the run's result away
        before Play. Afterwards a new timeline shows its end state, as without this flag.
    speeds, speed, step_label, frame_hook, frame_args
        See :class:`PlayerControls`.
    """

    def __init__(self, lanes: Sequence[Lane], *, name: str, height: int = 260,
                 x_label: str = "wall clock (ms)", label_size: str = "12px",
                 y_pad: tuple[float, float] = (0.75, 0.8),
                 speeds: Mapping[str, float] | None = None, speed: str | None = None,
                 step_label: str | None = None, lane_clocks: bool = True,
                 styles: Mapping[str, dict] | None = None,
                 frame_hook: str | None = None, frame_args: Mapping | None = None,
                 min_label_px: float = 0, cursor_label: bool = True, live: str = "",
                 rest_labels: Sequence[str] = (), opens_at_start: bool = False):
        self.lanes = tuple(lanes)
        self.name = name
        self.label_size = label_size
        self.min_label_px = float(min_label_px)
        self.cursor_label = bool(cursor_label)
        self.styles = resolve_styles({**theme.STATUS, **(styles or {})})
        hatches = hatch_patterns(self.styles)
        self.sources = LaneSources.empty(name, self.lanes, self.styles)
        self.figure = lanes_figure(self.lanes, self.sources, hatches, name=name, height=height,
                                   x_label=x_label, y_pad=y_pad, lane_clocks=lane_clocks)
        self.buttons = PlayerControls(
            self.sources, self.figure, name=name, styles=self.styles, hatches=hatches,
            speeds=speeds, speed=speed, step_label=step_label, frame_hook=frame_hook,
            frame_args=frame_args, min_label_px=min_label_px, cursor_label=cursor_label,
            live=live, rest_labels=rest_labels, opens_at_start=opens_at_start)
        #: The row of buttons and the speed choice, to place on the page.
        self.controls = self.buttons.row

    def show(self, timeline: Timeline, *, at_start: bool = False) -> None:
        """Replace the timeline, drawn at its end state (Play replays it), or at its start with
        ``at_start`` (the page's first timeline when the player opens at the start)."""
        src = self.sources
        x_end = timeline.axis_end
        data = bar_columns(timeline, self.styles, label_size=self.label_size,
                           min_label_px=self.min_label_px)
        if at_start:
            data = at_time_zero(data)
        # The browser applies these in order. What the data hook reads (range, view, stops)
        # goes before the bars, whose arrival runs the hook; the clocks and the cursor go
        # last, so whoever waits for them (a test, say) sees the new bars too.
        src.x_range.start = 0.0
        src.x_range.end = x_end
        src.view.data = dict(x_end=[x_end], window=[float(timeline.window_ms or 0.0)])
        src.stops.data = dict(t=timeline.stop_times)
        src.bars.data = data
        clocks = clock_columns(self.lanes, timeline.lane_end, x_end)
        if at_start:
            clocks = dict(clocks, x=[0.0] * len(self.lanes), ms=[0.0] * len(self.lanes),
                          text=["0 ms"] * len(self.lanes), align=["left"] * len(self.lanes),
                          color=[theme.MUTED] * len(self.lanes))
        src.clocks.data = clocks
        src.cursor.data = cursor_columns(0.0 if at_start else timeline.total, label=self.cursor_label)

    def fit_on_ready(self, doc) -> None:
        """Have the browser fit the labels to the laid-out figure as soon as ``doc`` is shown.

        Until then the labels are fitted to an assumed width; pass a server session's
        document (a notebook or a static file keeps that assumed fit until the first play).
        A player built before the page was shown is fitted on the document's
        ``document_ready`` event; one built later (``kit/deferred.py``) misses that event,
        so the server then touches the figure's ``tags`` once its part is on the page, which
        runs the player's script (a message of a few bytes).
        """
        if doc is None:
            return
        doc.js_on_event("document_ready", self.buttons.script)
        self.figure.js_on_change("tags", self.buttons.script)

        def touch() -> None:
            self.figure.tags = [*self.figure.tags, "fit"]

        def after_load() -> None:
            doc.add_next_tick_callback(touch)

        if pn.state.loaded:
            after_load()
        else:
            pn.state.onload(after_load)

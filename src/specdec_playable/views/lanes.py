"""Lanes on one wall clock, played in the browser.

The server computes a whole timeline once per change (boxes with a lane, a
start, an end, a label and a status) and hands it to :class:`LanePlayer`; the
page then plays it with a ``requestAnimationFrame`` loop written in BokehJS, so
a frame never needs a server round trip. Only Play/Pause/Restart clicks and the
speed choice travel to the server, as ordinary widget events.

Pitfalls handled (see the project's Panel notes): the loop mutates column
arrays in place and calls ``change.emit()`` (assigning ``data`` would sync to
the server every frame); replacing ``data`` from the server is the hook that
resets the player; the time axis is a fixed ``Range1d``; zero-width bars hide
their outlines through an alpha column; elapsed wall time, clamped, drives the
clock; ``prefers-reduced-motion`` jumps straight to the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from bokeh.layouts import row
from bokeh.models import (
    Button,
    ColumnDataSource,
    CustomJS,
    FixedTicker,
    HoverTool,
    Range1d,
    Select,
)
from bokeh.plotting import figure

from . import theme

#: Columns a timeline hands to :meth:`LanePlayer.show`.
BOX_COLUMNS = ("lane", "start", "end", "y", "height", "label", "status")

_SPEEDS = {"0.25×": 0.25, "0.5×": 0.5, "1× (real time)": 1.0, "2×": 2.0, "4×": 4.0}

# Shared by every button and the data hook: draw the frame at time t.
_RENDER = """
function sdp_render(t) {
  const d = bars.data;
  const n = d.start.length;
  for (let i = 0; i < n; i++) {
    const s = d.start[i], e = d.end[i];
    const started = t > s || (e <= s && t >= s);
    d.right[i] = Math.min(Math.max(t, s), e);
    d.alpha[i] = started ? 1 : 0;
    d.label_alpha[i] = t >= e ? 1 : 0;
  }
  bars.change.emit();
  const c = clocks.data;
  const xmax = xr.end;
  for (let j = 0; j < c.lane_end.length; j++) {
    const x = Math.min(t, c.lane_end[j]);
    c.x[j] = x;
    c.ms[j] = x;
    const done = t >= c.lane_end[j];
    c.text[j] = Math.round(x).toLocaleString('en-US') + ' ms' + (done ? ' · done' : '');
    c.align[j] = x > 0.78 * xmax ? 'right' : 'left';
    c.color[j] = done ? c.done_color[j] : '%(muted)s';
  }
  clocks.change.emit();
  const k = cursor.data;
  k.x[0] = t;
  k.label[0] = 'wall clock ' + Math.round(t).toLocaleString('en-US') + ' ms';
  k.align[0] = t > 0.78 * xmax ? 'right' : 'left';
  k.offset[0] = t > 0.78 * xmax ? -4 : 4;
  k.playing[0] = state.playing ? 1 : 0;
  cursor.change.emit();
}
function sdp_total() {
  let m = 0;
  for (const e of bars.data.end) m = Math.max(m, e);
  return m;
}
""".replace("%(muted)s", theme.MUTED)

_STATE = """
const state = bars.__sdp || (bars.__sdp = {t: 0, playing: false, last: null, raf: null});
const reduce = window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches;
"""

_PLAY = _STATE + _RENDER + """
const total = sdp_total();
if (state.playing) {            // Pause
  state.playing = false;
  if (state.raf) cancelAnimationFrame(state.raf);
  play.label = 'Play';
  sdp_render(state.t);
  return;
}
if (state.t >= total) state.t = 0;   // finished: play again from the start
if (reduce) {                  // no motion: show the end state at once
  state.t = total;
  sdp_render(total);
  return;
}
state.playing = true;
state.last = null;
play.label = 'Pause';
function frame(now) {
  if (!state.playing) return;
  const dt = state.last === null ? 0 : Math.min(now - state.last, 100);
  state.last = now;
  state.t = Math.min(state.t + dt * speed_of(speed.value), total);
  sdp_render(state.t);
  if (state.t >= total) {
    state.playing = false;
    play.label = 'Play';
    sdp_render(total);
  } else {
    state.raf = requestAnimationFrame(frame);
  }
}
function speed_of(v) { return SPEEDS[v] || 1; }
state.raf = requestAnimationFrame(frame);
"""

_RESTART = _STATE + _RENDER + """
if (state.raf) cancelAnimationFrame(state.raf);
state.playing = false;
state.t = 0;
play.label = 'Play';
sdp_render(0);
"""

# The server replaced the timeline: stop, and show the new run's end state
# (the server already drew it); Play then replays it from zero.
_ON_DATA = _STATE + """
if (state.raf) cancelAnimationFrame(state.raf);
state.playing = false;
let m = 0;
for (const e of bars.data.end) m = Math.max(m, e);
state.t = m;
if (play.label !== 'Play') play.label = 'Play';
"""


@dataclass(frozen=True)
class Lane:
    """A named lane at height ``y``; its clock stops at the lane's last box."""

    key: str
    title: str
    y: float
    color: str = theme.INK
    clock_dy: float = 0.42


class LanePlayer:
    """A lanes figure with Play/Pause, Restart and a speed choice.

    Build one per session; call :meth:`show` with a new timeline whenever the
    server recomputes. ``name`` prefixes the Bokeh model names, so tests can find
    ``<name>-bars``, ``<name>-clocks``, ``<name>-cursor`` and ``<name>-play``.
    """

    def __init__(self, lanes: Sequence[Lane], *, name: str, height: int = 260,
                 x_label: str = "wall clock (ms)", label_size: str = "12px",
                 y_pad: tuple[float, float] = (0.75, 0.8)):
        self.lanes = tuple(lanes)
        self.name = name
        self.label_size = label_size
        self.bars = ColumnDataSource(self._empty_bars(), name=f"{name}-bars")
        self.clocks = ColumnDataSource(self._clock_data({}), name=f"{name}-clocks")
        self.cursor = ColumnDataSource(
            dict(x=[0.0], label=[""], align=["left"], offset=[4], playing=[0]), name=f"{name}-cursor"
        )
        ys = [lane.y for lane in self.lanes]
        self.x_range = Range1d(0, 1000, bounds=(0, None))
        fig = figure(
            name=f"{name}-figure",
            height=height,
            sizing_mode="stretch_width",
            x_range=self.x_range,
            y_range=Range1d(min(ys) - y_pad[0], max(ys) + y_pad[1]),
            tools="xpan,xwheel_zoom,reset,save",
            active_scroll=None,
            toolbar_location="right",
            x_axis_label=x_label,
        )
        fig.yaxis.ticker = FixedTicker(ticks=ys)
        fig.yaxis.major_label_overrides = {lane.y: lane.title for lane in self.lanes}
        fig.yaxis.major_label_text_font_size = "13px"
        fig.yaxis.major_label_text_color = theme.INK
        fig.ygrid.grid_line_color = None
        fig.xgrid.grid_line_color = theme.GRID
        fig.xaxis.axis_label_text_color = theme.MUTED
        fig.xaxis.major_label_text_color = theme.MUTED
        fig.xaxis.formatter.use_scientific = False
        fig.outline_line_color = None
        fig.background_fill_color = theme.PAPER
        fig.border_fill_color = theme.PAPER
        fig.min_border_left = 10

        boxes = fig.quad(
            left="start", right="right", bottom="bottom", top="top", source=self.bars,
            fill_color="fill", fill_alpha="alpha", line_color="line", line_alpha="alpha",
            hatch_pattern="hatch", hatch_color="white", hatch_alpha="alpha", hatch_scale=7,
            line_width=1.5,
        )
        fig.text(
            x="mid", y="y", text="label", source=self.bars, text_alpha="label_alpha",
            text_align="center", text_baseline="middle", text_font_size="label_size",
            text_color="label_color", text_font_style="bold",
        )
        fig.segment(x0="x", x1="x", y0=min(ys) - y_pad[0], y1=max(ys) + y_pad[1], source=self.cursor,
                    line_color=theme.INK, line_dash="dashed", line_alpha=0.6)
        fig.text(x="x", y=min(ys) - y_pad[0] + 0.03, text="label", text_align="align", source=self.cursor,
                 text_font_size="12px", text_color=theme.MUTED, text_baseline="bottom",
                 x_offset="offset")
        fig.text(x="x", y="y", text="text", text_align="align", source=self.clocks,
                 text_font_size="14px", text_font_style="bold", text_color="color",
                 text_baseline="bottom", y_offset=-2)
        fig.add_tools(HoverTool(renderers=[boxes], tooltips=[
            ("", "@tip"), ("from", "@start{0,0} ms"), ("to", "@end{0,0} ms")]))
        self.figure = fig

        self.play = Button(label="Play", button_type="primary", width=90, name=f"{name}-play")
        self.restart = Button(label="Restart", width=90, name=f"{name}-restart")
        self.speed = Select(value="1× (real time)", options=list(_SPEEDS), width=150,
                            name=f"{name}-speed", title="")
        args = dict(bars=self.bars, clocks=self.clocks, cursor=self.cursor, xr=self.x_range,
                    play=self.play, speed=self.speed)
        self.play.js_on_click(CustomJS(args={**args, "SPEEDS": _SPEEDS}, code=_PLAY))
        self.restart.js_on_click(CustomJS(args=args, code=_RESTART))
        self.bars.js_on_change("data", CustomJS(args=dict(bars=self.bars, play=self.play),
                                                code=_ON_DATA))
        self.controls = row(self.play, self.restart, self.speed)

    # -- data -------------------------------------------------------------
    @staticmethod
    def _empty_bars() -> dict:
        cols = ("start", "end", "right", "mid", "y", "bottom", "top", "label", "label_size", "fill", "line",
                "hatch", "alpha", "label_alpha", "label_color", "tip", "lane", "status")
        return {c: [] for c in cols}

    def _clock_data(self, lane_end: dict, x_end: float = 1.0) -> dict:
        ends = [float(lane_end.get(lane.key, 0.0)) for lane in self.lanes]
        return dict(
            lane=[lane.key for lane in self.lanes],
            y=[lane.y + lane.clock_dy for lane in self.lanes],
            x=ends,
            ms=ends,
            lane_end=ends,
            text=[f"{e:,.0f} ms · done" for e in ends],
            align=["right" if e > 0.78 * x_end else "left" for e in ends],
            color=[lane.color for lane in self.lanes],
            done_color=[lane.color for lane in self.lanes],
        )

    def show(self, boxes: dict, *, tips: Sequence[str] | None = None,
             x_end: float | None = None) -> None:
        """Replace the timeline, drawn at its end state (Play replays it).

        ``boxes`` has the columns of :data:`BOX_COLUMNS` as sequences of equal
        length; ``status`` keys :data:`theme.STATUS`.
        """
        start = np.asarray(boxes["start"], dtype=float)
        end = np.asarray(boxes["end"], dtype=float)
        y = np.asarray(boxes["y"], dtype=float)
        h = np.asarray(boxes["height"], dtype=float)
        status = list(boxes["status"])
        lane = list(boxes["lane"])
        style = [theme.STATUS[s] for s in status]
        labels = [str(lbl) for lbl in boxes["label"]]
        total = float(end.max()) if end.size else 0.0
        lane_end = {}
        for key, e in zip(lane, end):
            lane_end[key] = max(lane_end.get(key, 0.0), float(e))
        data = dict(
            start=start, end=end, right=end.copy(), mid=(start + end) / 2, y=y,
            bottom=y - h / 2, top=y + h / 2, label=labels,
            label_size=list(boxes.get("label_size", [self.label_size] * start.size)),
            fill=[s["fill"] for s in style],
            line=[theme.INK if st in ("rejected", "correction", "bonus") else "white"
                  for st in status],
            hatch=[s["hatch"] for s in style],
            alpha=np.ones(start.size), label_alpha=np.ones(start.size),
            label_color=["white" if st not in ("discarded",) else theme.INK for st in status],
            tip=list(tips) if tips is not None else labels,
            lane=lane, status=status,
        )
        x_end = x_end if x_end is not None else max(total * 1.1, 1.0)
        self.x_range.end = x_end
        self.clocks.data = self._clock_data(lane_end, x_end)
        self.cursor.data = dict(x=[total], label=[f"wall clock {total:,.0f} ms"],
                                align=["right"], offset=[-4], playing=[0])
        self.bars.data = data

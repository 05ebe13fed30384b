"""Lanes on one wall clock, played in the browser.

The server computes a whole timeline once per change (boxes with a lane, a
start, an end, a label and a status) and hands it to :class:`LanePlayer`; the
page then plays it with a ``requestAnimationFrame`` loop written in BokehJS, so
a frame never needs a server round trip. Only Play/Pause/Step/Restart clicks and
the speed choice travel to the server, as ordinary widget events.

A box can change while the clock runs: it may appear later than it starts
(``shown``), switch from one status to another when it is judged (``judged``,
``status_before``) and show its label from a given time (``label_at``). An
episode can hook its own drawing into every frame (``frame_js``), for page
elements outside the figure, and can give the player stops (round ends) for a
"step" button.

Pitfalls handled (see the project's Panel notes): the loop mutates column
arrays in place and calls ``change.emit()`` (assigning ``data`` would sync to
the server every frame); replacing ``data`` from the server is the hook that
resets the player; the time axis is a fixed ``Range1d``; zero-width bars hide
their outlines through an alpha column; elapsed wall time, clamped, drives the
clock; ``prefers-reduced-motion`` jumps straight to the end (or the next stop).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from bokeh.layouts import row
from bokeh.models import (
    Button,
    ColumnDataSource,
    CustomJS,
    FixedTicker,
    HoverTool,
    Label,
    Range1d,
    Select,
)
from bokeh.plotting import figure

from . import theme

#: Columns a timeline hands to :meth:`LanePlayer.show`.
BOX_COLUMNS = ("lane", "start", "end", "y", "height", "label", "status")
#: Optional columns of :meth:`LanePlayer.show` (see its docstring).
OPTIONAL_COLUMNS = ("label_size", "shown", "judged", "status_before", "label_before", "label_at",
                    "opacity", "label_color")

SPEEDS = {"0.25×": 0.25, "0.5×": 0.5, "1× (real time)": 1.0, "2×": 2.0, "4×": 4.0}
_SPEEDS = SPEEDS  # the old private name

# Shared by every button and the data hook: draw the frame at time t, and run
# the player (to the end, or to the next stop).
_RENDER = """
function sdp_render(t) {
  const V = view.data;
  if (V.window.length && V.window[0] > 0) {
    // Follow the clock while the run is on; show the whole run once it ends
    // (once only, so a visitor can zoom in afterwards). sync: false keeps
    // these browser-only changes: no message per frame.
    const full = V.x_end[0], w = V.window[0];
    let range = null;
    if (t < sdp_total() - 1e-6 && w < full) {
      const s0 = Math.min(Math.max(t - 0.7 * w, 0), full - w);
      range = [s0, s0 + w];
      state.whole = false;
    } else if (!state.whole) {
      range = [0, full];
      state.whole = true;
    }
    if (range && (xr.start !== range[0] || xr.end !== range[1]))
      xr.setv({start: range[0], end: range[1]}, {sync: false});
  }
  let px_per_ms = null;                   // hide labels wider than their box
  if (min_label_px > 0 && window.Bokeh && Bokeh.index) {
    const pv = Bokeh.index.find_one(fig);
    if (pv && pv.frame) px_per_ms = pv.frame.bbox.width / Math.max(xr.end - xr.start, 1e-9);
  }
  const d = bars.data;
  const n = d.start.length;
  for (let i = 0; i < n; i++) {
    const s = d.start[i], e = d.end[i];
    const started = (t > s || (e <= s && t >= s)) && t >= d.shown[i];
    d.right[i] = started ? Math.min(Math.max(t, s), e) : s;   // no width, no hover, until shown
    d.alpha[i] = started ? d.opacity[i] : 0;
    const judged = t >= d.judged[i];
    d.fill[i] = judged ? d.fill_a[i] : d.fill_b[i];
    d.line[i] = judged ? d.line_a[i] : d.line_b[i];
    d.hatch[i] = judged ? d.hatch_a[i] : d.hatch_b[i];
    d.label[i] = judged ? d.label_a[i] : d.label_b[i];
    d.label_color[i] = judged ? d.label_color_a[i] : d.label_color_b[i];
    d.tip[i] = judged ? d.tip_a[i] : d.tip_b[i];
    let fits = true;
    if (px_per_ms !== null) {
      const need = Math.max(min_label_px, 0.62 * parseFloat(d.label_size[i]) * d.label[i].length);
      fits = (e - s) * px_per_ms >= need;
    }
    d.label_alpha[i] = started && fits && t >= d.label_at[i] ? 1 : 0;
    for (let j = 0; j < HATCHES.length; j++) {   // one overlay per hatch pattern
      const on = started && d.hatch[i] === HATCHES[j];
      d['hb' + j][i] = on ? d.bottom[i] : d.y[i];
      d['ht' + j][i] = on ? d.top[i] : d.y[i];
    }
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
  {
%(frame_js)s
  }
}
function sdp_total() {
  let m = 0;
  for (const e of bars.data.end) m = Math.max(m, e);
  return m;
}
function sdp_label(text) {
  // Changing a Bokeh button's label re-renders it, which drops keyboard focus:
  // give focus back to the new button so Space/Enter keep working.
  if (play.label === text) return;
  const find = () => (window.Bokeh && Bokeh.index && Bokeh.index.find_one) ? Bokeh.index.find_one(play) : null;
  const before = find();
  const focused = before && before.shadow_el && before.shadow_el.activeElement != null;
  play.label = text;
  if (focused) {
    // The new button is rendered after this callback returns.
    setTimeout(() => { const after = find(); if (after && after.button_el) after.button_el.focus(); }, 0);
  }
}
function sdp_stop() {
  state.playing = false;
  if (state.raf) cancelAnimationFrame(state.raf);
  state.raf = null;
  sdp_label('Play');
}
function sdp_run(until) {
  if (reduce) {                // no motion: show the target frame at once
    state.t = until;
    sdp_render(until);
    return;
  }
  state.playing = true;
  state.last = null;
  state.until = until;
  sdp_label('Pause');
  function frame(now) {
    if (!state.playing) return;
    const dt = state.last === null ? 0 : Math.min(now - state.last, 100);
    state.last = now;
    state.t = Math.min(state.t + dt * (SPEEDS[speed.value] || 1), state.until);
    sdp_render(state.t);
    if (state.t >= state.until) {
      sdp_stop();
      sdp_render(state.t);
    } else {
      state.raf = requestAnimationFrame(frame);
    }
  }
  state.raf = requestAnimationFrame(frame);
}
"""

_STATE = """
const state = bars.__sdp || (bars.__sdp = {t: 0, playing: false, last: null, raf: null, until: 0});
const reduce = window.matchMedia && window.matchMedia('(prefers-reduced-motion: reduce)').matches;
"""

_PLAY = """
const total = sdp_total();
if (state.playing) {            // Pause
  sdp_stop();
  sdp_render(state.t);
  return;
}
if (state.t >= total) state.t = 0;   // finished: play again from the start
sdp_run(total);
"""

# Play the next stretch up to the next stop (a round's end), then pause.
_STEP = """
const total = sdp_total();
if (state.playing) sdp_stop();
if (state.t >= total) { state.t = 0; sdp_render(0); }
let next = total;
for (const s of stops.data.t) if (s > state.t + 1e-6 && s < next) next = s;
sdp_run(next);
"""

_RESTART = """
sdp_stop();
state.t = 0;
sdp_render(0);
"""

# The server replaced the timeline: stop, and show the new run's end state
# (the server drew it already; drawing it again resets the frame hook's
# elements too). Play then replays it from zero.
_ON_DATA = """
sdp_stop();
state.whole = false;
state.t = sdp_total();
sdp_render(state.t);
"""


# Bokeh's primary blue (#428bca) gives white text 3.6:1; this one gives 6.4:1 (WCAG AA).
_PRIMARY_CSS = """
.bk-btn-primary { background-color: #2c5f9e; border-color: #244f84; }
.bk-btn-primary:hover, .bk-btn-primary:focus { background-color: #244f84; }
"""
_VISUALLY_HIDDEN_LABEL_CSS = """
label { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
        white-space: nowrap; }
"""


@dataclass(frozen=True)
class Lane:
    """A named lane at height ``y``; its clock stops at the lane's last box."""

    key: str
    title: str
    y: float
    color: str = theme.INK
    clock_dy: float = 0.42
    title_dy: float = 0.3


class LanePlayer:
    """A lanes figure with Play/Pause, Restart, a speed choice and, optionally, a step button.

    Build one per session; call :meth:`show` with a new timeline whenever the
    server recomputes. ``name`` prefixes the Bokeh model names, so tests can find
    ``<name>-bars``, ``<name>-clocks``, ``<name>-cursor``, ``<name>-play``,
    ``<name>-restart``, ``<name>-speed`` and ``<name>-step``.

    Parameters
    ----------
    speeds : mapping of str to float, optional
        Speed choices (label -> simulated ms per real ms); default :data:`SPEEDS`.
    speed : str, optional
        The initial choice; default ``"1× (real time)"``.
    step_label : str, optional
        Adds a button that plays up to the next stop given to :meth:`show`.
    lane_clocks : bool
        Draw each lane's running clock beside its last box.
    styles : mapping, optional
        Extra statuses (same keys as :data:`theme.STATUS`) for this figure.
    frame_js, frame_args : str, mapping
        JavaScript run at the end of every frame with ``t`` (ms), ``state``
        and ``sdp_total()`` in scope, and the Bokeh models or values it needs.
        It must only mutate the DOM or models in place (no property assignment),
        so frames never reach the server.
    min_label_px : float
        If > 0, a label is drawn only where its box is at least this wide, and
        wide enough for the label's text, on screen.
    """

    def __init__(self, lanes: Sequence[Lane], *, name: str, height: int = 260,
                 x_label: str = "wall clock (ms)", label_size: str = "12px",
                 y_pad: tuple[float, float] = (0.75, 0.8),
                 speeds: Mapping[str, float] | None = None, speed: str | None = None,
                 step_label: str | None = None, lane_clocks: bool = True,
                 styles: Mapping[str, dict] | None = None,
                 frame_js: str = "", frame_args: Mapping | None = None, min_label_px: float = 0):
        self.lanes = tuple(lanes)
        self.name = name
        self.label_size = label_size
        self.min_label_px = float(min_label_px)
        self.styles = {**theme.STATUS, **(styles or {})}
        self.hatches = sorted({st["hatch"] for st in self.styles.values()} - {" ", "", "blank"})
        speeds = dict(speeds or SPEEDS)
        speed = speed or ("1× (real time)" if "1× (real time)" in speeds else next(iter(speeds)))
        if speed not in speeds:
            raise ValueError(f"speed must be one of {list(speeds)}; got {speed!r}")
        self.bars = ColumnDataSource(self._empty_bars(), name=f"{name}-bars")
        self.clocks = ColumnDataSource(self._clock_data({}), name=f"{name}-clocks")
        self.cursor = ColumnDataSource(
            dict(x=[0.0], label=[""], align=["left"], offset=[4], playing=[0]), name=f"{name}-cursor"
        )
        self.stops = ColumnDataSource(dict(t=[]), name=f"{name}-stops")
        self.view = ColumnDataSource(dict(x_end=[1000.0], window=[0.0]), name=f"{name}-view")
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
        # Lane titles sit inside the plot, above each lane, pinned to its left edge, so
        # the lanes keep the full width on a phone (an axis label would take a third).
        fig.yaxis.visible = False
        for lane in self.lanes:
            fig.add_layout(Label(
                x=4, x_units="screen", y=lane.y + lane.title_dy, text=lane.title,
                text_font_size="13px", text_color=theme.INK, text_font_style="bold",
                text_baseline="bottom", background_fill_color=theme.PAPER,
                background_fill_alpha=0.85, name=f"{name}-lane-{lane.key}"))
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
            line_width=1.5,
        )
        # Hatches are drawn by one overlay per pattern with scalar hatch
        # properties: vectorised hatching makes BokehJS build a pattern canvas
        # per row on every data change (~70 ms a frame at 120 boxes). A row is
        # hatched by giving it height in its pattern's overlay.
        for j, pattern in enumerate(self.hatches):
            fig.quad(left="start", right="right", bottom=f"hb{j}", top=f"ht{j}", source=self.bars,
                     fill_alpha=0, line_alpha=0, hatch_pattern=pattern, hatch_color="white",
                     hatch_alpha=1.0, hatch_scale=7)
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
        if lane_clocks:
            fig.text(x="x", y="y", text="text", text_align="align", source=self.clocks,
                     text_font_size="14px", text_font_style="bold", text_color="color",
                     text_baseline="bottom", y_offset=-2)
        fig.add_tools(HoverTool(renderers=[boxes], tooltips=[
            ("", "@tip"), ("from", "@start{0,0} ms"), ("to", "@end{0,0} ms")]))
        self.figure = fig

        self.play = Button(label="Play", button_type="primary", width=90, name=f"{name}-play",
                           stylesheets=[_PRIMARY_CSS])
        self.restart = Button(label="Restart", width=90, name=f"{name}-restart")
        # The label is for assistive technology; sighted visitors read the options.
        self.speed = Select(value=speed, options=list(speeds), width=150,
                            name=f"{name}-speed", title="Playback speed",
                            stylesheets=[_VISUALLY_HIDDEN_LABEL_CSS])
        self.step = (Button(label=step_label, width=150, name=f"{name}-step")
                     if step_label else None)
        extra = dict(frame_args or {})
        clash = set(extra) & {"bars", "clocks", "cursor", "xr", "play", "speed", "stops", "view", "fig",
                              "SPEEDS", "min_label_px", "HATCHES"}
        if clash:
            raise ValueError(f"frame_args may not reuse the player's names: {sorted(clash)}")
        args = dict(bars=self.bars, clocks=self.clocks, cursor=self.cursor, xr=self.x_range,
                    play=self.play, speed=self.speed, stops=self.stops, view=self.view, fig=fig,
                    SPEEDS=speeds, min_label_px=float(min_label_px), HATCHES=self.hatches, **extra)
        lib = _STATE + _RENDER.replace("%(muted)s", theme.MUTED).replace("%(frame_js)s", frame_js)

        def js(code: str) -> CustomJS:
            return CustomJS(args=args, code=lib + code)

        self.play.js_on_click(js(_PLAY))
        self.restart.js_on_click(js(_RESTART))
        if self.step is not None:
            self.step.js_on_click(js(_STEP))
        self.bars.js_on_change("data", js(_ON_DATA))
        buttons = [self.play] + ([self.step] if self.step is not None else []) + [self.restart]
        # Wraps onto a second line on a narrow screen instead of overflowing it.
        self.controls = row(*buttons, self.speed, sizing_mode="stretch_width",
                            stylesheets=[":host { flex-wrap: wrap; row-gap: 6px; }"])

    # -- data -------------------------------------------------------------
    def _empty_bars(self) -> dict:
        cols = ("start", "end", "right", "mid", "y", "bottom", "top", "label", "label_size", "fill", "line",
                *(f"{c}{j}" for j in range(len(self.hatches)) for c in ("hb", "ht")), "hatch", "alpha", "label_alpha", "label_color", "tip", "lane", "status",
                "shown", "judged", "label_at", "opacity", "status_before",
                "fill_a", "fill_b", "line_a", "line_b", "hatch_a", "hatch_b", "label_a", "label_b",
                "label_color_a", "label_color_b", "tip_a", "tip_b")
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

    @staticmethod
    def _line(status: str) -> str:
        return theme.INK if status in ("rejected", "correction", "bonus") else "white"

    @staticmethod
    def _label_color(status: str) -> str:
        return theme.INK if status in ("discarded", "correction", "bonus") else "white"

    def show(self, boxes: dict, *, tips: Sequence[str] | None = None,
             x_end: float | None = None, stops: Sequence[float] | None = None,
             window_ms: float | None = None, tips_before: Sequence[str] | None = None) -> None:
        """Replace the timeline, drawn at its end state (Play replays it).

        ``boxes`` has the columns of :data:`BOX_COLUMNS` as sequences of equal
        length; ``status`` keys :data:`theme.STATUS` (or this player's ``styles``).
        Optional columns: ``label_size``; ``shown`` (ms; the box stays hidden
        until then, default its start); ``judged`` (ms; before it the box is
        drawn as ``status_before`` with ``label_before``, default: never);
        ``label_at`` (ms; the label appears then, default the box's end);
        ``opacity`` (default 1); ``label_color``. ``stops`` are the times the
        step button pauses at; ``tips_before`` are the tooltips of boxes not yet
        judged (default: ``tips``). With ``window_ms`` the time axis shows that much
        time around the clock while the run plays, and the whole run at its end.
        """
        start = np.asarray(boxes["start"], dtype=float)
        end = np.asarray(boxes["end"], dtype=float)
        n = start.size
        y = np.asarray(boxes["y"], dtype=float)
        h = np.asarray(boxes["height"], dtype=float)
        status = list(boxes["status"])
        before = list(boxes.get("status_before", status))
        lane = list(boxes["lane"])
        labels = [str(lbl) for lbl in boxes["label"]]
        labels_b = [str(lbl) for lbl in boxes.get("label_before", labels)]
        colors_a = list(boxes.get("label_color", [self._label_color(s) for s in status]))
        colors_b = list(boxes.get("label_color", [self._label_color(s) for s in before]))
        after_style = [self.styles[s] for s in status]
        before_style = [self.styles[s] for s in before]
        shown = np.asarray(boxes.get("shown", start), dtype=float)
        judged = np.asarray(boxes.get("judged", start), dtype=float)
        label_at = np.asarray(boxes.get("label_at", end), dtype=float)
        opacity = np.asarray(boxes.get("opacity", np.ones(n)), dtype=float)
        total = float(end.max()) if end.size else 0.0
        lane_end = {}
        for key, e in zip(lane, end):
            lane_end[key] = max(lane_end.get(key, 0.0), float(e))
        fill_a = [s["fill"] for s in after_style]
        line_a = [s.get("line", self._line(st)) for s, st in zip(after_style, status)]
        hatch_a = [s["hatch"] for s in after_style]
        data = dict(
            start=start, end=end, right=end.copy(), mid=(start + end) / 2, y=y,
            bottom=y - h / 2, top=y + h / 2, label=list(labels),
            label_size=list(boxes.get("label_size", [self.label_size] * n)),
            fill=list(fill_a), line=list(line_a), hatch=list(hatch_a),
            alpha=opacity.copy(), label_alpha=np.ones(n),
            label_color=list(colors_a),
            tip=list(tips) if tips is not None else labels,
            tip_a=list(tips) if tips is not None else labels,
            tip_b=list(tips_before if tips_before is not None else (tips if tips is not None else labels)),
            lane=lane, status=status,
            shown=shown, judged=judged, label_at=label_at, opacity=opacity, status_before=before,
            fill_a=fill_a, fill_b=[s["fill"] for s in before_style],
            line_a=line_a, line_b=[s.get("line", self._line(st)) for s, st in zip(before_style, before)],
            hatch_a=hatch_a, hatch_b=[s["hatch"] for s in before_style],
            label_a=labels, label_b=labels_b,
            label_color_a=colors_a, label_color_b=colors_b,
        )
        for j, pattern in enumerate(self.hatches):
            on = np.array([hp == pattern for hp in hatch_a], dtype=bool)
            data[f"hb{j}"] = np.where(on, data["bottom"], y)
            data[f"ht{j}"] = np.where(on, data["top"], y)
        x_end = x_end if x_end is not None else max(total * 1.1, 1.0)
        if self.min_label_px > 0:
            # Until the browser measures the plot, assume it is about 700 px wide.
            px_per_ms = 700.0 / x_end
            size = np.array([float(str(z).rstrip("px") or 0) for z in data["label_size"]])
            need = np.maximum(self.min_label_px, 0.62 * size * np.array([len(lb) for lb in labels]))
            data["label_alpha"] = ((end - start) * px_per_ms >= need).astype(float)
        # The browser applies these in order. What the data hook reads (range,
        # view, stops) goes before the bars, whose arrival runs the hook; the
        # clocks and the cursor go last, so whoever waits for them (a test, say)
        # sees the new bars too.
        self.x_range.start = 0.0
        self.x_range.end = x_end
        self.view.data = dict(x_end=[float(x_end)], window=[float(window_ms or 0.0)])
        self.stops.data = dict(t=[float(s) for s in (stops if stops is not None else [total])])
        self.bars.data = data
        self.clocks.data = self._clock_data(lane_end, x_end)
        self.cursor.data = dict(x=[total], label=[f"wall clock {total:,.0f} ms"],
                                align=["right"], offset=[-4], playing=[0])

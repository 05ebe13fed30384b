"""Episode 5's view: the break-even map, the summary of simulated points, and the presets.

The map is built once and updated through its sources; :func:`summary_html`,
:func:`source_html` and :func:`declutter` are plain functions a test can call.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import (
    BoxAnnotation,
    ColumnDataSource,
    HoverTool,
    Label,
    Range1d,
    Span,
)
from bokeh.plotting import figure

from ..state import presets
from ..state.ep5 import N_ROUNDS, Q_GRID, BreakEvenMap
from . import theme
from .keys import KEYS_CSS, chart_key, glyph, swatch
from .livehtml import LiveHTML
from .page import StateView, beside, esc, page_css, prose, slider

_CSS = "ep5.css"

MAP_KEY = chart_key(
    "Speedup against acceptance rate",
    swatch("line") + "theory, one curve per k",
    swatch("line", "you") + "theory, your k",
    glyph("◆", "draft") + "break-even q (theory)",
    swatch("dot") + "simulated point; whisker: 95% CI",
    glyph("✗", "rejected") + "interval misses its curve",
    swatch("dot", "draft") + "your q, k (theory)",
    swatch("zone") + "below 1×: slower than plain decoding",
)

#: Sideways nudge of successive points at the same q, so their whiskers do not hide each other.
_JITTER = np.array([0, -3, 3, -6, 6, -1.5, 1.5, -4.5, 4.5]) * 0.003


def declutter(qs: list[float], texts: list[str], *, mine: list[bool]) -> list[str]:
    """Blank the labels that would overlap on the 1× line; the visitor's label always stays.

    Label widths are estimated in units of q (the axis spans 1.1): about 0.012 per character.
    """
    out = list(texts)
    taken: list[tuple[float, float]] = []
    for i in sorted(range(len(qs)), key=lambda i: (not mine[i], qs[i])):
        half = 0.006 * (len(texts[i]) + 1)
        lo, hi = qs[i] - half, qs[i] + half
        if mine[i] or all(hi < a or lo > b for a, b in taken):
            taken.append((lo, hi))
        else:
            out[i] = ""
    return out


def summary_html(s: BreakEvenMap) -> str:
    """The break-even q of each curve, and the tally of simulated points against their curves."""
    q_star = s.break_even(s.k)
    be = (f"With k = {s.k} and c = {s.c:.3f}, speculation breaks even at q = {q_star:.2f} (theory); "
          f"at your q = {s.q:.2f} the theory says {s.theory_speedup:.2f}×."
          if np.isfinite(q_star) else "")
    table = " · ".join(f"k={k}: {s.break_even(k):.2f}" for k in s.curve_ks
                       if np.isfinite(s.break_even(k)))
    if table:
        be += f'<br><span class="sdp-note">Break-even q for each curve (theory, c = {s.c:.3f}): {table}.</span>'
    pts = s.points
    if not pts:
        tally = (f"No simulated points yet. Press <em>Simulate</em> to run {N_ROUNDS} fresh rounds "
                 "at your q, k and c.")
    else:
        last = pts[-1]
        n, m = len(pts), s.misses
        tally = (
            f"<strong>{n}</strong> simulated point{'s' if n != 1 else ''}; "
            f"<strong>{m}</strong> of them ({m / n:.0%}) ha{'s' if m == 1 else 've'} a 95% interval "
            "that misses its theory curve. About 1 in 20 should: that is what a 95% interval means."
            f"<br>Latest: q = {last.q:.2f}, k = {last.k}, c = {last.c:.3f}: measured "
            f"{last.speedup:.2f}× (95% CI {last.ci_low:.2f}–{last.ci_high:.2f}×), theory "
            f"{last.theory:.2f}×.")
    return f'<p class="sdp-points">{be}</p><p class="sdp-points">{tally}</p>'


def source_html(s: BreakEvenMap) -> str:
    """What the last preset set, what it kept as the visitor set it, and its source."""
    p = s.current_preset
    if p is None:
        return ('<p class="sdp-note">Pick a real system to put it on the map. A preset only sets the '
                'numbers its source gives.</p>')
    set_parts = [f"c = {p.c:.3f}"]
    if p.q is not None:
        set_parts.insert(0, f"q = {p.q:.2f}")
    if p.k is not None:
        set_parts.insert(-1, f"k = {p.k}")
    kept = {"q": "the acceptance rate q", "k": "the draft length k"}
    if p.kept:
        names = " and ".join(kept[n] for n in p.kept)
        kept_txt = (f"{names[0].upper()}{names[1:]} {'are' if len(p.kept) > 1 else 'is'} not given "
                    f"by the source, so {'they stay' if len(p.kept) > 1 else 'it stays'} as you set "
                    f"{'them' if len(p.kept) > 1 else 'it'}.")
    else:
        kept_txt = "Every knob comes from the source."
    moved = ("" if s.preset_still_applies else
             " <em>You have moved a slider since applying it.</em>")
    return (
        f'<div class="sdp-source"><p><strong>{esc(p.label)}</strong> sets '
        f'{esc(", ".join(set_parts))}.{moved}</p><p><span class="sdp-kept">{esc(kept_txt)}</span> '
        f'{esc(p.note)}</p><p class="src">Source: {esc(p.source)}</p></div>'
    )


class BreakEvenChart:
    """The map: theory curves, break-even markers, the visitor's position and simulated points."""

    def __init__(self):
        self.curves = ColumnDataSource(
            dict(xs=[], ys=[], k=[], color=[], width=[], alpha=[]), name="ep5-curves")
        self.labels = ColumnDataSource(
            dict(x=[], y=[], text=[], color=[], style=[]), name="ep5-curve-labels")
        self.breakeven = ColumnDataSource(
            dict(q=[], y=[], k=[], size=[], color=[], text=[], dy=[]), name="ep5-breakeven")
        self.you = ColumnDataSource(dict(q=[0.6], y=[1.0], text=[""]), name="ep5-you")
        self.points = ColumnDataSource(
            dict(x=[], q=[], speedup=[], lo=[], hi=[], theory=[], k=[], c=[], marker=[], color=[],
                 verdict=[]), name="ep5-points")
        self.y_range = Range1d(0, 5, name="ep5-y")
        self._top = 1.0
        fig = figure(
            name="ep5-map", height=470, sizing_mode="stretch_width", tools="", toolbar_location=None,
            x_range=Range1d(0, 1.1), y_range=self.y_range,
            x_axis_label="acceptance rate q",
            y_axis_label="speedup over plain decoding (×)",
        )
        fig.add_layout(BoxAnnotation(top=1.0, fill_color=theme.SLOWER, fill_alpha=1.0, level="underlay"))
        fig.add_layout(Span(location=1.0, dimension="width", line_dash="dashed",
                            line_color=theme.REJECTED, line_width=2))
        fig.add_layout(Label(x=0.985, y=0.12, text="slower than plain decoding", text_align="right",
                             text_font_size="14px", text_font_style="bold", text_color=theme.REJECTED))
        fig.add_layout(Label(x=0.985, y=1.0, y_offset=4, text="1× = plain decoding",
                             text_align="right", text_font_size="12px", text_color=theme.REJECTED))
        self.you_line = Span(location=0.6, dimension="height", line_dash="dotted",
                             line_color=theme.DRAFT, line_width=1.5, name="ep5-you-line")
        fig.add_layout(self.you_line)
        lines = fig.multi_line("xs", "ys", source=self.curves, line_color="color",
                               line_width="width", line_alpha="alpha")
        fig.text("x", "y", text="text", source=self.labels, text_color="color",
                 text_font_style="style", text_font_size="12px", text_baseline="middle", x_offset=4)
        be = fig.scatter("q", "y", source=self.breakeven, marker="diamond", size="size",
                         fill_color="color", line_color=theme.INK, line_width=1)
        fig.text("q", "y", text="text", source=self.breakeven, text_align="center",
                 text_baseline="top", y_offset="dy", text_font_size="11px", text_color=theme.INK)
        you = fig.scatter("q", "y", source=self.you, marker="circle", size=12, fill_color=theme.PAPER,
                          line_color=theme.DRAFT, line_width=2.5)
        whiskers = fig.segment("x", "lo", "x", "hi", source=self.points, line_color="color",
                               line_width=1.5, line_alpha=0.8)
        dots = fig.scatter("x", "speedup", source=self.points, marker="marker", size=7,
                           fill_color="color", line_color="color", fill_alpha=0.7, line_width=1.5)
        fig.text("q", "y", text="text", source=self.you, text_align="right", text_baseline="bottom",
                 x_offset=-12, y_offset=-8, text_font_size="12px", text_color=theme.DRAFT,
                 text_font_style="bold")
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[
            ("simulated", "q @q{0.00}, k @k, c @c{0.000}"), ("measured", "@speedup{0.00}×"),
            ("95% CI", "@lo{0.00}–@hi{0.00}×"), ("theory", "@theory{0.00}×"), ("", "@verdict")]))
        fig.add_tools(HoverTool(renderers=[be], tooltips=[
            ("draft length", "k = @k"), ("breaks even at", "q = @q{0.000} (theory)")]))
        fig.add_tools(HoverTool(renderers=[lines], tooltips=[("curve", "k = @k (theory)")],
                                line_policy="nearest"))
        fig.xaxis.ticker = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
        theme.style_figure(fig)
        self.figure = fig

    def update_curves(self, s: BreakEvenMap) -> None:
        ks = s.curve_ks
        xs, ys, color, width, alpha = [], [], [], [], []
        lx, ly, ltext, lcolor, lstyle = [], [], [], [], []
        bq, bk, bsize, bcolor, btext, bdy = [], [], [], [], [], []
        top = 1.0
        for i, k in enumerate(ks):
            mine = k == s.k
            curve = s.curve(k)
            xs.append(Q_GRID)
            ys.append(curve)
            color.append(theme.DRAFT if mine else theme.MUTED)
            width.append(4.0 if mine else 1.4)
            alpha.append(1.0 if mine else 0.75)
            lx.append(1.0)
            ly.append(float(curve[-1]))
            ltext.append(f"k = {k}")
            lcolor.append(theme.DRAFT if mine else theme.MUTED)
            lstyle.append("bold" if mine else "normal")
            top = max(top, float(curve[-1]))
            q_star = s.break_even(k)
            if np.isfinite(q_star):
                bq.append(float(q_star))
                bk.append(k)
                bsize.append(15 if mine else 9)
                bcolor.append(theme.DRAFT if mine else theme.PAPER)
                btext.append(f"k={k}: q={q_star:.2f}" if mine else f"k={k}")
                bdy.append(9)
        # Labels of neighbouring curves at q = 1 are pushed apart so they stay legible.
        order = np.argsort(ly)
        gap = 0.045 * top * 1.12
        placed = np.array(ly, dtype=float)
        for a, b in zip(order[:-1], order[1:]):
            placed[b] = max(placed[b], placed[a] + gap)
        self.curves.data = dict(xs=xs, ys=ys, k=list(ks), color=color, width=width, alpha=alpha)
        self.labels.data = dict(x=lx, y=placed.tolist(), text=ltext, color=lcolor, style=lstyle)
        btext = declutter(bq, btext, mine=[k == s.k for k in bk])
        self.breakeven.data = dict(q=bq, y=[1.0] * len(bq), k=bk, size=bsize, color=bcolor,
                                   text=btext, dy=bdy)
        self._top = top

    def update_you(self, s: BreakEvenMap) -> None:
        y = s.theory_speedup
        self.you.data = dict(q=[s.q], y=[y], text=[f"you: {y:.2f}× (theory)"])
        self.you_line.location = s.q

    def update_points(self, s: BreakEvenMap) -> None:
        pts = s.points
        n = len(pts)
        jitter = _JITTER[np.arange(n) % len(_JITTER)]
        mine = [p.k == s.k for p in pts]
        self.points.data = dict(
            x=[p.q + j for p, j in zip(pts, jitter)], q=[p.q for p in pts],
            speedup=[p.speedup for p in pts], lo=[p.ci_low for p in pts], hi=[p.ci_high for p in pts],
            theory=[p.theory for p in pts], k=[p.k for p in pts], c=[p.c for p in pts],
            marker=["x" if p.misses else "circle" for p in pts],
            color=[theme.REJECTED if p.misses else (theme.INK if m else theme.MUTED)
                   for p, m in zip(pts, mine)],
            verdict=["CI misses the theory" if p.misses else "CI covers the theory" for p in pts],
        )
        top = max([self._top, *(p.ci_high for p in pts)])
        self.y_range.end = top * 1.12


class BreakEvenView(StateView):
    """Controls, the map, the points summary and the presets, bound to one :class:`BreakEvenMap`."""

    state = param.ClassSelector(class_=BreakEvenMap)
    chart_note = param.String(default="", doc="Trusted HTML under the map: how to read it.")
    presets_intro = param.String(default="", doc="Trusted HTML above the preset buttons.")

    def __init__(self, **params):
        super().__init__(**params)
        self.chart = BreakEvenChart()
        # LiveHTML (see Episode 3): the text changes while a slider is dragged, and swapping
        # innerHTML costs far less in the browser than re-rendering a Panel HTML pane.
        css = [page_css(_CSS)]
        self.summary = LiveHTML(sizing_mode="stretch_width", stylesheets=css, name="ep5-summary")
        self.source = LiveHTML(sizing_mode="stretch_width", stylesheets=css,
                               name="ep5-preset-source", margin=(5, 10))
        s = self.state
        s.param.watch(self._on_knobs, ["q", "k", "c"])
        s.param.watch(self._on_points, ["points"])
        s.param.watch(self._on_preset, ["preset"])
        self._redraw_all()

    # --- redraws ---------------------------------------------------------------------

    def _redraw_all(self) -> None:
        with pn.io.hold():
            self.chart.update_curves(self.state)
            self.chart.update_you(self.state)
            self.chart.update_points(self.state)
            self.summary.html = summary_html(self.state)
            self.source.html = source_html(self.state)

    def _on_knobs(self, *events) -> None:
        # k and c move the curves; q only moves the visitor's marker.
        names = {e.name for e in events}
        with pn.io.hold():
            if names & {"k", "c"}:
                self.chart.update_curves(self.state)
                self.chart.update_points(self.state)
            self.chart.update_you(self.state)
            self.summary.html = summary_html(self.state)
            self.source.html = source_html(self.state)

    def _on_points(self, *_):
        with pn.io.hold():
            self.chart.update_curves(self.state)
            self.chart.update_points(self.state)
            self.summary.html = summary_html(self.state)

    def _on_preset(self, *_):
        self.source.html = source_html(self.state)

    # --- layout ------------------------------------------------------------------------

    def layout(self):
        s = self.state
        simulate = pn.widgets.Button.from_param(s.param.simulate, color="primary",
                                                description=None)
        clear = pn.widgets.Button.from_param(s.param.clear, color="default", description=None)
        controls = pn.Column(
            slider(s.param.q, step=0.01, format="0.00"),
            slider(s.param.k),
            slider(s.param.c, step=0.01, format="0.000"),
            pn.Row(simulate, clear),
            width=300, name="ep5-controls",
        )
        buttons = []
        for p in presets.all_presets():
            b = pn.widgets.Button(label=p.label, color="primary", variant="outline",
                                  css_classes=[f"preset-{p.key}"])
            b.on_click(lambda _e, key=p.key: s.apply_preset(key))
            buttons.append(b)
        return pn.Column(
            beside(controls, self.summary, basis="420px"),
            prose(MAP_KEY, KEYS_CSS),
            pn.pane.Bokeh(self.chart.figure, sizing_mode="stretch_width"),
            prose(self.chart_note),
            prose(self.presets_intro),
            pn.FlexBox(*buttons, sizing_mode="stretch_width", flex_wrap="wrap", name="ep5-presets"),
            self.source,
            sizing_mode="stretch_width",
        )

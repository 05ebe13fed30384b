"""Episode 5's view: the break-even map, the summary of simulated points, and the presets.

The map is built once and updated through its sources; :func:`summary_html`,
:func:`source_html` and :func:`map_labels` (where every label of the map goes, so that
none is cut off or hides another) are plain functions a test can call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import panel as pn
import param
from bokeh.models import (
    BoxAnnotation,
    ColumnDataSource,
    HoverTool,
    Range1d,
    Span,
)
from bokeh.plotting import figure

from ...kit import presets, theme
from .state import N_ROUNDS, Q_GRID, BreakEvenMap
from .words import map_words, pooled_miss_sentence
from ...kit.a11y import describe
from ...kit.deferred import when_near
from ...kit.inputs import control_help
from ...kit.keys import KEYS_CSS, chart_key, glyph, swatch
from ...kit.labels import (GAP_PX, LINE_EM, Box, Frame, Tag, axis_end_for, box, place, slid_inside,
                         spread, text_width)
from ...kit.livehtml import LiveHTML
from ...kit.page import StateView, beside, esc, page_css, prose, slider
from ...kit.words import noun, times

_CSS = f"{__package__}:ep5.css"

MAP_KEY = chart_key(
    "Speedup against acceptance rate",
    swatch("line") + "theory, one curve per k",
    swatch("line", "you") + "theory, your k",
    glyph("◆", "draft") + "break-even q (theory)",
    swatch("dot") + "simulated point; whisker: 95% CI",
    glyph("□", "ink") + "points at one setting, pooled; whisker: 95% CI",
    glyph("✗", "rejected") + "interval misses its curve",
    swatch("dot", "draft") + "your q, k (theory)",
    swatch("zone") + "below 1×: slower than plain decoding",
)

#: How strongly a single run is drawn once it is part of a pooled point.
POOLED_ALPHA = 0.35
#: The pooled square and a single run's dot: size and outline width (px).
_SQUARE_PX, _SQUARE_LINE = 11, 3
_DOT_PX, _DOT_LINE = 6, 1.5
#: A pooled setting's single runs stand this far (px) either side of its square, clear of it.
CLEAR_PX = (_SQUARE_PX + _SQUARE_LINE) / 2 + (_DOT_PX + _DOT_LINE) / 2 + 1.5
#: Further runs on one side step this far apart (in q), within this width at most, so that their
#: whiskers stand side by side like a comb beside the pooled square.
SPREAD_STEP, SPREAD_HALF = 0.006, 0.035


def sideways(points, clear: float = 0.0) -> list[float]:
    """Each point's sideways offset (in q). A point alone at its q, k and c stays on its q; the
    points at one setting (pooled under a square) stand at least ``clear`` (in q) from it,
    alternately right and left in the order they were simulated, stepping outwards."""
    groups: dict[tuple, list[int]] = {}
    for i, p in enumerate(points):
        groups.setdefault((round(p.q, 6), p.k, round(p.c, 6)), []).append(i)
    out = [0.0] * len(points)
    for members in groups.values():
        n = len(members)
        if n < 2:
            continue
        per_side = (n + 1) // 2
        step = min(SPREAD_STEP, SPREAD_HALF / (per_side - 1)) if per_side > 1 else 0.0
        for j, i in enumerate(members):
            out[i] = (1 if j % 2 == 0 else -1) * (clear + (j // 2) * step)
    return out

#: The map's plotting area at its narrowest (a 390 px phone), in pixels: its labels are laid
#: out for it, and so fit every wider one.
MAP_FRAME_PX = (300.0, 410.0)
_CURVE_PX, _BE_PX, _YOU_PX = 12.0, 11.0, 12.0
#: Diamonds are this wide (px): the visitor's, and every other curve's.
_DIAMOND_PX = (15, 9)
#: A label's distance from the 1× line (px): clear of the larger diamond.
_BE_DY = _DIAMOND_PX[0] / 2 + 3
#: The notes on the map: below the 1× line, and on it (where they fit; else at the left).
SLOWER_NOTE = Tag(0.985, 0.12, "slower than plain decoding", size=14, align="right", baseline="bottom")
ONE_NOTE = Tag(0.985, 1.0, "1× = plain decoding", size=12, align="right", baseline="bottom",
               dy=-_BE_DY)
#: A note's distance (px) from the visitor's dotted line, when it sits beside it.
_BESIDE_PX = 6.0


def _note_choices(note: Tag, q: float) -> list[Tag]:
    """Where a note on the map may go, best first: at the right, at the left, then in two lines
    at either side, then beside the visitor's dotted line (at ``q``) on either side; a note on
    the 1× line tries above it, then under it; the note in the slower zone, then lower."""
    two = note.moved(text=note.text.replace(" plain", "\nplain"))
    spots = []
    for t in (note, two):
        spots += [t, t.moved(x=0.015, align="left")]
    for t in (note, two):
        spots += [t.moved(x=q, align="right", dx=-_BESIDE_PX), t.moved(x=q, align="left", dx=_BESIDE_PX)]
    if note.y == 1.0:  # on the 1× line: above it first, then under it
        spots += [t.moved(baseline="top", dy=-t.dy) for t in spots]
    else:  # in the slower zone: then lower, just above the axis
        spots += [t.moved(y=0.0, dy=-GAP_PX - 1) for t in spots]
    return spots


@dataclass(frozen=True)
class MapLabels:
    """Every label of the map, placed: the curves' names (one per k, in ``ks`` order), the
    break-even labels (``None``: not drawn, no room), the visitor's label, the two notes on the
    1× line (slower below it, plain decoding on it; ``None``: not drawn) and the x axis's end."""

    ks: tuple[int, ...]
    curves: tuple[Tag, ...]
    breakeven: tuple[Tag | None, ...]
    you: Tag
    notes: tuple[Tag | None, Tag | None]
    x_end: float
    frame: Frame

    def tags(self) -> list[Tag]:
        """Every label that is drawn."""
        return [t for t in (*self.notes, *self.curves, *self.breakeven, self.you) if t is not None]

    def boxes(self) -> list[Box]:
        return [box(t, self.frame) for t in self.tags()]


def map_y_end(s: BreakEvenMap) -> float:
    """The speedup axis's end: room above every curve and every simulated point's whisker."""
    top = max([1.0, *(float(s.curve(k)[-1]) for k in s.curve_ks), *(p.ci_high for p in s.points)])
    return top * 1.12


def _off_the_line(ys: np.ndarray, y_line: float, step: float, lo: float, hi: float) -> np.ndarray:
    """The stack of curve names ``ys`` (centres, ``step`` apart at least) moved up or down as
    little as puts the 1× line (at ``y_line``) in a gap between two names, not through one,
    staying within ``[lo, hi]``."""
    half = (step - GAP_PX) / 2 + 1.0  # half a name's height, and a pixel for the line
    hit = [y for y in ys if abs(y - y_line) < half]
    if not hit:
        return ys
    shifts = sorted((y_line - (y + side * step / 2) for y in hit for side in (-1, 1)), key=abs)
    for d in shifts:
        moved = ys + d
        if (moved.min() >= lo and moved.max() <= hi
                and not any(abs(y - y_line) < half for y in moved)):
            return moved
    return ys


def _breakeven_choices(q_star: dict, mine: int, frame: Frame) -> dict:
    """Each finite break-even's label spots, best first: under or over its diamond, centred,
    then to either side, then a line further away (the visitor's k says its q too)."""
    choices = {}
    step = LINE_EM * _BE_PX + GAP_PX
    for k, q in q_star.items():
        if not np.isfinite(q):
            continue
        under = Tag(q, 1.0, f"k={k}: q={q:.2f}" if k == mine else f"k={k}", size=_BE_PX,
                    align="center", baseline="top", dy=_BE_DY)
        over = under.moved(baseline="bottom", dy=-_BE_DY)
        near = [t.moved(align=a, dx=dx) for a, dx in (("center", 0.0), ("right", 5.0), ("left", -5.0))
                for t in (under, over)]
        far = [t.moved(dy=t.dy + (step if t.dy > 0 else -step)) for t in near]
        choices[k] = [slid_inside(t, frame) for t in near + far]
    return choices


def _along_your_line(you: Tag, frame: Frame) -> list[Tag]:
    """Spots for the visitor's label beside its dotted line (at ``you.x``), on either side, a
    line of text apart from the frame's top to its bottom, the nearest to its dot first."""
    step = LINE_EM * you.size + GAP_PX
    dot = frame.sy(you.y)
    heights = np.arange(step / 2 + GAP_PX, frame.height - step / 2 - GAP_PX, step / 2)
    spots = []
    for h in sorted(heights, key=lambda h: abs(h - dot)):
        at = frame.y0 + frame.dy(h)
        spots += [you.moved(y=at, align="right", baseline="middle", dx=-_BESIDE_PX, dy=0.0),
                  you.moved(y=at, align="left", baseline="middle", dx=_BESIDE_PX, dy=0.0)]
    return spots


def map_labels(s: BreakEvenMap, y_end: float | None = None) -> MapLabels:
    """Where the map's labels go, laid out for the narrowest frame (:data:`MAP_FRAME_PX`).

    The x axis runs past q = 1 far enough for the widest curve name; the curve names sit at
    their curves' ends, pushed apart where curves end close together. Then, in order, each
    on the first free spot of its own: the visitor's label beside its dot (always drawn),
    the two notes on the 1× line, and the break-even labels next to their diamonds (the
    visitor's k first). No label but the visitor's is drawn across a curve, the 1× line or
    the visitor's dotted line: a note or a break-even label with no free spot is not drawn;
    the summary above the map states every break-even point in words anyway.
    """
    w, h = MAP_FRAME_PX
    ks = s.curve_ks
    names = [f"k = {k}" for k in ks]
    x_end = axis_end_for([1.0], [max(text_width(n, _CURVE_PX) for n in names)], w, pad_px=4,
                         at_least=1.1)
    frame = Frame(0.0, x_end, 0.0, map_y_end(s) if y_end is None else y_end, w, h)
    # Curve names: centred on their curves' ends, at least a line apart, inside the frame.
    line = LINE_EM * _CURVE_PX + GAP_PX
    half = LINE_EM * _CURVE_PX / 2 + GAP_PX
    wanted = [frame.sy(float(s.curve(k)[-1])) for k in ks]
    ys = _off_the_line(spread(wanted, line, half, h - half), frame.sy(1.0), line, half, h - half)
    curves = tuple(Tag(1.0, frame.y0 + frame.dy(y), n, size=_CURVE_PX, dx=4)
                   for n, y in zip(names, ys))
    taken = [box(t, frame) for t in curves]
    # The diamonds and the visitor's dot are marks a label must not cover.
    q_star = {k: s.break_even(k) for k in ks}
    for k, q in q_star.items():
        if np.isfinite(q):
            d = (_DIAMOND_PX[0] if k == s.k else _DIAMOND_PX[1]) / 2
            x, y = frame.sx(q), frame.sy(1.0)
            taken.append(Box(x - d, y - d, x + d, y + d))
    y = s.theory_speedup
    dot = (frame.sx(s.q), frame.sy(y))
    taken.append(Box(dot[0] - 7, dot[1] - 7, dot[0] + 7, dot[1] + 7))
    # The visitor's label, beside its dot: above-left first, then the other corners, then further,
    # then anywhere along the visitor's dotted line, nearest the dot first.
    you = Tag(s.q, y, f"you: {y:.2f}× (theory)", size=_YOU_PX, align="right", baseline="bottom",
              dx=-12, dy=-8)
    corners = [you, you.moved(align="left", dx=12), you.moved(baseline="top", dy=8),
               you.moved(align="left", dx=12, baseline="top", dy=8)]
    further = [t.moved(dy=t.dy * 3.5) for t in corners]
    along = _along_your_line(you, frame)
    # Lines a label must not be drawn across: the curves, the 1× line and the visitor's line.
    curves_px = [np.column_stack([frame.sx(Q_GRID), frame.sy(np.asarray(s.curve(k)))]) for k in ks]
    one_px = np.array([[0.0, frame.sy(1.0)], [w, frame.sy(1.0)]])
    you_px = np.array([[frame.sx(s.q), 0.0], [frame.sx(s.q), h]])
    avoid = [*curves_px, one_px, you_px]
    you = place([[slid_inside(t, frame) for t in corners + further + along]], frame, taken=taken,
                required=[True], lines=[curves_px])[0]
    taken.append(box(you, frame))
    # Break-even labels under (or over) their diamonds, where there is room: the visitor's k
    # first, then the notes on the 1× line (at the right, or else at the left), then the others.
    choices = _breakeven_choices(q_star, s.k, frame)
    notes = [[slid_inside(t, frame) for t in _note_choices(n, s.q)] for n in (SLOWER_NOTE, ONE_NOTE)]
    others = [k for k in choices if k != s.k]
    mine = [s.k] if s.k in choices else []
    order = [choices[k] for k in mine] + notes + [choices[k] for k in others]
    placed = place(order, frame, taken=taken, lines=[avoid] * len(order))
    by_k = dict(zip(mine, placed[:len(mine)]))
    slower, one = placed[len(mine):len(mine) + 2]
    by_k.update(zip(others, placed[len(mine) + 2:]))
    return MapLabels(ks=ks, curves=curves, breakeven=tuple(by_k.get(k) for k in ks), you=you,
                     notes=(slower, one), x_end=x_end, frame=frame)


def summary_html(s: BreakEvenMap) -> str:
    """The break-even q of each curve, and the tally of simulated points against their curves."""
    q_star = s.break_even(s.k)
    at_you = f"at your q = {s.q:.2f} the theory says {times(s.theory_speedup)}."
    if not np.isfinite(q_star):
        be = (f"With k = {s.k} and c = {s.c:.3f}, speculation never catches up with plain decoding, "
              f"even at q = 1 (theory); {at_you}")
    elif q_star <= 0.0:
        be = (f"With k = {s.k} and c = {s.c:.3f}, drafting is free: any q above 0 is faster than plain "
              f"decoding, and q = 0 ties with it (theory); {at_you}")
    else:
        be = (f"With k = {s.k} and c = {s.c:.3f}, speculation breaks even at q = {q_star:.2f} (theory); "
              f"{at_you}")
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
            f"<strong>{n}</strong> simulated {noun(n, 'point')}; "
            f"<strong>{m}</strong> of them ({m / n:.0%}) {noun(m, 'has')} a 95% interval "
            "that misses its theory curve. About 1 in 20 should: that is what a 95% interval means."
            f"<br>Latest: q = {last.q:.2f}, k = {last.k}, c = {last.c:.3f}: measured "
            f"{last.speedup:.2f}× (95% CI {last.ci_low:.2f}–{last.ci_high:.2f}×), theory "
            f"{last.theory:.2f}×.")
        here = next((g for g in s.pooled if (round(g.q, 6), g.k, round(g.c, 6))
                     == (round(last.q, 6), last.k, round(last.c, 6))), None)
        if here is not None:
            tally += (f"<br>Pooled, the {here.runs} runs at that setting ({here.runs * N_ROUNDS:,} "
                      f"rounds, the square): {here.speedup:.2f}× (95% CI {here.ci_low:.2f}–"
                      f"{here.ci_high:.2f}×), theory {here.theory:.2f}×: the interval "
                      + ("misses" if here.misses else "covers") + " the curve."
                      + (f" {pooled_miss_sentence()}" if here.misses else ""))
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
        self._make_sources()
        self.y_range = Range1d(0, 5, name="ep5-y")
        self.x_range = Range1d(0, 1.1, name="ep5-x")
        self.figure = self._make_figure()

    def _make_sources(self) -> None:
        self.curves = ColumnDataSource(
            dict(xs=[], ys=[], k=[], color=[], width=[], alpha=[]), name="ep5-curves")
        self.labels = ColumnDataSource(
            dict(x=[], y=[], text=[], color=[], style=[]), name="ep5-curve-labels")
        self.breakeven = ColumnDataSource(
            dict(q=[], y=[], k=[], size=[], color=[], text=[], dy=[], align=[], dx=[], baseline=[]),
            name="ep5-breakeven")
        self.notes = ColumnDataSource(dict(x=[], y=[], text=[], align=[], baseline=[], dx=[], dy=[],
                                           size=[], style=[]), name="ep5-notes")
        # The visitor's dot (q, y) and its label (at q, label_y: beside the dot or along its line).
        self.you = ColumnDataSource(dict(q=[0.6], y=[1.0], label_y=[1.0], text=[""], align=["right"],
                                         baseline=["bottom"], dx=[-12.0], dy=[-8.0]), name="ep5-you")
        self.points = ColumnDataSource(
            dict(x=[], q=[], speedup=[], lo=[], hi=[], theory=[], k=[], c=[], marker=[], color=[],
                 verdict=[], alpha=[]), name="ep5-points")
        self.pooled = ColumnDataSource(
            dict(q=[], speedup=[], lo=[], hi=[], theory=[], k=[], c=[], runs=[], color=[], verdict=[]),
            name="ep5-pooled")

    def _make_figure(self):
        fig = figure(
            name="ep5-map", height=470, sizing_mode="stretch_width", tools="", toolbar_location=None,
            x_range=self.x_range, y_range=self.y_range,
            x_axis_label="acceptance rate q",
            y_axis_label="speedup over plain decoding (×)",
        )
        fig.add_layout(BoxAnnotation(top=1.0, fill_color=theme.SLOWER, fill_alpha=1.0, level="underlay"))
        fig.add_layout(Span(location=1.0, dimension="width", line_dash="dashed",
                            line_color=theme.REJECTED, line_width=2))
        fig.text("x", "y", text="text", source=self.notes, text_align="align", x_offset="dx",
                 text_baseline="baseline", y_offset="dy", text_font_size="size",
                 text_font_style="style", text_color=theme.REJECTED)
        self.you_line = Span(location=0.6, dimension="height", line_dash="dotted",
                             line_color=theme.DRAFT, line_width=1.5, name="ep5-you-line")
        fig.add_layout(self.you_line)
        lines = fig.multi_line("xs", "ys", source=self.curves, line_color="color",
                               line_width="width", line_alpha="alpha")
        fig.text("x", "y", text="text", source=self.labels, text_color="color",
                 text_font_style="style", text_font_size=f"{_CURVE_PX:g}px", text_baseline="middle",
                 x_offset=4)
        # The visitor's dot under the diamonds: where it sits on a break-even point (every
        # curve's, at c = 0 and q = 0), the diamonds stay in sight on its ring.
        fig.scatter("q", "y", source=self.you, marker="circle", size=12, fill_color=theme.PAPER,
                    line_color=theme.DRAFT, line_width=2.5)
        be = fig.scatter("q", "y", source=self.breakeven, marker="diamond", size="size",
                         fill_color="color", line_color=theme.INK, line_width=1)
        fig.text("q", "y", text="text", source=self.breakeven, text_align="align", x_offset="dx",
                 text_baseline="baseline", y_offset="dy", text_font_size=f"{_BE_PX:g}px",
                 text_color=theme.INK)
        dots, pooled = self._draw_points(fig)
        fig.text("q", "label_y", text="text", source=self.you, text_align="align",
                 text_baseline="baseline", x_offset="dx", y_offset="dy", text_font_size=f"{_YOU_PX:g}px", text_color=theme.DRAFT,
                 text_font_style="bold")
        fig.add_tools(HoverTool(renderers=[dots], tooltips=[
            ("simulated", "q @q{0.00}, k @k, c @c{0.000}"), ("measured", "@speedup{0.00}×"),
            ("95% CI", "@lo{0.00}–@hi{0.00}×"), ("theory", "@theory{0.00}×"), ("", "@verdict")]))
        fig.add_tools(HoverTool(renderers=[pooled], tooltips=[
            ("pooled", "@runs runs at q @q{0.00}, k @k, c @c{0.000}"), ("measured", "@speedup{0.00}×"),
            ("95% CI", "@lo{0.00}–@hi{0.00}×"), ("theory", "@theory{0.00}×"), ("", "@verdict")]))
        fig.add_tools(HoverTool(renderers=[be], tooltips=[
            ("draft length", "k = @k"), ("breaks even at", "q = @q{0.000} (theory)")]))
        fig.add_tools(HoverTool(renderers=[lines], tooltips=[("curve", "k = @k (theory)")],
                                line_policy="nearest"))
        fig.xaxis.ticker = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
        theme.style_figure(fig)
        return fig

    def _draw_points(self, fig):
        """The simulated runs, then the pooled squares over them; returns both scatter renderers."""
        fig.segment("x", "lo", "x", "hi", source=self.points, line_color="color", line_width=1.5,
                    line_alpha="alpha")
        dots = fig.scatter("x", "speedup", source=self.points, marker="marker", size=_DOT_PX,
                           fill_color="color", line_color="color", fill_alpha="alpha",
                           line_alpha="alpha", line_width=_DOT_LINE)
        # Points pressed at one setting, pooled: one square and its (narrower) interval between
        # the faint single runs (which stand aside, :func:`sideways`), so a dozen presses read as
        # one measurement.
        fig.segment("q", "lo", "q", "hi", source=self.pooled, line_color="color", line_width=3.5)
        fig.rect("q", "lo", width=0.022, height=2, width_units="data", height_units="screen",
                 source=self.pooled, fill_color="color", line_color="color")
        fig.rect("q", "hi", width=0.022, height=2, width_units="data", height_units="screen",
                 source=self.pooled, fill_color="color", line_color="color")
        pooled = fig.scatter("q", "speedup", source=self.pooled, marker="square", size=_SQUARE_PX,
                             fill_color=theme.PAPER, line_color="color", line_width=_SQUARE_LINE)
        return dots, pooled

    def update_curves(self, s: BreakEvenMap) -> None:
        """The curves, their names and the break-even markers, and the axes that hold them."""
        ks = s.curve_ks
        xs, ys, color, width, alpha = [], [], [], [], []
        for k in ks:
            mine = k == s.k
            xs.append(Q_GRID)
            ys.append(s.curve(k))
            color.append(theme.DRAFT if mine else theme.MUTED)
            width.append(4.0 if mine else 1.4)
            alpha.append(1.0 if mine else 0.75)
        self.curves.data = dict(xs=xs, ys=ys, k=list(ks), color=color, width=width, alpha=alpha)
        self.y_range.end = map_y_end(s)
        self.update_labels(s)

    def update_labels(self, s: BreakEvenMap) -> None:
        """Every label, laid out again (:func:`map_labels`); a source is sent only if it changed."""
        lay = map_labels(s, self.y_range.end)
        self.x_range.end = lay.x_end
        mine = [k == s.k for k in lay.ks]
        labels = dict(x=[t.x for t in lay.curves], y=[t.y for t in lay.curves],
                      text=[t.text for t in lay.curves],
                      color=[theme.DRAFT if m else theme.MUTED for m in mine],
                      style=["bold" if m else "normal" for m in mine])
        be = dict(q=[], y=[], k=[], size=[], color=[], text=[], dy=[], align=[], dx=[], baseline=[])
        for k, m, tag in zip(lay.ks, mine, lay.breakeven):
            q = s.break_even(k)
            if not np.isfinite(q):
                continue
            be["q"].append(float(q))
            be["y"].append(1.0)
            be["k"].append(k)
            be["size"].append(_DIAMOND_PX[0] if m else _DIAMOND_PX[1])
            be["color"].append(theme.DRAFT if m else theme.PAPER)
            be["text"].append("" if tag is None else tag.text)
            be["dy"].append(_BE_DY if tag is None else tag.dy)
            be["align"].append("center" if tag is None else tag.align)
            be["dx"].append(0.0 if tag is None else tag.dx)
            be["baseline"].append("top" if tag is None else tag.baseline)
        you = lay.you
        you_data = dict(q=[s.q], y=[s.theory_speedup], label_y=[you.y], text=[you.text],
                        align=[you.align], baseline=[you.baseline], dx=[you.dx], dy=[you.dy])
        shown = [(t, bold) for t, bold in zip(lay.notes, (True, False)) if t is not None]
        notes = dict(x=[t.x for t, _ in shown], y=[t.y for t, _ in shown],
                     text=[t.text for t, _ in shown], align=[t.align for t, _ in shown],
                     baseline=[t.baseline for t, _ in shown], dx=[t.dx for t, _ in shown],
                     dy=[t.dy for t, _ in shown],
                     size=[f"{t.size:g}px" for t, _ in shown],
                     style=["bold" if b else "normal" for _, b in shown])
        for src, data in ((self.labels, labels), (self.breakeven, be), (self.you, you_data),
                          (self.notes, notes)):
            if dict(src.data) != data:
                src.data = data
        self.you_line.location = s.q

    def update_you(self, s: BreakEvenMap) -> None:
        """The visitor's dot and line moved (q changed): its label, and the labels it displaces."""
        self.update_labels(s)

    def update_points(self, s: BreakEvenMap) -> None:
        pts = s.points
        # Clear of the square on the narrowest frame, and so on every wider one.
        jitter = sideways(pts, clear=CLEAR_PX * (self.x_range.end - self.x_range.start) / MAP_FRAME_PX[0])
        mine = [p.k == s.k for p in pts]
        pooled = s.pooled
        grouped = {(round(g.q, 6), g.k, round(g.c, 6)) for g in pooled}
        # A single run that is part of a pooled point is drawn faint: the square is the reading.
        alpha = [POOLED_ALPHA if (round(p.q, 6), p.k, round(p.c, 6)) in grouped else 0.8 for p in pts]
        self.pooled.data = dict(
            q=[g.q for g in pooled], speedup=[g.speedup for g in pooled], lo=[g.ci_low for g in pooled],
            hi=[g.ci_high for g in pooled], theory=[g.theory for g in pooled], k=[g.k for g in pooled],
            c=[g.c for g in pooled], runs=[g.runs for g in pooled],
            color=[theme.REJECTED if g.misses else theme.INK for g in pooled],
            verdict=["CI misses the theory" if g.misses else "CI covers the theory" for g in pooled])
        self.points.data = dict(alpha=alpha,
            x=[p.q + j for p, j in zip(pts, jitter)], q=[p.q for p in pts],
            speedup=[p.speedup for p in pts], lo=[p.ci_low for p in pts], hi=[p.ci_high for p in pts],
            theory=[p.theory for p in pts], k=[p.k for p in pts], c=[p.c for p in pts],
            marker=["x" if p.misses else "circle" for p in pts],
            color=[theme.REJECTED if p.misses else (theme.INK if m else theme.MUTED)
                   for p, m in zip(pts, mine)],
            verdict=["CI misses the theory" if p.misses else "CI covers the theory" for p in pts],
        )


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
        # The presets under the map are built when the visitor scrolls near them
        # (kit/deferred.py); until then their source note is None.
        self.source = None
        s = self.state
        s.param.watch(self._on_knobs, ["q", "k", "c"])
        s.param.watch(self._on_points, ["points"])
        s.param.watch(self._on_preset, ["preset"])
        self._redraw_all()
        self.presets_slot = when_near(self._presets_part, name="ep5-presets-slot")

    # --- redraws ---------------------------------------------------------------------

    def _redraw_all(self) -> None:
        with pn.io.hold():
            self.chart.update_curves(self.state)
            self.chart.update_points(self.state)
            self.summary.html = summary_html(self.state)
            describe(self.chart.figure, map_words(self.state))
            self._on_preset()

    def _on_knobs(self, *events) -> None:
        # k and c move the curves; q only moves the visitor's marker.
        names = {e.name for e in events}
        with pn.io.hold():
            if names & {"k", "c"}:
                self.chart.update_curves(self.state)
                self.chart.update_points(self.state)
            else:
                self.chart.update_you(self.state)
            self.summary.html = summary_html(self.state)
            describe(self.chart.figure, map_words(self.state))
            self._on_preset()

    def _on_points(self, *_):
        with pn.io.hold():
            self.chart.update_curves(self.state)
            self.chart.update_points(self.state)
            self.summary.html = summary_html(self.state)
            describe(self.chart.figure, map_words(self.state))

    def _on_preset(self, *_):
        if self.source is not None:
            self.source.html = source_html(self.state)

    def _presets_part(self):
        """The preset buttons (real systems' q, k and c) and the source of the one chosen."""
        s = self.state
        self.source = LiveHTML(sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                               name="ep5-preset-source", margin=(5, 10))
        self._on_preset()
        buttons = []
        for p in presets.all_presets():
            b = pn.widgets.Button(label=p.label, color="primary", variant="outline",
                                  css_classes=[f"preset-{p.key}"])
            b.on_click(lambda _e, key=p.key: s.apply_preset(key))
            buttons.append(b)
        return pn.Column(
            prose(self.presets_intro),
            pn.FlexBox(*buttons, sizing_mode="stretch_width", flex_wrap="wrap", name="ep5-presets"),
            self.source,
            sizing_mode="stretch_width",
        )

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
            control_help(s, ["q", "k", "c", "simulate", "clear"]),
            width=300, name="ep5-controls",
        )
        # The map beside the controls (under them on a phone, after the summary, which reads
        # out the break-even points and the simulated ones while the controls move).
        right = pn.Column(self.summary, prose(MAP_KEY, KEYS_CSS),
                          pn.pane.Bokeh(self.chart.figure, sizing_mode="stretch_width"),
                          sizing_mode="stretch_width")
        return pn.Column(
            beside(controls, right, basis="420px", min_width=300),
            prose(self.chart_note),
            self.presets_slot,
            sizing_mode="stretch_width",
        )

"""Episode 3's view: three sliders, the numbers, the speedup-by-k chart and the histogram.

Every figure is built once and updated through its sources; the HTML builders
(:func:`numbers_html`, :func:`economics_html`) and the sentences they hold
(:func:`verdict`, :func:`verdict_html`, :func:`best_k_words`) are plain functions of the
state, so a test can check every sentence against the numbers it states.
"""

from __future__ import annotations

import math

import numpy as np
import panel as pn
import param
from bokeh.models import (
    BoxAnnotation,
    ColumnDataSource,
    FixedTicker,
    HoverTool,
    NumeralTickFormatter,
    Range1d,
    Span,
)
from bokeh.plotting import figure

from .state import K_SLIDER_MAX, N_ROUNDS, QualityDial
from .words import best_k_words, histogram_words, speedup_words
from ...kit import theme
from ...kit.a11y import describe
from ...kit.inputs import control_help
from ...kit.keys import KEYS_CSS, chart_key, glyph, swatch
from ...kit.labels import Frame, Tag, place
from ...kit.livehtml import LiveHTML
from ...kit.page import StateView, beside, page_css, prose, slider, stat
from ...kit.words import plural, times, versus_one
from ...sim.verdict import FASTER, SLOWER, speedup_verdict

_KS = np.arange(1, K_SLIDER_MAX + 1)
_CSS = f"{__package__}:ep3.css"

SPEEDUP_KEY = chart_key(
    "Speedup for every draft length k",
    swatch("bar", "discarded") + "theory, each k",
    swatch("bar", "draft") + "theory, your k",
    swatch("dot") + "measured at your k; whisker: 95% CI",
    glyph("★", "gold") + "best k (theory)",
    swatch("zone") + "below 1×: slower than plain decoding",
)
HISTOGRAM_KEY = chart_key(
    "Drafts accepted per round",
    swatch("bar", "accepted") + f"measured share of {N_ROUNDS:,} rounds",
    swatch("tick") + "theory",
    note="A round with a accepted drafts yields a + 1 tokens.",
)


#: The speedup chart's plotting area at its narrowest (a 390 px phone): labels are laid out
#: for it, and so fit every wider one.
SPEEDUP_FRAME_PX = (285.0, 270.0)
#: The x range of the speedup chart.
_X_RANGE = (0.3, K_SLIDER_MAX + 0.7)


def ceil_to(x: float, step: float) -> float:
    """``x`` rounded up to a whole number of ``step`` (an axis end that moves in steps)."""
    return round(math.ceil(x / step - 1e-9) * step, 10)


def verdict(ci_low: float, ci_high: float) -> str:
    """"faster", "slower" or "even": how a measured speedup compares with plain decoding.

    The one rule (:func:`..sim.verdict.speedup_verdict`): faster (slower) only when the whole
    95% interval, as shown to two decimals, is above (below) 1.00, and then the speedup shown
    is too; otherwise the run cannot tell the two apart, and the page says so.
    """
    return {FASTER: "faster", SLOWER: "slower"}.get(speedup_verdict(ci_low, ci_high), "even")


def verdict_html(s: QualityDial) -> str:
    """The sentence under the numbers: is this run faster or slower than plain decoding?"""
    r = s.result
    kind = verdict(r.ci_low, r.ci_high)
    theory_cmp = versus_one(s.theory_speedup)
    th = times(s.theory_speedup)
    if kind == "slower":
        text = (f"<strong>Slower:</strong> speculating is now slower than not speculating. This run "
                f"measured {times(r.speedup)}, so every token takes {1 / r.speedup:.2f} times as long "
                "as when the big model writes alone"
                + ("" if theory_cmp < 0 else
                   f" (theory says {th}: this close to 1×, chance decides)") + ".")
    elif kind == "faster":
        text = (f"<strong>Faster:</strong> the draft pays for itself. This run produced text "
                f"{r.speedup:.2f} times as fast as plain decoding"
                + ("" if theory_cmp > 0 else f" (theory says {th}: this run was lucky)") + ".")
    else:
        text = (f"<strong>About even:</strong> this run measured {times(r.speedup)} (95% CI "
                f"{r.ci_low:.2f}–{r.ci_high:.2f}×), which cannot be told apart from plain decoding; "
                f"theory says {th}.")
    css = {"faster": "faster", "slower": "slower", "even": "even"}[kind]
    return f'<div class="sdp-verdict {css}" role="status">{text}</div>'


def numbers_html(s: QualityDial) -> str:
    """The measured speedup, the theory beside it, the best k, and the faster/slower verdict."""
    r = s.result
    best_value, best_caption, _ = best_k_words(s)
    return (
        stat(times(r.speedup), f"measured speedup, {N_ROUNDS:,} fresh rounds "
             f"(95% CI {r.ci_low:.2f}–{r.ci_high:.2f}×)")
        + stat(times(s.theory_speedup), "theory (closed form) at the same q, k, c",
               css_class="theory")
        + stat(best_value, best_caption)
        + verdict_html(s)
    )


def economics_html(s: QualityDial) -> str:
    """One round's tokens and cost, measured, and how they make the speedup."""
    r = s.result
    return (
        '<h2>The economics of one round</h2>'
        '<p class="sdp-econ">Speedup = <code>tokens per round ÷ cost per round</code>'
        ' = <code>(accepted + 1) ÷ (1 + k·c)</code>, with cost counted in big-model passes.</p>'
        '<p class="sdp-econ">'
        f'Tokens per round, measured: <strong>{r.tokens_per_round:.3f}</strong> '
        f'(on average {r.mean_accepted:.3f} accepted drafts + 1 token from the big model; '
        f'theory {s.theory_tokens_per_round:.3f}).<br>'
        f'Cost per round: 1 + {s.k} × {s.c:.2f} = <strong>{r.cost_per_round:.3f}</strong> '
        'big-model passes (one check, plus k draft steps).<br>'
        f'Measured speedup: {r.tokens_per_round:.3f} ÷ {r.cost_per_round:.3f} = '
        f'<strong>{r.speedup:.3f}×</strong>.</p>'
        '<p class="sdp-note">The black ticks in the histogram are the theory: a round keeps exactly '
        'a drafts (a &lt; k) with probability q<sup>a</sup>(1 − q), and all k with probability '
        'q<sup>k</sup>. Hover a bar for the counts.</p>'
    )


#: The star's label: its size (px) and its height above the star (Bokeh's y_offset, px).
_STAR_PX, _STAR_DY = 12.0, -10.0


def star_tag(k: int, y: float, text: str, frame: Frame) -> Tag:
    """Where the best-k star's label goes: centred above the star, or, near an edge of the
    chart, running inward from it (so it is never cut off)."""
    above = Tag(k, y, text, size=_STAR_PX, align="center", baseline="bottom", dy=_STAR_DY)
    choices = [above, above.moved(align="right", dx=9.0), above.moved(align="left", dx=-9.0)]
    return place([choices], frame, required=[True])[0]


class SpeedupByK:
    """Theory speedup for every draft length, the visitor's k with its measured value and CI."""

    def __init__(self):
        self.bars = ColumnDataSource(
            dict(k=_KS, theory=np.zeros(K_SLIDER_MAX), fill=[theme.DISCARDED] * K_SLIDER_MAX,
                 line=[theme.DISCARDED] * K_SLIDER_MAX, note=[""] * K_SLIDER_MAX), name="ep3-bars")
        self.measured = ColumnDataSource(dict(k=[4], speedup=[0.0], lo=[0.0], hi=[0.0]),
                                         name="ep3-measured")
        self.best = ColumnDataSource(dict(k=[1], y=[0.0], star_y=[0.0], text=[""], align=["center"],
                                          dx=[0.0]), name="ep3-best")
        self.y_range = Range1d(0, 3, name="ep3-speedup-y")
        fig = figure(
            name="ep3-speedup-fig", height=330, sizing_mode="stretch_width",
            x_range=Range1d(*_X_RANGE), y_range=self.y_range, tools="",
            toolbar_location=None,
            x_axis_label="draft length k", y_axis_label="speedup over plain decoding (×)",
        )
        fig.add_layout(BoxAnnotation(top=1.0, fill_color=theme.SLOWER, fill_alpha=1.0, level="underlay"))
        fig.add_layout(Span(location=1.0, dimension="width", line_dash="dashed",
                            line_color=theme.REJECTED, line_width=1.5))
        bars = fig.vbar(x="k", top="theory", width=0.72, source=self.bars, fill_color="fill",
                        line_color="line", line_width=1.5, fill_alpha=0.85)
        fig.scatter("k", "star_y", source=self.best, marker="star", size=17,
                    fill_color=theme.GOLD, line_color=theme.INK)
        fig.text("k", "star_y", text="text", source=self.best, text_align="align", x_offset="dx",
                 text_baseline="bottom", y_offset=_STAR_DY, text_font_size=f"{_STAR_PX:g}px",
                 text_color=theme.INK, text_font_style="bold")
        fig.segment("k", "lo", "k", "hi", source=self.measured, line_color=theme.INK, line_width=2.5)
        dot = fig.scatter("k", "speedup", source=self.measured, size=10, fill_color=theme.PAPER,
                          line_color=theme.INK, line_width=2.5)
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[
            ("k", "@k"), ("theory speedup", "@theory{0.00}×"), ("", "@note")]))
        fig.add_tools(HoverTool(renderers=[dot], tooltips=[
            ("measured", "@speedup{0.00}×"), ("95% CI", "@lo{0.00}–@hi{0.00}×")]))
        fig.xaxis.ticker = list(range(1, K_SLIDER_MAX + 1))
        fig.xgrid.grid_line_color = None
        theme.style_figure(fig)
        self.figure = fig

    def update(self, s: QualityDial) -> None:
        theory = s.speedup_by_k
        best = s.best_k
        fill = [theme.DRAFT if k == s.k else theme.DISCARDED for k in _KS]
        line = [theme.INK if k == s.k else theme.DISCARDED for k in _KS]
        note = ["your k" if k == s.k else "" for k in _KS]
        note[best - 1] = ("your k, and the best k" if best == s.k else "best k") + " for this q and c"
        if versus_one(s.best_speedup) <= 0:
            note[best - 1] += ", yet no faster than plain decoding"
        r = s.result
        # Plain lists, not numpy arrays: for a few dozen numbers, inline JSON saves the two extra
        # websocket frames Bokeh writes per binary buffer (each can wait on TCP's Nagle delay).
        self.bars.data = dict(k=_KS.tolist(), theory=theory.tolist(), fill=fill, line=line, note=note)
        self.measured.data = dict(k=[s.k], speedup=[r.speedup], lo=[r.ci_low], hi=[r.ci_high])
        top = max(float(theory.max()), r.ci_high, 1.0)
        # The star sits above its bar and above the measured whisker if that is under its label.
        base = max(float(theory[best - 1]), r.ci_high if abs(best - s.k) <= 3 else 0.0)
        # Whole half-units, so the axis stays put over most slider steps instead of
        # rescaling (and re-laying out its labels) on every move; tall enough for the star's label.
        w, h = SPEEDUP_FRAME_PX
        room = (-_STAR_DY + 1.25 * _STAR_PX + 4) / h
        end = ceil_to(max(top * 1.3 + 0.1, base / (1 - 0.07 - room)), 0.5)
        star_y = base + 0.07 * end
        label = best_k_words(s)[2]
        tag = star_tag(best, star_y, label, Frame(*_X_RANGE, 0.0, end, w, h))
        self.best.data = dict(k=[best], y=[float(theory[best - 1])], star_y=[float(star_y)],
                              text=[label], align=[tag.align], dx=[tag.dx])
        self.y_range.end = end


class AcceptedHistogram:
    """Rounds with 0..k accepted drafts: measured bars against the theory pmf."""

    def __init__(self):
        self.source = ColumnDataSource(
            dict(a=[0], measured=[0.0], theory=[0.0], rounds=[0], tokens=[1], yields=["1 token"]),
            name="ep3-hist")
        self.x_range = Range1d(-0.6, 4.6, name="ep3-hist-x")
        self.y_range = Range1d(0, 1, name="ep3-hist-y")
        fig = figure(
            name="ep3-hist-fig", height=290, sizing_mode="stretch_width",
            x_range=self.x_range, y_range=self.y_range, tools="", toolbar_location=None,
            x_axis_label="drafts accepted in a round",
            y_axis_label="share of rounds",
        )
        bars = fig.vbar(x="a", top="measured", width=0.7, source=self.source,
                        fill_color=theme.ACCEPTED, fill_alpha=0.8, line_color=theme.ACCEPTED)
        ticks = fig.scatter("a", "theory", source=self.source, marker="dash", size=34,
                            line_color=theme.INK, line_width=3)
        fig.add_tools(HoverTool(renderers=[bars, ticks], tooltips=[
            ("accepted drafts", "@a (the round yields @yields)"),
            ("measured", "@measured{0.0%} of rounds (@rounds)"), ("theory", "@theory{0.0%}")]))
        fig.yaxis.formatter = NumeralTickFormatter(format="0%")
        fig.xgrid.grid_line_color = None
        self.ticker = FixedTicker(ticks=list(range(5)))
        fig.xaxis.ticker = self.ticker
        theme.style_figure(fig)
        self.figure = fig

    def update(self, s: QualityDial) -> None:
        r = s.result
        counts = r.accepted_histogram()
        a = np.arange(s.k + 1)
        measured = counts / r.n_rounds
        theory = s.theory_pmf
        self.source.data = dict(a=a.tolist(), measured=measured.tolist(), theory=theory.tolist(),
                                rounds=counts.tolist(), tokens=(a + 1).tolist(),
                                yields=[plural(int(n), "token") for n in a + 1])
        self.x_range.update(start=-0.6, end=s.k + 0.6)
        self.y_range.end = ceil_to(max(float(measured.max()), float(theory.max())) * 1.45, 0.1)
        if self.ticker.ticks != a.tolist():
            self.ticker.ticks = a.tolist()


class QualityDialView(StateView):
    """Sliders, the numbers, and the two charts, bound to one :class:`QualityDial`."""

    state = param.ClassSelector(class_=QualityDial)

    def __init__(self, **params):
        super().__init__(**params)
        self.speedup = SpeedupByK()
        self.histogram = AcceptedHistogram()
        css = [page_css(_CSS)]
        self.numbers = LiveHTML(sizing_mode="stretch_width", stylesheets=css, name="ep3-numbers",
                                margin=(0, 10))
        self.economics = LiveHTML(sizing_mode="stretch_width", stylesheets=css,
                                  name="ep3-economics", margin=(5, 10))
        self.state.param.watch(self._redraw, "result")
        self._redraw()

    def _redraw(self, *_):
        s = self.state
        with pn.io.hold():
            self.speedup.update(s)
            self.histogram.update(s)
            describe(self.speedup.figure, speedup_words(s))
            describe(self.histogram.figure, histogram_words(s))
            self.numbers.html = numbers_html(s)
            self.economics.html = economics_html(s)

    def layout(self):
        s = self.state
        controls = pn.Column(
            slider(s.param.q, step=0.01, format="0.00"),
            slider(s.param.k),
            slider(s.param.c, step=0.01, format="0.00"),
            pn.widgets.Button.from_param(s.param.run_again, color="default", description=None),
            control_help(s, ["q", "k", "c", "run_again"]),
            width=300, name="ep3-controls",
        )
        charts = pn.Column(
            prose(SPEEDUP_KEY, KEYS_CSS),
            pn.pane.Bokeh(self.speedup.figure, sizing_mode="stretch_width"),
            prose(HISTOGRAM_KEY, KEYS_CSS),
            pn.pane.Bokeh(self.histogram.figure, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
        return pn.Column(
            beside(controls, self.numbers, basis="420px"),
            charts,
            self.economics,
            sizing_mode="stretch_width",
        )

"""Episode 3: the quality dial — when does the draft pay for itself?

Three sliders (draft quality q, draft length k, draft cost c). Every move runs
2,000 fresh Monte-Carlo rounds and shows the measured speedup with its 95%
interval beside the closed-form theory, the round's economics in numbers, the
histogram of accepted drafts against the theory, and the best k for q and c.
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
    Label,
    NumeralTickFormatter,
    Range1d,
    Span,
)
from bokeh.plotting import figure

from . import neighbours
from ..state.ep3 import K_MAX, N_ROUNDS, QualityDial
from ..views import theme
from ..views.livehtml import LiveHTML
from ..views.page import episode_shell, esc, page_css, stat
from ..views.urlstate import bind_url

NUMBER = 3
SLUG = "ep3_the_quality_dial"
TITLE = "The quality dial: when does the draft pay for itself?"
SUMMARY = ("Three knobs (how good the draft is, how far it guesses, what a guess costs) and 2,000 "
           "simulated rounds per move: find the best draft length, then the cliff where speculating "
           "gets slower than not speculating.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("q", "k", "c")

_KS = np.arange(1, K_MAX + 1)

#: Chart keys are HTML above each chart rather than Bokeh legends: they wrap on a narrow
#: screen (a horizontal Bokeh legend overflows a phone), and they name every mark in words.
KEY_CSS = f"""
.sdp-key {{ font-size: 0.92rem; line-height: 1.75; margin: 0.8em 0 0 0; max-width: 60em; }}
.sdp-key .t {{ font-weight: 650; margin-right: 0.6em; }}
.sdp-key .it {{ white-space: nowrap; margin-right: 1.1em; color: {theme.INK}; }}
.sdp-key .sw {{ display: inline-block; vertical-align: middle; margin-right: 5px; box-sizing: border-box; }}
.sdp-key .bar {{ width: 12px; height: 14px; border: 1.5px solid; }}
.sdp-key .dot {{ width: 11px; height: 11px; border-radius: 50%; border: 2.5px solid {theme.INK};
  background: {theme.PAPER}; }}
.sdp-key .tick {{ width: 18px; height: 0; border-top: 3px solid {theme.INK}; }}
.sdp-key .line {{ width: 20px; height: 0; border-top: 2px solid {theme.MUTED}; }}
.sdp-key .line.you {{ border-top: 4px solid {theme.DRAFT}; }}
.sdp-key .zone {{ width: 18px; height: 12px; background: {theme.SLOWER}; border-top: 2px dashed {theme.REJECTED}; }}
.sdp-key .glyph {{ font-size: 1.05rem; margin-right: 4px; }}
"""


def _key(title: str, *items: str, note: str = "") -> str:
    """A chart key: a bold title, items that each keep their swatch and words together, a note."""
    return (f'<div class="sdp-key"><span class="t">{title}</span>'
            + "".join(f'<span class="it">{item}</span> ' for item in items) + note + "</div>")


SPEEDUP_KEY = _key(
    "Speedup for every draft length k",
    f'<span class="sw bar" style="background:{theme.DISCARDED};border-color:{theme.DISCARDED}"></span>'
    "theory, each k",
    f'<span class="sw bar" style="background:{theme.DRAFT};border-color:{theme.INK}"></span>theory, your k',
    '<span class="sw dot"></span>measured at your k; whisker: 95% CI',
    f'<span class="glyph" style="color:{theme.GOLD}">★</span>best k (theory)',
    '<span class="sw zone"></span>below 1×: slower than plain decoding',
)
HISTOGRAM_KEY = _key(
    "Drafts accepted per round",
    f'<span class="sw bar" style="background:{theme.ACCEPTED};border-color:{theme.ACCEPTED}"></span>'
    f"measured share of {N_ROUNDS:,} rounds",
    '<span class="sw tick"></span>theory',
    note="A round with a accepted drafts yields a + 1 tokens.",
)

_CSS = page_css() + f"""
.sdp-verdict {{ border-radius: 6px; padding: 0.55em 0.9em; margin: 0.3em 0 0.6em 0; max-width: 46em;
  font-size: 1.02rem; line-height: 1.45; }}
.sdp-verdict.slower {{ background: {theme.SLOWER}; border: 2px solid {theme.REJECTED}; }}
.sdp-verdict.faster {{ background: #eaf5ec; border: 1px solid #9cc9a6; }}
.sdp-econ {{ font-variant-numeric: tabular-nums; line-height: 1.6; font-size: 1.02rem; margin: 0.2em 0 0.4em 0; }}
.sdp-econ code {{ background: #f3f4f7; padding: 0.05em 0.35em; border-radius: 3px; }}
.sdp-stat.theory .v {{ color: {theme.MUTED}; }}
{KEY_CSS}
"""


def _ceil_to(x: float, step: float) -> float:
    """``x`` rounded up to a whole number of ``step`` (an axis end that moves in steps)."""
    return round(math.ceil(x / step - 1e-9) * step, 10)


class SpeedupByK:
    """Theory speedup for every draft length, the visitor's k with its measured value and CI."""

    def __init__(self):
        self.bars = ColumnDataSource(
            dict(k=_KS, theory=np.zeros(K_MAX), fill=[theme.DISCARDED] * K_MAX,
                 line=[theme.DISCARDED] * K_MAX, note=[""] * K_MAX), name="ep3-bars")
        self.measured = ColumnDataSource(dict(k=[4], speedup=[0.0], lo=[0.0], hi=[0.0]),
                                         name="ep3-measured")
        self.best = ColumnDataSource(dict(k=[1], y=[0.0], star_y=[0.0], text=[""]),
                                     name="ep3-best")
        self.y_range = Range1d(0, 3, name="ep3-speedup-y")
        fig = figure(
            name="ep3-speedup-fig", height=330, sizing_mode="stretch_width",
            x_range=Range1d(0.3, K_MAX + 0.7), y_range=self.y_range, tools="",
            toolbar_location=None,
            x_axis_label="draft length k", y_axis_label="speedup over plain decoding (×)",
        )
        fig.add_layout(BoxAnnotation(top=1.0, fill_color=theme.SLOWER, fill_alpha=1.0, level="underlay"))
        fig.add_layout(Span(location=1.0, dimension="width", line_dash="dashed",
                            line_color=theme.REJECTED, line_width=1.5))
        fig.add_layout(Label(x=K_MAX + 0.6, y=0.08, text="below 1×: slower than plain decoding",
                             text_align="right", text_font_size="12px", text_color=theme.REJECTED,
                             background_fill_color=theme.PAPER, background_fill_alpha=0.85))
        bars = fig.vbar(x="k", top="theory", width=0.72, source=self.bars, fill_color="fill",
                        line_color="line", line_width=1.5, fill_alpha=0.85)
        best = fig.scatter("k", "star_y", source=self.best, marker="star", size=17,
                           fill_color=theme.GOLD, line_color=theme.INK)
        fig.text("k", "star_y", text="text", source=self.best, text_align="center",
                 text_baseline="bottom", y_offset=-10, text_font_size="12px",
                 text_color=theme.INK, text_font_style="bold")
        whisker = fig.segment("k", "lo", "k", "hi", source=self.measured, line_color=theme.INK,
                              line_width=2.5)
        dot = fig.scatter("k", "speedup", source=self.measured, size=10, fill_color=theme.PAPER,
                          line_color=theme.INK, line_width=2.5)
        fig.add_tools(HoverTool(renderers=[bars], tooltips=[
            ("k", "@k"), ("theory speedup", "@theory{0.00}×"), ("", "@note")]))
        fig.add_tools(HoverTool(renderers=[dot], tooltips=[
            ("measured", "@speedup{0.00}×"), ("95% CI", "@lo{0.00}–@hi{0.00}×")]))
        fig.xaxis.ticker = list(range(1, K_MAX + 1))
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
        r = s.result
        # Plain lists, not numpy arrays: for a few dozen numbers, inline JSON saves the two extra
        # websocket frames Bokeh writes per binary buffer (each can wait on TCP's Nagle delay).
        self.bars.data = dict(k=_KS.tolist(), theory=theory.tolist(), fill=fill, line=line, note=note)
        self.measured.data = dict(k=[s.k], speedup=[r.speedup], lo=[r.ci_low], hi=[r.ci_high])
        top = max(float(theory.max()), r.ci_high, 1.0)
        # Whole half-units, so the axis stays put over most slider steps instead of
        # rescaling (and re-laying out its labels) on every move.
        end = _ceil_to(top * 1.3 + 0.1, 0.5)
        star_y = max(theory[best - 1], r.ci_high if best == s.k else 0.0) + 0.07 * end
        self.best.data = dict(k=[best], y=[float(theory[best - 1])], star_y=[float(star_y)],
                              text=[f"best k = {best}"])
        self.y_range.end = end


class AcceptedHistogram:
    """Rounds with 0..k accepted drafts: measured bars against the theory pmf."""

    def __init__(self):
        self.source = ColumnDataSource(
            dict(a=[0], measured=[0.0], theory=[0.0], rounds=[0], tokens=[1]), name="ep3-hist")
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
            ("accepted drafts", "@a (round yields @tokens tokens)"),
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
                                rounds=counts.tolist(), tokens=(a + 1).tolist())
        self.x_range.update(start=-0.6, end=s.k + 0.6)
        self.y_range.end = _ceil_to(max(float(measured.max()), float(theory.max())) * 1.45, 0.1)
        if self.ticker.ticks != a.tolist():
            self.ticker.ticks = a.tolist()


class QualityDialView(pn.viewable.Viewer):
    """Sliders, the numbers, and the two charts, bound to one :class:`QualityDial`."""

    state = param.ClassSelector(class_=QualityDial)

    def __init__(self, **params):
        params.setdefault("state", QualityDial())
        super().__init__(**params)
        self.speedup = SpeedupByK()
        self.histogram = AcceptedHistogram()
        self.numbers = LiveHTML(sizing_mode="stretch_width", stylesheets=[_CSS], name="ep3-numbers",
                                margin=(0, 10))
        self.economics = LiveHTML(sizing_mode="stretch_width", stylesheets=[_CSS],
                                  name="ep3-economics", margin=(5, 10))
        self.state.param.watch(self._redraw, "result")
        self._redraw()

    def _redraw(self, *_):
        s = self.state
        with pn.io.hold():
            self.speedup.update(s)
            self.histogram.update(s)
            self.numbers.html = self._numbers_html(s)
            self.economics.html = self._economics_html(s)

    @staticmethod
    def _numbers_html(s: QualityDial) -> str:
        r = s.result
        best = s.best_k
        out = (
            stat(f"{r.speedup:.2f}×", f"measured speedup, {N_ROUNDS:,} fresh rounds "
                 f"(95% CI {r.ci_low:.2f}–{r.ci_high:.2f}×)")
            + stat(f"{s.theory_speedup:.2f}×", "theory (closed form) at the same q, k, c",
                   css_class="theory")
            + stat(f"k = {best}", ("best draft length for this q and c: you are on it"
                                    if best == s.k else
                                    f"best draft length for this q and c (theory {s.best_speedup:.2f}×)"))
        )
        if s.slower:
            verdict = (
                f'<div class="sdp-verdict slower" role="status"><strong>Slower:</strong> speculating '
                f'is now slower than not speculating. This run measured {r.speedup:.2f}×, so every '
                f'token takes {1 / r.speedup:.2f} times as long as when the big model writes alone'
                + ("" if s.theory_slower else
                   f" (theory says {s.theory_speedup:.2f}×: this close to 1×, chance decides)")
                + ".</div>")
        else:
            verdict = (
                f'<div class="sdp-verdict faster" role="status"><strong>Faster:</strong> the draft pays '
                f'for itself. This run produced text {r.speedup:.2f} times as fast as plain decoding'
                + ("" if not s.theory_slower else
                   f" (theory says {s.theory_speedup:.2f}×, just below 1×: this run was lucky)")
                + ".</div>")
        return out + verdict

    @staticmethod
    def _economics_html(s: QualityDial) -> str:
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

    def __panel__(self):
        s = self.state
        controls = pn.Column(
            pn.widgets.FloatSlider.from_param(s.param.q, step=0.01, format="0.00",
                                              sizing_mode="stretch_width"),
            pn.widgets.IntSlider.from_param(s.param.k, sizing_mode="stretch_width"),
            pn.widgets.FloatSlider.from_param(s.param.c, step=0.01, format="0.00",
                                              sizing_mode="stretch_width"),
            pn.widgets.Button.from_param(s.param.run_again, color="default",
                                         description=None),
            width=300, name="ep3-controls",
        )
        charts = pn.Column(
            pn.pane.HTML(SPEEDUP_KEY, sizing_mode="stretch_width", stylesheets=[_CSS]),
            pn.pane.Bokeh(self.speedup.figure, sizing_mode="stretch_width"),
            pn.pane.HTML(HISTOGRAM_KEY, sizing_mode="stretch_width", stylesheets=[_CSS]),
            pn.pane.Bokeh(self.histogram.figure, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
        return pn.Column(
            pn.FlexBox(controls, pn.Column(self.numbers, sizing_mode="stretch_width",
                                           styles={"flex": "1 1 420px"}),
                       sizing_mode="stretch_width", flex_wrap="wrap"),
            charts,
            self.economics,
            sizing_mode="stretch_width",
        )


_OUTRO = """
<h2>Where the cliff comes from</h2>
<p class="sdp-lede">A round always pays for one big-model pass plus k draft steps, but the drafts only
earn tokens until the first wrong guess. With a good draft, a longer k keeps earning; with a poor one,
the extra guesses are nearly always thrown away while their cost is still paid. So each q and c has a
best k, and a long, costly draft of a weak model lands below 1×: the big model would have been faster
on its own. This is why serving systems pick draft models that imitate the target closely, and keep
tuning k while they run.</p>
<p class="sdp-note">Theory: Leviathan, Kalman and Matias, “Fast Inference from Transformers via
Speculative Decoding” (ICML 2023), with each draft token accepted independently with probability q.
Measured values come from the simulation on this page; the 95% intervals use the normal approximation
over the simulated rounds.</p>
"""


def page(state: QualityDial | None = None) -> pn.Column:
    """A fresh Episode 3 page (one per session or notebook cell)."""
    state = state or QualityDial()
    notice = bind_url(state, URL_PARAMS)
    view = QualityDialView(state=state)
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep3",
        lede=("Three numbers decide whether speculative decoding pays: how often a drafted token is "
              "accepted (q), how many tokens are drafted per round (k), and what one draft step costs "
              "next to a big-model pass (c). Every time you move a slider this page simulates "
              f"{N_ROUNDS:,} new rounds, measures the speedup, and prints the theory beside it."),
        try_this=("push <em>Draft length k</em> up to 16 and watch the speedup rise, peak at the "
                  "starred k and sink again; then drag <em>Draft quality q</em> down to about 0.25 "
                  "and find where speculating turns slower than not speculating."),
        body=[notice, view,
              pn.pane.HTML(_OUTRO, sizing_mode="stretch_width", stylesheets=[page_css()])],
    )

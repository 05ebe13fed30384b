"""Episode 6: the fine print — speculative sampling, and choosing k on the fly.

Part 1 shows that speculative *sampling* loses nothing: whatever the draft's
distribution q, the kept-or-replaced outputs follow the big model's p exactly,
checked with a chi-square test on up to 100,000 draws, and drafts are kept at the
rate sum(min(p, q)). Part 2 races four draft-length policies over code, a poem and
JSON back to back on the same randomness: adapting k pays when the genre changes.
"""

from __future__ import annotations

import math

import numpy as np
import panel as pn
import param
from bokeh.models import (
    BoxAnnotation,
    ColumnDataSource,
    FactorRange,
    FixedTicker,
    HoverTool,
    Label,
    Legend,
    LegendItem,
    NumeralTickFormatter,
    Range1d,
)
from bokeh.plotting import figure
from bokeh.transform import dodge

from ..core import adaptive
from . import neighbours
from ..state.ep6 import PROMPT, SAMPLE_SIZES, WORDS, FinePrint
from ..views import theme
from ..views.page import episode_shell, esc, page_css, stat
from ..views.urlstate import bind_url

NUMBER = 6
SLUG = "ep6_the_fine_print"
TITLE = "The fine print: exact sampling, and choosing k on the fly"
SUMMARY = ("Bend the draft's word probabilities as far as you like: the kept-or-replaced output "
           "still follows the big model exactly. Then race four ways of choosing the draft length "
           "over code, a poem and JSON.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("temperature", "favourite", "boost", "n_samples", "c", "fixed_k", "race_seed")

#: Colour and dash per policy (dash and label tell them apart without colour).
POLICY_STYLE = (
    dict(color=theme.MUTED, dash="dashed", dash_name="dashed"),
    dict(color="#b04a00", dash="dotdash", dash_name="dot-dash"),
    dict(color=theme.DRAFT, dash="solid", dash_name="solid"),
    dict(color=theme.ACCEPTED, dash="dotted", dash_name="dotted"),
)
_GENRE = {"code": "code", "poem": "poem", "json": "JSON"}

CSS = page_css() + f"""
.ep6-part {{ font-size: 1.4rem; margin: 0.9em 0 0.2em 0; border-top: 1px solid {theme.GRID};
  padding-top: 0.6em; }}
.ep6-stats .sdp-stat .v {{ font-size: 1.35rem; }}
.ep6-verdict {{ border-radius: 6px; padding: 0.45em 0.8em; margin: 0.2em 0 0.5em 0; max-width: 44em;
  line-height: 1.45; background: #eaf5ec; border: 1px solid #9cc9a6; }}
.ep6-verdict.warn {{ background: #fff6d6; border: 1px solid #e8cf75; }}
table.ep6-table {{ border-collapse: collapse; font-size: 0.95rem; margin: 0.3em 0 0.6em 0;
  font-variant-numeric: tabular-nums; }}
table.ep6-table th, table.ep6-table td {{ text-align: left; padding: 4px 10px 4px 0;
  border-bottom: 1px solid {theme.GRID}; vertical-align: top; }}
table.ep6-table td.n {{ text-align: right; }}
table.ep6-table tr.best td {{ font-weight: 700; }}
.ep6-wrap {{ overflow-x: auto; max-width: 100%; }}
table.ep6-table {{ width: 100%; max-width: 44em; }}
.ep6-key {{ font-size: 0.92rem; line-height: 1.8; margin: 0.2em 0; color: {theme.INK}; }}
.ep6-ki {{ display: inline-block; margin-right: 1.2em; white-space: nowrap; }}
.ep6-sw {{ display: inline-block; width: 26px; height: 0; border-top-width: 3px; vertical-align: middle;
  margin-right: 6px; }}
"""


def _style(fig) -> None:
    theme.style_figure(fig, tick_color=theme.INK)
    fig.title.text_font_size = "14px"
    fig.title.text_color = theme.INK
    fig.min_border_left = 10
    fig.min_border_right = 14


def _legend(items, fig) -> None:
    fig.add_layout(Legend(items=items, orientation="horizontal", label_text_font_size="12px",
                          border_line_color=None, padding=2, margin=0, spacing=8), "above")


# ---------------------------------------------------------------------------
# Part 1: speculative sampling
# ---------------------------------------------------------------------------


class SamplingCharts:
    """p against q, and what came out of N draws against both."""

    def __init__(self):
        words = list(WORDS)
        zeros = [0.0] * len(words)
        self.models = ColumnDataSource(dict(word=words, p=zeros, q=zeros, overlap=zeros),
                                       name="ep6-models")
        self.out = ColumnDataSource(dict(word=words, freq=zeros, count=[0] * len(words), p=zeros,
                                         q=zeros), name="ep6-out")
        self.y_models = Range1d(0, 1, name="ep6-models-y")
        self.y_out = Range1d(0, 1, name="ep6-out-y")

        f = figure(name="ep6-models-fig", height=270, sizing_mode="stretch_width",
                   x_range=FactorRange(*words), y_range=self.y_models, tools="",
                   toolbar_location=None,
                   title=f"Next word after “{PROMPT} …”: the two models",
                   y_axis_label="probability")
        p_bars = f.vbar(x=dodge("word", -0.19, range=f.x_range), top="p", width=0.36,
                        source=self.models, fill_color=theme.BIG, line_color=theme.BIG)
        q_bars = f.vbar(x=dodge("word", 0.19, range=f.x_range), top="q", width=0.36,
                        source=self.models, fill_color=theme.DRAFT, line_color=theme.DRAFT,
                        hatch_pattern="/", hatch_color="white", hatch_alpha=0.8, hatch_scale=7)
        f.add_tools(HoverTool(renderers=[p_bars, q_bars], tooltips=[
            ("word", "@word"), ("big model p", "@p{0.000}"), ("draft q", "@q{0.000}"),
            ("min(p, q)", "@overlap{0.000}")]))
        _legend([LegendItem(label="big model p (solid)", renderers=[p_bars]),
                 LegendItem(label="draft q (hatched)", renderers=[q_bars])], f)
        f.yaxis.formatter = NumeralTickFormatter(format="0%")
        f.xgrid.grid_line_color = None
        _style(f)
        self.models_fig = f

        g = figure(name="ep6-out-fig", height=270, sizing_mode="stretch_width",
                   x_range=FactorRange(*words), y_range=self.y_out, tools="",
                   toolbar_location=None, title="What came out: measured share of each word",
                   y_axis_label="share of outputs")
        bars = g.vbar(x="word", top="freq", width=0.6, source=self.out, fill_color=theme.ACCEPTED,
                      fill_alpha=0.75, line_color=theme.ACCEPTED)
        p_tick = g.scatter("word", "p", source=self.out, marker="dash", size=36,
                           line_color=theme.INK, line_width=3.5)
        q_dot = g.scatter("word", "q", source=self.out, marker="circle", size=10,
                          fill_color=theme.PAPER, line_color=theme.DRAFT, line_width=2.5)
        g.add_tools(HoverTool(renderers=[bars], tooltips=[
            ("word", "@word"), ("came out", "@count (@freq{0.00%})"), ("big model p", "@p{0.00%}"),
            ("draft q", "@q{0.00%}")]))
        _legend([LegendItem(label="measured", renderers=[bars]),
                 LegendItem(label="p (black)", renderers=[p_tick]),
                 LegendItem(label="q (circle)", renderers=[q_dot])], g)
        g.yaxis.formatter = NumeralTickFormatter(format="0%")
        g.xgrid.grid_line_color = None
        _style(g)
        self.out_fig = g

    def update(self, s: FinePrint) -> None:
        p, q = s.p, s.q
        words = list(WORDS)
        freq = s.frequencies
        self.models.data = dict(word=words, p=p.tolist(), q=q.tolist(),
                                overlap=np.minimum(p, q).tolist())
        self.out.data = dict(word=words, freq=freq.tolist(), count=s.samples.counts().tolist(),
                             p=p.tolist(), q=q.tolist())
        self.y_models.end = float(max(p.max(), q.max())) * 1.12
        self.y_out.end = float(max(p.max(), q.max(), freq.max())) * 1.12


def _fmt_p(x: float) -> str:
    if x < 1e-300:
        return "below 10^-300 (zero to machine precision)"
    if x < 1e-4:
        return f"{x:.1e}".replace("e-0", "e-").replace("e-", " × 10^-")
    return f"{x:.4f}" if x < 0.01 else f"{x:.3f}"


def _fmt_stat(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:,.1f}"


def sampling_html(s: FinePrint) -> str:
    r = s.samples
    fp, fq = s.fit_p, s.fit_q
    stats = (
        '<div class="ep6-stats">'
        + stat(f"{r.acceptance_rate:.1%}",
               f"drafts kept, measured ({int(r.accepted.sum()):,} of {r.n:,})")
        + stat(f"{s.acceptance_theory:.1%}", "theory: sum of min(p, q)", css_class="theory")
        + "</div>"
    )
    p_ok = fp.p_value >= 0.01
    verdict_p = (
        f"Against the big model's p: chi-square = {_fmt_stat(fp.statistic)} with {fp.df} degrees of "
        f"freedom, p-value {_fmt_p(fp.p_value)}. "
        + ("That is what honest draws from p look like (a p-value below 0.01 would be a red flag)."
           if p_ok else
           "A p-value this small happens about once in a hundred batches even when the draws do come "
           "from p; draw again and it will move.")
    )
    inf_note = (" (some outputs are words the draft never proposes)" if math.isinf(fq.statistic)
                else "")
    verdict_q = (
        f"Against the draft's q: chi-square = {_fmt_stat(fq.statistic)}{inf_note}, p-value "
        f"{_fmt_p(fq.p_value)}. "
        + ("With this many samples the output is clearly not distributed like q."
           if fq.p_value < 1e-3 else
           "Here p and q are too close (or N too small) for the test to tell them apart.")
    )
    cls = "ep6-verdict" if p_ok else "ep6-verdict warn"
    return (stats + f'<div class="{cls}" role="status"><strong>Measured on {r.n:,} draws.</strong> '
            f'{esc(verdict_p)}<br>{esc(verdict_q)}</div>')


RULE_HTML = """
<p class="sdp-lede">How each word is made: the draft proposes a word x, drawn from its own q. The big
model keeps it with probability min(1, p(x) / q(x)): always when the draft is not over-eager about x,
and only sometimes when it is. After a refusal the big model draws a replacement from what is left of p
once q is taken away, max(0, p − q), rescaled to sum to 1. Words the draft over-proposes get trimmed,
words it under-proposes get topped up, and the two effects cancel exactly.</p>
"""


# ---------------------------------------------------------------------------
# Part 2: the race
# ---------------------------------------------------------------------------


class RaceCharts:
    """Cumulative wall clock against tokens written, and k over the stream, one line per policy."""

    def __init__(self, stream: adaptive.Stream):
        n = len(stream)
        self.wall = [ColumnDataSource(dict(x=[0], y=[0.0]), name=f"ep6-wall-{i}") for i in range(4)]
        self.ks = [ColumnDataSource(dict(x=[0], y=[0]), name=f"ep6-k-{i}") for i in range(4)]
        self.x_range = Range1d(0, n, bounds=(0, n), name="ep6-x")
        self.y_wall = Range1d(0, n, name="ep6-wall-y")

        f = figure(name="ep6-wall-fig", height=310, sizing_mode="stretch_width",
                   x_range=self.x_range, y_range=self.y_wall, tools="", toolbar_location=None,
                   title="Time spent so far (lower is faster)",
                   x_axis_label="tokens written", y_axis_label="wall clock (big-model passes)")
        g = figure(name="ep6-k-fig", height=250, sizing_mode="stretch_width",
                   x_range=self.x_range, y_range=Range1d(-0.5, adaptive.K_CAP + 2.4),
                   tools="", toolbar_location=None, title="Draft length k chosen each round",
                   x_axis_label="tokens written", y_axis_label="k")
        for fig in (f, g):
            for i, (label, a, b) in enumerate(stream.segments):
                fig.add_layout(BoxAnnotation(left=a, right=b, fill_alpha=0.55, level="underlay",
                                             fill_color="#f3f4f7" if i % 2 == 0 else "#ffffff"))
        top = adaptive.K_CAP + 1.1
        for label, a, b in stream.segments:
            g.add_layout(Label(x=(a + b) / 2, y=top, text=_GENRE.get(label, label),
                               text_align="center", text_font_size="12px",
                               text_color=theme.INK, text_font_style="bold"))
        plain = f.line([0, n], [0, n], line_color=theme.INK, line_width=1.5, line_dash=[2, 4])
        self.genre_labels = []
        for label, a, b in stream.segments:
            lab = Label(x=(a + b) / 2, y=n * 0.93, text=_GENRE.get(label, label), text_align="center",
                        text_font_size="12px", text_color=theme.INK, text_font_style="bold")
            f.add_layout(lab)
            self.genre_labels.append(lab)
        self.plain = plain
        self.wall_renderers = []
        for i, st in enumerate(POLICY_STYLE):
            r = f.line("x", "y", source=self.wall[i], line_color=st["color"], line_width=2.5,
                       line_dash=st["dash"])
            k = g.step("x", "y", source=self.ks[i], mode="after", line_color=st["color"],
                       line_width=2.2, line_dash=st["dash"])
            self.wall_renderers.append(r)
        g.yaxis.ticker = FixedTicker(ticks=[0, 2, 4, 6, 8, 10, 12])
        g.yaxis.major_label_overrides = {0: "off"}
        g.ygrid.grid_line_color = theme.GRID
        _style(f)
        _style(g)
        self.wall_fig, self.k_fig = f, g

    def update(self, s: FinePrint) -> None:
        for i, run in enumerate(s.runs):
            written = np.concatenate([[0], np.cumsum(run.tokens)])
            self.wall[i].data = dict(x=written.tolist(), y=[0.0, *run.wall.tolist()])
            # Step after each round's start; end the line where the stream ends.
            self.ks[i].data = dict(x=[*run.start.tolist(), len(s.stream)],
                                   y=[*run.k.tolist(), int(run.k[-1])])
        top = max(len(s.stream), *(r.total_cost for r in s.runs))
        self.y_wall.end = top * 1.02
        for lab in self.genre_labels:
            lab.y = top * 0.95


def _swatch(st: dict) -> str:
    style = {"solid": "solid", "dotted": "dotted"}.get(st["dash"], "dashed")
    return (f'<span class="ep6-sw" aria-hidden="true" '
            f'style="border-top: 3px {style} {st['color']}"></span>')


def key_html(s: FinePrint) -> str:
    """The charts' key: each policy's line (colour and dash) and name."""
    items = [f'<span class="ep6-ki"><span class="ep6-sw" aria-hidden="true" '
             f'style="border-top: 2px dotted {theme.INK}"></span>plain decoding (fine dots)</span>']
    for run, st in zip(s.runs, POLICY_STYLE):
        items.append(f'<span class="ep6-ki">{_swatch(st)}{esc(run.label)} '
                     f'({esc(st["dash_name"])})</span>')
    return '<p class="ep6-key"><strong>Lines:</strong> ' + "".join(items) + "</p>"


def race_html(s: FinePrint) -> str:
    n = len(s.stream)
    best = s.best_run
    rows = []
    for i, (run, st) in enumerate(zip(s.runs, POLICY_STYLE)):
        mark = " ★ fastest" if run is best else ""
        off = f"{run.plain_rounds}" if run.plain_rounds else "0"
        rows.append(
            f'<tr class="{"best" if run is best else ""}"><td>{_swatch(st)}'
            f'{esc(run.label)}{mark}<br><small>{esc(st["dash_name"])} line · {run.n_rounds} rounds'
            f'{f", {off} of them plain" if run.plain_rounds else ""}</small></td>'
            f'<td class="n">{run.speedup:.2f}×</td><td class="n">{run.total_cost:,.1f}</td>'
            f'<td class="n">{run.acceptance_rate:.0%}</td></tr>')
    return (
        '<div class="ep6-wrap"><table class="ep6-table" aria-label="Race results">'
        '<thead><tr><th>policy</th><th>speed&shy;up</th><th>time (passes)</th>'
        '<th>drafts kept</th></tr></thead><tbody>' + "".join(rows)
        + f'</tbody></table></div><p class="sdp-note">Plain decoding takes {n} passes for these '
        f'{n} tokens. Speedup = {n} ÷ the policy\'s time. Every policy saw the same draw (seed '
        f'{s.race_seed}): a drafted token is right or wrong at the same place for all of them.</p>'
    )


POLICIES_HTML = """
<p class="sdp-lede">The stream is three of Episode 4's texts, each twice in a row: a JavaScript loop
(easy to guess), a poem (hard) and a JSON record (easy again). Each round a policy picks k, the draft
guesses k tokens, and the big model keeps them up to the first wrong one and adds one of its own. A
round costs 1 + k·c passes.</p>
<ol class="sdp-note">
<li><strong>Fixed k</strong>: the same k every round, set with the slider.</li>
<li><strong>+2 / −1</strong>: after a round where every draft was kept, draft 2 more next time;
after any miss, draft 1 fewer (never below 1, never above 12).</li>
<li><strong>Best k from an estimate</strong>: keep a running average of how often drafts are kept
(each judged draft moves it 15% of the way to hit or miss), and draft the k that theory says is fastest
at that rate and this c.</li>
<li><strong>Best k, off below break-even</strong>: the same, but when even the best k is expected to
lose to plain decoding, stop drafting; every 6 plain rounds, draft 2 tokens as a probe to see whether
the text got easier.</li>
</ol>
"""

OUTRO_HTML = """
<h2>What to take away</h2>
<p class="sdp-lede">Part 1 is why speculative decoding is allowed at all: with the accept-or-replace
rule, a weak or biased draft costs speed, never quality. The output has the big model's distribution
exactly, and only the acceptance rate, sum(min(p, q)), depends on how alike the two models are. Part 2
is how serving systems squeeze out more: the best k depends on how predictable the text is right now,
and text changes. A policy that tracks the acceptance rate lengthens its drafts through code and JSON
and shortens them through the poem; a fixed k is too short for one and too long for the other.
Switching speculation off is the weakest idea here: in the poem the running estimate often dips below
break-even, so that policy stops drafting, but the poem is not quite bad enough for plain decoding to
win, and its probes cost time too. Turning off only pays for a draft that is wrong nearly all the
time.</p>
<p class="sdp-note">Sources: Leviathan, Kalman and Matias, “Fast Inference from Transformers via
Speculative Decoding” (ICML 2023); Chen, Borgeaud, Irving, Lespiau, Sifre and Jumper, “Accelerating
Large Language Model Decoding with Speculative Sampling” (2023). The chi-square p-value is computed on
this page from the regularized incomplete gamma function. Per-token guessability in part 2 is a
simulation parameter labelled by hand (see Episode 4), not a measurement of a real model; the wall clock
is the simulation's own, counted in big-model passes.</p>
"""


# ---------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------


class FinePrintView(pn.viewable.Viewer):
    """Both parts bound to one :class:`FinePrint` state."""

    state = param.ClassSelector(class_=FinePrint)

    def __init__(self, **params):
        params.setdefault("state", FinePrint())
        super().__init__(**params)
        s = self.state
        self.sampling = SamplingCharts()
        self.race = RaceCharts(s.stream)
        self.sampling_numbers = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS],
                                             name="ep6-sampling-numbers", margin=(0, 10))
        self.race_table = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS],
                                       name="ep6-race-table", margin=(0, 10))
        self.race_key = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[CSS],
                                     name="ep6-race-key", margin=(0, 10))
        self.new_race_button = pn.widgets.Button(label="New randomness", color="primary",
                                                 width=160)
        self.new_race_button.on_click(self._on_new_race)
        s.param.watch(self._redraw_sampling, "samples")
        s.param.watch(self._redraw_race, "runs")
        self._redraw_sampling()
        self._redraw_race()

    def _on_new_race(self, _event) -> None:
        with pn.io.hold():
            self.state.new_race()

    def _redraw_sampling(self, *_):
        with pn.io.hold():
            self.sampling.update(self.state)
            self.sampling_numbers.object = sampling_html(self.state)

    def _redraw_race(self, *_):
        with pn.io.hold():
            self.race.update(self.state)
            self.race_table.object = race_html(self.state)
            self.race_key.object = key_html(self.state)

    def __panel__(self):
        s = self.state
        part1_controls = pn.Column(
            pn.widgets.FloatSlider.from_param(s.param.temperature, step=0.05, format="0.00",
                                              sizing_mode="stretch_width"),
            pn.widgets.Select.from_param(s.param.favourite, sizing_mode="stretch_width"),
            pn.widgets.FloatSlider.from_param(s.param.boost, step=0.1, format="0.0",
                                              sizing_mode="stretch_width"),
            pn.widgets.Select.from_param(
                s.param.n_samples, options={f"{n:,}": n for n in SAMPLE_SIZES},
                sizing_mode="stretch_width"),
            pn.widgets.Button.from_param(s.param.draw, color="primary", description=None),
            width=300, name="ep6-sampling-controls",
        )
        part1 = pn.Column(
            pn.pane.HTML('<h2 class="ep6-part">Part 1: a biased draft, an unbiased result</h2>'
                         + RULE_HTML, sizing_mode="stretch_width", stylesheets=[CSS]),
            pn.FlexBox(part1_controls,
                       pn.Column(self.sampling_numbers, sizing_mode="stretch_width",
                                 styles={"flex": "1 1 380px"}, min_width=300),
                       sizing_mode="stretch_width", flex_wrap="wrap"),
            pn.FlexBox(
                pn.pane.Bokeh(self.sampling.models_fig, sizing_mode="stretch_width",
                              styles={"flex": "1 1 420px"}, min_width=300),
                pn.pane.Bokeh(self.sampling.out_fig, sizing_mode="stretch_width",
                              styles={"flex": "1 1 420px"}, min_width=300),
                sizing_mode="stretch_width", flex_wrap="wrap"),
            sizing_mode="stretch_width",
        )
        part2_controls = pn.Column(
            pn.widgets.FloatSlider.from_param(s.param.c, step=0.01, format="0.00",
                                              sizing_mode="stretch_width"),
            pn.widgets.IntSlider.from_param(s.param.fixed_k, sizing_mode="stretch_width"),
            pn.widgets.IntInput.from_param(s.param.race_seed, sizing_mode="stretch_width"),
            self.new_race_button,
            width=300, name="ep6-race-controls",
        )
        part2 = pn.Column(
            pn.pane.HTML('<h2 class="ep6-part">Part 2: choosing k on the fly</h2>' + POLICIES_HTML,
                         sizing_mode="stretch_width", stylesheets=[CSS]),
            pn.FlexBox(part2_controls,
                       pn.Column(self.race_table, sizing_mode="stretch_width",
                                 styles={"flex": "1 1 420px"}, min_width=300),
                       sizing_mode="stretch_width", flex_wrap="wrap"),
            self.race_key,
            pn.pane.Bokeh(self.race.wall_fig, sizing_mode="stretch_width"),
            pn.pane.Bokeh(self.race.k_fig, sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
        )
        return pn.Column(part1, part2, sizing_mode="stretch_width")


def page(state: FinePrint | None = None) -> pn.Column:
    """A fresh Episode 6 page (one per session or notebook cell)."""
    state = state or FinePrint()
    notice = bind_url(state, URL_PARAMS)
    view = FinePrintView(state=state)
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep6",
        lede=("Two details that make speculative decoding work in practice: drafts that are kept or "
              "replaced so the output follows the big model's probabilities exactly, and a draft "
              "length k that adapts as the text gets easier or harder to guess."),
        try_this=("in part 1, push <em>Favourite boost</em> to 5 and <em>Samples N</em> to 100,000: "
                  "the draft now proposes “moon” most of the time, yet the green bars still sit on "
                  "the black marks of the big model. In part 2, watch the solid blue line pull ahead "
                  "in the code and JSON stretches, then raise <em>Draft cost c</em>."),
        body=[notice, view, pn.pane.HTML(OUTRO_HTML, sizing_mode="stretch_width",
                                         stylesheets=[CSS])],
    )

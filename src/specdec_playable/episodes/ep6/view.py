"""Episode 6's view: speculative sampling (part 1) and the race of draft-length policies (part 2).

Each chart is built once and updated through its sources; :func:`sampling_html`,
:func:`race_html`, :func:`stretch_table_html`, :func:`race_story_html` and :func:`key_html`
are plain functions of the state. The race's story (who won, stretch by stretch, what the
adaptive policies did) is written from the race itself, split at the chart's own bands.
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
    NumeralTickFormatter,
    Range1d,
)
from bokeh.plotting import figure
from bokeh.transform import dodge

from ...sim import adaptive, theory
from ...data.measured import REST
from .state import SAMPLE_SIZES, FinePrint
from .words import RED_FLAG, chart_labels, kept_words, models_words, out_words, race_words
from ...kit import theme
from ...kit.a11y import describe
from ...kit.deferred import when_near
from ...kit.inputs import SeedBox, control_help
from ...kit.keys import KEYS_CSS, chart_key, swatch
from ...kit.page import StateView, beside, esc, page_css, prose, slider, stat
from ...kit.tokens import token_label
from ...kit.words import P_BIG, P_DRAFT, notation, plural, share, times, versus_one

_CSS = f"{__package__}:ep6.css"
_KEY_CSS = f"{__package__}:ep6_key.css"  # the lines' swatches, in the key and in the race table
#: Colour (a theme name) and dash per policy: dash and label tell them apart without colour.
POLICY_STYLE = (
    dict(tone="muted", dash="dashed", dash_name="dashed"),
    dict(tone="ember", dash="dotdash", dash_name="dot-dash"),
    dict(tone="draft", dash="solid", dash_name="solid"),
    dict(tone="accepted", dash="dotted", dash_name="dotted"),
    dict(tone="big", dash="dashdot", dash_name="dash-dot"),
)
_GENRE = {"code": "code", "poem": "poem", "json": "JSON", "python": "Python"}
#: Genres named without "the" in a sentence.
_BARE = ("JSON", "Python")


def _style(fig) -> None:
    theme.style_figure(fig, tick_color=theme.INK)
    fig.title.text_font_size = "14px"
    fig.title.text_color = theme.INK
    fig.min_border_left = 10
    fig.min_border_right = 14


def models_key(context: str) -> str:
    """The first chart's key: its title names the context (escaped)."""
    return chart_key(
        f"Next token after “{esc(context)}”: the two models",
        swatch("bar", "big") + f"big model, {P_BIG}(x) (solid)",
        swatch("bar", "hatched") + f"draft, {P_DRAFT}(x) (hatched)",
    )


OUT_KEY = chart_key(
    "What came out: measured share of each token",
    swatch("bar", "accepted") + "measured",
    swatch("tick") + f"{P_BIG}(x) (black mark)",
    swatch("dot", "draft") + f"{P_DRAFT}(x) (circle)",
)


# ---------------------------------------------------------------------------
# Part 1: speculative sampling
# ---------------------------------------------------------------------------


class SamplingCharts:
    """p against q, and what came out of N draws against both."""

    def __init__(self, s: FinePrint):
        words = self.factors = chart_labels(s)
        zeros = [0.0] * len(words)
        self.models = ColumnDataSource(dict(word=words, p_big=zeros, p_draft=zeros, overlap=zeros),
                                       name="ep6-models")
        self.out = ColumnDataSource(dict(word=words, freq=zeros, count=[0] * len(words), p_big=zeros,
                                         p_draft=zeros), name="ep6-out")
        self.y_models = Range1d(0, 1, name="ep6-models-y")
        self.y_out = Range1d(0, 1, name="ep6-out-y")

        self.x_models = FactorRange(*words, name="ep6-models-x")
        self.x_out = FactorRange(*words, name="ep6-out-x")
        f = figure(name="ep6-models-fig", height=260, sizing_mode="stretch_width",
                   x_range=self.x_models, y_range=self.y_models, tools="",
                   toolbar_location=None, y_axis_label="probability")
        p_bars = f.vbar(x=dodge("word", -0.19, range=f.x_range), top="p_big", width=0.36,
                        source=self.models, fill_color=theme.BIG, line_color=theme.BIG)
        q_bars = f.vbar(x=dodge("word", 0.19, range=f.x_range), top="p_draft", width=0.36,
                        source=self.models, fill_color=theme.DRAFT, line_color=theme.DRAFT,
                        hatch_pattern="/", hatch_color="white", hatch_alpha=0.8, hatch_scale=7)
        f.add_tools(HoverTool(renderers=[p_bars, q_bars], tooltips=[
            ("token", "@word"), ("big model, p_big", "@p_big{0.000}"), ("draft, p_draft", "@p_draft{0.000}"),
            ("min(p_big, p_draft)", "@overlap{0.000}")]))
        f.yaxis.formatter = NumeralTickFormatter(format="0%")
        f.xgrid.grid_line_color = None
        f.xaxis.major_label_orientation = 0.8
        _style(f)
        self.models_fig = f

        g = figure(name="ep6-out-fig", height=260, sizing_mode="stretch_width",
                   x_range=self.x_out, y_range=self.y_out, tools="",
                   toolbar_location=None, y_axis_label="share of outputs")
        bars = g.vbar(x="word", top="freq", width=0.6, source=self.out, fill_color=theme.ACCEPTED,
                      fill_alpha=0.75, line_color=theme.ACCEPTED)
        p_tick = g.scatter("word", "p_big", source=self.out, marker="dash", size=36,
                           line_color=theme.INK, line_width=3.5)
        q_dot = g.scatter("word", "p_draft", source=self.out, marker="circle", size=10,
                          fill_color=theme.PAPER, line_color=theme.DRAFT, line_width=2.5)
        g.add_tools(HoverTool(renderers=[bars, p_tick, q_dot], tooltips=[
            ("token", "@word"), ("came out", "@count (@freq{0.00%})"), ("big model, p_big", "@p_big{0.00%}"),
            ("draft, p_draft", "@p_draft{0.00%}")]))
        g.yaxis.formatter = NumeralTickFormatter(format="0%")
        g.xgrid.grid_line_color = None
        g.xaxis.major_label_orientation = 0.8
        _style(g)
        self.out_fig = g

    def update(self, s: FinePrint) -> None:
        big, draft = s.p_big, s.p_draft
        words = chart_labels(s)
        if words != self.factors:  # another context: other tokens
            self.factors = words
            self.x_models.factors = words
            self.x_out.factors = words
        freq = s.frequencies
        self.models.data = dict(word=words, p_big=big.tolist(), p_draft=draft.tolist(),
                                overlap=np.minimum(big, draft).tolist())
        self.out.data = dict(word=words, freq=freq.tolist(), count=s.samples.counts().tolist(),
                             p_big=big.tolist(), p_draft=draft.tolist())
        self.y_models.end = float(max(big.max(), draft.max())) * 1.12
        self.y_out.end = float(max(big.max(), draft.max(), freq.max())) * 1.12
        describe(self.models_fig, models_words(s))
        describe(self.out_fig, out_words(s))


def _fmt_p(x: float) -> str:
    if x < 1e-300:
        return "below 10^-300 (zero to machine precision)"
    if x < 1e-4:
        return f"{x:.1e}".replace("e-0", "e-").replace("e-", " × 10^-")
    return f"{x:.4f}" if x < 0.01 else f"{x:.3f}"


def _fmt_stat(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:,.1f}"


def context_html(s: FinePrint) -> str:
    """What the two models think comes next, from the measured distributions (escaped)."""
    c = s.measured_context
    top, p_top = token_label(c.labels[0]), c.p[0]
    d = int(np.argmax(c.q))
    guess = token_label(c.labels[d]) if c.labels[d] != REST else "a token outside this list"
    return (f'<p class="sdp-note ep6-context">After “{esc(c.context)}” the big model’s most likely '
            f'next token is “{esc(top)}” ({p_top:.1%}); it leaves {c.p[-1]:.0%} to the tokens not '
            f'listed. The draft head, unbent, proposes “{esc(guess)}” {c.q[d]:.0%} of the time, '
            f'and the big model gives that token {c.p[d]:.2%}: the two agree on q = sum over x of '
            f'min({P_BIG}(x), {P_DRAFT}(x)) = {c.alpha:.{1 if c.alpha >= 0.01 else 2}%} of the probability.'
            f'{kept_words(c)}</p>')


def sampling_html(s: FinePrint) -> str:
    """The measured and theoretical acceptance, and the chi-square verdicts against both models.

    The big model's and the draft's distributions are written p_big and p_draft (with
    subscripts, :func:`words.notation`), the acceptance rate q.
    """
    r = s.samples
    fp, fq = s.fit_big, s.fit_draft
    fav = s.favourite - 1
    label = token_label(s.favourite_label)
    stats = (
        '<div class="ep6-stats">'
        + stat(f"{s.p_draft[fav]:.0%}", f"how often the draft proposes its favourite, “{label}” "
               f"(the big model writes it {s.p_big[fav]:.0%} of the time; it came out "
               f"{s.frequencies[fav]:.1%} of the {r.n:,} outputs)")
        + stat(share(r.acceptance_rate, 1),
               f"drafts kept, measured ({int(r.accepted.sum()):,} of {r.n:,})")
        + stat(f"{s.acceptance_theory:.1%}", "theory: q = sum over x of min(p_big(x), p_draft(x))",
               css_class="theory")
        + "</div>"
    )
    p_ok = fp.p_value >= RED_FLAG
    verdict_p = (
        f"Against the big model's p_big: chi-square = {_fmt_stat(fp.statistic)} with {fp.df} degrees of "
        f"freedom (tokens expected fewer than 5 times pooled), p-value {_fmt_p(fp.p_value)}. "
        + (f"That is what honest draws from p_big look like (a p-value below {RED_FLAG:g} would be a red flag)."
           if p_ok else
           "A p-value this small happens about once in a hundred batches even when the draws do come "
           "from p_big; draw again and it will move.")
    )
    inf_note = (" (some outputs are tokens the draft never proposes)" if math.isinf(fq.statistic)
                else "")
    verdict_q = (
        f"Against the draft's p_draft: chi-square = {_fmt_stat(fq.statistic)}{inf_note}, p-value "
        f"{_fmt_p(fq.p_value)}. "
        + ("With this many samples the output is clearly not distributed like p_draft."
           if fq.p_value < 1e-3 else
           "Here p_big and p_draft are too close (or N too small) for the test to tell them apart.")
    )
    cls = "ep6-verdict" if p_ok else "ep6-verdict warn"
    return notation(stats + f'<div class="{cls}" role="status"><strong>Measured on {r.n:,} draws.</strong> '
                    f'{esc(verdict_p)}<br>{esc(verdict_q)}</div>')


# ---------------------------------------------------------------------------
# Part 2: the race
# ---------------------------------------------------------------------------


class RaceCharts:
    """Passes saved against plain decoding as tokens are written, and k over the stream, one line
    per policy.

    Every policy takes close to one pass per token, so their wall clocks would lie on top of one
    another; what tells them apart is the difference from plain decoding (tokens written minus
    the wall clock so far), drawn here. The sources keep both: ``y`` is the wall clock, ``saved``
    that difference.
    """

    def __init__(self, stream: adaptive.Stream):
        n = len(stream)
        self.wall = [ColumnDataSource(dict(x=[0], y=[0.0], saved=[0.0]), name=f"ep6-wall-{i}")
                     for i in range(len(POLICY_STYLE))]
        self.ks = [ColumnDataSource(dict(x=[0], y=[0]), name=f"ep6-k-{i}") for i in range(len(POLICY_STYLE))]
        self.x_range = Range1d(0, n, bounds=(0, n), name="ep6-x")
        self.y_wall = Range1d(-1, 1, name="ep6-wall-y")

        f = figure(name="ep6-wall-fig", height=310, sizing_mode="stretch_width",
                   x_range=self.x_range, y_range=self.y_wall, tools="", toolbar_location=None,
                   title="Passes saved against plain decoding so far (higher is faster)",
                   x_axis_label="tokens written",
                   y_axis_label="passes saved (plain − policy)")
        g = figure(name="ep6-k-fig", height=250, sizing_mode="stretch_width",
                   x_range=self.x_range, y_range=Range1d(-0.5, adaptive.K_CAP + 2.4),
                   tools="", toolbar_location=None, title="Draft length k chosen each round",
                   x_axis_label="tokens written", y_axis_label="k")
        for fig in (f, g):
            for i, (label, a, b) in enumerate(stream.segments):
                fig.add_layout(BoxAnnotation(left=a, right=b, fill_alpha=0.55, level="underlay",
                                             fill_color=theme.SHADE if i % 2 == 0 else theme.PAPER))
        top = adaptive.K_CAP + 1.1
        for label, a, b in stream.segments:
            g.add_layout(Label(x=(a + b) / 2, y=top, text=_GENRE.get(label, label),
                               text_align="center", text_font_size="12px",
                               text_color=theme.INK, text_font_style="bold"))
        plain = f.line([0, n], [0, 0], line_color=theme.INK, line_width=1.5, line_dash=[2, 4])
        self.genre_labels = []
        for label, a, b in stream.segments:
            lab = Label(x=(a + b) / 2, y=0, text=_GENRE.get(label, label), text_align="center",
                        text_font_size="12px", text_color=theme.INK, text_font_style="bold")
            f.add_layout(lab)
            self.genre_labels.append(lab)
        self.plain = plain
        self.wall_renderers = []
        for i, st in enumerate(POLICY_STYLE):
            color = theme.CSS_COLOURS[st["tone"]]
            r = f.line("x", "saved", source=self.wall[i], line_color=color, line_width=2.5,
                       line_dash=st["dash"])
            g.step("x", "y", source=self.ks[i], mode="after", line_color=color,
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
            wall = np.concatenate([[0.0], run.wall])
            self.wall[i].data = dict(x=written.tolist(), y=wall.tolist(), saved=(written - wall).tolist())
            # Step after each round's start; end the line where the stream ends.
            self.ks[i].data = dict(x=[*run.start.tolist(), len(s.stream)],
                                   y=[*run.k.tolist(), int(run.k[-1])])
        lo, hi = race_extent(s.runs)
        span = max(hi - lo, 1.0)
        self.y_wall.start, self.y_wall.end = lo - 0.05 * span, hi + 0.16 * span
        for lab in self.genre_labels:
            lab.y = hi + 0.06 * span
        words = race_words(s)
        describe(self.wall_fig, words)
        describe(self.k_fig, "Steps of the draft length k each policy chose, round by round (0: "
                             "speculation off). " + words.split(": ", 1)[1])


def race_extent(runs) -> tuple[float, float]:
    """The lowest and highest passes saved by any policy at any round of the race (0 included:
    plain decoding's line)."""
    lo, hi = 0.0, 0.0
    for run in runs:
        written = np.concatenate([[0], np.cumsum(run.tokens)])
        saved = written - np.concatenate([[0.0], run.wall])
        lo, hi = min(lo, float(saved.min())), max(hi, float(saved.max()))
    return lo, hi


def _swatch(st: dict) -> str:
    """A policy's line in the key: its colour, and its dash drawn as solid, dotted or dashed."""
    style = {"solid": "solid", "dotted": "dotted"}.get(st["dash"], "dashed")
    return f'<span class="ep6-sw line-{style} tone-{st["tone"]}" aria-hidden="true"></span>'


def key_html(s: FinePrint) -> str:
    """The charts' key: each policy's line (colour and dash) and name."""
    items = ['<span class="ep6-ki"><span class="ep6-sw plain" aria-hidden="true"></span>'
             'plain decoding: none saved (fine dots)</span>']
    for run, st in zip(s.runs, POLICY_STYLE):
        items.append(f'<span class="ep6-ki">{_swatch(st)}{esc(run.label)} '
                     f'({esc(st["dash_name"])})</span>')
    return '<p class="ep6-key"><strong>Lines:</strong> ' + "".join(items) + "</p>"


def _same(a: float, b: float) -> bool:
    """Two times (passes) that the page shows as the same number (one decimal): a tie."""
    return f"{a:,.1f}" == f"{b:,.1f}"


def _fastest(runs) -> list:
    """The runs that took the least time (more than one on a tie)."""
    best = min(r.total_cost for r in runs)
    return [r for r in runs if _same(r.total_cost, best)]


def _names(runs) -> str:
    """The runs' policy names in quotes, joined with commas and "and" (escaped)."""
    labels = [f"“{esc(r.label)}”" for r in runs]
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def stretch_costs(s: FinePrint) -> np.ndarray:
    """Passes each policy of the race spent on each text (a row per policy, a column per text),
    split where the race chart's bands split its lines: what the table, the story and the Why
    all read."""
    return np.array([run.stretch_costs(s.stream.segments) for run in s.runs])


def stretch_table_html(s: FinePrint) -> str:
    """Passes each policy spent on each text of the stream (split at the chart's bands), the
    fewest in each column marked."""
    segments = s.stream.segments
    costs = stretch_costs(s)
    least = costs.min(axis=0)
    head = "".join(f'<th class="n">{esc(_GENRE.get(label, label))}</th>' for label, _, _ in segments)
    rows = []
    for run, st, row in zip(s.runs, POLICY_STYLE, costs):
        cells = "".join(
            f'<td class="n{" least" if _same(c, m) else ""}">{c:,.1f}{"&nbsp;★" if _same(c, m) else ""}</td>'
            for c, m in zip(row, least))
        rows.append(f"<tr><td>{_swatch(st)}{esc(run.label)}</td>{cells}</tr>")
    plain = "".join(f'<td class="n">{b - a:,}</td>' for _, a, b in segments)
    return ('<div class="ep6-wrap"><table class="ep6-table ep6-stretches" '
            'aria-label="Passes spent on each text">'
            f'<thead><tr><th>passes spent on</th>{head}</tr></thead><tbody>{"".join(rows)}'
            f'<tr class="plain"><td>plain decoding</td>{plain}</tr></tbody></table></div>')


def race_story_html(s: FinePrint) -> str:
    """What happened in this race, in sentences computed from it: who won overall and on each
    text, how the estimate-driven policy's k followed the text, and what the off switch did."""
    runs, segments = s.runs, s.stream.segments
    fixed, _, est, off = runs[:4]
    fastest = _fastest(runs)
    slowest_cost = max(r.total_cost for r in runs)
    slowest = [r for r in runs if _same(r.total_cost, slowest_cost)]
    if len(fastest) == len(runs):
        overall = f"all {len(runs)} policies took the same time ({times(runs[0].speedup)})."
    else:
        overall = (f"{_names(fastest)} finished first ({times(fastest[0].speedup)}), and "
                   f"{_names(slowest)} last ({times(slowest[0].speedup)}).")
    costs = stretch_costs(s)
    per = []
    for j, (label, _, _) in enumerate(segments):
        least = costs[:, j].min()
        winners = [r for r, c in zip(runs, costs[:, j]) if _same(c, least)]
        text = _GENRE.get(label, label)
        per.append(f"{'' if text in _BARE else 'the '}{esc(text)}, {_names(winners)} ({least:,.1f})")
    ks = [est.mean_k(a, b) for _, a, b in segments]
    genres = [_GENRE.get(label, label) for label, _, _ in segments]
    drafted = ", ".join(f"{k:.1f} in the {g}" if g not in _BARE else f"{k:.1f} in {g}"
                        for k, g in zip(ks, genres))
    adapt = (f"“{esc(est.label)}” drafted k = {drafted} on average (“{esc(fixed.label)}” drafts "
             f"{fixed.k[0]} throughout).")
    if off.plain_rounds == 0:
        switch = (f"The off switch never fired, so “{esc(off.label)}” ran round for round like "
                  f"“{esc(est.label)}”.")
    else:
        where = [int(((off.k == 0) & (off.start >= a) & (off.start < b)).sum()) for _, a, b in segments]
        parts = ", ".join(f"{w:,} in the {g}" if g not in _BARE else f"{w:,} in {g}"
                          for w, g in zip(where, genres) if w)
        gap = off.total_cost - est.total_cost
        how = ("finished level with" if _same(off.total_cost, est.total_cost) else
               f"finished {abs(gap):,.1f} passes {'behind' if gap > 0 else 'ahead of'}")
        switch = (f"“{esc(off.label)}” decoded {plural(off.plain_rounds, 'round')} plainly "
                  f"({parts}) and {how} “{esc(est.label)}”.")
    return (f'<p class="sdp-lede ep6-story"><strong>In this race</strong> (seed {s.race_seed}, '
            f"c = {s.c:.2f}), {overall} Fewest passes on each text: {'; '.join(per)}. "
            f"{adapt} {switch}{match_words(runs, segments, genres)}</p>"
            f"<p class=\"sdp-lede ep6-story\">{race_why_html(s)}</p>")


def match_words(runs, segments, genres) -> str:
    """What the match-length policy (the fifth, where raced) drafted on each text, and how often
    the match was too short to draft at all (escaped; empty without it)."""
    if len(runs) < 5:
        return ""
    match = runs[4]
    ks = ", ".join(f"{match.mean_k(a, b):.1f} in {_the(g)}" for (_, a, b), g in zip(segments, genres))
    share_plain = match.plain_rounds / match.n_rounds
    return (f" “{esc(match.label)}” drafted k = {ks} on average, and decoded "
            f"{plural(match.plain_rounds, 'round')} plainly ({share_plain:.0%} of its rounds) where "
            "the text just written matched fewer than two tokens of the model’s past replies (or of "
            "the text before).")


def text_best_k(s: FinePrint) -> list[tuple[str, float, int, float]]:
    """For each text of the race: its name, its measured mean acceptance rate q, the draft length
    theory finds fastest at that q and the race's c (up to the policies' cap), and that k's
    theoretical speedup."""
    out = []
    for label, a, b in s.stream.segments:
        q = float(s.stream.q[a:b].mean())
        k = theory.best_k(q, s.c, k_max=adaptive.K_CAP)
        out.append((_GENRE.get(label, label), q, k, float(theory.expected_speedup(q, k, s.c))))
    return out


def _the(genre: str) -> str:
    return genre if genre in _BARE else f"the {genre}"


def race_why_html(s: FinePrint) -> str:
    """Why the race came out as it did, from theory at each text's measured acceptance rate: the
    fastest k there, what the fixed policy drafts against it, and where even that k loses."""
    best = text_best_k(s)
    fixed = s.runs[0]
    k_fixed = int(fixed.k[0])
    ks = _join([f"{k} for {_the(g)} (q = {q:.2f}, theory {times(sp)})" for g, q, k, sp in best])
    # Where the fixed policy spent the fewest passes in this race (the table's stars): theory's
    # reason for it to lose there is then said as theory's, beside what the race did.
    costs = stretch_costs(s)
    won = {g for (g, _, _, _), col in zip(best, costs.T) if _same(col[0], col.min())}
    more = [g for g, _, k, _ in best if k_fixed > k]
    fewer = [g for g, _, k, _ in best if k_fixed < k]
    if not more and not fewer:
        fix = f"“{esc(fixed.label)}” drafts exactly that on every text"
    else:
        parts = []
        for these, why in ((more, "pays for guesses after the first miss that are thrown away"),
                           (fewer, "leaves right guesses undrafted")):
            if not these:
                continue
            side = "more than that" if these is more else "fewer"
            said = f"{side} on {_join([_the(g) for g in these])}, so by theory it {why}"
            upset = [g for g in these if g in won]
            if upset:
                said += (f", though in this race it spent the fewest passes on "
                         f"{_join([_the(g) for g in upset])}: the measured acceptance changes "
                         "token by token, where theory takes every guess as equally likely")
            parts.append(said)
        fix = f"“{esc(fixed.label)}” drafts {k_fixed}: " + "; ".join(parts)
    losing = [g for g, _, _, sp in best if versus_one(sp) < 0]
    if losing:
        off = (f" On {_join([_the(g) for g in losing])} even the best k is slower than plain "
               "decoding: there the right number of guesses is none, which is what the off switch "
               "is for.")
    else:
        off = (" On every text the best k beats plain decoding, so switching off can only cost "
               "time here (its probes too).")
    return (f"<strong>Why:</strong> at c = {s.c:.2f}, theory’s fastest k is {ks}. {fix}.{off}")


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def race_html(s: FinePrint) -> str:
    """The race results: each policy's speedup, time and drafts kept, the fastest marked."""
    n = len(s.stream)
    fastest = _fastest(s.runs)
    rows = []
    for run, st in zip(s.runs, POLICY_STYLE):
        best = run in fastest
        mark = " ★ fastest" if best else ""
        plain = f", {run.plain_rounds:,} of them plain" if run.plain_rounds else ""
        rows.append(
            f'<tr class="{"best" if best else ""}"><td>{_swatch(st)}'
            f'{esc(run.label)}{mark}<br><small>{esc(st["dash_name"])} line · '
            f'{plural(run.n_rounds, "round")}{plain}</small></td>'
            f'<td class="n">{run.speedup:.2f}×</td><td class="n">{run.total_cost:,.1f}</td>'
            f'<td class="n">{share(run.acceptance_rate)}</td></tr>')
    return (
        '<div class="ep6-wrap"><table class="ep6-table" aria-label="Race results">'
        '<thead><tr><th>policy</th><th>speed&shy;up</th><th>time (passes)</th>'
        '<th>drafts kept</th></tr></thead><tbody>' + "".join(rows)
        + f'</tbody></table></div><p class="sdp-note">Plain decoding takes {n} passes for these '
        f'{n} tokens. Speedup = {n} ÷ the policy\'s time. Every policy saw the same draw (seed '
        f'{s.race_seed}): a drafted token is right or wrong at the same place for all of them.</p>'
    )


# ---------------------------------------------------------------------------
# The view
# ---------------------------------------------------------------------------


class FinePrintView(StateView):
    """Both parts bound to one :class:`FinePrint` state."""

    state = param.ClassSelector(class_=FinePrint)
    part1_intro = param.String(default="", doc="Trusted HTML that opens part 1 (its heading too).")
    part2_intro = param.String(default="", doc="Trusted HTML that opens part 2 (its heading too).")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        # Part 1's lower chart and part 2 are built when the visitor scrolls near them
        # (kit/deferred.py); until then their charts and texts are None and the watchers
        # skip them.
        self.sampling = SamplingCharts(s)
        self.models_key = None
        self.context_note = prose(context_html(s), _CSS, name="ep6-context")
        self.sampling_numbers = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                                             name="ep6-sampling-numbers", margin=(0, 10))
        self.race = self.race_table = self.race_key = self.race_story = None
        s.param.watch(self._redraw_sampling, "samples")
        s.param.watch(self._redraw_race, "runs")
        self._redraw_sampling()
        self.charts_slot = when_near(self._part1_charts, name="ep6-charts")
        self.part2_slot = when_near(self._part2, name="ep6-part2")

    def _on_new_race(self, _event) -> None:
        with pn.io.hold():
            self.state.new_race()

    def _redraw_sampling(self, *_):
        with pn.io.hold():
            self.sampling_numbers.object = sampling_html(self.state)
            self.context_note.object = context_html(self.state)
            self.sampling.update(self.state)
            if self.models_key is not None:
                self.models_key.object = models_key(self.state.context)

    def _redraw_race(self, *_):
        if self.race is None:
            return
        with pn.io.hold():
            self.race.update(self.state)
            self.race_table.object = race_html(self.state)
            self.race_key.object = key_html(self.state)
            self.race_story.object = race_story_html(self.state) + stretch_table_html(self.state)

    def layout(self):
        s = self.state
        part1_controls = pn.Column(
            pn.widgets.Select.from_param(s.param.context, sizing_mode="stretch_width"),
            slider(s.param.temperature, step=0.05, format="0.00"),
            slider(s.param.favourite),
            slider(s.param.bias, step=0.05, format="0.00"),
            pn.widgets.Select.from_param(
                s.param.n_samples, options={f"{n:,}": n for n in SAMPLE_SIZES},
                sizing_mode="stretch_width"),
            pn.widgets.Button.from_param(s.param.draw, color="primary", description=None),
            control_help(s, ["context", "temperature", "favourite", "bias", "n_samples"]),
            width=300, name="ep6-sampling-controls",
        )
        # What came out, beside the controls that bend the draft (under them on a phone, after
        # the numbers that read it out); the two distributions below.
        right = pn.Column(self.sampling_numbers, prose(OUT_KEY, KEYS_CSS),
                          pn.pane.Bokeh(self.sampling.out_fig, sizing_mode="stretch_width"),
                          sizing_mode="stretch_width")
        part1 = pn.Column(
            prose(self.part1_intro, _CSS),
            self.context_note,
            beside(part1_controls, right, basis="380px", min_width=300),
            self.charts_slot,
            sizing_mode="stretch_width",
        )
        return pn.Column(part1, self.part2_slot, sizing_mode="stretch_width")

    def _part1_charts(self):
        """Part 1's lower chart: the two models' distributions (what came out is beside the
        controls, :meth:`layout`)."""
        s = self.state
        self.models_key = prose(models_key(s.context), KEYS_CSS, name="ep6-models-key")
        return pn.Column(self.models_key,
                         pn.pane.Bokeh(self.sampling.models_fig, sizing_mode="stretch_width"),
                         sizing_mode="stretch_width")

    def _part2(self):
        """Part 2: the race of fixed and adaptive draft lengths, built when near."""
        s = self.state
        self.race = RaceCharts(s.stream)
        self.race_table = pn.pane.HTML(sizing_mode="stretch_width", name="ep6-race-table",
                                       stylesheets=[page_css(_CSS, _KEY_CSS)], margin=(0, 10))
        self.race_key = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[page_css(_KEY_CSS)],
                                     name="ep6-race-key", margin=(0, 10))
        self.race_story = pn.pane.HTML(sizing_mode="stretch_width", name="ep6-race-story",
                                       stylesheets=[page_css(_CSS, _KEY_CSS)], margin=(0, 10))
        new_race = pn.widgets.Button(label="New randomness", color="primary", width=160)
        new_race.on_click(self._on_new_race)
        self._redraw_race()
        part2_controls = pn.Column(
            slider(s.param.c, step=0.01, format="0.00"),
            slider(s.param.fixed_k),
            SeedBox(s, "race_seed", width=120, beside=[new_race]),
            control_help(s, ["c", "fixed_k", "race_seed"]),
            width=300, name="ep6-race-controls",
        )
        return pn.Column(
            prose(self.part2_intro, _CSS),
            beside(part2_controls, self.race_table, basis="420px", min_width=300),
            self.race_key,
            pn.pane.Bokeh(self.race.wall_fig, sizing_mode="stretch_width"),
            pn.pane.Bokeh(self.race.k_fig, sizing_mode="stretch_width"),
            self.race_story,
            sizing_mode="stretch_width",
        )

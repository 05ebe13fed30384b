"""Episode 4's view: two texts side by side, each with its measurements, wall-clock bars and
marked tokens; the box for a pasted text; and the measured parts: the histogram of per-token
acceptance per text, the table of means and the paste's progress.

The HTML builders (:func:`tokens_html`, :func:`side_header_html`, :func:`breakeven_html`,
:func:`genre_table_html`), :func:`bars_data`, :func:`histogram_data` and :func:`axis_end` (the time
axis, long enough for the labels at the bars' ends on a phone) are plain functions a test can
call; each figure is built once and updated through its source.
"""

from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, FactorRange, HoverTool, NumeralTickFormatter, Range1d
from bokeh.plotting import figure

from ...data import measured, texts
from ...kit.words import SHORT, faster_or_slower, plural, share, short_name
from .state import BIG_PASS_MS, PASTE_LABEL, SIDES, BoilerplateVsPoetry, TextRun
from .words import BINS, bars_words, bin_labels, histogram_words
from ...kit import theme
from ...kit.a11y import describe
from ...kit.deferred import when_near
from ...kit.poller import RunPoller
from ...kit.inputs import SeedBox, control_help
from ...kit.keys import KEYS_CSS, chart_key, swatch
from ...kit.labels import axis_end_for, text_width
from ...kit.page import StateView, esc, page_css, prose, stat

#: Acceptance at least this high counts as "the draft is usually right here".
HIGH = 0.5


def histogram_data(items) -> dict:
    """Rows of the histogram: for each ``(name, alpha array)``, the share of its tokens in each
    bin, most likely first reading down (the highest bin on top of each group)."""
    labels = bin_labels()
    cols = dict(y=[], share=[], count=[], name=[], bin=[], mean=[])
    for name, alpha in items:
        alpha = np.asarray(alpha, dtype=float)
        shares = measured.histogram(alpha, BINS)
        counts = np.rint(shares * alpha.size).astype(int)
        for b in reversed(range(BINS)):
            cols["y"].append((name, labels[b]))
            cols["share"].append(float(shares[b]))
            cols["count"].append(int(counts[b]))
            cols["name"].append(name)
            cols["bin"].append(labels[b])
            cols["mean"].append(float(alpha.mean()) if alpha.size else float("nan"))
    return cols


def histogram_items(pasted=None) -> list[tuple[str, np.ndarray]]:
    """``(name, alpha)`` of every measured text, then the visitor's scored paste if any."""
    items = [(short_name(t.kind, t.title), t.alpha) for t in measured.load_measured().texts.values()]
    if pasted is not None and len(pasted):
        items.append((SHORT["pasted"], np.asarray(pasted.q)))
    return items


def histogram_factors(data: dict) -> list:
    """The histogram's rows bottom to top, so that it reads top down in the table's order."""
    return list(reversed(data["y"]))


def histogram_figure(source: ColumnDataSource, factors) -> figure:
    """Share of each text's tokens in each fifth of acceptance, one group of bars per text
    (``factors`` from :func:`histogram_factors`)."""
    fig = figure(
        name="ep4-hist-figure", height=40 + 15 * len(factors), sizing_mode="stretch_width",
        y_range=FactorRange(*factors, group_padding=0.9, factor_padding=0.05, name="ep4-hist-y"),
        x_range=Range1d(0, 1, bounds=(0, 1)), tools="", toolbar_location=None,
        x_axis_label="share of the text's tokens",
    )
    bars = fig.hbar(y="y", left=0, right="share", height=0.8, source=source,
                    fill_color=theme.DRAFT, line_color=theme.DRAFT)
    fig.add_tools(HoverTool(renderers=[bars], tooltips=[
        ("text", "@name"), ("acceptance", "@bin"), ("tokens", "@count (@share{0%})"),
        ("mean acceptance", "@mean{0.000}")]))
    fig.xaxis.formatter = NumeralTickFormatter(format="0%")
    fig.yaxis.major_label_text_font_size = "11px"
    fig.yaxis.group_text_font_size = "13px"
    fig.yaxis.group_text_color = theme.INK
    fig.yaxis.major_label_text_color = theme.MUTED
    fig.ygrid.grid_line_color = None
    fig.xgrid.grid_line_color = theme.GRID
    fig.outline_line_color = None
    theme.lean(fig)
    fig.min_border_right = 24  # room for half of the "100%" label at the axis's end
    return fig


#: The drafts of the comparison columns, in order, and what the table calls them.
COMPARED = {"head": "head", "memory": "memory", "hybrid": "memory + head", "ngram": "n-gram",
            "lookup": "lookup"}


def _compared_cells(m: dict, key: str, fmt: str) -> str:
    cells = []
    for d in COMPARED:
        v = m.get("compare", {}).get(d, {}).get(key)
        cells.append(f'<td class="n" data-draft="{d}">{"–" if v is None else format(v, fmt)}</td>')
    return "".join(cells)


def genre_table_html() -> str:
    """Per text: tokens, mean measured acceptance, how probable the big model itself finds the
    text (mean p of each real token), and, per draft compared (the head, the memory draft, memory +
    head, the n-gram table, prompt lookup), its first guess kept (the share where greedy drafting is kept: the head's is the
    page's draft's) and its tokens per pass at k = 4."""
    rows = []
    for tid, m in measured.genre_means().items():
        rows.append(
            f'<tr data-text="{esc(tid)}"><td>{esc(short_name(m["kind"]))}</td>'
            f'<td class="n">{m["tokens"]}</td><td class="n">{m["alpha"]:.3f}</td>'
            f'<td class="n">{m["p_token"]:.2f}</td>'
            + _compared_cells(m, "greedy", ".0%") + _compared_cells(m, "tau", ".2f") + "</tr>")
    names = "".join(f"<th>{n}</th>" for n in COMPARED.values())
    return ('<div class="ep4-wrap sdp-hscroll"><table class="ep4-rule ep4-means"><thead><tr>'
            '<th rowspan="2">text</th><th rowspan="2">tokens</th><th rowspan="2">acceptance q</th>'
            '<th rowspan="2">big model’s p<sub>big</sub></th>'
            f'<th colspan="{len(COMPARED)}">first guess kept</th>'
            f'<th colspan="{len(COMPARED)}">tokens per pass, k = 4</th></tr>'
            f'<tr>{names}{names}</tr></thead><tbody>' + "".join(rows) + "</tbody></table></div>"
            '<p class="sdp-hscroll-cue">Swipe the table sideways for all its columns.</p>')


def token_alpha_class(alpha: float) -> str:
    """CSS class of a token's measured acceptance: ``m0`` (below 0.2) to ``m4`` (0.8 and up)."""
    return f"m{min(int(alpha * BINS), BINS - 1)}"


def scoring_html(state: BoilerplateVsPoetry) -> str:
    """Where the pasted text's scoring stands (escaped; empty when there is nothing to say)."""
    st = state.scoring
    if st == "queued":
        ahead = state.position - 1
        line = ("Your text is next in line for the model." if ahead <= 0 else
                f"Your text is waiting for the model: {ahead} run{'s' if ahead != 1 else ''} ahead of it.")
    elif st == "running":
        done, total = state.progress
        line = (f"The model is scoring your text: {done:,} of {total:,} tokens." if total else
                "The model is reading your text.")
    else:
        return ""
    return f'<p class="ep4-scoring" role="status">{esc(line)}</p>'


_CSS = f"{__package__}:ep4.css"
_PLAIN_ROW = "big model alone"
_SPEC_ROW = "speculative"
#: Kinds of text that are code: they keep their lines and scroll sideways in their box (Python's
#: indentation is its meaning); every other text is prose and wraps. A pasted text is code only
#: if it looks like code (:func:`looks_like_code`).
_MONO_KINDS = ("code", "json", "python")
#: How a line of code ends, or begins, where a line of prose seldom does.
_CODE_ENDS = ("{", "}", ";", "[", "(", ":", "=>")
_CODE_STARTS = ("def ", "class ", "import ", "from ", "return ", "function ", "const ", "let ",
                "var ", "if (", "for (", "for ", "while ", "#include", "//", "<", "}", "{", "@")


def looks_like_code(text: str) -> bool:
    """Whether a visitor's pasted text reads as code: at least two lines, and at least four in
    ten of its non-blank lines indented, or ending or starting as code does. An e-mail or a
    poem pasted in is prose, and wraps.

    Examples
    --------
    >>> looks_like_code("def f(x):\n    return x + 1\n")
    True
    >>> looks_like_code("Dear Ana,\nthanks for the notes. See you on Monday.\nBest, Jo")
    False
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return False
    codey = sum(1 for ln in lines if ln[:1] in (" ", "\t") or ln.rstrip().endswith(_CODE_ENDS)
                or ln.lstrip().startswith(_CODE_STARTS))
    return codey >= 0.4 * len(lines)


def is_code(text) -> bool:
    """Whether Episode 4 shows ``text`` (a measured or pasted text) as code."""
    return text.kind in _MONO_KINDS or (text.kind == "pasted" and looks_like_code(text.source))
#: The bars' plotting area is at least this wide (px; on a 390 px phone): the axis leaves room
#: for the time written at the end of each bar on a frame this narrow, so on any wider one.
BARS_FRAME_PX = 235.0
#: The time at a bar's end: its font size (px) and its distance from the bar (px).
_END_LABEL_PX, _END_LABEL_GAP = 13.0, 6.0
HIST_KEY = chart_key(
    "Measured acceptance of each token, per text",
    swatch("bar", "draft") + "share of its tokens",
)
BARS_KEY = chart_key(
    "Wall clock of each run",
    swatch("bar", "big") + "big-model passes",
    swatch("bar", "hatched") + "draft steps (hatched)",
)


# ---------------------------------------------------------------------------
# Tokens in reading order
# ---------------------------------------------------------------------------

def _token_title(run: TextRun, i: int) -> str:
    status, rnd = run.status[i], int(run.round[i]) + 1
    measured_q = f"measured acceptance {run.text.q[i]:.2f}"
    if status == "accepted":
        return f"{measured_q}. Round {rnd}: drafted by the small model, accepted"
    if status == "bonus":
        return (f"{measured_q}. Round {rnd}: every draft was accepted, so the big model's same pass "
                f"wrote this one too (bonus)")
    guess = run.missed_guess[i]
    if guess:
        shown = guess.strip() or "whitespace"
        return (f"{measured_q}. Round {rnd}: the draft guessed “{shown}”, so the big model wrote "
                f"its own token")
    return (f"{measured_q}. Round {rnd}: the draft's proposal was not kept, so the big model "
            f"wrote its own token")


def tokens_html(run: TextRun, side: str) -> str:
    """The text in reading order as the model's tokens, each marked with who wrote it in this run
    and its measured acceptance (the bar above it); every piece of text escaped."""
    parts = []
    for i, tok in enumerate(run.text.tokens):
        core = tok.lstrip()
        lead = tok[: len(tok) - len(core)]
        parts.append(esc(lead))
        if core:
            cls = "a" if run.status[i] == "accepted" else "b"
            cls += " " + token_alpha_class(float(run.text.q[i]))
            parts.append(f'<span class="{cls}" title="{esc(_token_title(run, i))}">{esc(core)}</span>')
    mono = " mono" if is_code(run.text) else ""
    # Focusable: a long text scrolls inside its box, and a keyboard must reach it too.
    return (f'<pre class="ep4-tokens{mono}" tabindex="0" data-side="{side}" '
            f'data-text="{esc(run.text.id)}" data-seed="{run.seed}">'
            + "".join(parts) + "</pre>")


def _speed_stat(run: TextRun) -> str:
    s = run.speedup
    how = faster_or_slower(s)
    words = "as fast as the big model alone" if how == "as fast" else f"{how} than the big model alone"
    return stat(f"{s:.2f}×", f"speedup: {words}", css_class="ep4-slower" if how == "slower" else "")


def readout_html(runs, titles) -> str:
    """Each side's measured speedup and acceptance in a line under the controls: on a phone the
    two sides' bars are a screen below the button that reruns them (``ep4.css`` shows it only
    on narrow screens)."""
    rows = []
    for run, title in zip(runs, titles):
        if run is None:
            rows.append(f"<li>{esc(title)}: nothing pasted yet</li>")
            continue
        rows.append(f"<li>{esc(run.text.title)}: <strong>{run.speedup:.2f}×</strong> the big model "
                    f"alone · {share(run.acceptance_rate)} of drafts accepted (the text’s mean: "
                    f"{share(float(run.text.q.mean()))})</li>")
    return (f'<div role="status" aria-label="This run"><ul class="ep4-readout">{"".join(rows)}'
            "</ul></div>")



def side_header_html(run: TextRun | None, choice_title: str, *, waiting: bool = False) -> str:
    """A side's heading and measurements, or the empty paste slot's invitation (``waiting``: a
    text is in the box, from a link, and not yet scored)."""
    if run is None:
        ask = (f"Your text from the link is in the box under the two texts: press "
               f"<strong>{PASTE_LABEL}</strong> to have the model score it." if waiting else
               "Nothing pasted yet. Paste a text into the box under the two texts and press "
               f"<strong>{PASTE_LABEL}</strong>.")
        return f'<h3 class="ep4-h">{esc(choice_title)}</h3><p class="ep4-empty">{ask}</p>'
    t = run.text
    return (
        f'<h3 class="ep4-h">{esc(t.title)}</h3><p class="ep4-desc">{esc(t.description)}</p>'
        '<div class="ep4-stats">'
        + stat(share(float(t.q.mean())), "mean measured acceptance of its tokens")
        + stat(share(run.acceptance_rate), f"drafts accepted this run ({run.accepted} of {run.judged})")
        + stat(f"{run.tokens_per_round:.1f}", f"tokens per round ({plural(run.n_rounds, 'round')})")
        + _speed_stat(run) + "</div>"
    )


# ---------------------------------------------------------------------------
# Wall-clock bars
# ---------------------------------------------------------------------------

def _empty_bars() -> dict:
    cols = ("row", "big_ms", "total_ms", "label", "tip", "seed", "text_id", "k", "c")
    return {c: [] for c in cols}


def bars_data(run: TextRun, k: int, c: float) -> dict:
    """Two rows: the speculative run (verify passes, then draft steps) and plain decoding."""
    spec_tip = (f"{plural(run.n_rounds, 'verify pass')} × {BIG_PASS_MS:,.0f} ms = {run.verify_ms:,.0f} ms, "
                f"plus {plural(run.draft_steps, 'draft step')} = {run.draft_ms:,.0f} ms")
    plain_tip = (f"{plural(run.n_tokens, 'token')} × one {BIG_PASS_MS:,.0f} ms pass each = "
                 f"{run.baseline_ms:,.0f} ms")
    return dict(
        row=[_SPEC_ROW, _PLAIN_ROW],
        big_ms=[run.verify_ms, run.baseline_ms],
        total_ms=[run.wall_ms, run.baseline_ms],
        label=[f"{run.wall_ms:,.0f} ms", f"{run.baseline_ms:,.0f} ms"],
        tip=[spec_tip, plain_tip],
        seed=[run.seed] * 2, text_id=[run.text.id] * 2, k=[k] * 2, c=[c] * 2,
    )


def axis_end(runs) -> float:
    """The time axis's end for ``runs`` (the sides shown): every bar and the time written past
    its end fit a frame :data:`BARS_FRAME_PX` wide."""
    ends, widths = [], []
    for run in runs:
        if run is None:
            continue
        for label, end in zip(bars_data(run, 1, 0.0)["label"], (run.wall_ms, run.baseline_ms)):
            ends.append(end)
            widths.append(text_width(label, _END_LABEL_PX))
    if not ends:
        return 1000.0
    return axis_end_for(ends, widths, BARS_FRAME_PX, pad_px=_END_LABEL_GAP, at_least=max(ends) * 1.05)


def bars_figure(source: ColumnDataSource, x_range: Range1d, name: str):
    """Wall clock of one text: speculative (passes + hatched draft steps) against plain decoding."""
    fig = figure(
        name=f"{name}-figure", height=175, sizing_mode="stretch_width", x_range=x_range,
        y_range=FactorRange(factors=[_PLAIN_ROW, _SPEC_ROW]), tools="save",
        toolbar_location=None, x_axis_label="wall clock (ms, simulated)",
    )
    passes = fig.hbar(y="row", left=0, right="big_ms", height=0.62, source=source,
                      fill_color=theme.BIG, line_color=None)
    drafts = fig.hbar(y="row", left="big_ms", right="total_ms", height=0.62, source=source,
                      fill_color=theme.DRAFT, line_color=None, hatch_pattern="/",
                      hatch_color="white", hatch_alpha=0.7, hatch_scale=8)
    fig.text(x="total_ms", y="row", text="label", source=source, x_offset=_END_LABEL_GAP,
             text_baseline="middle", text_font_size=f"{_END_LABEL_PX:g}px", text_color=theme.INK,
             text_font_style="bold")
    fig.add_tools(HoverTool(renderers=[passes, drafts], tooltips=[("", "@tip")]))
    fig.yaxis.major_label_text_font_size = "13px"
    fig.yaxis.major_label_text_color = theme.INK
    fig.ygrid.grid_line_color = None
    fig.xgrid.grid_line_color = theme.GRID
    fig.xaxis.axis_label_text_color = theme.MUTED
    fig.xaxis.major_label_text_color = theme.MUTED
    fig.xaxis.formatter = NumeralTickFormatter(format="0,0")
    fig.outline_line_color = None
    fig.min_border_left = 10
    theme.lean(fig)
    return fig


class TextSide:
    """One side of the page: heading and measurements, the bars, the marked text."""

    def __init__(self, side: str, x_range: Range1d):
        self.side = side
        self.header = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                                   name=f"ep4-header-{side}")
        self.tokens = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                                   name=f"ep4-tokens-{side}")
        self.source = ColumnDataSource(_empty_bars(), name=f"ep4-bars-{side}")
        self.figure = bars_figure(self.source, x_range, f"ep4-{side}")
        # The heading and the bars, then (apart, so that on a phone both sides' bars come before
        # either long text and stay in view with the controls) the marked text.
        self.panel = pn.Column(
            self.header, pn.pane.Bokeh(self.figure, sizing_mode="stretch_width"),
            sizing_mode="stretch_width", min_width=330, styles={"flex": "1 1 430px"},
            name=f"ep4-side-{side}")
        self.text_panel = pn.Column(self.tokens, sizing_mode="stretch_width", min_width=330,
                                    styles={"flex": "1 1 430px"}, name=f"ep4-text-{side}")

    def show(self, run: TextRun | None, state: BoilerplateVsPoetry, choice_title: str) -> None:
        waiting = run is None and bool(state.paste) and state.pasted is None
        self.header.object = side_header_html(run, choice_title, waiting=waiting)
        self.tokens.object = "" if run is None else tokens_html(run, self.side)
        self.tokens.visible = run is not None
        self.source.data = _empty_bars() if run is None else bars_data(run, state.k, state.c)
        self.figure.visible = run is not None
        describe(self.figure, bars_words(run, choice_title))


# ---------------------------------------------------------------------------
# Keys and the break-even line
# ---------------------------------------------------------------------------

KEY_HTML = (
    '<p class="ep4-key">Each box is one of the model\'s tokens. <span class="sw a">green, '
    'underlined</span> drafted by the small model and accepted &nbsp;·&nbsp; <span class="sw b">gold, '
    'dashed box</span> written by the big model itself: its correction after a wrong draft, or the '
    'bonus token after a round with no miss. Each gold token ends a round. <span class="sw m4">'
    'a thick bar above</span> a token the draft is usually kept on, <span class="sw m0">none</span> '
    'one it almost never is (the measured acceptance, in fifths); hover a token for the number, its '
    'round and what the draft guessed.</p>'
)


def breakeven_html(state: BoilerplateVsPoetry) -> str:
    """What a round must deliver to beat plain decoding at this k and c (arithmetic)."""
    k, c = state.k, state.c
    steps = plural(k, "draft step")
    return (f'<p class="ep4-breakeven"><strong>Break-even (arithmetic, not measured):</strong> a full '
            f'round costs one big pass plus {steps} of {c:.2f} pass each, 1 + {k} × {c:.2f} = '
            f'{state.break_even_tokens:.2f} passes of time. Plain decoding writes one token per pass, so '
            f'a round must deliver more than {state.break_even_tokens:.2f} tokens to win. Compare each '
            'side’s measured tokens per round, in its heading above the bars.</p>')


def paste_message_html(message: str, scoring: str = "idle") -> str:
    """Why a paste was refused, failed or stopped (empty when there is nothing to say)."""
    if not message:
        return ""
    left = "" if scoring == "done" else " The texts above were left as they were."
    return f'<p class="sdp-notice" role="alert">{esc(message)}{left}</p>'


# ---------------------------------------------------------------------------
# The view
# ---------------------------------------------------------------------------


class BoilerplateVsPoetryView(StateView):
    """Controls, the two sides and the paste box, bound to one state object."""

    state = param.ClassSelector(class_=BoilerplateVsPoetry)
    paste_intro = param.String(default="", doc="Trusted HTML above the paste box.")

    def __init__(self, **params):
        super().__init__(**params)
        s = self.state
        self.x_range = Range1d(0, 1000, bounds=(0, None))
        self.sides = [TextSide(side, self.x_range) for side in SIDES]
        self.breakeven = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                                      name="ep4-breakeven")
        self.readout = pn.pane.HTML(sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                                    name="ep4-readout", margin=(0, 10))
        self.run_button = pn.widgets.Button(label="Run again", color="primary",
                                            width=130, align="end")
        self.run_button.on_click(self._on_run_again)
        # The paste box and the histogram are built when the visitor scrolls near them
        # (kit/deferred.py); until then their widgets are None and the watchers skip them.
        self.paste_input = self.paste_button = self.cancel_button = None
        self.progress = self.scoring = self.message = None
        self.hist_source = self.histogram = None
        s.param.watch(self._redraw, ["runs"])
        s.param.watch(self._show_message, ["message"])
        s.param.watch(self._show_histogram, ["pasted"])
        self._redraw()
        self.lower_slot = when_near(
            lambda: pn.Column(self._paste_part(), self._histogram_part(), sizing_mode="stretch_width"),
            name="ep4-lower-slot")
        self.poller = RunPoller(s, self._show_scoring)

    # Button clicks can be processed outside Bokeh's document lock (Panel runs a click
    # that arrives while a widget change is still pending as an unlocked coroutine), so
    # every update they cause goes through pn.io.hold(), which dispatches safely either way.
    def _on_run_again(self, _event=None) -> None:
        with pn.io.hold():
            self.state.run_again()

    def _on_paste(self, _event=None) -> None:
        text = self.paste_input.value_input
        if text is None:
            text = self.paste_input.value
        with pn.io.hold():
            self.state.use_paste(text)
            self._show_message()
            self._show_scoring()
        self.poller.start()

    def _on_cancel(self, _event=None) -> None:
        with pn.io.hold():
            self.state.cancel()
            self._show_scoring()
        self.poller.stop()

    def _show_scoring(self) -> None:
        if self.scoring is None:
            return
        s = self.state
        active = s.active
        self.cancel_button.visible = active
        self.paste_button.disabled = active
        done, total = s.progress
        self.progress.visible = active
        self.progress.value = int(100 * done / total) if active and total else 0
        self.scoring.object = scoring_html(s)

    def _paste_part(self):
        """The box where visitors paste their own text, built when near."""
        self.paste_input = pn.widgets.TextAreaInput(
            label=f"Your own text (at most {texts.PASTE_MAX_CHARS:,} characters)",
            placeholder="Paste code, an e-mail, a recipe, a poem…",
            max_length=20 * texts.PASTE_MAX_CHARS, height=130, sizing_mode="stretch_width",
            value=self.state.paste,
        )
        self.paste_button = pn.widgets.Button(label=PASTE_LABEL, color="primary",
                                              width=190)
        self.paste_button.on_click(self._on_paste)
        self.cancel_button = pn.widgets.Button(label="Cancel", width=100, visible=False)
        self.cancel_button.on_click(self._on_cancel)
        self.progress = pn.indicators.Progress(value=0, max=100, visible=False, height=14,
                                               sizing_mode="stretch_width")
        self.scoring = pn.pane.HTML("", sizing_mode="stretch_width", stylesheets=[page_css(_CSS)],
                                    name="ep4-scoring")
        self.message = pn.pane.HTML("", visible=False, sizing_mode="stretch_width",
                                    stylesheets=[page_css()], name="ep4-paste-message")
        self._show_scoring()
        self._show_message()
        return pn.Column(
            prose(self.paste_intro),
            self.paste_input, pn.Row(self.paste_button, self.cancel_button),
            self.scoring, self.progress, self.message,
            sizing_mode="stretch_width", name="ep4-paste",
        )

    def _histogram_part(self):
        """The histogram of measured acceptance, built when near."""
        self.hist_source = ColumnDataSource(name="ep4-hist")
        data = histogram_data(histogram_items(self.state.pasted))
        self.hist_source.data = data
        self.histogram = histogram_figure(
            self.hist_source, histogram_factors(data))
        describe(self.histogram, histogram_words(data))
        return pn.Column(
            prose(HIST_KEY, _CSS, KEYS_CSS),
            pn.pane.Bokeh(self.histogram, sizing_mode="stretch_width", name="ep4-hist-pane"),
            sizing_mode="stretch_width",
        )

    def _show_histogram(self, *_):
        if self.histogram is None:
            return
        items = histogram_items(self.state.pasted)
        data = histogram_data(items)
        with pn.io.hold():
            self.histogram.y_range.factors = histogram_factors(data)
            self.histogram.height = 40 + 15 * len(data["y"])
            self.hist_source.data = data
            describe(self.histogram, histogram_words(data))

    def _show_message(self, *_):
        if self.message is None:
            return
        msg = self.state.message
        self.message.object = paste_message_html(msg, self.state.scoring)
        self.message.visible = bool(msg)

    def _choice_title(self, choice: str) -> str:
        names = self.state.param[SIDES[0]].names
        return next((label for label, v in names.items() if v == choice), choice)

    def _redraw(self, *_):
        s = self.state
        runs = s.runs
        with pn.io.hold():
            self.x_range.end = axis_end(runs)
            for side, run, choice in zip(self.sides, runs, (s.left, s.right)):
                side.show(run, s, self._choice_title(choice))
            self.breakeven.object = breakeven_html(s)
            self.readout.object = readout_html(
                runs, [self._choice_title(choice) for choice in (s.left, s.right)])

    def layout(self):
        s = self.state
        wide = dict(sizing_mode="stretch_width", min_width=220, styles={"flex": "1 1 260px"})
        texts_row = pn.FlexBox(
            pn.widgets.Select.from_param(s.param.left, **wide),
            pn.widgets.Select.from_param(s.param.right, **wide),
            flex_wrap="wrap", gap="4px 28px", sizing_mode="stretch_width", name="ep4-choose",
        )
        knobs_row = pn.FlexBox(
            pn.widgets.IntSlider.from_param(s.param.k, throttled=True, **wide),
            pn.widgets.FloatSlider.from_param(s.param.c, step=0.01, throttled=True, **wide),
            pn.Column(SeedBox(s, "seed", beside=[self.run_button]), **wide),
            flex_wrap="wrap", align_items="flex-end", gap="4px 28px",
            sizing_mode="stretch_width", name="ep4-knobs",
        )
        controls = pn.Column(texts_row, knobs_row, control_help(s, ["left", "right", "k", "c", "seed"]),
                             sizing_mode="stretch_width", name="ep4-controls")
        sides = pn.FlexBox(*(side.panel for side in self.sides), flex_wrap="wrap", gap="12px 28px",
                           sizing_mode="stretch_width", name="ep4-sides")
        texts_ = pn.FlexBox(*(side.text_panel for side in self.sides), flex_wrap="wrap",
                            gap="12px 28px", sizing_mode="stretch_width", name="ep4-texts")
        return pn.Column(
            controls, self.readout, prose(BARS_KEY, _CSS, KEYS_CSS), sides, self.breakeven,
            prose(KEY_HTML, _CSS, KEYS_CSS), texts_, self.lower_slot,
            sizing_mode="stretch_width",
        )

"""Episode 4: boilerplate flies, poetry stalls (or does it?).

How often the draft is right is not a knob but a property of the text and of the draft. The
same speculative decoder runs over two texts side by side (Python code and a poem by default, or
the visitor's own), cut into the real model's tokens, each with its acceptance probability
measured on the real model and the learned draft: every token is shown in reading order, marked
as kept from the draft or written by the big model, and each run's acceptance rate, tokens per
round and wall clock are measured from ``sim.relay``.
"""

from __future__ import annotations

import functools
import json

import panel as pn

from . import Exercise, TryStep, neighbours
from ..data import measured, texts
from ..shipped import asset_path
from ..state.ep4 import BIG_PASS_MS, BoilerplateVsPoetry
from ..views.deferred import after_first_paint
from ..views.ep4_measured import genre_story, genre_table_html
from ..views.ep4_texts import BoilerplateVsPoetryView
from ..views.exercises import exercises_section
from ..views.page import episode_shell, esc, prose, steps_html
from ..views.urlstate import bind_url

NUMBER = 4
SLUG = "ep4_boilerplate_vs_poetry"
TITLE = "Boilerplate flies, poetry stalls"
_LEFT, _RIGHT = (BoilerplateVsPoetry.param[n].default for n in ("left", "right"))
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("left", "right", "k", "c", "seed")

LEDE = ("The same speculative decoder (a small draft proposes k tokens, the big model checks them "
        "in one pass) runs over two texts side by side, Python code and a poem to start with. Each "
        "token's chance of being kept was measured on a real model: only the text differs between "
        "the two sides.")
PASTE_INTRO = (
    '<h2>Try your own text</h2><p class="sdp-lede">Paste anything up to '
    f'{texts.PASTE_MAX_CHARS:,} characters and press <strong>Score and run my text</strong>. The '
    'real model reads it on this server (it waits its turn if others are scoring), cuts it into its '
    'tokens and measures each one just as for the texts above; then it runs on the right-hand side '
    '(or on whichever side already shows your text) with the same settings.</p>')


@functools.cache
def _summary() -> str:
    means = measured.genre_means()
    left, right = means[_LEFT], means[_RIGHT]
    return (f"The same speculative decoder over Python code and over a poem, every token's acceptance "
            f"measured on a real model and its learned draft: {left['alpha']:.0%} on average on the "
            f"Python, {right['alpha']:.0%} on the poem. Paste your own text to have it scored.")


#: The text step 2 of "Try this" switches the left side to.
TRY_SWITCH = "js-loop"


@functools.cache
def _try_steps() -> tuple[TryStep, ...]:
    means = measured.genre_means()
    py, js = means[_LEFT]["alpha"], means[TRY_SWITCH]["alpha"]
    return (
        TryStep("With the starting pair of texts (Python on the left, a poem on the right) and "
                "settings, press <em>Run again</em> a few times and watch the two pairs of bars: "
                "the Python code, in the one language the draft learned, stays ahead of the big "
                "model alone, while the poem hovers around it, a little faster in some runs and a "
                "little slower in others."),
        TryStep("Then switch the left text to JavaScript: the draft, which learned only Python, "
                f"is kept on average at {js:.0%} of its tokens instead of {py:.0%}, and the left "
                "side's lead over the big model alone all but vanishes.", {"left": TRY_SWITCH}),
        TryStep("Last, paste some text of your own at the bottom and see where it lands."),
    )


@functools.cache
def _try_this() -> str:
    return steps_html([s.html for s in _try_steps()])


@functools.cache
def _draft_cost() -> tuple[float, int]:
    """The learned draft's measured cost c per token: the median over its end-to-end runs, and
    how many runs."""
    runs = json.loads(asset_path("lm/ngram_draft.json").read_text(encoding="utf-8"))["end_to_end"]
    cs = sorted(r["c"] for r in runs.values())
    mid = len(cs) // 2
    median = cs[mid] if len(cs) % 2 else (cs[mid - 1] + cs[mid]) / 2
    return median, len(cs)


@functools.cache
def _explain_html() -> str:
    meta = measured.load_measured().meta
    draft_cost = _draft_cost()
    return f"""
<h2>Where the numbers come from</h2>
<p class="sdp-lede">Every text here is cut into the tokens of a real language model,
SmolLM2-135M-Instruct, as it sees them: subword pieces, each carrying the space before it. At every
token, the big model read the real text before it and gave its next-token distribution
p<sub>big</sub>(x); the learned draft read the same text and gave its own, p<sub>draft</sub>(x). The
token's acceptance probability is q = the sum over x of min(p<sub>big</sub>(x), p<sub>draft</sub>(x)),
the chance that speculative sampling keeps the draft's proposal there (Leviathan, Kalman and Matias, 2023):
that is the bar above each token and the number its hover shows. Each run keeps or rejects each draft
with that probability, drawn afresh for each seed; the speedups come from those runs.</p>
<p class="sdp-note">The learned draft is a table of the tokens that most often followed each run of one
to three tokens in Python's standard library (up to 8 for each, with their counts); its
p<sub>draft</sub>(x) is those counts, normalised. It costs almost nothing to run (a median of {draft_cost[0]:.3f}
of a big pass per token over {draft_cost[1]} end-to-end runs on this machine: hence the starting c of
{BoilerplateVsPoetry.param.c.default:g}), but it knows only Python. The texts were
scored once with <code>{esc(meta["command"])}</code> on {esc(meta["date"][:10])}; a pasted text is scored
the same way, live. The time axis is still the simulation's: a big pass costs
{BIG_PASS_MS:,.0f} ms however many tokens it checks, as on a large GPU (Episode 1); on this CPU,
checking k tokens costs several single passes.</p>
<h2>What the measurements say</h2>
<p class="sdp-lede">{esc(genre_story())}</p>
{genre_table_html()}
<p class="sdp-note">Greedy draft kept: the share of tokens where the draft's top guess is the big
model's top guess, which is how often greedy decoding would keep it. The big model's
p<sub>big</sub> of the real token says how predictable the text is to the big model itself, whatever the draft.</p>
<h3>Why boilerplate usually flies</h3>
<p class="sdp-lede">In code, JSON, a form letter or a translation, many tokens are dictated by what
came before: a bracket that was opened gets closed, a key repeats, a stock phrase runs on. There the big
model often puts most of its probability on one token, and a draft that has learned the same habit puts its
own there too, so the two overlap almost completely. A poem is written to avoid the obvious word: the
big model spreads its probability over many, and the overlap is small whatever the draft. The table's
last column shows the first half of that on these texts; the second half needs a draft that learned
such text, and this one learned only Python.</p>
"""


#: Written from the measured asset when first asked for (importing the module reads no file).
_LAZY = {"SUMMARY": _summary, "EXPLAIN_HTML": _explain_html, "DRAFT_COST": _draft_cost,
         "TRY_STEPS": _try_steps, "TRY_THIS": _try_this}


def __getattr__(name: str):
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _compare_sides(s: BoilerplateVsPoetry, column: str):
    """The two texts on screen by one measured mean: ``(right choice, left value, right value,
    left title, right title)``; choices are left, right, about the same (within 0.02)."""
    means = measured.genre_means()
    a, b = means[s.left][column], means[s.right][column]
    right = 2 if abs(a - b) < 0.02 else (0 if a > b else 1)
    return (right, a, b, esc(measured.measured_text(s.left).title),
            esc(measured.measured_text(s.right).title))


def _answer_draft_best(s: BoilerplateVsPoetry):
    """Which of the two texts on screen the learned draft is accepted on more, as measured."""
    right, a, b, left, other = _compare_sides(s, "alpha")
    return right, (f"Measured acceptance q: {a:.3f} on {left}, {b:.3f} on {other}. The learned "
                   "draft is a table counted from Python source: how often it guesses the model's "
                   "token depends on the text and on what the draft learned from.")


def _answer_big_model(s: BoilerplateVsPoetry):
    """How predictable each text is to the big model itself: its mean p of the real token."""
    right, a, b, left, other = _compare_sides(s, "p_token")
    return right, (f"The big model's mean p<sub>big</sub> of the real next token: {a:.2f} on "
                   f"{left}, {b:.2f} on {other}. Code is written to a pattern; a poem avoids the "
                   "expected word, whatever the draft.")


EXERCISES = (
    Exercise("Left: Python code; right: the poem. On which does the learned draft get more of its "
             "guesses accepted?", ("the Python code", "the poem", "about the same"),
             {"left": "py-account", "right": "poem-kettle"}, _answer_draft_best),
    Exercise("Now forget the draft: which of the two texts does the big model itself find more "
             "predictable, left JavaScript or right the poem?",
             ("the JavaScript", "the poem", "about the same"),
             {"left": "js-loop", "right": "poem-kettle"}, _answer_big_model),
)


def page(state: BoilerplateVsPoetry | None = None) -> pn.Column:
    """A fresh Episode 4 page (one per session or notebook cell)."""
    state = state or BoilerplateVsPoetry()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: BoilerplateVsPoetryView(state=state, paste_intro=PASTE_INTRO),
        name="ep4-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep4",
        lede=LEDE, try_this=_try_this(),
        body=[notice, view, prose(_explain_html(), "ep4.css"),
              exercises_section(state, EXERCISES, name="ep4")],
    )

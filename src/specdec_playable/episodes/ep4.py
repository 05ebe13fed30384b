"""Episode 4: boilerplate flies, poetry stalls (or does it?).

How often the draft is right is not a knob but a property of the text and of the draft. The
same speculative decoder runs over two texts side by side (Python code and a poem by default, or
the visitor's own), cut into the real model's tokens, each with its acceptance probability
measured on the real model and the draft head: every token is shown in reading order, marked
as kept from the draft or written by the big model, and each run's acceptance rate, tokens per
round and wall clock are measured from ``sim.relay``. The draft is the trained draft head
(``lm.head``); the n-gram table and prompt lookup are measured beside it in the table.

Every claim about the texts is computed from the measured asset: whether boilerplate beats the poem
(:func:`title_holds`), which text the draft is kept on most, and how fast each side should run.
"""

from __future__ import annotations

import functools
import json

import panel as pn

from . import Exercise, TryStep, neighbours
from ..data import measured, texts
from ..shipped import asset_path
from ..sim import theory
from ..state.ep4 import BIG_PASS_MS, BoilerplateVsPoetry
from ..views.deferred import after_first_paint
from ..views.ep4_measured import (BOILERPLATE, genre_story, genre_table_html, in_prose,
                                  title_holds)
from ..views.ep4_texts import BoilerplateVsPoetryView
from ..views.exercises import exercises_section
from ..views.page import episode_shell, esc, prose, steps_html
from ..views.urlstate import bind_url

NUMBER = 4
SLUG = "ep4_boilerplate_vs_poetry"
#: The title the seed gives the episode, and the one it takes when the measurement says otherwise.
CLAIMED_TITLE = "Boilerplate flies, poetry stalls"
MEASURED_TITLE = "Boilerplate or poetry: what a draft can guess"
_LEFT, _RIGHT = (BoilerplateVsPoetry.param[n].default for n in ("left", "right"))
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("left", "right", "k", "c", "seed")


def title() -> str:
    """The episode's title: the seed's claim where the measured means bear it out."""
    return CLAIMED_TITLE if title_holds() else MEASURED_TITLE


def lede() -> str:
    means = measured.genre_means()
    top = max((m for m in means.values() if m["kind"] in BOILERPLATE), key=lambda m: m["alpha"])
    poem = next(m for m in means.values() if m["kind"] == "poem")
    verdict = (f"Measured, the draft is kept at {top['alpha']:.0%} of the tokens on "
               f"{in_prose(top['kind'])} and {poem['alpha']:.0%} on the poem: boilerplate "
               + ("does beat poetry." if title_holds() else "barely beats poetry."))
    return ("The same speculative decoder (a small draft proposes k tokens, the big model checks "
            "them in one pass) runs over two texts side by side, Python code and a poem to start "
            "with. Each token's chance of being kept was measured on a real model and a draft "
            f"trained to imitate it: only the text differs between the two sides. {verdict}")


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
            f"measured on a real model and its draft head: {left['alpha']:.0%} on average on the "
            f"Python, {right['alpha']:.0%} on the poem. Paste your own text to have it scored.")


#: The text step 2 of "Try this" switches the left side to.
TRY_SWITCH = "js-loop"


def theory_speedup(text_id: str) -> float:
    """The theory's speedup at the page's starting k and c, at the text's mean measured acceptance."""
    q = measured.genre_means()[text_id]["alpha"]
    k, c = (BoilerplateVsPoetry.param[n].default for n in ("k", "c"))
    return float(theory.expected_speedup(q, k, c))


@functools.cache
def _try_steps() -> tuple[TryStep, ...]:
    means = measured.genre_means()
    py, js, poem = (means[t]["alpha"] for t in (_LEFT, TRY_SWITCH, _RIGHT))
    return (
        TryStep("With the starting pair of texts (Python on the left, a poem on the right) and "
                "settings, press <em>Run again</em> a few times and watch the two pairs of bars. "
                f"At their measured mean acceptance ({py:.0%} and {poem:.0%}) the theory expects "
                f"{theory_speedup(_LEFT):.2f}× the big model alone on the Python and "
                f"{theory_speedup(_RIGHT):.2f}× on the poem; each run draws its own luck around "
                "that."),
        TryStep(f"Then switch the left text to JavaScript: the draft is kept on average at {js:.0%} "
                f"of its tokens instead of {py:.0%} (the theory: {theory_speedup(TRY_SWITCH):.2f}×).",
                {"left": TRY_SWITCH}),
        TryStep("Last, paste some text of your own at the bottom and see where it lands."),
    )


@functools.cache
def _try_this() -> str:
    return steps_html([s.html for s in _try_steps()])


@functools.cache
def _draft_cost() -> tuple[float, float, float]:
    """The draft head's measured cost c per token, with the two times it divides (ms), from the
    run that trained it (``assets/lm/draft_head.json``)."""
    cost = json.loads(asset_path("lm/draft_head.json").read_text(encoding="utf-8"))["measured"]["cost"]
    return cost["c"], cost["draft_step_ms"], cost["decode_step_ms"]


@functools.cache
def _explain_html() -> str:
    meta = measured.load_measured().meta
    draft_cost = _draft_cost()
    head = json.loads(asset_path("lm/draft_head.json").read_text(encoding="utf-8"))
    return f"""
<h2>Where the numbers come from</h2>
<p class="sdp-lede">Every text here is cut into the tokens of a real language model,
SmolLM2-135M-Instruct, as it sees them: subword pieces, each carrying the space before it. At every
token, the big model read the real text before it and gave its next-token distribution
p<sub>big</sub>(x); the draft head read the same text and gave its own, p<sub>draft</sub>(x). The
token's acceptance probability is q = the sum over x of min(p<sub>big</sub>(x), p<sub>draft</sub>(x)),
the chance that speculative sampling keeps the draft's proposal there (Leviathan, Kalman and Matias, 2023):
that is the bar above each token and the number its hover shows. Each run keeps or rejects each draft
with that probability, drawn afresh for each seed; the speedups come from those runs.</p>
<p class="sdp-note">The draft head is one small layer trained on this machine
(<code>scripts/train_draft_head.py</code>) to imitate the big model: it reads the big model's own
last-layer feature at the token before and the token itself, predicts the feature the big model will
compute next, and reads it through the big model's own output head, over the {head["vocab_size"]:,}
tokens the big model writes most (EAGLE's idea, with FR-Spec's reduced vocabulary). It learned from
{head["data"]["train_tokens"]:,} tokens of Python, JavaScript, JSON, READMEs and the big model's own
replies to chat prompts, poems and letters among them; none of the texts here was part of it. One
draft step took {draft_cost[0]:.3f} of a big pass ({draft_cost[1]:.1f} ms against {draft_cost[2]:.1f}
ms, measured in the run that trained it): hence the starting c of
{BoilerplateVsPoetry.param.c.default:g}. The table also measures two drafts beside it: the n-gram
table of Episode 7 (the tokens that most often followed one to three tokens in Python's standard
library) and prompt lookup (which copies what followed the same tokens earlier in the text). The
texts were scored once with <code>{esc(meta["command"])}</code> on {esc(meta["date"][:10])}; a
pasted text is scored the same way, live. The time axis is still the simulation's: a big pass costs
{BIG_PASS_MS:,.0f} ms however many tokens it checks, as on a large GPU (Episode 1); on this CPU,
checking k tokens costs several single passes.</p>
<h2>What the measurements say</h2>
<p class="sdp-lede">{esc(genre_story())}</p>
{genre_table_html()}
<p class="sdp-note">Greedy draft kept: the share of tokens where the draft's top guess is the big
model's top guess, which is how often greedy decoding would keep it. The big model's
p<sub>big</sub> of the real token says how predictable the text is to the big model itself, whatever the
draft. First guess kept, per draft: the same share for the head, the n-gram table and prompt lookup.
Tokens per pass at k = 4: a real greedy round started at every token of the text (the draft guesses up
to 4 tokens, one pass of the big model checks them), on average: 1 means no guess was ever kept.</p>
<h3>Why boilerplate can fly</h3>
<p class="sdp-lede">In code, JSON, a form letter or a translation, many tokens are dictated by what
came before: a bracket that was opened gets closed, a key repeats, a stock phrase runs on. There the big
model often puts most of its probability on one token, and a draft that has learned the same habit puts its
own there too, so the two overlap almost completely. A poem is written to avoid the obvious word: the
big model spreads its probability over many, and the overlap is small whatever the draft. The big
model's column shows the first half of that on these texts; the draft columns show how much of it each
draft catches: {esc(catch_line())}</p>
"""


def catch_line() -> str:
    """Which draft is kept most on these texts, from the comparison columns (plain text)."""
    means = measured.genre_means()
    mean = {d: sum(m["compare"][d]["greedy"] for m in means.values()) / len(means)
            for d in ("head", "learned", "lookup")}
    best = {d: max(means.values(), key=lambda m: m["compare"][d]["greedy"]) for d in mean}
    return (f"the head's first guess is kept at {mean['head']:.0%} of the tokens on average (most on "
            f"{in_prose(best['head']['kind'])}), the n-gram table's at {mean['learned']:.0%} and "
            f"prompt lookup's at {mean['lookup']:.0%}: a draft must have learned what the big "
            "model writes, and a fresh text leaves nothing to copy.")


#: Written from the measured asset when first asked for (importing the module reads no file).
_LAZY = {"SUMMARY": _summary, "EXPLAIN_HTML": _explain_html, "DRAFT_COST": _draft_cost,
         "TRY_STEPS": _try_steps, "TRY_THIS": _try_this, "TITLE": title, "LEDE": lede}


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
    """Which of the two texts on screen the draft head is accepted on more, as measured."""
    right, a, b, left, other = _compare_sides(s, "alpha")
    return right, (f"Measured acceptance q: {a:.3f} on {left}, {b:.3f} on {other}. The draft head "
                   "imitates the big model, so it is kept where the big model itself is sure of "
                   "the next token: how often depends on the text.")


def _answer_big_model(s: BoilerplateVsPoetry):
    """How predictable each text is to the big model itself: its mean p of the real token."""
    right, a, b, left, other = _compare_sides(s, "p_token")
    return right, (f"The big model's mean p<sub>big</sub> of the real next token: {a:.2f} on "
                   f"{left}, {b:.2f} on {other}. Code is written to a pattern; a poem avoids the "
                   "expected word, whatever the draft.")


EXERCISES = (
    Exercise("Left: Python code; right: the poem. On which does the draft head get more of its "
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
        number=NUMBER, title=title(), neighbours=neighbours(NUMBER), name="ep4",
        lede=lede(), try_this=_try_this(),
        body=[notice, view, prose(_explain_html(), "ep4.css"),
              exercises_section(state, EXERCISES, name="ep4")],
    )

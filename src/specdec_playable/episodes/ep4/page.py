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

import panel as pn

from ..nav import neighbours
from .practice import EXERCISES, LEFT, RIGHT, try_this
from ...data import measured, recorded, texts
from ...lm.head import head_meta
from ...lm.memory import index_meta
from ...kit.words import in_prose
from .words import fly_story, genre_story, title_holds
from .state import BIG_PASS_MS, BoilerplateVsPoetry
from .view import PASTE_LABEL, BoilerplateVsPoetryView, genre_table_html
from ...kit.deferred import after_first_paint
from ...kit.exercises import exercises_section
from ...kit.page import episode_shell, esc, prose
from ...kit.urlstate import bind_url

NUMBER = 4
SLUG = "ep4_boilerplate_vs_poetry"
#: The title the seed gives the episode, and the one it takes when the measurement says otherwise.
CLAIMED_TITLE = "Boilerplate flies, poetry stalls"
MEASURED_TITLE = "Boilerplate or poetry: what a draft can guess"
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    "explain why how often a draft is kept depends on the text as much as on the draft",
    "read the measured acceptance of each token of a real text",
    "tell how predictable a text is to the big model apart from how well a draft imitates it",
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = BoilerplateVsPoetry
#: Controls kept in the URL query, so a link restores the setup, and the pasted text once it
#: has been sent to be scored (bounded like the paste box: a longer one is left out of the link).
URL_PARAMS = ("left", "right", "k", "c", "seed", "paste")
URL_TEXTS = {"paste": texts.PASTE_MAX_CHARS}


def title() -> str:
    """The episode's title: the seed's claim where the measured means bear it out."""
    return CLAIMED_TITLE if title_holds() else MEASURED_TITLE


def lede() -> str:
    """The opening sentences: the figures quoted are the two texts the page opens with (the state's
    defaults, :data:`.practice.LEFT` and :data:`.practice.RIGHT`), and the verdict on the title is
    the measured means' over every text (:func:`.words.title_holds`)."""
    means = measured.genre_means()
    left, right = means[LEFT], means[RIGHT]
    verdict = (f"Measured, the draft is kept at {left['alpha']:.0%} of the tokens on "
               f"{in_prose(left['kind'])} and {right['alpha']:.0%} on {in_prose(right['kind'])}; "
               "over all the texts measured below, boilerplate "
               + ("does beat poetry." if title_holds() else "barely beats poetry."))
    return ("The same speculative decoder (a small draft proposes k tokens, the big model checks "
            "them in one pass) runs over two texts side by side, Python code and a poem to start "
            "with. Each token's chance of being kept was measured on a real model and a draft "
            f"trained to imitate it: only the text differs between the two sides. {verdict}")


PASTE_INTRO = (
    '<h2>Try your own text</h2><p class="sdp-lede">Paste anything up to '
    f'{texts.PASTE_MAX_CHARS:,} characters and press <strong>{PASTE_LABEL}</strong>. The '
    'real model reads it on this server (it waits its turn if others are scoring), cuts it into its '
    'tokens and measures each one just as for the texts above; then it runs on the right-hand side '
    '(or on whichever side already shows your text) with the same settings. The page’s address '
    'then holds your text too: a link to it opens with the text in this box.</p>')


@functools.cache
def summary() -> str:
    means = measured.genre_means()
    left, right = means[LEFT], means[RIGHT]
    return (f"The same speculative decoder over Python code and over a poem, every token's acceptance "
            f"measured on a real model and its draft head: {left['alpha']:.0%} on average on the "
            f"Python, {right['alpha']:.0%} on the poem. Paste your own text to have it scored.")


#: The draft head's provenance (:func:`lm.head.head_meta`), read once.
_head_record = functools.cache(head_meta)


def draft_cost() -> tuple[float, float, float]:
    """The draft head's measured cost c per token, with the two times it divides (ms), from its
    provenance: the run that trained it, or a later measurement of the head as it drafts
    (:func:`draft_cost_when`)."""
    cost = _head_record()["measured"]["cost"]
    return cost["c"], cost["draft_step_ms"], cost["decode_step_ms"]


def draft_cost_when() -> str:
    """Where the draft cost was measured, in words."""
    cost = _head_record()["measured"]["cost"]
    if "date" not in cost:
        return "measured in the run that trained it"
    how = " with the head kept in eight bits, as it drafts" if cost.get("precision") == "int8" else ""
    return f"measured on {cost['date'][:10]}{how}"


def cost_in_runs() -> str:
    """Why a guess of the head costs more inside a real run (Episode 7's recorded runs) than the
    figure above, with both numbers (plain text; empty without a recording)."""
    alone, in_runs = draft_cost()[0], recorded.median_draft_cost("head")
    if in_runs is None or round(in_runs, 3) <= round(alone, 3):
        return ""
    return (f"That is the head guessing alone, over and over on one context it has already read. "
            f"Inside a real run a guess costs more, about {in_runs:.3f} of a step in Episode 7's "
            "recorded runs: each round's guesses also pay for the head reading the tokens the last "
            "pass accepted, and they come straight after a pass of the big model, which has pushed "
            "the head's weights out of the processor's cache. A live run measures its own, with "
            "whatever else the server is doing at the time.")


def cpu_check_words(n: int = 5) -> str:
    """What a check of ``n - 1`` guesses costs on this CPU, in single passes, in each weight format,
    each from its one record (:func:`.cpu.passes_for`: this server's once a model process of that
    format measured it, else the shipped one) and labelled with it."""
    from ...kit.cpu import cpu_passes, passes_for

    f32, q4 = (passes_for(cpu_passes(), w) for w in ("f32", "q4"))
    return (f"On a CPU a pass over {n} positions (checking {n - 1} tokens) costs "
            f"{f32.ratio(n):.2f} single passes with float32 weights ({f32.source}) and "
            f"{q4.ratio(n):.2f} with the file's 4-bit weights ({q4.source}); Episode 8 shows why.")


def explain_html() -> str:
    """Where the numbers come from and what they say, with this CPU's check costs as the records
    read now."""
    return _explain_html(cpu_check_words())


@functools.lru_cache(maxsize=8)
def _explain_html(cpu_words: str) -> str:
    meta = measured.load_measured().meta
    cost = draft_cost()
    head = _head_record()
    memory_rows = index_meta()["rows"]
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
(<code>scripts/train_draft_head.py</code>) to imitate the big model: it reads the big model's features at the
token before (from its last layer fused with two lower ones) and the token itself, predicts the
feature the big model will compute next, and reads it through the big model's own output head, over the {head["vocab_size"]:,}
tokens the big model writes most (EAGLE's idea, with FR-Spec's reduced vocabulary). It learned from
{head["data"]["train_tokens"]:,} tokens of Python, JavaScript, JSON, READMEs and the big model's own
replies to chat prompts, poems and letters among them; none of the texts here was part of it. One
draft step took {cost[0]:.3f} of a big pass ({cost[1]:.1f} ms against {cost[2]:.1f}
ms, {esc(draft_cost_when())}): hence the starting c of
{BoilerplateVsPoetry.param.c.default:g}. {esc(cost_in_runs())} The table also measures four drafts beside it: the memory
draft of Episode 7 (no network: it copies the continuation that most of the model's own
{memory_rows:,} past replies gave after the longest stretch of tokens they share with the text so
far), memory + head (the memory's guesses where it has two or more, else the head's), the n-gram
table of Episode 7 (the tokens that most often followed one to three tokens in Python's standard
library) and prompt lookup (which copies what followed the same tokens earlier in the text). The
texts were scored once with <code>{esc(meta["command"])}</code> on {esc(meta["date"][:10])}; a
pasted text is scored the same way, live. The time axis is still the simulation's: a big pass costs
{BIG_PASS_MS:,.0f} ms however many tokens it checks, as on a large GPU (Episode 1). {esc(cpu_words)}</p>
<h2>What the measurements say</h2>
<p class="sdp-lede">{esc(genre_story())}</p>
{genre_table_html()}
<p class="sdp-note">Acceptance q: the mean over the text's tokens of the measured chance that
speculative sampling keeps the draft head's guess. The big model's p<sub>big</sub> of the real token says
how predictable the text is to the big model itself, whatever the draft. First guess kept, per draft:
the share of tokens where the draft's top guess is the big model's top guess, which is how often greedy
decoding would keep it, for each draft. Tokens per pass at k = 4: a
real greedy round started at every token of the text (the draft guesses up to 4 tokens, one pass of the
big model checks them), on average: 1 means no guess was ever kept.</p>
<h3>Why boilerplate can fly</h3>
<p class="sdp-lede">{esc(fly_story())}</p>
"""




def page(state: BoilerplateVsPoetry | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 4 page (one per session or notebook cell).

    ``service`` runs the real model (``runtime.ModelService``; the app hands in the server's):
    without one the page shows recorded runs."""
    state = state or BoilerplateVsPoetry(service=service)
    notice = bind_url(state, URL_PARAMS, long_text=URL_TEXTS)
    view = after_first_paint(
        lambda: BoilerplateVsPoetryView(state=state, paste_intro=PASTE_INTRO),
        name="ep4-view-slot")
    return episode_shell(
        number=NUMBER, title=title(), objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep4",
        lede=lede(), try_this=try_this(),
        body=[notice, view, prose(explain_html(), f"{__package__}:ep4.css"),
              exercises_section(state, EXERCISES, name="ep4")],
    )

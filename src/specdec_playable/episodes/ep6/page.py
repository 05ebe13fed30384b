"""Episode 6: the fine print — speculative sampling, and choosing k on the fly.

Part 1 shows that speculative *sampling* loses nothing: whatever the draft's
distribution, the kept-or-replaced outputs follow the big model's exactly,
checked with a chi-square test on up to 100,000 draws, and drafts are kept at the
rate q = sum over x of min(p_big(x), p_draft(x)). Part 2 races five draft-length policies over code, a poem and
JSON back to back on the same randomness, with the n-gram table's measured acceptance (a weaker
draft than part 1's head, said on the page with both drafts' numbers): adapting k pays when the
genre changes.
"""

from __future__ import annotations

import functools

import panel as pn

from ..nav import neighbours
from .practice import EXERCISES, try_this
from ...data import measured
from ...lm.memory import index_meta
from .words import race_draft_story
from ...kit.words import P_BIG, P_DRAFT
from ...sim import adaptive
from .state import RACE_TEXTS, REPEATS, FinePrint
from .view import FinePrintView
from ...kit.deferred import after_first_paint
from ...kit.exercises import exercises_section
from ...kit.page import episode_shell, esc, prose
from ...kit.urlstate import bind_url

NUMBER = 6
SLUG = "ep6_the_fine_print"
TITLE = "The fine print: exact sampling, and choosing k on the fly"
SUMMARY = ("Bend a real draft's next-token probabilities as far as you like: the kept-or-replaced "
           "output still follows the real model exactly. Then race five ways of choosing the draft "
           "length over Python, a poem and JSON, with acceptance measured on each token.")
#: What a student can do after this episode, each completing "After this episode you can"
#: (the page's first line and the teacher's guide).
OBJECTIVES = (
    ("state the speculative sampling rule and why it keeps the big model's distribution "
     "exactly"),
    "compute the acceptance rate of two distributions as the sum of their minima",
    "explain when changing the draft length as the text changes beats a fixed one",
)
#: The state the page wires (the teacher's guide answers the questions on a fresh one).
STATE = FinePrint
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("context", "temperature", "favourite", "bias", "n_samples", "c", "fixed_k", "race_seed")

LEDE = ("Two details that make speculative decoding work in practice: drafts that are kept or "
        "replaced so the output follows the big model's probabilities exactly, and a draft "
        "length k that adapts as the text gets easier or harder to guess.")


PART1_INTRO = f"""<h2 class="ep6-part">Part 1: a biased draft, an unbiased result</h2>
<p class="sdp-lede">Two distributions over the next token x. {P_BIG}(x) is the big model's: a real
model, SmolLM2-135M-Instruct, after a real context, its most likely tokens and everything else as
one bar. {P_DRAFT}(x) is the draft's: a draft head, one small layer trained to imitate the
model (Episode 4 measures how often it is kept), measured at the same place and kept to its 16 most likely tokens, which you can
bend further with a temperature and a bias towards one token. How each token is made: the draft proposes a token x, drawn from its own
{P_DRAFT}(x). The big model keeps it with probability min(1, {P_BIG}(x) / {P_DRAFT}(x)): always
when the draft is not over-eager about x, and only sometimes when it is. After a refusal the big
model draws a replacement from what is left of its distribution once the draft's is taken away,
max(0, {P_BIG}(x) − {P_DRAFT}(x)), rescaled to sum to 1. Tokens the draft over-proposes get
trimmed, tokens it under-proposes get topped up, and the two effects cancel exactly. The share of
proposals kept is the acceptance rate q = the sum over x of min({P_BIG}(x), {P_DRAFT}(x)).</p>
"""

_, _PLUS, _ESTIMATE, _OFF, _MATCH = adaptive.default_policies(match=True)
_RACE_NAMES = {"python": "Python code", "poem": "a poem", "json": "a JSON record", "code": "JavaScript"}


@functools.cache
def race_means() -> tuple[tuple[str, float], ...]:
    """The race's texts (kinds) with their measured mean acceptance, in order."""
    return tuple((measured.measured_text(t, "ngram").kind,
                  float(measured.measured_text(t, "ngram").q.mean()))
                 for t in RACE_TEXTS)


_TIMES = {1: "once", 2: "twice"}.get(REPEATS, f"{REPEATS} times")


@functools.cache
def part2_intro() -> str:
    texts = ", then ".join(f"{_RACE_NAMES.get(k, k)} (mean acceptance rate q = {a:.2f})"
                           for k, a in race_means())
    memory_rows = index_meta()["rows"]
    return f"""<h2 class="ep6-part">Part 2: choosing k on the fly</h2>
<p class="sdp-lede">The stream is three of Episode 4's texts, each {_TIMES} in a row, as the real
model's tokens, each with the acceptance probability measured for the n-gram table: {texts}.
Each round a policy picks k, the draft guesses k tokens, and the big model keeps them up to the
first wrong one and adds one of its own. A round costs 1 + k·c big-model passes, where c is the
cost of one draft step over one big-model pass.</p>
<p class="sdp-note">{esc(race_draft_story(RACE_TEXTS, REPEATS, FinePrint.param.fixed_k.default,
                                         FinePrint.param.c.default, FinePrint.param.race_seed.default))}</p>
<ol class="sdp-note">
<li><strong>Fixed k</strong>: the same k every round, set with the slider.</li>
<li><strong>+2 / −1</strong>: after a round where every draft was kept, draft 2 more next time;
after any miss, draft 1 fewer (never below 1, never above {_PLUS.k_max}).</li>
<li><strong>Best k from an estimate</strong>: keep a running average of how often drafts are kept
(each judged draft moves it {_ESTIMATE.alpha:.0%} of the way to hit or miss), and draft the k that
theory says is fastest at that rate and this c.</li>
<li><strong>Best k, off below break-even</strong>: the same, but when even the best k is expected to
lose to plain decoding, stop drafting; every {_OFF.probe_every} plain rounds, draft {_OFF.probe_k} tokens
as a probe to see whether the text got easier.</li>
<li><strong>k from the match length</strong>: the memory draft's own rule (SuffixDecoding, Oliaro et
al. 2024): look up the tokens just written in the model's own {memory_rows:,} past replies (and earlier in the same
text), and
draft as many tokens as the longest match is long ({_MATCH.factor:g} per matched token, at most
{_MATCH.k_max}); with a match shorter than {_MATCH.min_match} tokens, decode plainly. It learns
nothing from the rounds: a long match says the text is running along a path the model has
written before.</li>
</ol>
"""




OUTRO = """
<h2>What to take away</h2>
<p class="sdp-lede">Part 1 is why speculative decoding is allowed at all: with the accept-or-replace
rule, a weak or biased draft costs speed, never quality. The output has the big model's distribution
exactly, and only the acceptance rate, q = the sum over x of min(p<sub>big</sub>(x), p<sub>draft</sub>(x)),
depends on how alike the two models are. Part 2
is how serving systems try to squeeze out more: the best k depends on how predictable the text is right
now, and text changes, so a policy can track the acceptance rate and draft longer where the text is easy
and shorter where it is hard. Whether that beats a well-chosen fixed k depends on the texts, on the cost
of a draft step and on the luck of the draw, and the estimate always lags a few rounds behind a change of
text: the paragraph and the table under the race say what happened in this one, text by text. Switching
speculation off can only pay where even the best draft length loses to plain decoding, that is where
drafts are kept less often than the break-even rate for this c; everywhere else it gives up a gain, and
its probe rounds cost time too.</p>
<p class="sdp-note">Sources: Leviathan, Kalman and Matias, “Fast Inference from Transformers via
Speculative Decoding” (ICML 2023); Chen, Borgeaud, Irving, Lespiau, Sifre and Jumper, “Accelerating
Large Language Model Decoding with Speculative Sampling” (2023). The chi-square p-value is computed on
this page from the regularized incomplete gamma function, over the tokens listed, with those expected
fewer than 5 times pooled. Part 1's two distributions were measured once with the real model and
the draft head, part 2's per-token acceptance with the real model and the n-gram table, by
<code>scripts/score_texts.py</code> (Episode 4 says how); part
2's wall clock is the simulation's own, counted in big-model passes, with each draft step costing c of
one.</p>
"""


def page(state: FinePrint | None = None, *, service=None) -> pn.Column:
    """A fresh Episode 6 page (one per session or notebook cell; it runs no model,
    so ``service`` is unused)."""
    state = state or FinePrint()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: FinePrintView(state=state, part1_intro=PART1_INTRO,
                             part2_intro=part2_intro()),
        name="ep6-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, objectives=OBJECTIVES,
        neighbours=neighbours(NUMBER), name="ep6",
        lede=LEDE, try_this=try_this(),
        body=[notice, view, prose(OUTRO), exercises_section(state, EXERCISES, name="ep6")],
    )

"""Episode 6: the fine print — speculative sampling, and choosing k on the fly.

Part 1 shows that speculative *sampling* loses nothing: whatever the draft's
distribution, the kept-or-replaced outputs follow the big model's exactly,
checked with a chi-square test on up to 100,000 draws, and drafts are kept at the
rate q = sum over x of min(p_big(x), p_draft(x)). Part 2 races four draft-length policies over code, a poem and
JSON back to back on the same randomness: adapting k pays when the genre changes.
"""

from __future__ import annotations

import functools

import panel as pn

from . import Exercise, TryStep, neighbours
from ..sim import adaptive, theory
from ..data import measured
from ..state.ep7 import recorded_runs
from ..state.ep6 import RACE_TEXTS, REPEATS, SAMPLE_SIZES, FinePrint, draft_distribution
from ..views.deferred import after_first_paint
from ..views.ep6_fine_print import FinePrintView
from ..views.page import episode_shell, esc, prose, steps_html
from ..views.tokens import token_label
from ..views.exercises import exercises_section
from ..views.urlstate import bind_url
from ..views.words import P_BIG, P_DRAFT

NUMBER = 6
SLUG = "ep6_the_fine_print"
TITLE = "The fine print: exact sampling, and choosing k on the fly"
SUMMARY = ("Bend a real draft's next-token probabilities as far as you like: the kept-or-replaced "
           "output still follows the real model exactly. Then race four ways of choosing the draft "
           "length over Python, a poem and JSON, with acceptance measured on each token.")
#: Controls kept in the URL query, so a link restores the setup.
URL_PARAMS = ("context", "temperature", "favourite", "bias", "n_samples", "c", "fixed_k", "race_seed")

LEDE = ("Two details that make speculative decoding work in practice: drafts that are kept or "
        "replaced so the output follows the big model's probabilities exactly, and a draft "
        "length k that adapts as the text gets easier or harder to guess.")
_BIAS_MAX = FinePrint.param.bias.bounds[1]
_CTX, _TEMP = FinePrint.param.context.default, FinePrint.param.temperature.default
_FAV = FinePrint.param.favourite.default


def _try_share() -> float:
    """How often the draft proposes its favourite token at the starting context and temperature
    and the largest bias."""
    return float(draft_distribution(_CTX, _TEMP, _FAV, _BIAS_MAX)[_FAV - 1])


def early_exit_costs() -> tuple[float, float]:
    """The lowest and highest draft cost c of the early-exit draft in Episode 7's recorded runs."""
    cs = [run.draft_cost for (_, draft), run in recorded_runs().items() if draft == "early-exit"]
    return min(cs), max(cs)


#: Part 2's steps: the fixed policy's k after step 3, and the draft cost of step 4.
TRY_FIXED_K, TRY_C = 1, 0.35


@functools.cache
def _try_steps() -> tuple[TryStep, ...]:
    label = token_label(measured.context(_CTX).labels[_FAV - 1])
    be = theory.break_even_q(1, TRY_C)
    lo, hi = early_exit_costs()
    return (
        TryStep(f"In part 1, push <em>Bias to the favourite</em> to {_BIAS_MAX:g} and <em>Samples "
                f"N</em> to {max(SAMPLE_SIZES):,}: the draft now proposes “{esc(label)}” "
                f"{_try_share():.0%} of the time, yet the green bars still sit on the black marks "
                "of the big model.", {"bias": _BIAS_MAX, "n_samples": max(SAMPLE_SIZES)}),
        TryStep("In part 2, compare the lines: the fixed k of 4 saves only a few passes, while the "
                "policies that adapt k save many more. The paragraph under the charts says why."),
        TryStep(f"Set <em>k of the fixed policy</em> to {TRY_FIXED_K}: now the fixed policy keeps "
                "up with the best adaptive one, because on texts this hard the best k is 1 or 2.",
                {"fixed_k": TRY_FIXED_K}),
        TryStep(f"Last, raise <em>Draft cost c</em> to {TRY_C:.2f}, within what one step of the "
                f"early-exit draft cost in Episode 7's recorded runs ({lo:.2f} to {hi:.2f}): every "
                "policy now finishes behind plain "
                "decoding, and the off switch least far behind, since at this cost even k = 1 "
                f"needs q above {be:.2f} and no text offers that.", {"c": TRY_C}),
    )


@functools.cache
def _try_this() -> str:
    return steps_html([s.html for s in _try_steps()])


PART1_INTRO = f"""<h2 class="ep6-part">Part 1: a biased draft, an unbiased result</h2>
<p class="sdp-lede">Two distributions over the next token x. {P_BIG}(x) is the big model's: a real
model, SmolLM2-135M-Instruct, after a real context, its most likely tokens and everything else as
one bar. {P_DRAFT}(x) is the draft's: the draft head of Episode 7 (one small layer trained to
imitate the model), measured at the same place and kept to its 16 most likely tokens, which you can
bend further with a temperature and a bias towards one token. How each token is made: the draft proposes a token x, drawn from its own
{P_DRAFT}(x). The big model keeps it with probability min(1, {P_BIG}(x) / {P_DRAFT}(x)): always
when the draft is not over-eager about x, and only sometimes when it is. After a refusal the big
model draws a replacement from what is left of its distribution once the draft's is taken away,
max(0, {P_BIG}(x) − {P_DRAFT}(x)), rescaled to sum to 1. Tokens the draft over-proposes get
trimmed, tokens it under-proposes get topped up, and the two effects cancel exactly. The share of
proposals kept is the acceptance rate q = the sum over x of min({P_BIG}(x), {P_DRAFT}(x)).</p>
"""

_, _PLUS, _ESTIMATE, _OFF = adaptive.default_policies()
_RACE_NAMES = {"python": "Python code", "poem": "a poem", "json": "a JSON record", "code": "JavaScript"}


@functools.cache
def _race_means() -> tuple[tuple[str, float], ...]:
    """The race's texts (kinds) with their measured mean acceptance, in order."""
    return tuple((measured.measured_text(t, "learned").kind,
                  float(measured.measured_text(t, "learned").q.mean()))
                 for t in RACE_TEXTS)


_TIMES = {1: "once", 2: "twice"}.get(REPEATS, f"{REPEATS} times")


@functools.cache
def _part2_intro() -> str:
    texts = ", then ".join(f"{_RACE_NAMES.get(k, k)} (mean acceptance rate q = {a:.2f})"
                           for k, a in _race_means())
    return f"""<h2 class="ep6-part">Part 2: choosing k on the fly</h2>
<p class="sdp-lede">The stream is three of Episode 4's texts, each {_TIMES} in a row, as the real
model's tokens, each with the acceptance probability measured for the learned draft: {texts}.
Each round a policy picks k, the draft guesses k tokens, and the big model keeps them up to the
first wrong one and adds one of its own. A round costs 1 + k·c big-model passes, where c is the
cost of one draft step over one big-model pass.</p>
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
</ol>
"""


#: Written from the measured asset when first asked for (importing the module reads no file).
_LAZY = {"TRY_THIS": _try_this, "TRY_STEPS": _try_steps, "TRY_SHARE": _try_share, "RACE_MEANS": _race_means,
         "PART2_INTRO": _part2_intro}


def __getattr__(name: str):
    if name in _LAZY:
        return _LAZY[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
the draft head, part 2's per-token acceptance with the real model and the learned draft, by
<code>scripts/score_texts.py</code> (Episode 4 says how); part
2's wall clock is the simulation's own, counted in big-model passes, with each draft step costing c of
one.</p>
"""


def _answer_biased(s: FinePrint):
    fav = s.favourite - 1
    label = esc(token_label(s.favourite_label))
    fits_big = s.fit_big.p_value >= 1e-3
    fits_draft = s.fit_draft.p_value >= 1e-3
    right = 1 if fits_big and not fits_draft else (0 if fits_draft and not fits_big else 2)
    verdict = {1: "the output follows the big model, not the draft",
               0: "the output follows the draft here", 2: "the test cannot tell the two apart here"}
    return right, (
        f"Of {s.samples.n:,} outputs, {s.frequencies[fav]:.1%} were “{label}”: the big model "
        f"writes it {s.p_big[fav]:.1%} of the time, the draft proposed it {s.p_draft[fav]:.1%}. "
        f"Against p<sub>big</sub> the chi-square p-value is {_p(s.fit_big.p_value)}, against "
        f"p<sub>draft</sub> {_p(s.fit_draft.p_value)}: {verdict[right]}.")


def _p(x: float) -> str:
    return "below 10^-300" if x < 1e-300 else f"{x:.3g}"


def _answer_dear_race(s: FinePrint):
    fastest = min(s.runs, key=lambda r: r.total_cost)
    n = len(s.stream)
    be = theory.break_even_q(1, s.c)
    hard = max(float(s.stream.q[a:b].mean()) for _, a, b in s.stream.segments) < be
    why = (f". At this cost even k = 1 needs q above {be:.2f}, more than any of the texts offers, "
           "so the fewer drafts the better." if hard else ".")
    return [r.label for r in s.runs].index(fastest.label), (
        f"At c = {s.c:.2f} (seed {s.race_seed}) “{esc(fastest.label)}” took "
        f"{fastest.total_cost:,.1f} passes for {n} tokens ({fastest.speedup:.2f}×); the others "
        + ", ".join(f"{r.total_cost:,.1f}" for r in s.runs if r is not fastest) + why)


EXERCISES = (
    Exercise(f"Part 1: bias the draft to its favourite token at {_BIAS_MAX:g}, so it proposes it "
             f"most of the time, and draw {max(SAMPLE_SIZES):,} tokens. Whose distribution does "
             "the output follow?",
             ("the draft's", "the big model's", "somewhere between the two"),
             {"bias": _BIAS_MAX, "n_samples": max(SAMPLE_SIZES)}, _answer_biased),
    Exercise("Part 2: make every draft step cost c = 0.30 of a big-model pass. Which policy "
             "finishes the race first?",
             tuple(p.label for p in adaptive.default_policies(4)),
             {"c": 0.30, "fixed_k": 4}, _answer_dear_race),
)

def page(state: FinePrint | None = None) -> pn.Column:
    """A fresh Episode 6 page (one per session or notebook cell)."""
    state = state or FinePrint()
    notice = bind_url(state, URL_PARAMS)
    view = after_first_paint(
        lambda: FinePrintView(state=state, part1_intro=PART1_INTRO,
                             part2_intro=_part2_intro()),
        name="ep6-view-slot")
    return episode_shell(
        number=NUMBER, title=TITLE, neighbours=neighbours(NUMBER), name="ep6",
        lede=LEDE, try_this=_try_this(),
        body=[notice, view, prose(OUTRO), exercises_section(state, EXERCISES, name="ep6")],
    )

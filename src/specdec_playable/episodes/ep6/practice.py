"""Episode 6's "Try this" and exercises: bend the draft and watch the output follow the big
model anyway; then race the ways of choosing k, and make drafting dear. Written from the measured
distributions and Episode 7's recorded runs when first asked for."""

from __future__ import annotations

import functools

from ...kit.episode import Exercise, TryStep
from ...data import measured
from ...data.recorded import recorded_runs
from ...sim import adaptive, theory
from ...kit.words import in_prose
from .words import best_race_q
from .state import RACE_TEXTS, SAMPLE_SIZES, FinePrint, draft_distribution
from ...kit.page import esc, steps_html
from ...kit.tokens import token_label


#: The largest bias, and the context, temperature and favourite token the page starts with.
BIAS_MAX = FinePrint.param.bias.bounds[1]
_CTX, _TEMP = FinePrint.param.context.default, FinePrint.param.temperature.default
_FAV = FinePrint.param.favourite.default


def try_share() -> float:
    """How often the draft proposes its favourite token at the starting context and temperature
    and the largest bias."""
    return float(draft_distribution(_CTX, _TEMP, _FAV, BIAS_MAX)[_FAV - 1])


def early_exit_costs() -> tuple[float, float]:
    """The lowest and highest draft cost c of the early-exit draft in Episode 7's recorded runs."""
    cs = [run.draft_cost for (_, draft), run in recorded_runs().items() if draft == "early-exit"]
    return min(cs), max(cs)


#: Part 2's step 3: the fixed policy's k.
TRY_FIXED_K = 1


@functools.cache
def try_c() -> float:
    """Step 4's draft cost: the middle of the early-exit draft's recorded costs, to the slider's
    step of 0.01 (so it reads as one of them), inside the slider's bounds."""
    lo, hi = early_exit_costs()
    c_lo, c_hi = FinePrint.param.c.bounds
    return min(max(round((lo + hi) / 2, 2), c_lo), c_hi)


@functools.cache
def try_steps() -> tuple[TryStep, ...]:
    label = token_label(measured.context(_CTX).labels[_FAV - 1])
    c = try_c()
    be = theory.break_even_q(1, c)
    lo, hi = early_exit_costs()
    kind, top = best_race_q(RACE_TEXTS)
    # Steps 2 and 3 speak of part 2 at its starting fixed k and draft cost, so step 2 sets them.
    start = {n: FinePrint.param[n].default for n in ("fixed_k", "c")}
    return (
        TryStep(f"In part 1, push <em>Bias to the favourite</em> to {BIAS_MAX:g} and <em>Samples "
                f"N</em> to {max(SAMPLE_SIZES):,}: the draft now proposes “{esc(label)}” "
                f"{try_share():.0%} of the time, yet the green bars still sit on the black marks "
                "of the big model.", {"bias": BIAS_MAX, "n_samples": max(SAMPLE_SIZES)}),
        TryStep(f"In part 2, compare the lines: the fixed k of {start['fixed_k']} saves only a few "
                "passes, while the policies that adapt k save many more. The paragraph under the "
                "charts says why.", start),
        TryStep(f"Set <em>k of the fixed policy</em> to {TRY_FIXED_K}: now the fixed policy keeps "
                "up with the best adaptive one, because on texts this hard for the n-gram table the "
                "best k is 1 or 2.",
                {"fixed_k": TRY_FIXED_K}),
        TryStep(f"Last, raise <em>Draft cost c</em> to {c:.2f}, what one step of an early-exit "
                "draft (the big model's own first layers, read out early) cost in the real runs "
                f"Episode 7 records ({lo:.2f} to {hi:.2f}): every "
                "policy now finishes behind plain "
                "decoding, and the off switch least far behind, since at this cost even k = 1 "
                f"needs q above {be:.2f}, and on no text here is the n-gram table kept that often "
                f"(at best {top:.2f} on average, on {esc(in_prose(kind))}).", {"c": c}),
    )


@functools.cache
def try_this() -> str:
    return steps_html([s.html for s in try_steps()])


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
    why = (f". At this cost even k = 1 needs q above {be:.2f}, more than the n-gram table is kept "
           "at on any of the texts, so the fewer drafts the better." if hard else ".")
    return [r.label for r in s.runs].index(fastest.label), (
        f"At c = {s.c:.2f} (seed {s.race_seed}) “{esc(fastest.label)}” took "
        f"{fastest.total_cost:,.1f} passes for {n} tokens ({fastest.speedup:.2f}×); the others "
        + ", ".join(f"{r.total_cost:,.1f}" for r in s.runs if r is not fastest) + why)


EXERCISES = (
    Exercise(f"Part 1: bias the draft to its favourite token at {BIAS_MAX:g}, so it proposes it "
             f"most of the time, and draw {max(SAMPLE_SIZES):,} tokens. Whose distribution does "
             "the output follow?",
             ("the draft's", "the big model's", "somewhere between the two"),
             {"bias": BIAS_MAX, "n_samples": max(SAMPLE_SIZES)}, _answer_biased),
    Exercise("Part 2: make every draft step cost c = 0.30 of a big-model pass. Which policy "
             "finishes the race first?",
             tuple(p.label for p in adaptive.default_policies(4, match=True)),
             {"c": 0.30, "fixed_k": 4}, _answer_dear_race),
)


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    ("When tokens are sampled, keeping the draft's proposals must tilt the output towards the "
     "draft."),
    ("The output's frequencies sit on the big model's, checked by a chi-square test, however "
     "far the draft is bent."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    "Why does the rule need the draft's own probabilities, not only the token it proposed?",
    ("When the text switches from code to a poem, what should happen to the draft length, and "
     "how quickly can a policy tell?"),
    ("Which draft does each part of the page play, and why would their acceptance rates "
     "differ?"),
)

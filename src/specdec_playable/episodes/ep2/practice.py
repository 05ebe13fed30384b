"""Episode 2's "Try this" and exercises: the relay at a poor draft and a long k, a perfect draft and
a hopeless one."""

from __future__ import annotations

from ...kit.episode import Exercise, TryStep
from ...sim import theory
from .state import BIG_PASS_MS, DRAFT_STEP_MS, TOKENS, Relay
from ...kit.page import steps_html
from ...kit.words import faster_or_slower, ms, plural, times


#: The weak setup "Try this" suggests, and what theory expects of it.
TRY_Q, TRY_K = 0.3, 8


TRY_THEORY = theory.expected_speedup(TRY_Q, TRY_K, DRAFT_STEP_MS / BIG_PASS_MS)


TRY_STEPS = (
    # The promise is the opening run's (its q, k and seed), so the step sets them.
    TryStep("Press <em>Play</em> and watch the clocks: the relay finishes well ahead of the big "
            "model alone.", {n: Relay.param[n].default for n in ("q", "k", "seed")}),
    TryStep(f"Then set <em>Draft quality q</em> to {TRY_Q:g} and <em>k</em> to {TRY_K} and play "
            "again: the red bad rounds pile up and the speedup usually falls below 1× (theory "
            f"expects {TRY_THEORY:.2f}×), yet the text is still the big model’s, word for word.",
            {"q": TRY_Q, "k": TRY_K}),
)


TRY_THIS = steps_html([s.html for s in TRY_STEPS])


def _answer_perfect(s: Relay):
    made = s.result.rounds["tokens"].tolist()
    top, last = max(made), made[-1]
    return ("1", str(s.k), str(s.k + 1)).index(str(top)), (
        f"In this run every round wrote {plural(top, 'token')}"
        + (f" (the last round only {last}, where the text ran out)" if last < top else "")
        + f": all {s.k} drafts accepted, plus the bonus token the same pass adds. "
        f"{plural(s.result.n_rounds, 'round')} for {len(TOKENS)} tokens: {times(s.result.speedup)}.")


def _answer_hopeless(s: Relay):
    r = s.result
    word = faster_or_slower(r.speedup)
    full = int((r.rounds["drafted"] == s.k).sum())
    return ("faster", "as fast", "slower").index(word), (
        f"This run took {ms(r.wall_ms)} for {len(TOKENS)} tokens; the big model alone takes "
        f"{ms(r.baseline_ms)}: {times(r.speedup)}. {full} of its {plural(r.n_rounds, 'round')} "
        f"paid {s.k} draft steps and one pass, {ms(s.k * DRAFT_STEP_MS + BIG_PASS_MS)}, for the "
        "single token the big model wrote itself"
        + (" (the last drafted fewer, where the text ran out)." if full < r.n_rounds else "."))


EXERCISES = (
    Exercise("With a perfect draft (q = 1) and k = 4, how many tokens does each round write?",
             ("1", "4", "5"), {"q": 1.0, "k": 4}, _answer_perfect),
    Exercise("With a draft that is always wrong (q = 0) and k = 4, is the relay faster or slower "
             "than the big model alone?", ("faster", "as fast", "slower"), {"q": 0.0, "k": 4},
             _answer_hopeless),
)


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    ("Speculative decoding trades quality for speed: some of the small model's words end up in"
     " the text."),
    ("The relay's text is the big model's, token for token, in every run, whatever q and k "
     "are; only the clock changes."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    ("Why must the big model's own token at the first miss be kept, and why does that make "
     "every round write at least one token?"),
    ("If the draft were a much bigger and better model, would the relay get faster or slower? "
     "What would change in the lanes?"),
    "What does a bad round cost, and who pays for it?",
)

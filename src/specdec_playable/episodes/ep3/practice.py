"""Episode 3's "Try this" and exercises: push k, drag q below the cliff, find the best k; and what a
dear draft does."""

from __future__ import annotations

import numpy as np

from ...kit.episode import Exercise, TryStep
from ...sim import theory
from ...sim.montecarlo import expected_half_width
from .state import K_SLIDER_MAX, N_ROUNDS, QualityDial
from ...kit.page import steps_html
from ...kit.words import faster_or_slower, times


_Q0, _C0 = QualityDial.param.q.default, QualityDial.param.c.default


#: The best draft length at the starting q and c, where "Try this" begins.
TRY_BEST_K = theory.best_k(_Q0, _C0, k_max=K_SLIDER_MAX)


#: Where the cliff is once step 1 has left k at its largest: the break-even q at k = K_SLIDER_MAX.
TRY_CLIFF_Q = theory.break_even_q(K_SLIDER_MAX, _C0)


#: Step 2 leaves q this far below that cliff (rounded to the slider's step).
TRY_BELOW_Q = round(TRY_CLIFF_Q - 0.05, 2)


#: Step 3: back at the best k, the cliff sits here.
TRY_CLIFF_BEST_Q = theory.break_even_q(TRY_BEST_K, _C0)


#: How far the measured speedup moves from move to move at the best k (the 95% interval's mean
#: half-width), and the draft lengths theory puts within that of the best.
TRY_NOISE = expected_half_width(_Q0, TRY_BEST_K, _C0, N_ROUNDS)
_BY_K = theory.expected_speedup(_Q0, np.arange(1, K_SLIDER_MAX + 1), _C0)
TRY_NEAR = tuple(int(k) for k in np.flatnonzero(_BY_K >= _BY_K.max() - TRY_NOISE) + 1)


def _near_words() -> str:
    speeds = [times(_BY_K[k - 1]) for k in TRY_NEAR]
    ks = ", ".join(str(k) for k in TRY_NEAR[:-1]) + f" and {TRY_NEAR[-1]}"
    return (f"The star is the theory’s best k. The measured number carries the luck of its "
            f"{N_ROUNDS:,} fresh rounds: near the peak its 95% interval spans about "
            f"±{TRY_NOISE:.2f}×, more than the theory’s gaps between k = {ks} ("
            + ", ".join(speeds[:-1]) + f" and {speeds[-1]}), so the highest measured speedup moves "
            "among them, and now and then one further, from move to move.")


TRY_STEPS = (
    TryStep(f"At the starting q = {_Q0:.2f} and c = {_C0:.2f}, push <em>Draft length k</em> from 1 "
            f"up to {K_SLIDER_MAX} and watch the speedup rise, peak near the starred k = {TRY_BEST_K} "
            f"and sink again. {_near_words()}", {"q": _Q0, "c": _C0, "k": K_SLIDER_MAX}),
    TryStep(f"Still at k = {K_SLIDER_MAX}, drag <em>Draft quality q</em> down to about {TRY_BELOW_Q:.2f}: "
            f"below q = {TRY_CLIFF_Q:.2f} speculating turns slower than not speculating.",
            {"q": TRY_BELOW_Q}),
    TryStep(f"Now set k back to {TRY_BEST_K}: at the same q the page is faster than the big model "
            f"again, because with fewer guesses per round the cliff sits much lower, at q = "
            f"{TRY_CLIFF_BEST_Q:.2f}.", {"k": TRY_BEST_K}),
)


TRY_THIS = steps_html([s.html for s in TRY_STEPS])


#: Question 1's choices of k.
_BEST_CHOICES = (1, 2, 4, 8)


def _answer_best(s: QualityDial):
    by_k = s.speedup_by_k
    return _BEST_CHOICES.index(s.best_k), (
        f"At q = {s.q:.2f} and c = {s.c:.2f} theory’s fastest k is {s.best_k} "
        f"({times(s.best_speedup)}); k = 1 gives {times(by_k[0])} and k = 8 {times(by_k[7])}. "
        f"The page’s {N_ROUNDS:,} simulated rounds at k = {s.k} measured {times(s.result.speedup)}.")


def _answer_dear(s: QualityDial):
    r = s.result
    word = faster_or_slower(s.theory_speedup)
    return ("faster", "as fast", "slower").index(word), (
        f"Theory says {times(s.theory_speedup)}: a round yields {s.theory_tokens_per_round:.2f} "
        f"tokens on average but costs 1 + {s.k} × {s.c:.2f} = {s.cost_per_round:.2f} passes. "
        f"The {N_ROUNDS:,} rounds just simulated measured {times(r.speedup)} (95% interval "
        f"{r.ci_low:.2f} to {r.ci_high:.2f}).")


EXERCISES = (
    Exercise("At q = 0.50 and c = 0.10, which draft length k is fastest?",
             tuple(f"k = {k}" for k in _BEST_CHOICES), {"q": 0.5, "c": 0.1, "k": 2}, _answer_best),
    Exercise("A draft that is right half the time (q = 0.50) but costs c = 0.30 of a pass per step, "
             "at k = 4: faster or slower than the big model alone?",
             ("faster", "as fast", "slower"), {"q": 0.5, "k": 4, "c": 0.3}, _answer_dear),
)


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    "A longer draft is always better, or any draft at all helps.",
    ("The speedup peaks at one draft length and falls again, and a long, costly draft of a "
     "weak model is slower than the big model alone."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    ("Why does the speedup rise and then fall as k grows? Which part of the formula wins at "
     "each end?"),
    ("A team can make its draft guess better or make each guess cheaper. How would you use the"
     " page to decide which is worth more?"),
    ("Why does the measured speedup move a little every time you press the button, while the "
     "theory stays put?"),
)

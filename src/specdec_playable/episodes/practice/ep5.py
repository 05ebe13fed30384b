"""Episode 5's "Try this" and exercises: simulate, make the draft dearer, and read the break-even points off the map."""

from __future__ import annotations

from .. import Exercise, TryStep
from ...state.ep5 import BreakEvenMap, break_even_table
from ...views.kit.page import steps_html


#: Step 2 of "Try this" leaves the draft cost here.
TRY_C = 0.5


TRY_STEPS = (
    TryStep("Press <em>Simulate</em> a dozen times and see the measured dots scatter around the "
            "blue curve, most of their whiskers across it. From the second press the open square "
            "pools every run at your setting into one measurement, its whisker narrowing with "
            "each press."),
    TryStep(f"Then drag <em>Draft cost c</em> to the right, to {TRY_C:g} say, and watch every "
            "break-even diamond slide towards q = 1: the dearer a draft step, the better the draft "
            "must be to pay.", {"c": TRY_C}),
)


TRY_THIS = steps_html([s.html for s in TRY_STEPS])


#: Question 1's choices of q, and question 2's draft costs.
_BE_CHOICES = (0.15, 0.40, 0.70)


_C1, _C2 = 0.15, 0.30


def _answer_break_even(s: BreakEvenMap):
    q = s.break_even(s.k)
    right = min(range(len(_BE_CHOICES)), key=lambda i: abs(_BE_CHOICES[i] - q))
    return right, (f"With k = {s.k} and c = {s.c:.2f} the curve crosses 1× at q = {q:.2f} "
                   f"(theory): below that, speculating is slower than not speculating.")


def _answer_dearer(s: BreakEvenMap):
    before = float(break_even_table(_C1)[s.k - 1])
    now = s.break_even(s.k)
    right = 0 if now < before - 0.005 else (1 if abs(now - before) <= 0.005 else 2)
    return right, (f"At c = {s.c:.2f}, k = {s.k} breaks even at q = {now:.2f}, against {before:.2f} "
                   f"at c = {_C1:.2f}: every draft step costs more, so more drafts must be right "
                   "to pay for them.")


EXERCISES = (
    Exercise(f"With k = 4 and c = {_C1:.2f}, above roughly which acceptance rate q does speculation "
             "start to pay?", tuple(f"about {q:.2f}" for q in _BE_CHOICES), {"k": 4, "c": _C1},
             _answer_break_even),
    Exercise(f"Double the draft cost to c = {_C2:.2f}. Where does k = 4 break even now?",
             ("at a lower q", "at the same q", "at a higher q"), {"k": 4, "c": _C2}, _answer_dearer),
)

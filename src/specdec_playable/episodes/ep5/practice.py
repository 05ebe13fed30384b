"""Episode 5's "Try this" and exercises: simulate, make the draft dearer, and read the break-even
points off the map."""

from __future__ import annotations

from ...kit.episode import Exercise, TryStep
from .state import BreakEvenMap, break_even_table
from ...kit.page import steps_html


#: Step 2 of "Try this" leaves the draft cost here.
TRY_C = 0.5


TRY_STEPS = (
    TryStep("Press <em>Simulate</em> a dozen times and see the measured dots scatter around the "
            "blue curve, most of their whiskers across it. From the second press the open square "
            "pools every run at your setting into one measurement, its whisker narrowing with "
            "each press.", {"c": BreakEvenMap.param.c.default}),  # so the next step's drag is rightward
    TryStep(f"Then drag <em>Draft cost c</em> to the right, to {TRY_C:g} say, and watch every "
            "break-even diamond slide towards q = 1: the dearer a draft step, the better the draft "
            "must be to pay.", {"c": TRY_C}),
)


TRY_THIS = steps_html([s.html for s in TRY_STEPS])


#: Where the page opens (the map then shows every break-even point), and the draft costs the
#: two questions ask about, neither shown before its question: double that, and a third of it.
_C0 = BreakEvenMap.param.c.default
_DEAR_C, _CHEAP_C = 0.30, 0.05
#: Each question's choices of q: its break-even is close to one and far from the others.
_DEAR_CHOICES, _CHEAP_CHOICES = (0.40, 0.55, 0.70), (0.05, 0.20, 0.45)


def _break_even_at(choices: tuple[float, ...]):
    """The answer to "above which q does it pay?": the choice nearest the theory's break-even."""

    def answer(s: BreakEvenMap):
        q = s.break_even(s.k)
        opened = float(break_even_table(_C0)[s.k - 1])
        right = min(range(len(choices)), key=lambda i: abs(choices[i] - q))
        return right, (f"With k = {s.k} and c = {s.c:.2f} the curve crosses 1× at q = {q:.2f} "
                       f"(theory), against {opened:.2f} at c = {_C0:.2f}, where the page opens: "
                       "below that, speculating is slower than not speculating.")

    return answer


_ASKED = "above roughly which acceptance rate q does speculation with k = 4 start to pay?"


EXERCISES = (
    Exercise(f"The page opens at a draft cost of c = {_C0:.2f}. Double it to c = {_DEAR_C:.2f}: "
             + _ASKED, tuple(f"about {q:.2f}" for q in _DEAR_CHOICES),
             {"k": 4, "c": _DEAR_C}, _break_even_at(_DEAR_CHOICES)),
    Exercise(f"Now a much cheaper draft, c = {_CHEAP_C:.2f}: " + _ASKED,
             tuple(f"about {q:.2f}" for q in _CHEAP_CHOICES), {"k": 4, "c": _CHEAP_C},
             _break_even_at(_CHEAP_CHOICES)),
)


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    "At worst speculation costs nothing: it is never slower than plain decoding.",
    ("Every curve drops below the dashed 1× line once the draft is weak enough, and a dearer "
     "draft step moves that point towards q = 1."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    ("A benchmark reports a large speedup. What would you ask about its text, its draft length"
     " and its draft cost before believing it holds for your users?"),
    ("How could a server notice, while it writes, that it has slipped below the dashed line, "
     "and what should it do then?"),
    ("Why do some measured dots miss their curve, and how many misses would make you doubt the"
     " theory?"),
)

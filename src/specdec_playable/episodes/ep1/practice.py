"""Episode 1's "Try this" and exercises: how long checking and writing take."""

from __future__ import annotations

from ...kit.episode import Exercise, TryStep
from .state import SENTENCE, WritingVsChecking
from ...kit.page import steps_html
from ...kit.words import ms, plural


_N_MAX = len(SENTENCE)
#: Where the page opens (step 1 plays it).
_N_OPEN = WritingVsChecking.param.n_tokens.default


TRY_STEPS = (
    TryStep("Press <em>Play</em> and watch the two clocks: writing needs one pass per token, "
            "checking the same tokens one pass for all of them."),
    TryStep(f"Then guess before you look: with {_N_MAX} tokens instead of {_N_OPEN}, how long does "
            "checking take? Press your guess in Question 1 at the end of the page: the page moves "
            f"<em>Tokens (N)</em> to {_N_MAX} for you, so compare the two clocks there.", {"n_tokens": _N_MAX}),
)


TRY_THIS = steps_html([s.html for s in TRY_STEPS])


def _answer_check_16(s: WritingVsChecking):
    comp = s.comparison
    passes = comp.parallel_ms / s.big_pass_ms
    right = 0 if passes == 1 else (1 if passes == comp.n_tokens / 2 else 2)
    return right, (f"Checking {plural(comp.n_tokens, 'token')} takes {ms(comp.parallel_ms)}: "
                   f"{plural(round(passes), 'pass')}, as for 2 tokens. Writing them takes "
                   f"{ms(comp.sequential_ms)}, {comp.ratio:.0f}× as long.")


_WRITE_N, _WRITE_MS = 10, 600


#: The choices of question 2: 1, 2 and 10 passes.
_WRITE_CHOICES = tuple(ms(n * _WRITE_MS) for n in (1, 2, _WRITE_N))


def _answer_write_10(s: WritingVsChecking):
    comp = s.comparison
    return _WRITE_CHOICES.index(ms(comp.sequential_ms)), (
        f"Writing {plural(comp.n_tokens, 'token')} takes {plural(comp.n_tokens, 'pass')} one "
        f"after another: {comp.n_tokens} × {ms(s.big_pass_ms)} = {ms(comp.sequential_ms)}.")


EXERCISES = (
    Exercise(f"Checking 2 tokens takes one pass. How long does checking {_N_MAX} tokens take?",
             ("The same: one pass", f"{_N_MAX // 2}× as long", f"{_N_MAX}× as long"),
             {"n_tokens": _N_MAX}, _answer_check_16),
    Exercise(f"One pass takes {_WRITE_MS:,} ms. How long does the big model take to write "
             f"{_WRITE_N} tokens?", _WRITE_CHOICES, {"n_tokens": _WRITE_N, "big_pass_ms": _WRITE_MS},
             _answer_write_10),
)


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    ("Checking a token costs as much as writing it, so checking someone else's guesses could "
     "save nothing."),
    ("Checking any number of given tokens takes the one pass that writing a single token "
     "takes, on the same clock."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    ("Where else is checking an answer far cheaper than producing it (a proof, a sudoku, a "
     "code review)? What makes it cheaper for a language model?"),
    ("Why can a transformer score every position of a finished text at once, but not write "
     "them at once?"),
    ("What would have to be true of the hardware for checking many tokens to cost about one "
     "pass? Look at the H200 measurement at the bottom of the page."),
)

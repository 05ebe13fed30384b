"""Episode 4's "Try this" and exercises: two texts side by side, and which one the draft (and the
big model itself) finds easier. Written from the measured texts when first asked for."""

from __future__ import annotations

import functools

from ...kit.episode import Exercise, TryStep
from ...data import measured
from ...sim import theory
from .state import BoilerplateVsPoetry
from ...kit.page import esc, steps_html
from ...kit.words import in_sentence

#: The texts the page starts with.
LEFT, RIGHT = (BoilerplateVsPoetry.param[n].default for n in ("left", "right"))


#: The text step 2 of "Try this" switches the left side to.
TRY_SWITCH = "js-loop"


def theory_speedup(text_id: str) -> float:
    """The theory's speedup at the page's starting k and c, at the text's mean measured acceptance."""
    q = measured.genre_means()[text_id]["alpha"]
    k, c = (BoilerplateVsPoetry.param[n].default for n in ("k", "c"))
    return float(theory.expected_speedup(q, k, c))


@functools.cache
def try_steps() -> tuple[TryStep, ...]:
    means = measured.genre_means()
    py, js, poem = (means[t]["alpha"] for t in (LEFT, TRY_SWITCH, RIGHT))
    return (
        TryStep("With the starting pair of texts (Python on the left, a poem on the right) and "
                "settings, press <em>Run again</em> a few times and watch the two pairs of bars. "
                f"At their measured mean acceptance ({py:.0%} and {poem:.0%}) the theory expects "
                f"{theory_speedup(LEFT):.2f}× the big model alone on the Python and "
                f"{theory_speedup(RIGHT):.2f}× on the poem; each run draws its own luck around "
                "that.", {n: BoilerplateVsPoetry.param[n].default for n in ("left", "right", "k", "c")}),
        TryStep(f"Then switch the left text to JavaScript: the draft is kept on average at {js:.0%} "
                f"of its tokens instead of {py:.0%} (the theory: {theory_speedup(TRY_SWITCH):.2f}×).",
                {"left": TRY_SWITCH}),
        TryStep("Last, paste some text of your own at the bottom and see where it lands."),
    )


@functools.cache
def try_this() -> str:
    return steps_html([s.html for s in try_steps()])


def _compare_sides(s: BoilerplateVsPoetry, column: str):
    """The two texts on screen by one measured mean: ``(right choice, left value, right value,
    left title, right title)``; choices are left, right, about the same (within 0.02)."""
    means = measured.genre_means()
    a, b = means[s.left][column], means[s.right][column]
    right = 2 if abs(a - b) < 0.02 else (0 if a > b else 1)
    return (right, a, b, esc(in_sentence(measured.measured_text(s.left).title)),
            esc(in_sentence(measured.measured_text(s.right).title)))


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


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    "Draft quality is a fixed number that belongs to the draft model.",
    ("The same draft head is kept far more often on some of the measured texts than on others, "
     "and the measurement, not the name of the genre, says where it does well."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    ("Which kinds of text that you write every day would a draft guess well, and which poorly?"
     " Paste one of each and see."),
    ("Why can a draft be kept often on text the big model finds hard, or rarely on text the "
     "big model finds easy? What do the table's columns measure?"),
    ("Does the episode's title hold for these texts? What would you need to measure to be "
     "sure?"),
)

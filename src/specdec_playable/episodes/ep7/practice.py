"""Episode 7's "Try this" and exercises: a copy task and fresh writing with prompt lookup, then
the draft head, and what the recorded races say. Written from the recorded runs when first asked
for (``data.recorded``)."""

from __future__ import annotations

import functools
import math

from ...lm.race import SPEC

from ...kit.episode import Exercise, TryStep
from ...data.recorded import recorded_meta, recorded_runs, recorded_weights
from ...kit.words import share
from ...lm.race import FASTER, SLOWER, TOO_FEW
from .state import RealText
from .words import speeds_words
from ...kit.page import steps_html


def _first_steps() -> tuple[TryStep, ...]:
    """The first three steps; the third states the two drafts' recorded acceptance on the sum
    function (greedy acceptance does not depend on the clock, so a live run at the recording's
    k and token budget, the page's defaults, accepts the same share)."""
    runs = recorded_runs()
    head, lookup = runs.get(("sum-function", "head")), runs.get(("sum-function", "lookup"))
    shares = ("" if head is None or lookup is None else
              f" in the recorded runs (k = {recorded_meta()['k']}) the head had "
              f"{share(head.spec.acceptance_rate)} of its guesses accepted on this task and prompt "
              f"lookup {share(lookup.spec.acceptance_rate)};")
    return (
        TryStep("Press <em>Run</em>, then <em>Play</em>: the model repeats a sentence with prompt "
                "lookup as its draft; watch the underlined guesses pile up.",
                {"task": "repeat", "draft": "lookup"}),
        TryStep("Then pick the sky task, set the draft back to prompt lookup, run it, and compare "
                "how many guesses the model accepts and what that does to the speedup.",
                {"task": "sky", "draft": "lookup"}),
        TryStep("Next, pick the Python sum function (fresh writing starts with the draft head, which "
                "imitates the model instead of copying). Run it, then run again with prompt lookup:"
                f"{shares} the two speedups say whether the accepted guesses pay for what checking "
                "them costs.",
                {"task": "sum-function"}),
    )


def head_levels() -> tuple[float, ...]:
    """In the recorded run of the draft head on the sum function: the share of its 1st, 2nd, ...
    guesses kept, of the times each was checked (``accept_at``; NaN where never checked)."""
    run = recorded_runs().get(("sum-function", "head"))
    return tuple(float(a) for a in run.spec.accept_at) if run is not None else ()


def later_guesses_hold(a: tuple[float, ...]) -> bool:
    """Whether the head's 2nd, 3rd and 4th guesses are each kept at least half the times they
    are checked and no more than 0.1 below its first (what step 4 then says)."""
    return (len(a) >= 4 and all(math.isfinite(x) for x in a[:4])
            and all(x >= 0.5 and x >= a[0] - 0.1 for x in a[1:4]))


def head_long_rounds(k_short: int = 2) -> tuple[int, int]:
    """In the recorded run of the draft head on the sum function: how many of its rounds wrote
    more tokens than a round at ``k_short`` can (``k_short + 1``), and how many rounds it had
    ((0, 0) without the run's turns)."""
    run = recorded_runs().get(("sum-function", "head"))
    if run is None or run.turns is None:
        return 0, 0
    t = run.turns
    mine = (t.run == SPEC) & (t.round > 0)
    return int((t.tokens[mine] > k_short + 1).sum()), int(mine.sum())


def later_guesses_fade(a: tuple[float, ...]) -> bool:
    """Whether the head's third guess is kept less often than its second, and less than half the
    times it is checked."""
    return len(a) >= 3 and all(math.isfinite(x) for x in a[:3]) and a[2] < min(a[1], 0.5)


@functools.cache
def try_steps() -> tuple[TryStep, ...]:
    """The steps; the last is written from the head's recorded run: its later guesses hold up
    (compare k = 2 with k = 4) or fade past the second (compare k = 2 with the k the run used),
    and it is left out if neither holds. It promises no winner: whether the longer rounds pay
    depends on this machine's verify passes, and the race at each k says."""
    a = head_levels()
    first = _first_steps()
    if later_guesses_hold(a):
        kept = ", ".join(f"{x:.0%}" for x in a[:-1]) + f" and {a[-1]:.0%}"
        short = 2
        long, rounds = head_long_rounds(short)
        more = (f"; {long} of its {rounds} rounds wrote more than the {short + 1} tokens a round at "
                f"k = {short} can" if long else "")
        return first + (TryStep(
            f"Last, keep the draft head and run at k = 2, then at k = {len(a)}. In the recorded run "
            f"(k = {len(a)}) its guesses were kept {kept} of the times each was checked: the later "
            f"ones hold up{more}. But each guess adds a position to every verify pass, so only the "
            "race at each k says which pays on this machine.",
            {"draft": "head", "k": short}),)
    if later_guesses_fade(a):
        return first + (TryStep(
            f"Last, switch back to the draft head, set k to 2 and run again. In the run recorded "
            f"here the head's first guess in a round was kept {a[0]:.0%} of the times it was "
            f"checked, its second {a[1]:.0%} and its third only {a[2]:.0%}: a third guess is "
            "rejected more often than kept, yet it adds a position to every verify pass. Compare "
            "the two speedups: only the race at each k says which pays on this machine.",
            {"draft": "head", "k": 2}),)
    return first


def try_this() -> str:
    return steps_html([s.html for s in try_steps()])


def _answer_copy_or_fresh(s: RealText):
    """Prompt lookup's recorded acceptance on the copy task against the fresh one."""
    runs = recorded_runs()
    copy, fresh = runs[("repeat", s.draft)].spec, runs[("sky", s.draft)].spec
    a, b = copy.acceptance_rate, fresh.acceptance_rate
    right = 2 if abs(a - b) < 0.05 else (0 if a > b else 1)
    return right, (f"In the recorded runs {share(a)} of prompt lookup's guesses were accepted when "
                   f"the model repeated a sentence, and {share(b)} when it explained the sky: a copy "
                   "task's reply repeats the prompt's words, which is exactly what prompt lookup "
                   "guesses, while fresh writing rarely repeats them.")


def _answer_early_exit(s: RealText):
    """The early exit's fair verdict on the copy task, from the recorded race."""
    c = recorded_runs()[(s.task, s.draft)]
    f = c.fair
    right = {FASTER: 0, SLOWER: 1}.get(f.verdict, 2)
    how = (f"{f.speedup:.2f}× as fast ({speeds_words(f, recorded_weights())}), {f.level:.0%} "
           f"interval {f.low:.2f}× to {f.high:.2f}×: {f.verdict}" if f.verdict != TOO_FEW
           else "too few rounds to tell")
    return right, (f"Recorded race: {how}, with {share(c.spec.acceptance_rate)} of its guesses "
                   "accepted. Each guess runs a fifth of the model, so it costs real time, and "
                   "without training the guesses are rarely the model's own choice.")


EXERCISES = (
    Exercise("With prompt lookup as the draft, on which task will more of its guesses be accepted?",
             ("repeating a sentence", "explaining why the sky is blue", "about the same"),
             {"task": "repeat", "draft": "lookup"}, _answer_copy_or_fresh),
    Exercise("The early exit drafts with the model's own first 6 of its 30 blocks. On the copy "
             "task, does it make decoding faster or slower?",
             ("faster", "slower", "no measurable difference"),
             {"task": "repeat", "draft": "early-exit"}, _answer_early_exit),
)


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    "A draft that guesses right some of the time makes decoding faster.",
    ("On a CPU a verify pass over many positions costs more than one decoding step (Episode 7 "
     "measures how much on its server), so a draft must have enough of its guesses accepted to "
     "pay for the longer pass: in the recorded races most drafts do not, and prompt lookup on a "
     "copy task does."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    ("The copy tasks reward prompt lookup. Which real uses look like copy tasks (editing a "
     "document, answering with quotes, refactoring code)?"),
    ("Why does the hardware decide what a verify pass costs, and how does that change which "
     "draft pays?"),
    ("The memory draft has never seen your prompt, yet it often guesses the reply. Why does a "
     "memory of the model's past replies predict a new one, and where should it fail?"),
)

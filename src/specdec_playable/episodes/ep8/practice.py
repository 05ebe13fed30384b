"""Episode 8's "Try this" and exercises: a busy GPU, and a tree against a chain at the same verified
positions."""

from __future__ import annotations

from ...kit.episode import Exercise, TryStep
from ...sim import trees
from .state import BATCH_MAX, N_ROUNDS, BusyAndTrees
from ...kit.page import steps_html
from ...kit.words import faster_or_slower, times


#: Part 2's step: a low acceptance rate, a tree of TRY_W x TRY_D and a chain of as many positions.
TRY_TREE_Q, TRY_W, TRY_D = 0.3, 2, 4


TRY_TREE = trees.expected_tokens(trees.spine_tree(TRY_W, TRY_D), TRY_TREE_Q)


TRY_CHAIN = trees.expected_tokens(trees.chain(TRY_W * TRY_D), TRY_TREE_Q)


#: Part 1's step holds at the page's starting q, k and c (at q = 0.8 and k = 2, say, the speedup
#: at the largest batch stays above 1), so the step sets them.
TRY_START = {n: BusyAndTrees.param[n].default for n in ("q", "k", "c")}


TRY_STEPS = (
    TryStep(f"At the starting q = {TRY_START['q']:.2f}, k = {TRY_START['k']} and c = "
            f"{TRY_START['c']:.2f}, drag <em>Batch size B</em> from 1 to {BATCH_MAX:,}: the blue curve stays put (it is "
            "your k's speedup at every batch size), and the ring on it, your batch, slides down the "
            "curve and through the 1× line, as the speedup beside the sliders drops below 1×.",
            {**TRY_START, "batch": BATCH_MAX}),
    TryStep(f"Then, in part 2, set <em>q</em> to {TRY_TREE_Q:g}, <em>w</em> to {TRY_W} and "
            f"<em>d</em> to {TRY_D}: at the same {TRY_W * TRY_D} verified positions the tree of "
            f"{TRY_W} × {TRY_D} decides {TRY_TREE:.2f} tokens per pass in theory, the chain of "
            f"{TRY_W * TRY_D} only {TRY_CHAIN:.2f}.",
            {"tree_q": TRY_TREE_Q, "width": TRY_W, "depth": TRY_D}),
)


TRY_THIS = steps_html([s.html for s in TRY_STEPS])


def _answer_busy(s: BusyAndTrees):
    here = s.here
    word = faster_or_slower(float(here.speedup))
    return ("faster", "as fast", "slower").index(word), (
        f"At B = {s.batch:,}, q = {s.q:.2f}, k = {s.k} and c = {s.c:.2f} the measured pass times "
        f"give {times(float(here.speedup))}: a verify pass over {s.batch:,} × {s.k + 1} positions "
        f"takes {float(here.verify_ms):.1f} ms against {float(here.plain_step_ms):.1f} ms for a "
        f"plain step, and it yields {float(here.tokens_per_round):.2f} tokens per user.")


def _answer_tree(s: BusyAndTrees):
    tree, chain = s.tree_theory, s.chain_theory
    right = 0 if tree > chain + 0.005 else (1 if chain > tree + 0.005 else 2)
    return right, (
        f"At q = {s.tree_q:.2f} the tree of {s.width} × {s.depth} decides {tree:.2f} tokens per "
        f"pass in theory, the chain of {s.positions} {chain:.2f}; {N_ROUNDS:,} simulated rounds "
        f"each gave {s.tree_sim.tokens_per_round:.2f} and {s.chain_sim.tokens_per_round:.2f}."
        + (" When guesses are this good, depth pays more than hedging." if right == 1 else ""))


EXERCISES = (
    Exercise(f"A server decodes B = {BATCH_MAX} users at once, with q = 0.80, k = 4 and c = 0.05. "
             "Is speculation faster or slower than plain decoding?",
             ("faster", "as fast", "slower"), {"batch": BATCH_MAX, "q": 0.8, "k": 4, "c": 0.05},
             _answer_busy),
    Exercise("Part 2: with good guesses, q = 0.90 for each candidate, which decides more tokens "
             "per verify pass at 8 positions: a tree of 2 × 4 or a chain of 8?",
             ("the tree", "the chain", "the same"), {"tree_q": 0.9, "width": 2, "depth": 4},
             _answer_tree),
)


#: The belief this episode sets out to correct, and what the page shows instead (for the
#: teacher's guide).
MISCONCEPTION = (
    "What speeds up one user speeds up a busy server just as much.",
    ("Once a server decodes many users at once, the verify pass's extra positions cost real "
     "time, and past some batch size speculating is slower."),
)
#: Questions for a class to discuss after the episode (for the teacher's guide).
DISCUSS = (
    ("A provider serves many users on one GPU. When should it switch speculation off, and what"
     " would it measure to decide?"),
    ("Why can a tree of guesses decide more tokens than a chain checking the same positions, "
     "and when is the chain better?"),
)

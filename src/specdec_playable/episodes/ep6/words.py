"""Episode 6's sentences about its two drafts, each computed from the measurements it states.

Part 1 plays the draft head; part 2 races its policies over the texts as the n-gram table sees
them. :func:`race_draft_story` says so, with both drafts' measured acceptance on each text and
what the same race gives with the head, so the page never leaves the two under one word.
Plain text: escape it for HTML.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..data import measured
from ..sim import adaptive
from .ep4 import in_prose
from .words import times

#: The draft part 2 races with, and the one part 1 (and Episode 4) shows.
RACE_DRAFT, HEAD = "ngram", "head"


def mean_q(text: str, draft: str) -> float:
    """The mean measured acceptance of ``draft`` over the tokens of ``text``."""
    return float(measured.measured_text(text, draft).q.mean())


def race_with(texts: Sequence[str], repeats: int, fixed_k: int, c: float, seed: int, draft: str):
    """Part 2's race (its four policies, one draw from ``seed``) with ``draft``'s measured acceptance."""
    stream = measured.measured_stream(tuple(texts), repeats, draft=draft)
    return adaptive.race(stream, adaptive.default_policies(fixed_k), c, rng=seed)


def race_draft_story(texts: Sequence[str], repeats: int, fixed_k: int, c: float, seed: int) -> str:
    """Which draft part 2 plays, how it compares with part 1's on each text, and why the race
    uses it (what the same race gives with the head, at the page's starting settings)."""
    pairs = [(measured.measured_text(t, RACE_DRAFT).kind, mean_q(t, RACE_DRAFT), mean_q(t, HEAD))
             for t in texts]
    weaker = all(n < h for _, n, h in pairs)
    each = ", ".join(f"{n:.2f} against {h:.2f} on {in_prose(kind)}" for kind, n, h in pairs)
    text = ("Part 2 plays a different draft from part 1: Episode 7’s n-gram table (which token most "
            "often followed each run of one to three tokens in Python’s standard library), not the "
            "draft head. Its mean acceptance, against the head’s on the same tokens (the head’s are "
            f"Episode 4’s numbers): {each}.")
    if weaker:
        text += " It is the weaker draft on every text here."
    said, adapts = [], []
    for name, draft in (("the n-gram table", RACE_DRAFT), ("the head", HEAD)):
        runs = race_with(texts, repeats, fixed_k, c, seed, draft)
        fixed, best = runs[0], max(runs[1:], key=lambda r: r.speedup)
        adapts.append(best.speedup > fixed.speedup)
        said.append(f"with {name} the best adaptive policy beats a fixed k = {fixed_k} "
                    f"({times(best.speedup)} against {times(fixed.speedup)})" if adapts[-1] else
                    f"with {name} a fixed k = {fixed_k} is not beaten "
                    f"({times(fixed.speedup)} against at best {times(best.speedup)})")
    text += f" Raced at the page’s starting settings (c = {c:g}, seed {seed}), {said[0]}"
    if adapts[0] and not adapts[1]:
        text += (f", while {said[1]}: a weak draft on changing text is where choosing k pays, so "
                 "part 2 plays the n-gram table.")
    else:
        text += f", and {said[1]}."
    return text


def best_race_q(texts: Sequence[str]) -> tuple[str, float]:
    """The text on which part 2's draft is kept most, and its mean acceptance there."""
    best = max(texts, key=lambda t: mean_q(t, RACE_DRAFT))
    return measured.measured_text(best, RACE_DRAFT).kind, mean_q(best, RACE_DRAFT)

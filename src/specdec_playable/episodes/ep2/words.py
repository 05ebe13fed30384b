"""Episode 2's sentences beyond the page's own prose: its line on the summary, computed from the
numbers it states."""

from __future__ import annotations

from ...sim.validate import K_DEFAULT
from ...kit import words
from ...sim import theory
from .state import BIG_PASS_MS, DRAFT_STEP_MS
from ...sim.relay import RelayResult
from ...kit.words import plural

#: The setting the summary's link opens.
SUMMARY_LINK = {"k": K_DEFAULT, "q": 0.8}
#: The draft cost: one draft step over one pass.
C = DRAFT_STEP_MS / BIG_PASS_MS


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    q, k = SUMMARY_LINK["q"], SUMMARY_LINK["k"]
    e = theory.expected_tokens_per_round(q, k)
    return (f"A draft guesses k = {k} tokens and one big-model pass checks them all: at q = {q:.2f} "
            f"a round writes E = {e:.2f} tokens for the cost of 1 + {k} × {C:g} = "
            f"{1 + k * C:g} passes, {words.times(theory.expected_speedup(q, k, C))} by the "
            "theory, and the text is exactly the big model's.")


def lanes_words(res: RelayResult) -> str:
    """The lanes' text alternative: the run they play, in numbers (the rounds are listed under them)."""
    rounds = res.rounds
    bad = int((rounds["accepted"] == 0).sum())
    made = int(rounds["tokens"].sum())
    return (f"Two lanes on one wall clock: the draft model's steps above, the big model's verify "
            f"passes below. {plural(res.n_rounds, 'round')} write {plural(made, 'token')} in "
            f"{res.wall_ms:,.0f} ms; {plural(bad, 'bad round')}. Every round is listed with its marks "
            "under the lanes.")

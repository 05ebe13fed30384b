"""Episode 1's sentences beyond the page's own prose: its line on the summary, computed from the
numbers it states."""

from __future__ import annotations

from ...kit import words
from ...sim import clocks
from .state import WritingVsChecking
from ...sim.clocks import ClockComparison
from ...kit.words import ms, plural

#: The setting the summary's link opens.
SUMMARY_LINK = {"n_tokens": 16}


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    n = SUMMARY_LINK["n_tokens"]
    pass_ms = float(WritingVsChecking.param.big_pass_ms.default)
    comp = clocks.sequential_vs_parallel(n, pass_ms)
    return (f"Writing {words.plural(n, 'token')} takes "
            f"{words.plural(round(comp.sequential_ms / pass_ms), 'pass')}, "
            f"one after another; checking {n} given tokens takes "
            f"{words.plural(round(comp.parallel_ms / pass_ms), 'pass')}, since one pass reads "
            "every position at once.")


def lanes_words(comp: ClockComparison) -> str:
    """The lanes' text alternative: what the two lanes play out, in numbers."""
    n = comp.n_tokens
    return (f"Two lanes on one wall clock. Writing {plural(n, 'token')}: {plural(n, 'pass')} one "
            f"after another, {ms(comp.sequential_ms)}. Checking the same {plural(n, 'token')}: one "
            f"pass that scores every position at once, {ms(comp.parallel_ms)}. Writing takes "
            f"{comp.ratio:.1f} times as long.")

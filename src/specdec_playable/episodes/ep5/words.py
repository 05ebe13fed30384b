"""Episode 5's sentences beyond the page's own prose: its line on the summary, computed from the
numbers it states."""

from __future__ import annotations

from ...sim.validate import K_DEFAULT
from ...sim import theory
from ...sim.montecarlo import INTERVAL_LEVEL
from .state import BreakEvenMap
import numpy as np
from ...kit.words import plural, times

#: The setting the summary's link opens.
SUMMARY_LINK = {"k": K_DEFAULT, "c": 0.15}


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    c = SUMMARY_LINK["c"]
    be = {k: theory.break_even_q(k, c) for k in (1, 4, 8)}
    return (f"Below its break-even q speculating is slower: at c = {c:.2f} that is q = {be[1]:.2f} "
            f"for k = 1, {be[4]:.2f} for k = 4 and {be[8]:.2f} for k = 8, and a dearer draft moves "
            "every break-even towards q = 1.")


def map_words(s: BreakEvenMap) -> str:
    """The map's text alternative: the curves' break-even points, your point, the simulated ones."""
    be = [f"k = {k} at q = {s.break_even(k):.2f}" for k in s.curve_ks if np.isfinite(s.break_even(k))]
    text = (f"Speedup over plain decoding against the acceptance rate q, one theory curve per draft "
            f"length at c = {s.c:.3f}. The curves cross 1× (break even) at "
            + (", ".join(be) if be else "no q below 1") + f". Your q = {s.q:.2f} with k = {s.k}: "
            f"theory {times(s.theory_speedup)}.")
    pts = s.points
    if pts:
        text += (f" {plural(len(pts), 'simulated point')}, {s.misses} with an interval that misses "
                 "its curve.")
        for g in s.pooled:
            text += (f" Pooled, the {g.runs} at q = {g.q:.2f}, k = {g.k}: {g.speedup:.2f}× "
                     f"(95% interval {g.ci_low:.2f} to {g.ci_high:.2f}×), theory {g.theory:.2f}×.")
    return text


def misses_one_in() -> int:
    """How many measurements it takes, on average, for one 95% interval to miss a true curve: 20."""
    return round(1.0 / (1.0 - INTERVAL_LEVEL))


def pooled_miss_sentence() -> str:
    """Why a pooled point may miss its curve: a narrower interval is still a 95% one."""
    return (f"Narrower or not, a {INTERVAL_LEVEL:.0%} interval misses a curve that is exactly right "
            f"about 1 time in {misses_one_in()}, so a pooled square whose interval misses its curve "
            "does not by itself prove the theory wrong.")

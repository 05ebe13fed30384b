"""Episode 3's sentences beyond the page's own prose: its line on the summary, computed from the
numbers it states."""

from __future__ import annotations

from ...kit import words
from ...kit.params import K_SLIDER_MAX
from ...sim import theory
from .state import QualityDial
from ...kit.words import times, versus_one

_P = QualityDial.param
#: The setting the summary's link opens: the page's opening q and c at their best k.
SUMMARY_LINK = {"q": _P.q.default, "k": theory.best_k(_P.q.default, _P.c.default, k_max=K_SLIDER_MAX),
                "c": _P.c.default}


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    q, k, c = (SUMMARY_LINK[x] for x in ("q", "k", "c"))
    return (f"Each q and c has a best draft length: at q = {q:.2f} and c = {c:.2f} it is k = {k} "
            f"({words.times(theory.expected_speedup(q, k, c))}); at k = {K_SLIDER_MAX} speculating is "
            f"slower once q falls below {theory.break_even_q(K_SLIDER_MAX, c):.2f}.")


def best_k_words(s: QualityDial) -> tuple[str, str, str]:
    """The best-k stat (its number and caption) and the star's label in the chart.

    When even the best draft length is slower than plain decoding (in theory), the best
    choice is not to speculate, and the page says that instead.
    """
    best, sp = s.best_k, s.best_speedup
    cmp = versus_one(sp)
    if cmp > 0:
        here = ": you are on it" if best == s.k else ""
        return (f"k = {best}", f"best draft length for this q and c (theory {times(sp)}){here}",
                f"best k = {best}")
    if cmp < 0:
        return ("don’t speculate",
                f"best choice for this q and c: even the best draft length, k = {best}, is slower than "
                f"plain decoding (theory {times(sp)})", f"best k = {best}, still slower")
    return ("no gain",
            f"no draft length beats plain decoding for this q and c: the best, k = {best}, only "
            f"matches it (theory {times(sp)})", f"best k = {best}, no gain")


def speedup_words(s: QualityDial) -> str:
    """The speedup chart's text alternative: the theory's bars, the star, and your measured k."""
    by_k, r = s.speedup_by_k, s.result
    best = s.best_k
    return (f"Bar chart of the theory's speedup for each draft length k from 1 to {K_SLIDER_MAX}, at "
            f"q = {s.q:.2f} and c = {s.c:.2f}: {times(by_k[0])} at k = 1, highest {times(by_k[best - 1])} "
            f"at k = {best} (the star), {times(by_k[-1])} at k = {K_SLIDER_MAX}; "
            f"{int((by_k < 1).sum())} of the {K_SLIDER_MAX} bars are below 1×. Your k = {s.k}: theory "
            f"{times(s.theory_speedup)}, measured {times(r.speedup)} (95% interval {r.ci_low:.2f} to "
            f"{r.ci_high:.2f}×).")


def histogram_words(s: QualityDial) -> str:
    """The histogram's text alternative: each count of accepted drafts, measured and theory."""
    r = s.result
    measured = r.accepted_histogram() / r.n_rounds
    parts = [f"{a} accepted: {m:.1%} (theory {t:.1%})" for a, (m, t) in
             enumerate(zip(measured, s.theory_pmf))]
    return (f"Share of the {r.n_rounds:,} rounds by how many of their {s.k} drafts were accepted, "
            "measured against the theory: " + "; ".join(parts) + ".")

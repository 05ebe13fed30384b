"""Episode 6's sentences about its two drafts, each computed from the measurements it states.

Part 1 plays the draft head; part 2 races its policies over the texts as the n-gram table sees
them. :func:`race_draft_story` says so, with both drafts' measured acceptance on each text and
what the same race gives with the head, so the page never leaves the two under one word.
Plain text: escape it for HTML.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...data import measured
from ...sim import adaptive
from ...kit.words import in_prose, times
from .state import FinePrint
import math
import numpy as np
from ...data.measured import REST
from ...kit.tokens import token_label

#: The draft part 2 races with, and the one part 1 (and Episode 4) shows.
RACE_DRAFT, HEAD = "ngram", "head"


def mean_q(text: str, draft: str) -> float:
    """The mean measured acceptance of ``draft`` over the tokens of ``text``."""
    return float(measured.measured_text(text, draft).q.mean())


def race_with(texts: Sequence[str], repeats: int, fixed_k: int, c: float, seed: int, draft: str):
    """Part 2's race (its five policies, one draw from ``seed``) with ``draft``'s measured acceptance."""
    stream = measured.measured_stream(tuple(texts), repeats, draft=draft)
    return adaptive.race(stream, adaptive.default_policies(fixed_k, match=True), c, rng=seed)


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


#: A p-value below this, against the big model's distribution, is flagged (it happens about once
#: in a hundred batches of honest draws).
RED_FLAG = 0.01
#: The setting the summary's link opens.
SUMMARY_LINK = {"bias": 0.9, "n_samples": 100_000}


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    fp = FinePrint(**SUMMARY_LINK, rng=0)
    fit = fp.fit_big
    unbiased = FinePrint(n_samples=fp.n_samples, rng=0).acceptance_theory
    verdict = ("still follow p<sub>big</sub>" if fit.p_value >= RED_FLAG
               else "are flagged against p<sub>big</sub>")
    return ("Speculative sampling keeps the big model's distribution exactly: with the draft pushed "
            f"to one favourite token (bias {fp.bias:.1f}) the acceptance rate Σ min(p<sub>big</sub>, "
            f"p<sub>draft</sub>) is {fp.acceptance_theory:.2f} (unbiased: {unbiased:.2f}), and "
            f"{fp.n_samples:,} draws {verdict} (chi-square p-value {fit.p_value:.2f}).")


def models_words(s: FinePrint) -> str:
    """The two distributions' text alternative: each listed token's p_big and p_draft."""
    labels = chart_labels(s)
    rows = list(zip(labels, s.p_big, s.p_draft))
    top = sorted(rows[:-1], key=lambda r: -max(r[1], r[2]))[:_WORDS_TOKENS] + rows[-1:]
    parts = [f"{w}: {b:.1%} and {d:.1%}" for w, b, d in top]
    return (f"Bars of the next-token probabilities after “{s.context}”, the big model's and the "
            f"draft's, for {len(labels)} tokens; the {_WORDS_TOKENS} likeliest to either, and the rest "
            "as one: " + "; ".join(parts) + ".")


def out_words(s: FinePrint) -> str:
    """What came out, as words: each listed token's share of the outputs against p_big."""
    labels = chart_labels(s)
    freq = s.frequencies
    gap = float(np.abs(freq - s.p_big).max())
    rows = list(zip(labels, freq, s.p_big))
    top = sorted(rows[:-1], key=lambda r: -max(r[1], r[2]))[:_WORDS_TOKENS] + rows[-1:]
    parts = [f"{w}: {f:.1%} (big model {b:.1%})" for w, f, b in top]
    return (f"Bars of the share of {s.samples.n:,} outputs per token, with the big model's "
            f"probability marked on each; the {_WORDS_TOKENS} likeliest tokens and the rest as one: "
            + "; ".join(parts) + f". Over all {len(labels)}, the largest gap is {gap:.1%}.")


def race_words(s: FinePrint) -> str:
    """The race charts' text alternative: each policy's passes saved at the end, and its k."""
    n = len(s.stream)
    parts = [f"{r.label}: {n - r.total_cost:,.1f} passes saved, k from {int(r.k.min())} to "
             f"{int(r.k.max())}" for r in s.runs]
    return ("Lines of the passes each policy saved against plain decoding as the "
            f"{n} tokens were written, over Python, the poem and JSON: " + "; ".join(parts) + ".")


def kept_words(c) -> str:
    """How much of the head's own q its 16 listed tokens held, and its acceptance before the cut."""
    if c.draft_top_mass >= 0.995 or not math.isfinite(c.alpha_full):
        return ""
    n = int((c.q[:-1] > 0).sum())
    return (f" The draft here is the head's {n} most likely tokens, which held "
            f"{c.draft_top_mass:.0%} of its guesses; the whole head agrees with the big model on "
            f"{c.alpha_full:.1%}.")


#: How many tokens a chart's words name one by one (the rest are summed up).
_WORDS_TOKENS = 8


def chart_labels(s: FinePrint) -> list[str]:
    """The charts' categories: each token with its whitespace shown, then "everything else"."""
    return [token_label(t) if t != REST else t for t in s.labels]

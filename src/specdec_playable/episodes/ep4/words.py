"""Episode 4's sentences, each computed from the measured texts they describe
(``data.measured``): what a text is called in a sentence, whether the measurements bear out the
seed's title, what they say about the genres, and which draft catches most. Plain text: escape it
for HTML.
"""

from __future__ import annotations

from ...data import measured
from ...kit.words import in_prose, in_sentence
import numpy as np


#: How much more often (in mean acceptance) the best boilerplate text must keep the draft than the
#: poem does for "boilerplate flies, poetry stalls" to hold.
TITLE_MARGIN = 0.1


BOILERPLATE = ("code", "json", "letter")


def title_holds() -> bool:
    """Whether the measured means bear the seed's title out: the best of the boilerplate texts
    keeps the draft at least :data:`TITLE_MARGIN` more often than the poem."""
    by_kind = {m["kind"]: m for m in measured.genre_means().values()}
    boiler = [by_kind[k]["alpha"] for k in BOILERPLATE if k in by_kind]
    return bool(boiler) and "poem" in by_kind and max(boiler) - by_kind["poem"]["alpha"] >= TITLE_MARGIN


def genre_story() -> str:
    """What the measured means say about the genres, written from them (plain text)."""
    means = measured.genre_means()
    by_kind = {m["kind"]: m for m in means.values()}
    rank = sorted(means.values(), key=lambda m: -m["alpha"])
    best, worst = rank[0], rank[-1]
    boiler = [by_kind[k] for k in BOILERPLATE if k in by_kind]
    poem = by_kind.get("poem")
    parts = [f"Measured, the draft head is kept most often on {in_prose(best['kind'])} "
             f"(mean acceptance {best['alpha']:.2f}) and least on {in_prose(worst['kind'])} "
             f"({worst['alpha']:.2f})."]
    if poem is not None and boiler:
        top = max(boiler, key=lambda m: m["alpha"])
        if title_holds():
            parts.append(f"Boilerplate does beat the poem here: {top['alpha']:.2f} on "
                         f"{in_prose(top['kind'])} against {poem['alpha']:.2f} on the poem.")
        else:
            parts.append(
                f"So the title does not hold for this draft: on JavaScript, JSON and the form letter "
                f"its mean acceptance is at most {top['alpha']:.2f}, barely more than on the poem "
                f"({poem['alpha']:.2f}).")
    if poem is not None and boiler and min(m["p_token"] for m in boiler) > poem["p_token"]:
        listed = ", ".join(f"{m['p_token']:.2f} on {in_prose(m['kind'])}" for m in boiler)
        parts.append(
            "The big model itself does find every one of these boilerplate texts easier to predict "
            f"than the poem: its mean probability of the real next token is {listed}, against "
            f"{poem['p_token']:.2f} on the poem.")
    return " ".join(parts)


def catch_line() -> str:
    """Which draft is kept most on these texts, from the comparison columns (plain text)."""
    means = measured.genre_means()
    mean = {d: sum(m["compare"][d]["greedy"] for m in means.values()) / len(means)
            for d in ("head", "memory", "ngram", "lookup")}
    best = {d: max(means.values(), key=lambda m: m["compare"][d]["greedy"]) for d in mean}
    return (f"the head's first guess is kept at {mean['head']:.0%} of the tokens on average (most on "
            f"{in_prose(best['head']['kind'])}), the memory draft's at {mean['memory']:.0%} (most on "
            f"{in_prose(best['memory']['kind'])}: these texts are not the model's own replies, "
            f"which is what it remembers), the n-gram table's at {mean['ngram']:.0%} and "
            f"prompt lookup's at {mean['lookup']:.0%}: a draft must have learned what the big "
            "model writes, and a fresh text leaves nothing to copy.")


#: What dictates many tokens of each kind of text: why a draft can guess them (a text of a kind
#: not listed gets no example).
_HABITS = {"code": "a bracket that was opened gets closed", "python": "an indented block follows its colon",
           "json": "a key repeats", "letter": "a stock phrase runs on",
           "translation": "a sentence follows its original"}


def _names(kinds: list[str]) -> str:
    names = [in_prose(k) for k in kinds]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def fly_story() -> str:
    """Why boilerplate can fly, naming only the texts the table puts above the poem (plain text).

    The texts on which the draft head is kept more often than on the poem are named as the ones
    where it flies; the texts the big model finds easier than the poem but the head does not
    (kept no more often than on the poem) are named as where the draft falls short.
    """
    means = [m for m in measured.genre_means().values() if m["kind"] != "pasted"]
    poem = next((m for m in means if m["kind"] == "poem"), None)
    if poem is None:
        return catch_line()
    others = sorted((m for m in means if m is not poem), key=lambda m: -m["alpha"])
    # Compared as the sentence shows them (two decimals): 0.373 against 0.366 reads as a tie.
    fly = [m for m in others if round(m["alpha"], 2) > round(poem["alpha"], 2)]
    short = [m for m in others if round(m["alpha"], 2) <= round(poem["alpha"], 2)
             and m["p_token"] > poem["p_token"]]
    parts = []
    if fly:
        habits = [_HABITS[m["kind"]] for m in fly if m["kind"] in _HABITS]
        kept = ", ".join(f"{m['alpha']:.2f} on {in_prose(m['kind'])}" for m in fly)
        parts.append(
            f"Measured, the draft head is kept more often than on the poem ({poem['alpha']:.2f}) on "
            f"{_names([m['kind'] for m in fly])} ({kept}). There many tokens are dictated by what came "
            "before" + (": " + ", ".join(habits[:-1]) + (" and " if len(habits) > 1 else "") + habits[-1]
                        if habits else "") + ". The big model then puts most of its probability on "
            "one token, and a draft that has learned the same habit puts its own there too, so the two "
            "overlap almost completely.")
    parts.append("A poem is written to avoid the obvious word: the big model spreads its probability "
                 "over many, and the overlap is small whatever the draft.")
    easier = [m for m in others if m["p_token"] > poem["p_token"]]
    if easier:
        lo, hi = min(m["p_token"] for m in easier), max(m["p_token"] for m in easier)
        every = "every other text" if len(easier) == len(others) else _names([m["kind"] for m in easier])
        parts.append(f"The big model’s column shows the first half of that: it finds {every} easier to "
                     f"predict than the poem (p of the real token {lo:.2f} to {hi:.2f}, against "
                     f"{poem['p_token']:.2f}).")
    if short:
        kept = " and ".join(f"{m['alpha']:.2f}" for m in short)
        parts.append(
            f"The draft has to have learned the habit too: on {_names([m['kind'] for m in short])} the "
            f"big model is surer than on the poem, yet the head is kept no more often ({kept}, against "
            f"{poem['alpha']:.2f}), so formulaic text alone does not make a draft fly.")
    parts.append("The draft columns show how much each draft catches: " + catch_line())
    return " ".join(parts)



#: The setting the summary's link opens: the page's opening pair of texts (``state.py``'s defaults).
SUMMARY_LINK = {"left": "py-account", "right": "poem-kettle"}


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    means = measured.genre_means()
    left, right = means[SUMMARY_LINK["left"]], means[SUMMARY_LINK["right"]]
    return ("How often a draft is kept depends on the text: a draft head trained to imitate the "
            f"model is kept at a measured {left['alpha']:.2f} on Python and "
            f"{right['alpha']:.2f} on a poem.")


def histogram_words(data: dict) -> str:
    """The histogram's text alternative: each text's mean acceptance and its share of tokens in
    the highest and lowest fifth."""
    names = list(dict.fromkeys(data["name"]))
    top, low = bin_labels()[-1], bin_labels()[0]
    parts = []
    for name in names:
        rows = {b: sh for n, b, sh in zip(data["name"], data["bin"], data["share"]) if n == name}
        mean = next(m for n, m in zip(data["name"], data["mean"]) if n == name)
        parts.append(f"{name}: mean {mean:.2f}, {rows[top]:.0%} of its tokens in {top}, "
                     f"{rows[low]:.0%} in {low}")
    return ("Bars of each text's tokens by measured acceptance, in fifths: " + "; ".join(parts) + ".")


def bars_words(run, title: str) -> str:
    """A side's wall-clock bars as words: the speculative run against the big model alone."""
    if run is None:
        return f"{title}: nothing pasted yet, so no run to show."
    return (f"Wall clock of the run on {in_sentence(run.text.title)}: speculative decoding {run.wall_ms:,.0f} ms "
            f"({run.verify_ms:,.0f} ms of verify passes and {run.draft_ms:,.0f} ms of draft steps) "
            f"against {run.baseline_ms:,.0f} ms for the big model alone: {run.speedup:.2f}×.")


#: Bins of the histograms: equal fifths of [0, 1].
BINS = 5


def bin_labels(bins: int = BINS) -> list[str]:
    """``["0–0.2", "0.2–0.4", ...]`` for ``bins`` equal bins of [0, 1]."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    return [f"{a:g}–{b:g}" for a, b in zip(edges[:-1], edges[1:])]

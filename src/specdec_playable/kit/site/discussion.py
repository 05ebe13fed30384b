"""A model answer for every discussion prompt of the teacher's guide, and what a class should know
before it starts.

:data:`MODEL_ANSWERS` holds, per episode, one ``(opening words of the prompt, answer)`` pair per
prompt, in the episode's order (its ``practice.DISCUSS``); the opening words tie each answer to its
prompt, and ``tests/test_guide.py`` checks them against the episodes' prompts, so a reworded or
reordered prompt fails there until its answer follows. An answer that quotes a number computes it
from the data or the theory it describes, when the guide is built. Plain text: escape it for HTML.

:data:`PREREQUISITES` is what a student needs before Episode 1, and :data:`BUILDS_ON` which
earlier episodes each one leans on.

The guide is site material, so the answers live here beside it rather than in the episodes; no
Panel or Bokeh here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...data import hardware, measured, tree_table
from ...lm.head import head_meta
from ...sim import theory
from ...sim.montecarlo import INTERVAL_LEVEL
from ..cpu import cpu_passes

#: What a student should bring to the first episode (each completes "Students need ...").
PREREQUISITES = (
    "to read a probability as a share of many tries (q = 0.8: eight times in ten), and an "
    "average as what many tries come to",
    "to know that a language model writes text one token (a word or part of one) at a time, each "
    "chosen from the probabilities it gives the possible next tokens",
    "to read a chart with a logarithmic axis, where equal steps multiply (Episodes 1 and 8), and "
    "a formula with a power in it (q to the power k, in Episode 3)",
    "no programming and no calculus; Episodes 6 to 8 go further for students who have met "
    "sampling, a chi-square test or a GPU",
)
#: The earlier episodes each one leans on (the short path reads 1, 2, 3, 5 in order).
BUILDS_ON: dict[int, tuple[int, ...]] = {
    1: (), 2: (1,), 3: (2,), 4: (2, 3), 5: (3,), 6: (2, 4), 7: (1, 3, 4), 8: (1, 3, 5),
}


def _best_k(q: float, c: float, k_max: int = 16) -> tuple[int, float]:
    """The draft length with the highest theory speedup at ``q`` and ``c``, and that speedup."""
    ks = np.arange(1, k_max + 1)
    s = theory.expected_speedup(q, ks, c)
    i = int(np.argmax(s))
    return int(ks[i]), float(s[i])


def _binomial_tail(n: int, p: float, at_least: int) -> float:
    """P(X >= at_least) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, m) * p ** m * (1 - p) ** (n - m) for m in range(at_least, n + 1))


def _ep1_hardware() -> str:
    curve = hardware.measured_curve()
    r = curve.time_ms(16) / curve.time_ms(1)
    cpu = cpu_passes()
    return ("Each pass must be limited by reading the weights from memory, not by the arithmetic "
            "(memory-bound): then more positions reuse weights already read and add little. The "
            f"H200 measurement shows it, a pass over 16 positions taking {r:.2f}× the time of one. "
            f"{_on_cpu(cpu)}, with {cpu.weight_words}, a pass over 5 positions takes "
            f"{cpu.ratio(5):.2f}× a single one ({cpu.source}): there the arithmetic is a larger "
            "share, and Episode 7 pays for it.")


def _on_cpu(cpu) -> str:
    """Which CPU a sentence prices: this server's once it measured its own, else the project's."""
    return "On this server's CPU" if cpu.here else "On the project's CPU"


def _ep2_bigger_draft() -> str:
    k = 4
    small, big = (0.6, 0.05), (0.8, 0.3)
    s_small, s_big = (float(theory.expected_speedup(q, k, c)) for q, c in (small, big))
    return ("Its guesses would be kept more often, so rounds would keep more tokens, but each draft "
            "step would take longer: the draft lane's bars would grow and the big model would wait "
            "longer before each pass. The theory's speedup E / (1 + k·c) shows the trade: at k = "
            f"{k}, a draft kept at q = {small[0]} for c = {small[1]} gives {s_small:.2f}×, a better "
            f"one at q = {big[0]} costing c = {big[1]} only {s_big:.2f}×. The text would not change.")


def _ep3_rise_and_fall() -> str:
    q, c = 0.8, 0.05
    k, s = _best_k(q, c)
    return ("Tokens per round, E = (1 − q^(k+1)) / (1 − q), grow with k ever more slowly, since the "
            "k-th guess is kept only if every guess before it was (probability q^k); the cost of a "
            "round, 1 + k·c passes, grows in a straight line. At small k the added tokens win, at "
            f"large k the added cost. At q = {q} and c = {c} the best k is {k}, at {s:.2f}×.")


def _ep3_which_knob() -> str:
    q, k, c = 0.6, 4, 0.2
    base = float(theory.expected_speedup(q, k, c))
    better = float(theory.expected_speedup(q + 0.1, k, c))
    cheaper = float(theory.expected_speedup(q, k, c / 2))
    which = "better guesses" if better > cheaper else "cheaper guesses"
    return ("Start from the team's own q, k and c and move one knob at a time by the step the team "
            "could afford, reading the speedup each time (or on the summary's formula). The answer "
            f"depends on where they stand: at q = {q}, k = {k}, c = {c} ({base:.2f}×), guessing "
            f"better by 0.1 gives {better:.2f}× and halving the cost {cheaper:.2f}×, so {which} are "
            "worth more there.")


def _ep4_everyday() -> str:
    means = measured.genre_means()
    py, poem = means["py-account"]["alpha"], means["poem-kettle"]["alpha"]
    return ("Text dictated by what came before is guessed well: code, forms, JSON, stock replies, "
            "a document's own repeated words. Text chosen to surprise is guessed poorly: poems, "
            "jokes, names, numbers, a first sentence. On the page the draft head is kept at "
            f"{py:.0%} of the Python's tokens and {poem:.0%} of the poem's.")


def _ep4_columns() -> str:
    means = [m for m in measured.genre_means().values() if m["kind"] != "pasted"]
    poem = next(m for m in means if m["kind"] == "poem")
    odd = [m for m in means if m["p_token"] > poem["p_token"] and m["alpha"] < poem["alpha"]]
    example = ""
    if odd:
        m = odd[0]
        example = (f" The translation shows it: the big model gives its real tokens {m['p_token']:.2f} "
                   f"on average against the poem's {poem['p_token']:.2f}, yet the head is kept there "
                   f"{m['alpha']:.2f} of the time against {poem['alpha']:.2f}."
                   if m["kind"] == "translation" else "")
    return ("A draft is kept when its distribution overlaps the big model's (q = Σ min(p_big, "
            "p_draft)), not when the text is easy: where the big model spreads its probability, a "
            "draft that spreads the same way still overlaps, and where the big model is sure, a "
            "draft that never learned the pattern misses." + example + " The columns: acceptance q "
            "(that overlap), the big model's p_big of the real token (how predictable the text is to "
            "it), how often each draft's first guess is the big model's own, and the tokens a real "
            "greedy round writes per pass.")


def _ep4_title() -> str:
    texts = [m for m in measured.genre_means().values() if m["kind"] != "pasted"]
    by = {m["kind"]: m for m in texts}
    boiler = max((by[k] for k in ("code", "json", "letter") if k in by), key=lambda m: m["alpha"])
    poem = by["poem"]
    verdict = ("so for these texts it holds" if boiler["alpha"] > poem["alpha"]
               else "so for these texts it does not")
    return (f"The best boilerplate text keeps the head at {boiler['alpha']:.2f} against "
            f"{poem['alpha']:.2f} on the poem, {verdict}. But these are {len(texts)} texts of "
            f"{len(by)} kinds, each a few dozen tokens long: to be sure one would measure many texts "
            "of each kind, with several drafts, and compare the spread between texts of one kind "
            "with the gap between kinds.")


def _ep5_break_even() -> str:
    k, c = 4, 0.15
    return ("It can count, as it writes, how many guesses the big model accepts: a running "
            "acceptance rate over the last rounds. It compares that with the break-even q for its "
            f"k and c (at k = {k} and c = {c}, q = {theory.break_even_q(k, c):.2f}); as the rate "
            "falls towards it, it drafts fewer tokens per round, and below it stops drafting, "
            "trying a short draft now and then to see whether the text has become easy again.")


def _ep5_misses() -> str:
    miss = 1 - INTERVAL_LEVEL
    n = 20
    at = next(m for m in range(n + 1) if _binomial_tail(n, miss, m) < 0.05)
    return (f"Each dot is a finite run, and a {INTERVAL_LEVEL:.0%} interval misses even a right curve "
            f"about 1 time in {round(1 / miss)}. So the misses of n dots are counted like coin flips "
            f"with a chance of {miss:.2f}: of {n} dots about 1 should miss, and {at} or more would "
            f"happen by chance only {_binomial_tail(n, miss, at):.1%} of the time. That many would "
            "be reason to doubt the theory, or the simulation.")


def _ep6_draft_length() -> str:
    c = head_meta()["measured"]["cost"]["c"]
    means = measured.genre_means()
    (k_code, _), (k_poem, _) = (_best_k(means[t]["alpha"], c) for t in ("py-account", "poem-kettle"))
    return ("It should shrink: with fewer guesses kept, a long draft wastes more of its guesses. By "
            f"the theory, at the draft head's measured c = {c:.3f} the best k is {k_code} at the "
            f"Python's measured acceptance and {k_poem} at the poem's. A policy sees the change only "
            "through the guesses it keeps or loses, a few a round, so it needs several rounds to "
            "tell a change of text from bad luck: the faster it reacts, the more often it reacts "
            "to noise.")


def _ep7_hardware() -> str:
    from ...data.recorded import recorded_runs

    cpu = cpu_passes()
    r = cpu.ratio(5)
    curve = hardware.measured_curve()
    h200 = curve.time_ms(16) / curve.time_ms(1)
    runs = recorded_runs()
    faster = [k for k, c in runs.items() if c.fair.verdict == "faster"]
    return ("What a pass over k + 1 positions costs depends on whether the hardware is limited by "
            "reading the weights (then extra positions are nearly free, as on a GPU serving one "
            f"user) or by arithmetic. {_on_cpu(cpu)}, with {cpu.weight_words}, a pass over 5 "
            f"positions costs {r:.2f}× a single step ({cpu.source}), so a draft must be kept "
            "often enough to pay for the extra positions as "
            f"well as for its own guesses: of the {len(runs)} recorded pairs of a task and a draft, "
            f"{len(faster)} were measurably faster than plain decoding. On a GPU serving one user, "
            f"where a pass over 16 positions takes {h200:.2f}× one, a draft has to pay only for "
            "its own guesses.")


def _ep7_memory() -> str:
    from ...lm.memory import index_meta

    meta = index_meta()
    return ("A model's replies are not independent: it opens, links and closes its answers with "
            "the same phrases, writes the same code idioms and the same letter formulas, because "
            "the same weights make them, and greedily it makes the same choice after the same "
            f"words every time. The memory holds {meta['tokens'] / 1e6:.1f} million tokens of its "
            f"past replies ({meta['rows']:,} of them), so once a reply is a few words into a "
            "familiar stretch, what the model wrote after those words before is a good guess at "
            "what it writes now. It fails where the reply turns to this prompt's own facts "
            "(names, numbers, a new topic), where past replies went different ways after the "
            "same words, and for another model, whose habits it never saw.")


def _ep8_tree() -> str:
    table = tree_table.load_tree_vs_chain()
    gains = {n: tree_table.best_tree(table, n) for n in sorted(tree_table.pooled(table))}
    won = {n: cb for n, cb in gains.items()
           if table.tokens_per_pass[cb[1]] > table.tokens_per_pass[cb[0]]}
    lost = {n: cb for n, cb in gains.items() if n not in won}
    parts = []
    if won:
        n = max(won, key=lambda n: table.tokens_per_pass[won[n][1]] - table.tokens_per_pass[won[n][0]])
        chain, best = won[n]
        parts.append(f"at {n} positions the best tree ({table.label[best]}) wrote "
                     f"{table.tokens_per_pass[best]:.2f} tokens per pass against the chain's "
                     f"{table.tokens_per_pass[chain]:.2f}")
    if lost:
        n = min(lost)
        chain, best = lost[n]
        parts.append(f"at {n} positions the chain's {table.tokens_per_pass[chain]:.2f} beat every "
                     f"tree (the best {table.tokens_per_pass[best]:.2f})")
    return ("A chain bets every position on its first guess: after a miss the positions behind it "
            "are wasted. A tree spends some positions on second choices at the first levels, where "
            "a miss is most likely, so one of them is often kept. The chain is better when the "
            "draft is usually right, or when there are few positions to spend: then depth keeps "
            "more tokens than width. Measured with the real model, pooled over the prompts: "
            + "; ".join(parts) + ".")


#: Per episode, ``(the prompt's opening words, its model answer)``, in the prompts' order.
MODEL_ANSWERS: dict[int, tuple[tuple[str, str | Callable[[], str]], ...]] = {
    1: (
        ("Where else is checking", "Wherever an answer, once found, can be checked piece by piece "
         "with every piece in view at once: a sudoku's rows, a proof's lines, a change under code "
         "review. For a language model, checking means scoring tokens already written: every "
         "position's input is known, so one pass computes them side by side, while writing must "
         "choose each token before it can compute the next."),
        ("Why can a transformer", "Scoring needs only the text, and all of it is there: the "
         "attention mask lets each position look at the ones before it, so every position is "
         "computed in the same matrix products. Writing cannot, because the token chosen at one "
         "position is the input of the next: it does not exist until that position is done."),
        ("What would have to be true", _ep1_hardware),
    ),
    2: (
        ("Why must the big model", "Its token at the first miss is the one it would have written "
         "anyway: its pass computed that position from accepted text only. Keeping it makes the "
         "text the big model's own, and it means every round's pass writes at least that token (or "
         "the bonus token when nothing was missed), so no round writes less than a plain step."),
        ("If the draft were", _ep2_bigger_draft),
        ("What does a bad round", "A bad round pays for k draft steps and a full pass, 1 + k·c "
         "passes of time, and writes one token, the one plain decoding would have written in one "
         "pass. The user pays, in waiting: k·c of a pass more for that token. The text does not "
         "pay: it is the same."),
    ),
    3: (
        ("Why does the speedup rise", _ep3_rise_and_fall),
        ("A team can make", _ep3_which_knob),
        ("Why does the measured speedup", "Each press draws fresh rounds, and each guess is kept by "
         "chance with probability q, so the average over a finite number of rounds lands a little "
         "differently each time. The theory is the average over endlessly many rounds; the 95% "
         "interval shows how far a run of this length may stray from it."),
    ),
    4: (
        ("Which kinds of text", _ep4_everyday),
        ("Why can a draft be kept", _ep4_columns),
        ("Does the episode's title hold", _ep4_title),
    ),
    5: (
        ("A benchmark reports", "What text was it measured on, and does it look like my users' "
         "(copy-heavy tasks reward drafts)? Which k, and what does a draft step cost on the same "
         "hardware and batch size? Greedy or sampled? Against which plain decoder? Then place it "
         "on the map: my users' text may put q below the break-even for that k and c."),
        ("How could a server notice", _ep5_break_even),
        ("Why do some measured dots", _ep5_misses),
    ),
    6: (
        ("Why does the rule need", "To keep a proposed x with probability min(1, p_big(x) / "
         "p_draft(x)) the rule must know how likely the draft was to propose it: a token the draft "
         "over-proposes must be trimmed, one it under-proposes topped up. And after a refusal the "
         "replacement is drawn from max(0, p_big − p_draft), which needs the draft's whole "
         "distribution, not only its token."),
        ("When the text switches", _ep6_draft_length),
        ("Which draft does each part", "Part 1 plays the draft head at one real context, bent by the "
         "temperature and the bias; part 2 plays the n-gram table over real texts. The head "
         "learned to imitate the big model's distributions; the n-gram table only counts which "
         "token followed which in Python source, so it is kept far less, and least on text unlike "
         "that source."),
    ),
    7: (
        ("The copy tasks reward", "Any reply that repeats long runs of its prompt: editing a "
         "document or fixing a typo, renaming in code, filling a template, extracting fields, "
         "answering with quotes, summarising with the source's own phrases. There prompt lookup "
         "guesses whole runs for almost nothing."),
        ("Why does the hardware decide", _ep7_hardware),
        ("The memory draft has never seen", _ep7_memory),
    ),
    8: (
        ("A provider serves many users", "When its passes are no longer memory-bound: at a large "
         "batch each pass is already full of work, so the guesses' extra positions cost in "
         "proportion and a rejected guess wastes compute other users needed. It would measure, per "
         "batch size, the acceptance rate and the goodput (tokens users keep per second) with and "
         "without speculation, and switch off where the goodput with it falls below plain "
         "decoding's."),
        ("Why can a tree of guesses", _ep8_tree),
    ),
}


def model_answer(number: int, index: int) -> str:
    """The model answer to episode ``number``'s prompt ``index`` (plain text)."""
    _, answer = MODEL_ANSWERS[number][index]
    return answer() if callable(answer) else answer

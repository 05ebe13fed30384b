"""Episode 8's sentences, each computed from the numbers it states: the batch chart's and the cost
chart's, the chain against the tree, the real model's measured trees and drawn step, and its line on
the summary. Trusted HTML where a sentence carries markup (its text escaped here)."""

from __future__ import annotations

import numpy as np

from ...data import measured, tree_table
from ...data.tree_table import TreeVsChain
from ...kit.page import esc
from ...kit.tokens import token_label
from ...kit.words import noun, plural
from ...lm.tree_step import TreeStep
from .state import BATCH_MAX, K_SLIDER_MAX, BusyAndTrees, split_rows

#: The setting the summary's link opens.
SUMMARY_LINK = {"batch": 1}


def summary_sentence() -> str:
    """The summary's sentence (trusted HTML; every number computed)."""
    busy = BusyAndTrees(**SUMMARY_LINK)
    b = busy.break_even_batch
    chain, tree = busy.chain_theory, busy.tree_theory
    return ("On a busy GPU the drafts' extra positions stop being free: at q = "
            f"{busy.q:.2f}, k = {busy.k}, c = {busy.c:.2f} speculating is slower "
            + (f"from batch size B = {b:,}" if b is not None else "at no batch size up to the page's largest")
            + f". And at q = {busy.tree_q:.2f} a {busy.width} × {busy.depth} token tree decides "
            f"{tree:.2f} tokens per pass against {chain:.2f} for a chain checking the same "
            f"{busy.positions} positions (theory).")


def table_sentence(table: TreeVsChain, cost: np.ndarray, draft: str = "the draft head") -> str:
    """What the table says: the tree against the chain, and whether either pays on this CPU
    (``cost``: each row's round in plain steps, :func:`data.tree_table.pass_costs`; ``draft``: the table's draft
    in words, :func:`specdec_playable.data.tree_table.draft_words`)."""
    groups = sorted(tree_table.pooled(table))
    parts = []
    for n in groups:
        chain, best = tree_table.best_tree(table, n)
        gain = table.tokens_per_pass[best] - table.tokens_per_pass[chain]
        if round(gain, 2) > 0:
            parts.append(f"at {n} positions the best tree ({esc(table.label[best])}) wrote "
                         f"{table.tokens_per_pass[best]:.2f} tokens per pass against the chain's "
                         f"{table.tokens_per_pass[chain]:.2f}")
        else:
            parts.append(f"at {n} positions no tree beat the chain's "
                         f"{table.tokens_per_pass[chain]:.2f} tokens per pass")
    chain, _ = tree_table.best_tree(table, groups[0])
    q = table.q[chain]
    gains = [table.tokens_per_pass[b] - table.tokens_per_pass[c]
             for c, b in (tree_table.best_tree(table, n) for n in groups)]
    tpp = table.tokens_per_pass[table.rows()]
    cost = np.asarray(cost)[table.rows()]
    paying = tpp > cost
    if paying.all():
        pays = "Every shape wrote more tokens per pass than a pass costs in plain steps, so all of them pay here."
    elif not paying.any():
        pays = (f"None pays on this CPU: a round costs {cost.min():.2f} to {cost.max():.2f} plain "
                f"steps and writes at most {tpp.max():.2f} tokens, so plain decoding is faster.")
    else:
        pays = (f"{int(paying.sum())} of {paying.size} shapes wrote more tokens per pass than a "
                "round costs in plain steps.")
    if q < 0.25:
        reach = ("so a chain rarely gets past its first guess, and spare candidates at the first "
                 "level are what a tree adds")
    elif max(round(g, 2) for g in gains) > 0:
        reach = "and a tree's spare candidates catch some of the guesses the chain misses"
    else:
        reach = "and spare candidates did not catch what the chain misses"
    return (f"Pooled over the prompts, {'; '.join(parts)}. {esc(draft).capitalize()}'s top guess "
            f"was accepted {q:.1%} of the times the big model checked it, {reach}. {pays}")


def step_sentence(step: TreeStep, draft: str = "the draft head") -> str:
    """The drawn step in words: what was drafted, checked and kept."""
    n = len(step.tokens)
    kept = "".join(step.texts[i] for i in step.path)
    levels = int(step.depths.max()) if n else 0
    own = ("a bonus token, because the path reached a leaf" if step.mark == "bonus"
           else "its correction where the path's guesses ran out" if step.mark == "correction"
           else "its own token, as a plain step would")
    if step.path:
        kept_words = (f"It agreed with the path <code>{esc(token_label(kept))}</code> "
                      f"({len(step.path)} drafted {noun(len(step.path), 'token')})")
    else:
        kept_words = "It agreed with none of the candidates"
    return (f"After <code>{esc(token_label(step.root_text))}</code> {esc(draft)} offered {n} "
            f"{noun(n, 'candidate')} over {plural(levels, 'level')}, and the big model scored all "
            f"of them and the root in one pass of {n + 1} positions. {kept_words}, and wrote "
            f"<code>{esc(token_label(step.text))}</code>, {own}: "
            f"{plural(len(step.path) + 1, 'token')} from one pass.")


#: The prompt of the tree table that asks for a poem, and Episode 4's poem, whose figures seem to
#: disagree (:func:`own_poem_sentence`).
POEM_PROMPT, EP4_POEM = "poem", "poem-kettle"
#: Episode 4 measures tokens per pass at this draft length (``data.measured``'s ``tau``).
EP4_TAU_K = 4


def own_poem_sentence(table: TreeVsChain, draft_key: str | None = None) -> str:
    """Why the poem prompt writes many tokens per pass here while Episode 4's poem stalls: this
    one is the model's own greedy reply. Empty when the table has no poem prompt, or when its
    chain at Episode 4's draft length writes no more per pass than Episode 4's poem did (then
    there is nothing to explain). ``draft_key`` is the table's draft (``"head"`` or
    ``"ngram"``; the shipped table's by default)."""
    draft_key = draft_key or tree_table.draft_name()
    if POEM_PROMPT not in table.prompts():
        return ""
    ep4 = measured.genre_means()[EP4_POEM]["compare"][draft_key]["tau"]
    rows = [int(i) for i in table.rows(POEM_PROMPT)]
    chain4 = next((i for i in rows if table.width[i] == 1 and table.positions[i] == EP4_TAU_K), None)
    if chain4 is None or round(table.tokens_per_pass[chain4], 2) <= round(ep4, 2):
        return ""
    top = max(int(table.positions[i]) for i in rows)
    chain, best = tree_table.best_tree(table, top, POEM_PROMPT)
    lo, hi = sorted((table.tokens_per_pass[chain], table.tokens_per_pass[best]))
    name = tree_table.DRAFT_WORDS[draft_key]
    return (f"The poem prompt is not Episode 4’s poem, where poetry stalled: on it a chain of "
            f"{EP4_TAU_K} guesses writes {table.tokens_per_pass[chain4]:.2f} tokens per pass (and "
            f"{lo:.2f} to {hi:.2f} at {top} positions), against {ep4:.2f} for {name} at the same "
            f"k = {EP4_TAU_K} on Episode 4’s poem. The text checked here is the model’s own greedy "
            "reply to a request for a poem: every token is the one it found likeliest, so its next "
            f"token is easy for it to predict, and {name} learned from replies like it. Episode 4’s "
            "poem is a written text chosen to avoid the obvious word, and the model is scored "
            "against its words, not its own.")


def memory_trees_sentence(head: TreeVsChain, memory: TreeVsChain | None) -> str:
    """The memory draft's trees against the head's, pooled, at the most positions both tables
    measured: each draft's chain and its best tree in tokens per pass, and whether the tree beat
    the chain (empty without the memory's table)."""
    if memory is None:
        return ""
    both = sorted(set(tree_table.pooled(head)) & set(tree_table.pooled(memory)))
    if not both:
        return ""
    n = both[-1]
    said = []
    for name, table in (("the memory draft", memory), ("the draft head", head)):
        chain, best = tree_table.best_tree(table, n)
        c, b = table.tokens_per_pass[chain], table.tokens_per_pass[best]
        gain = round(b, 2) - round(c, 2)
        beat = (f"its best tree ({esc(table.label[best])}) beat it by {gain:.2f}, at {b:.2f}"
                if gain > 0 else f"no tree beat it (the best, {esc(table.label[best])}, {b:.2f})")
        said.append(f"{name}’s chain wrote {c:.2f} tokens per pass and {beat}")
    return (f"The memory draft grows trees too: at each node, the several continuations its "
            f"longest match in the model’s past replies had, where it is confident. Measured the "
            f"same way, at {n} verified positions {said[0]}; {said[1]}.")


def real_mask_words(step: TreeStep) -> str:
    """The real step's mask as words: how many cells are filled, which rows are the kept path's."""
    size = step.mask.shape[0]
    return (f"The attention mask of that pass, {size} × {size}: row i may look at column j where the "
            f"cell is filled, its own token and its ancestors; {int(step.mask.sum())} of "
            f"{size * size} cells are filled, and the {len(step.path) + 1} rows of the kept path, "
            "root included, are marked ✓.")


def real_tree_words(step: TreeStep) -> str:
    """The real tree's text alternative: what the pass did with each guess, in words."""
    acc = [token_label(t) for t, a in zip(step.texts, step.accepted) if a]
    rej = int(sum(bool(j) and not a for a, j in zip(step.accepted, step.judged)))
    unchecked = int(sum(not j for j in step.judged))
    kept = " ".join(f"“{t}”" for t in acc) or "none"
    return (f"One verify pass of the real model over a tree of {plural(len(step.texts), 'guess', 'guesses')} "
            f"after “{token_label(step.root_text)}”: {len(acc)} accepted, on the kept path ({kept}); "
            f"{rej} checked and rejected; {unchecked} not checked, under a rejected guess; then the "
            f"big model's own token “{token_label(step.text)}” ({step.mark}). Marks: ✓ accepted, "
            "✗ rejected, – not checked, ★ or + the big model's own token.")


def plain_positions(batch: int) -> str:
    return plural(batch, "position") + (" (one per user)" if batch > 1 else "")


def batch_limit_sentence(s: BusyAndTrees) -> str:
    """Where the chosen k stops paying, over the chart's batch sizes."""
    edge = s.break_even_batch
    if edge is None:
        return (f"With k = {s.k}, speculation still pays at every batch size up to "
                f"{BATCH_MAX:,} at this q and c.")
    if edge == 1:
        return f"With k = {s.k}, speculation does not pay even for a single user at this q and c."
    return (f"With k = {s.k}, speculation stops paying at batch {edge:,}: from there on the verify "
            "pass costs more than its extra tokens are worth.")


def best_k_sentence(s: BusyAndTrees) -> str:
    """The best draft length at the chosen batch, or that not speculating is best."""
    best = s.best
    i = s.batch - 1
    bk, bs = int(best.k[i]), float(best.speedup[i])
    if not bool(best.speculate[i]):
        return (f"At batch {s.batch:,} no draft length from 1 to {K_SLIDER_MAX} beats plain decoding (the best, k = {bk}, gives {bs:.2f}×): the best choice here "
                "is not to speculate.")
    if bk == s.k:
        return f"At batch {s.batch:,}, k = {s.k} is also the best draft length ({bs:.2f}×)."
    return f"At batch {s.batch:,} the best draft length is k = {bk} ({bs:.2f}×)."


def batch_words(s: BusyAndTrees) -> str:
    """The batch chart's text alternative: your k's speedup across batch sizes and at yours."""
    speed = np.asarray(s.costs.speedup, dtype=float)
    edge = s.break_even_batch
    stops = (f"it stops paying at batch {edge:,}" if edge is not None else
             f"it pays at every batch up to {BATCH_MAX:,}")
    return (f"Line chart of the speedup over plain decoding against the batch size B (log scale), "
            f"for q = {s.q:.2f}, k = {s.k}, c = {s.c:.3f} on the H200's measured pass times: "
            f"{speed[0]:.2f}× at B = 1, {speed[-1]:.2f}× at B = {BATCH_MAX:,}; {stops}. The ring, "
            f"your batch B = {s.batch:,}: {float(s.here.speedup):.2f}×. The dashed line is the best "
            f"k at each batch ({float(np.asarray(s.best.speedup).max()):.2f}× at best).")


def split_words(s: BusyAndTrees) -> str:
    """The split chart's text alternative: one user's time per token, plain and speculative."""
    r = split_rows(s)
    return (f"Bars of the time per generated token for one user at batch {s.batch:,}: plain decoding "
            f"{r['plain'][0]:.2f} ms; speculative {r['draft'][1] + r['verify'][1]:.2f} ms, of which "
            f"{r['draft'][1]:.2f} ms drafting and {r['verify'][1]:.2f} ms verifying.")


def cost_words(s: BusyAndTrees, curve, base: float) -> str:
    """The cost chart's text alternative: where your plain step and verify pass sit on it."""
    n = [s.batch, s.batch * (s.k + 1)]
    r = [float(curve.time_ms(x)) / base for x in n]
    return (f"Time of one pass relative to scoring one position, against the positions it scores, "
            f"both axes logarithmic, for an H200 with an 8B model shape and for this CPU with the real "
            f"model. At your batch the plain step scores {n[0]:,} positions ({r[0]:.2f}× one position) "
            f"and the verify pass {n[1]:,} ({r[1]:.2f}×).")


def tree_curve_words(s: BusyAndTrees) -> str:
    """The tree chart's text alternative: both curves at your q, and the measured dots."""
    ch, tr = s.chain_sim, s.tree_sim
    return (f"Lines of the tokens per verify pass against each candidate's acceptance rate q, theory, "
            f"for a chain of {s.positions} and a tree of {s.width} × {s.depth} (the same "
            f"{s.positions} positions). At q = {s.tree_q:.2f}: chain {s.chain_theory:.2f} (measured "
            f"{ch.tokens_per_round:.2f}), tree {s.tree_theory:.2f} (measured {tr.tokens_per_round:.2f}).")

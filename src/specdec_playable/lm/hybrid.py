"""The hybrid draft: the memory's guesses where past replies agree, the head's everywhere else.

The memory draft (:mod:`.memory`) costs microseconds and is right far more often than not where
it proposes several tokens (a long match whose continuation most past replies shared); the draft
head (:mod:`.head`) reads the model's own features and has a guess at every position, for a
fraction of a step. Greedy rounds put both drafts' guesses in one tree, verified in one pass
(:meth:`HybridRun.draft_tree`). Sampled rounds draft one chain: the memory's when its greedy chain
has at least ``min_memory`` tokens, else the head's (decided before any draw, so speculative
sampling stays exact). The head observes every target pass either way, so its features stay
current when the memory drafts.

Greedy rounds are priced (``priced``, the default): a verify pass costs more the more positions
it checks, and asking the head costs time of its own, both in steps of plain decoding and both
far dearer in 4 bits than in float32 (:data:`PRICES`). Each round the memory's chain is valued by
its shares (how many past continuations agreed, scaled by :data:`SHARE_KEPT`), and the head is
asked only where the tokens it is expected to add (valued by the q its guesses had in this run so
far) pay for its time and their positions; the merged tree then keeps the guesses of highest
value, as many as pay for their place in the pass (:func:`priced_tree`).

Each round records which draft won (:attr:`.decode.Update.drafted_by`: ``"memory"`` or
``"request"`` for the memory's two indexes, ``"head"`` for the head).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .head import DraftHead
from .memory import MemoryDraft
from .tree import EMPTY_TREE, most_valued


@dataclass(frozen=True)
class Prices:
    """What a round costs, in steps of plain decoding: a verify pass over ``n`` positions
    (interpolated between the measured ``positions``) and one guess of the draft head."""

    positions: tuple[int, ...]
    steps: tuple[float, ...]
    head_guess: float

    def pass_steps(self, n: int) -> float:
        return float(np.interp(n, self.positions, self.steps))


#: Per weight format, from the shipped pass-cost curves (``assets/pass_cost_cpu.csv`` and
#: ``assets/pass_cost_cpu_q4.csv``: each pass's median over the one-position pass, at the
#: positions both measured) and the head's guess as measured by ``benchmarks/bench_memory.py``
#: (about 1.04 ms, over a 40.4 ms float32 step and a 10.0 ms 4-bit step). A test holds the pass
#: costs to the shipped curves.
PRICES = {
    "f32": Prices((1, 2, 5, 9, 17), (1.0, 1.049, 1.190, 1.265, 1.589), 0.026),
    "q4": Prices((1, 2, 5, 9, 17), (1.0, 1.074, 1.425, 2.045, 3.210), 0.104),
}
#: How much of its share a memory guess is worth: of the guesses whose match's continuations
#: agreed 90% or more, 78% were kept along the held-out replies (``benchmarks/bench_memory.py``).
SHARE_KEPT = 0.8
#: What the head is expected to keep a round before the run has asked it (its mean along the
#: held-out replies, about one guess of four), and how fast the run's own rounds replace that.
HEAD_PRIOR, HEAD_RATE = 1.0, 0.1


@dataclass(frozen=True)
class HybridDraft:
    """The memory draft where it offers ``min_memory`` tokens or more, the draft head otherwise.

    Parameters
    ----------
    memory : MemoryDraft
    head : DraftHead
    min_memory : int
        The shortest memory chain that wins the round, in [1, 16].

    Examples
    --------
    >>> m = get_model()                                                         # doctest: +SKIP
    >>> speculate(m, m.tokenizer.chat("Write an email"), HybridDraft(), 4).drafted_by[:3]  # doctest: +SKIP
    ('head', 'memory', 'memory')
    """

    memory: MemoryDraft = field(default_factory=MemoryDraft)
    head: DraftHead = field(default_factory=DraftHead)
    min_memory: int = 2
    #: Greedy rounds verify both drafts in one pass, as a tree (:meth:`HybridRun.draft_tree`);
    #: False: one chain a round, by the rule above. Sampling always drafts one chain.
    merge: bool = True
    #: In a merged round, the memory's chain alone (the head not asked) when it is at least this
    #: long (or as long as the round allows); 0: never on length alone.
    memory_alone: int = 0
    #: In a merged round, the memory's chain alone when it copies the request itself (the prompt
    #: or the reply so far) for the whole round: a reply repeating its prompt is rarely guessed
    #: wrong there, and the head's guesses would only lengthen the pass.
    request_alone: bool = True
    #: Greedy merged rounds ask the head only where it pays and keep only the guesses that pay
    #: for their place in the pass, at the model's weight format's prices (:data:`PRICES`);
    #: False: the head is always asked and the whole merged tree verified.
    priced: bool = True
    #: The weight format whose prices a priced run pays: ``""``, the model's own (``"f32"`` or
    #: ``"q4"``, :data:`PRICES`).
    prices_of: str = ""
    name: str = "hybrid"
    #: Teacher-forced scoring hands this draft the target's features (for its head).
    needs_features = True

    def __post_init__(self):
        if not (isinstance(self.min_memory, int) and 1 <= self.min_memory <= 16):
            raise ValueError(f"min_memory must be an integer in [1, 16]; got {self.min_memory!r}")
        if not (isinstance(self.memory_alone, int) and 0 <= self.memory_alone <= 16):
            raise ValueError(f"memory_alone must be an integer in [0, 16]; got {self.memory_alone!r}")
        if self.prices_of not in ("", *PRICES):
            raise ValueError(f"prices_of must be '' or one of {sorted(PRICES)}; got {self.prices_of!r}")

    @property
    def capture(self) -> tuple[int, ...]:
        return self.head.capture

    def features(self, pass_):
        return self.head.features(pass_)

    def begin(self, model) -> "HybridRun":
        fmt = self.prices_of or getattr(model, "format", "f32")
        prices = PRICES.get(fmt, PRICES["f32"]) if self.priced else None
        return HybridRun(self.head.begin(model), self.memory.begin(model), self.min_memory,
                         merge=self.merge, memory_alone=self.memory_alone,
                         request_alone=self.request_alone, prices=prices)


class HybridRun:
    """One run: the head's state (fed every pass) and the memory's."""

    def __init__(self, head_run, memory_run, min_memory: int, *, merge: bool = True,
                 memory_alone: int = 0, request_alone: bool = False,
                 prices: Prices | None = None) -> None:
        self.head, self.memory, self.min_memory = head_run, memory_run, min_memory
        self.memory_alone, self.request_alone = memory_alone, request_alone
        self.prices = prices
        #: The head's expected kept guesses a round, from its q in this run's rounds so far.
        self.head_expects = HEAD_PRIOR
        #: Merged rounds drafted, and those that asked the head.
        self.rounds = self.asked = 0
        #: Whether a greedy round drafts one tree of both drafts (the decoders ask).
        self.merges = bool(merge)
        self.capture = head_run.capture
        #: Which draft the last proposal came from (``"memory"``, ``"request"``, ``"head"``).
        self.last_source = ""
        self._chain: list[int] = []
        self._mine = ""

    def observe(self, hidden, captured=None) -> None:
        self.head.observe(hidden, captured)

    def propose(self, context, k: int, *, temperature: float = 0.0, top_p: float = 1.0, rng=None):
        # The choice is made on the memory's greedy chain, before any draw: were it made on a
        # sampled chain, the guesses the memory kept would not be draws from its q, and
        # speculative sampling would no longer keep the model's distribution.
        mem = self.memory.propose(context, k)
        if len(mem) >= min(self.min_memory, k):
            if temperature > 0.0:
                mem = self.memory.propose(context, k, temperature=temperature, top_p=top_p, rng=rng)
            self.last_source = self.memory.last_source
            return mem
        self.last_source = "head"
        return self.head.propose(context, k, temperature=temperature, top_p=top_p, rng=rng)

    def draft_tree(self, context, width: int, depth: int, shape: str = "spine"):
        """One tree holding both drafts: the head's tree (``width``, ``depth``, ``shape``) with
        the memory's greedy chain grafted on where it leaves the head's guesses (a shared prefix
        is one path). One verify pass then keeps whichever agrees with the model longer. Where
        the memory's chain copies the request for the whole ``depth`` (``request_alone``), or
        reaches ``memory_alone`` tokens, it is the round's only chain. Priced, the head is
        asked only where it pays (:meth:`_head_pays`) and the tree keeps the guesses that pay
        for their place in the pass (:func:`priced_tree`)."""
        chain, shares = self.memory.chain(context, depth)
        mine = self.memory.last_source
        self._chain, self._mine = chain.tolist(), mine
        self.rounds += 1
        if ((self.memory_alone and len(chain) >= min(self.memory_alone, depth))
                or (self.request_alone and mine == "request" and len(chain) >= depth)):
            self.last_source = mine
            return merge_chain(EMPTY_TREE, chain)
        if self.prices is not None and not self._head_pays(shares, width, depth):
            tree = priced_tree(merge_chain(EMPTY_TREE, chain), chain, shares, self.prices)
            self.last_source = mine if len(tree) else ""
            return tree
        head = self.head.draft_tree(context, width, depth, shape)
        self.asked += 1
        tree = merge_chain(head, chain)
        if self.prices is not None:
            self.head_expects += HEAD_RATE * (float(node_values(head).sum()) - self.head_expects)
            tree = priced_tree(tree, chain, shares, self.prices)
        kept_chain = _holds(tree, chain[:1])  # the memory's first guess is in the pass
        kept_head = bool((~np.isnan(tree.probs)).any())
        self.last_source = ("+".join(s for s in ("head", mine) if s) if kept_chain and kept_head
                            else (mine if kept_chain else ("head" if kept_head else "")))
        return tree

    def _head_pays(self, shares, width: int, depth: int) -> bool:
        """Whether asking the head is expected to write more tokens per step than the memory's
        chain alone. The chain is worth ``e`` tokens (its values, :func:`node_values`) for a pass
        over its positions; the head adds what it expects to keep a round (:attr:`head_expects`)
        where the chain leaves room (a share ``1 - e / depth`` of the round), for its guesses'
        time and as many more positions in the pass."""
        p = self.prices
        n = len(shares)
        e = float(np.cumprod(SHARE_KEPT * np.asarray(shares, np.float64)).sum())
        room = max(0.0, 1.0 - e / depth)
        guesses = width * depth
        alone = (1.0 + e) / p.pass_steps(1 + n)
        asked = ((1.0 + e + self.head_expects * room)
                 / (p.pass_steps(1 + n + guesses * room) + p.head_guess * guesses))
        return asked > alone

    def credit(self, tree, path) -> str:
        """Whose guesses a verified round of :meth:`draft_tree` kept (:func:`_credit`)."""
        return _credit(tree, path, self._chain, self._mine) if path else self.last_source


def _credit(tree, path, chain, mine: str) -> str:
    """Whose guesses the kept ``path`` (node indices) of a merged tree were: the memory's
    (``mine``) when it runs through a grafted node, both (``"head+" + mine``) when the memory's
    chain holds it too, else the head's (``path`` not empty)."""
    if any(np.isnan(tree.probs[i]) for i in path):
        return mine
    toks = [int(tree.tokens[i]) for i in path]
    return f"head+{mine}" if chain[:len(toks)] == toks else "head"


def _nodes_along(tree, tokens) -> list[int]:
    """The nodes of ``tree`` that hold ``tokens`` from its root, as far as the tree follows them."""
    nodes, node = [], -1
    for tok in (int(t) for t in tokens):
        node = next((i for i in range(len(tree)) if tree.parents[i] == node and tree.tokens[i] == tok), None)
        if node is None:
            break
        nodes.append(node)
    return nodes


def _holds(tree, path) -> bool:
    """Whether ``tree`` holds the tokens ``path`` from its root (an empty path: no)."""
    return len(path) > 0 and len(_nodes_along(tree, path)) == len(path)


def node_values(tree, chain=(), shares=()) -> np.ndarray:
    """Each node's chance of being kept, as the drafts see it: the product along its path of the
    head's q, or of :data:`SHARE_KEPT` times the memory's share where the node is the memory's
    (``chain`` with its ``shares``; on both, the larger)."""
    on_chain = {node: SHARE_KEPT * float(share)
                for node, share in zip(_nodes_along(tree, chain[:len(shares)]), shares)}
    values = np.zeros(len(tree))
    for i in range(len(tree)):
        q = float(tree.probs[i])
        p = max(0.0 if np.isnan(q) else q, on_chain.get(i, 0.0))
        values[i] = p * (values[tree.parents[i]] if tree.parents[i] >= 0 else 1.0)
    return values


def priced_tree(tree, chain, shares, prices: Prices):
    """The nodes of ``tree`` worth their place: the ``n`` of highest value (:func:`node_values`,
    a node before its children) for the ``n`` that gives the most expected tokens per step of
    the pass (one more than the values' sum over the pass's cost of ``1 + n`` positions)."""
    if not len(tree):
        return tree
    values = node_values(tree, chain, shares)
    # tokens a round with the n best nodes, n = 0 .. len(tree), over its pass of 1 + n positions
    expected = 1.0 + np.concatenate([[0.0], np.cumsum(np.sort(values)[::-1])])
    worth = expected / np.interp(np.arange(1, len(tree) + 2), prices.positions, prices.steps)
    best_n = int(np.argmax(worth > worth.max() - 1e-12))  # the fewest nodes at the best
    return tree.subtree(most_valued(tree.parents, values, best_n))


def merge_chain(tree, chain):
    """``tree`` (a :class:`.tree.DraftTree`) with ``chain`` grafted from the root: the chain
    follows the tree's nodes while their tokens agree, then goes on as new nodes (probability NaN:
    the head did not propose them), nodes numbered parents first, at most ``NODES_MAX`` in all."""
    from .tree import NODES_MAX, DraftTree

    parents, tokens = tree.parents.tolist(), tree.tokens.tolist()
    probs = tree.probs.tolist()
    node = -1
    for tok in (int(t) for t in chain):
        child = next((i for i, (p, t) in enumerate(zip(parents, tokens)) if p == node and t == tok), None)
        if child is None:
            if len(tokens) >= NODES_MAX:
                break
            parents.append(node)
            tokens.append(tok)
            probs.append(float("nan"))
            child = len(tokens) - 1
        node = child
    return DraftTree(np.array(parents, np.int64), np.array(tokens, np.int64), np.array(probs, np.float64))


__all__ = ["PRICES", "HybridDraft", "HybridRun", "Prices", "merge_chain", "node_values", "priced_tree"]

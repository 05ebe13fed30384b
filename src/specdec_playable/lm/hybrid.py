"""The hybrid draft: the memory's guesses where past replies agree, the head's everywhere else.

Each round both drafts may propose. The memory draft (:mod:`.memory`) costs microseconds and is
right far more often than not where it proposes several tokens (a long match whose continuation
most past replies shared); the draft head (:mod:`.head`) reads the model's own features and has a
guess at every position, for a fraction of a step. The rule: the memory's chain when its greedy
chain has at least ``min_memory`` tokens, else the head's (decided before any sampling draw, so
speculative sampling stays exact). The head observes every target pass either way,
so its features stay current when the memory drafts.

Each round records which draft won (:attr:`.decode.Update.drafted_by`: ``"memory"`` or
``"request"`` for the memory's two indexes, ``"head"`` for the head).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .head import DraftHead
from .memory import MemoryDraft
from .tree import EMPTY_TREE


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
    name: str = "hybrid"
    #: Teacher-forced scoring hands this draft the target's features (for its head).
    needs_features = True

    def __post_init__(self):
        if not (isinstance(self.min_memory, int) and 1 <= self.min_memory <= 16):
            raise ValueError(f"min_memory must be an integer in [1, 16]; got {self.min_memory!r}")
        if not (isinstance(self.memory_alone, int) and 0 <= self.memory_alone <= 16):
            raise ValueError(f"memory_alone must be an integer in [0, 16]; got {self.memory_alone!r}")

    @property
    def capture(self) -> tuple[int, ...]:
        return self.head.capture

    def features(self, pass_):
        return self.head.features(pass_)

    def begin(self, model) -> "HybridRun":
        return HybridRun(self.head.begin(model), self.memory.begin(model), self.min_memory,
                         self.merge, self.memory_alone, self.request_alone)


class HybridRun:
    """One run: the head's state (fed every pass) and the memory's."""

    def __init__(self, head_run, memory_run, min_memory: int, merge: bool = True,
                 memory_alone: int = 0, request_alone: bool = False) -> None:
        self.head, self.memory, self.min_memory = head_run, memory_run, min_memory
        self.memory_alone, self.request_alone = memory_alone, request_alone
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
        reaches ``memory_alone`` tokens, it is the round's only chain."""
        chain = self.memory.propose(context, depth)
        mine = self.memory.last_source
        self._chain, self._mine = chain.tokens.tolist(), mine
        if ((self.memory_alone and len(chain) >= min(self.memory_alone, depth))
                or (self.request_alone and mine == "request" and len(chain) >= depth)):
            self.last_source = mine
            return merge_chain(EMPTY_TREE, chain.tokens)
        head = self.head.draft_tree(context, width, depth, shape)
        tree = merge_chain(head, chain.tokens)
        self.last_source = ("+".join(s for s in ("head", mine) if s) if len(chain) and len(head)
                            else (mine if len(chain) else "head"))
        return tree

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


__all__ = ["HybridDraft", "HybridRun", "merge_chain"]

"""The measured chain-versus-tree table of the real model, read without the model.

``benchmarks/bench_trees.py --write-csv`` ran greedy speculative decoding with the real model
and a draft (the meta's ``draft``: the draft head or the n-gram table) on Episode 7's prompts, as a chain of k drafts and as trees with the same
number of verified positions per pass, and wrote ``assets/lm/tree_vs_chain.csv`` (with its
``.meta.json``). :func:`load_tree_vs_chain` reads it into one frozen record of read-only columns.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np

from ..lm.registry import draft_key
from ..shipped import asset_path

CSV_NAME = "lm/tree_vs_chain.csv"
META_NAME = "lm/tree_vs_chain.meta.json"
#: The same measurement with the memory draft (``bench_trees.py --draft memory``).
MEMORY_CSV_NAME = "lm/tree_vs_chain_memory.csv"
MEMORY_META_NAME = "lm/tree_vs_chain_memory.meta.json"
#: The pooled rows' prompt name (every prompt's passes together).
POOLED = "all"


@dataclass(frozen=True, eq=False)
class TreeVsChain:
    """One row per configuration (shape) and prompt; columns as in the CSV.

    Attributes
    ----------
    positions : numpy.ndarray of int64
        Verified positions a pass may hold (the shape's size; a real tree may be smaller).
    label, shape, prompt : tuple of str
        ``"chain k=4"`` or ``"spine 2x2"``; ``"spine"`` or ``"full"``; a prompt's name or ``"all"``.
    width, depth, passes : numpy.ndarray of int64
    tokens_per_pass : numpy.ndarray
        Measured tokens written per verify pass (accepted drafts plus the target's own token).
    nodes_per_pass : numpy.ndarray
        Drafted tokens actually verified per pass (the draft stops where it knows no context).
    q : numpy.ndarray
        Share of judged candidates the target accepted.
    pass_cost_vs_plain : numpy.ndarray
        A verify pass's measured time over a plain decode step's, on this CPU.
    draft_cost_vs_plain : numpy.ndarray
        The draft's measured time per round (building the tree) over a plain decode step's.
    """

    positions: np.ndarray
    label: tuple
    shape: tuple
    width: np.ndarray
    depth: np.ndarray
    prompt: tuple
    passes: np.ndarray
    tokens_per_pass: np.ndarray
    nodes_per_pass: np.ndarray
    q: np.ndarray
    pass_cost_vs_plain: np.ndarray
    draft_cost_vs_plain: np.ndarray

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v.setflags(write=False)

    def __len__(self) -> int:
        return int(self.positions.size)

    def rows(self, prompt: str = POOLED) -> np.ndarray:
        """Indices of one prompt's rows (default: the pooled rows), in file order."""
        return np.flatnonzero(np.array(self.prompt) == prompt)

    def prompts(self) -> tuple[str, ...]:
        """The prompts measured, in file order, without the pooled name."""
        return tuple(dict.fromkeys(p for p in self.prompt if p != POOLED))


_INTS = ("positions", "width", "depth", "passes")
_FLOATS = ("tokens_per_pass", "nodes_per_pass", "q", "pass_cost_vs_plain", "draft_cost_vs_plain")
_TEXTS = ("label", "shape", "prompt")


@lru_cache(maxsize=2)
def load_tree_vs_chain(name: str = CSV_NAME) -> TreeVsChain:
    """The shipped table (the draft head's; :data:`MEMORY_CSV_NAME` the memory draft's), read
    once per process and shared read-only."""
    if name not in (CSV_NAME, MEMORY_CSV_NAME):
        raise ValueError(f"name must be {CSV_NAME!r} or {MEMORY_CSV_NAME!r}; got {name!r}")
    with open(asset_path(name), newline="") as fh:
        recs = list(csv.DictReader(fh))
    if not recs:
        raise ValueError(f"{name} holds no rows")
    cols = {n: np.array([int(r[n]) for r in recs], np.int64) for n in _INTS}
    cols |= {n: np.array([float(r[n]) for r in recs]) for n in _FLOATS}
    cols |= {n: tuple(r[n] for r in recs) for n in _TEXTS}
    return TreeVsChain(**cols)


@lru_cache(maxsize=2)
def load_tree_vs_chain_meta(name: str = META_NAME) -> dict:
    """How, when and on what machine the table was measured (:data:`MEMORY_META_NAME`: the
    memory draft's)."""
    if name not in (META_NAME, MEMORY_META_NAME):
        raise ValueError(f"name must be {META_NAME!r} or {MEMORY_META_NAME!r}; got {name!r}")
    return json.loads(asset_path(name).read_text())


#: The drafts a measurement may name (its meta's ``draft.name``), in the pages' words.
DRAFT_WORDS = {"head": "the draft head", "ngram": "the n-gram table", "memory": "the memory draft"}


def draft_name(meta: dict | None = None) -> str:
    """``"head"`` or ``"ngram"``: the draft a real-tree record (the shipped table's meta by
    default, or the drawn step's) was measured with; records older than the head name none (the
    n-gram table, once called "learned")."""
    meta = load_tree_vs_chain_meta() if meta is None else meta
    return draft_key(meta["draft"].get("name", "ngram"))


def draft_words(meta: dict | None = None) -> str:
    """``"the draft head"`` or ``"the n-gram table"``: :func:`draft_name` in the pages' words."""
    return DRAFT_WORDS[draft_name(meta)]


# --- what the table says ---------------------------------------------------------------------


def pooled(table: TreeVsChain) -> dict[int, np.ndarray]:
    """The table's rows pooled over prompts: row indices per number of verified positions, the chain first in each group."""
    rows = table.rows()
    groups: dict[int, list[int]] = {}
    for i in rows:
        groups.setdefault(int(table.positions[i]), []).append(int(i))
    return {n: np.array(sorted(ix, key=lambda i: table.width[i] != 1)) for n, ix in groups.items()}


def best_tree(table: TreeVsChain, positions: int, prompt: str = "all") -> tuple[int, int]:
    """Row of the chain and row of the tree with the most tokens per pass, at ``positions``."""
    rows = [int(i) for i in table.rows(prompt) if table.positions[i] == positions]
    chain = next(i for i in rows if table.width[i] == 1)
    trees_ = [i for i in rows if table.width[i] > 1]
    best = max(trees_, key=lambda i: (table.tokens_per_pass[i], -i))
    return chain, best


def pass_costs(table: TreeVsChain, curve) -> np.ndarray:
    """Each row's round in plain steps on this CPU: the verify pass over the root and the
    candidates it checked on average, priced by the measured CPU pass-time curve
    (``assets/pass_cost_cpu.csv`` or this server's), plus the draft's measured time to build the
    tree (``draft_cost_vs_plain``)."""
    passes = np.asarray(curve.time_ms(table.nodes_per_pass + 1.0)) / curve.time_ms(1)
    return passes + table.draft_cost_vs_plain

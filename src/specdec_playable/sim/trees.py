"""Token trees: guessing in branches, verified in one pass.

A chain drafts ``k`` tokens one after another; one miss ends the round. A tree
drafts several candidates at a position, so a miss on one branch can be
rescued by a sibling. The big model scores every node of the tree in one pass
(a tree attention mask lets each node see only its own ancestors) and keeps
the longest root-to-node path it agrees with, plus one token of its own.

A tree is given as a parent array: node ``i`` (numbered from 0, parents before
children) hangs under ``parents[i]``, or under the root (the last accepted
token) when ``parents[i] == -1``. Its number of nodes is the number of
positions the verify pass scores, besides the root.

The simulated model, stated once: **each candidate is accepted with
probability q, independently of every other candidate**, given that its
parent was accepted (as in the earlier episodes, which judge one candidate
per position). Real drafts are not independent (two siblings cannot both be
the big model's greedy token), so this model flatters wide trees; the real
model's measured trees are the check on it.

With that model, the chance that the accepted path below a node reaches depth
at least ``m`` obeys

    P(L_v >= m) = 1 - prod over children u of (1 - q P(L_u >= m - 1)),

with ``P(L >= 0) = 1``. The round yields ``1 + E[L_root]`` tokens; a chain of
``k`` nodes gives Leviathan et al.'s ``(1 - q^(k+1)) / (1 - q)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import validate as _v

#: Largest tree the functions take (nodes scored besides the root).
NODES_MAX = 1024


def _parents(parents) -> np.ndarray:
    p = np.asarray(parents)
    if p.ndim != 1 or p.size == 0 or p.size > NODES_MAX or p.dtype.kind not in "iu":
        raise ValueError(
            f"parents must be a 1-D integer array of 1 to {NODES_MAX} nodes; got {parents!r}"[:200]
        )
    p = p.astype(np.int64)
    bad = (p < -1) | (p >= np.arange(p.size))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"parents[{i}] must be -1 (the root) or an earlier node in [0, {i - 1}]; got {int(p[i])}"
        )
    return p


def chain(k) -> np.ndarray:
    """The parent array of a chain of ``k`` drafts.

    Examples
    --------
    >>> chain(3).tolist()
    [-1, 0, 1]
    """
    k = _v.integer("k", k, 1, NODES_MAX)
    return np.arange(-1, k - 1, dtype=np.int64)


def spine_tree(width, depth) -> np.ndarray:
    """``width`` candidates at each of ``depth`` levels, all under the previous level's first.

    The first candidate of each level is the draft's top guess and carries the
    next level; the others are its alternatives (the draft's 2nd..``width``-th
    guesses at that position). It scores ``width * depth`` positions; with
    ``width == 1`` it is the chain of ``depth``.

    Examples
    --------
    >>> spine_tree(2, 3).tolist()
    [-1, -1, 0, 0, 2, 2]
    """
    w = _v.integer("width", width, 1, NODES_MAX)
    d = _v.integer("depth", depth, 1, NODES_MAX)
    if w * d > NODES_MAX:
        raise ValueError(f"width * depth must be at most {NODES_MAX}; got {w * d}")
    level_first = np.arange(d) * w                       # the top guess of each level
    parent_of_level = np.concatenate([[-1], level_first[:-1]])
    return np.repeat(parent_of_level, w).astype(np.int64)


def full_tree(width, depth) -> np.ndarray:
    """Every node has ``width`` children, ``depth`` levels deep (``width + ... + width^depth`` nodes).

    Examples
    --------
    >>> full_tree(2, 2).tolist()
    [-1, -1, 0, 0, 1, 1]
    """
    w = _v.integer("width", width, 1, NODES_MAX)
    d = _v.integer("depth", depth, 1, NODES_MAX)
    size = sum(w**j for j in range(1, d + 1))
    if size > NODES_MAX:
        raise ValueError(f"a full tree of width {w} and depth {d} has {size} nodes; at most "
                         f"{NODES_MAX} are allowed")
    parents, prev = [], [-1]
    for _ in range(d):
        level = []
        for p in prev:
            for _ in range(w):
                level.append(len(parents))
                parents.append(p)
        prev = level
    return np.array(parents, dtype=np.int64)


def depths(parents) -> np.ndarray:
    """Depth of every node (children of the root have depth 1).

    Examples
    --------
    >>> depths(spine_tree(2, 2)).tolist()
    [1, 1, 2, 2]
    """
    p = _parents(parents)
    d = np.ones(p.size, dtype=np.int64)
    for i in range(p.size):
        if p[i] >= 0:
            d[i] = d[p[i]] + 1
    return d


def ancestor_mask(parents) -> np.ndarray:
    """The tree attention mask: ``mask[i, j]`` is True when node ``i`` may attend to node ``j``.

    A node sees itself and its ancestors (and, outside this matrix, every
    committed token before the root). For a chain it is the causal mask.

    Examples
    --------
    >>> ancestor_mask([-1, -1, 0]).astype(int).tolist()
    [[1, 0, 0], [0, 1, 0], [1, 0, 1]]
    """
    p = _parents(parents)
    mask = np.eye(p.size, dtype=bool)
    for i in range(p.size):
        if p[i] >= 0:
            mask[i] |= mask[p[i]]
    return mask


def _path_depth_tail(p: np.ndarray, q: float) -> np.ndarray:
    """``P(L_root >= m)`` for m = 1..max depth, by the recursion in the module docstring."""
    top = int(depths(p).max())
    # miss[v, m-1] = product over v's children u of (1 - q P(L_u >= m - 1)); a leaf keeps 1.
    miss = np.ones((p.size, top))
    miss_root = np.ones(top)
    reach = np.ones(top)                        # P(L_v >= m) for m = 0..top-1, reused
    for v in range(p.size - 1, -1, -1):         # children (higher numbers) before parents
        reach[1:] = 1.0 - miss[v, :-1]
        rescue = 1.0 - q * reach
        if p[v] < 0:
            miss_root *= rescue
        else:
            miss[p[v]] *= rescue
    return 1.0 - miss_root


def expected_tokens(parents, q) -> float:
    """Mean tokens a round with this draft tree yields (closed form, independent candidates).

    ``1 + sum over m >= 1 of P(the accepted path is at least m deep)``.

    Examples
    --------
    >>> round(expected_tokens(chain(4), 0.8), 4)       # Leviathan et al.: (1 - 0.8**5) / 0.2
    3.3616
    >>> round(expected_tokens(spine_tree(2, 2), 0.5), 4)
    2.125
    """
    p = _parents(parents)
    q = _v.probability("q", q)
    return 1.0 + float(_path_depth_tail(p, q).sum())


@dataclass(frozen=True, eq=False)
class TreeSimulation:
    """Monte-Carlo rounds over one draft tree.

    Attributes
    ----------
    accepted : numpy.ndarray
        Length of the longest accepted path in each round (0..max depth).
    tokens_per_round : float
        Mean of ``accepted + 1``.
    ci_low, ci_high : float
        95% normal-approximation interval of the mean.
    """

    accepted: np.ndarray
    tokens_per_round: float
    ci_low: float
    ci_high: float


def simulate(parents, q, n_rounds, *, rng) -> TreeSimulation:
    """Simulate rounds over a draft tree: every candidate accepted independently with probability q.

    All uniforms are drawn at once, one per node and round; nodes are walked in
    order (parents first), each over all rounds at once.

    Examples
    --------
    >>> simulate(chain(3), 1.0, 5, rng=0).tokens_per_round
    4.0
    """
    p = _parents(parents)
    q = _v.probability("q", q)
    n_rounds = _v.integer("n_rounds", n_rounds, 1, 10**6)
    rng = _v.generator(rng)
    hit = rng.random((n_rounds, p.size)) < q
    d = depths(p)
    ok = np.empty_like(hit)
    for v in range(p.size):
        ok[:, v] = hit[:, v] if p[v] < 0 else hit[:, v] & ok[:, p[v]]
    accepted = np.where(ok, d, 0).max(axis=1)
    tokens = accepted + 1.0
    mean = float(tokens.mean())
    half = 1.959963984540054 * float(tokens.std(ddof=1)) / np.sqrt(n_rounds) if n_rounds > 1 else 0.0
    return TreeSimulation(accepted=accepted, tokens_per_round=mean, ci_low=mean - half,
                          ci_high=mean + half)


def places(depths) -> np.ndarray:
    """Where each node sits among the nodes of its depth, for a drawing: nodes of one depth are
    spread evenly around 0, the first on top (x is the depth itself).

    Examples
    --------
    >>> places([1, 1, 2]).tolist()
    [0.5, -0.5, 0.0]
    """
    depth = np.asarray(depths)
    y = np.zeros(depth.size)
    for d in np.unique(depth):
        idx = np.flatnonzero(depth == d)
        y[idx] = (idx.size - 1) / 2 - np.arange(idx.size)
    return y


def crossings(a, b, xs) -> list[float]:
    """The ``x`` where the lead changes between curves ``a`` and ``b`` sampled at ``xs`` (a chain
    and a tree's tokens per pass over the acceptance rate, say).

    Points where the two are equal (within 1e-12) are skipped; between two points with opposite
    leads the crossing is interpolated linearly (or is the first equal point between them).

    Examples
    --------
    >>> crossings([0.0, 1.0], [1.0, 0.0], [0.0, 1.0])
    [0.5]
    """
    xs = np.asarray(xs, dtype=float)
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    lead = np.flatnonzero(np.abs(d) > 1e-12)
    out = []
    for i, j in zip(lead[:-1], lead[1:]):
        if np.sign(d[i]) == np.sign(d[j]):
            continue
        if j - i > 1:                      # equal somewhere in between: the first such point
            out.append(float(xs[i + 1]))
        else:
            out.append(float(xs[i] + (xs[j] - xs[i]) * d[i] / (d[i] - d[j])))
    return out

"""Token-tree speculative decoding with the real model: guess in branches, check them in one pass.

A round drafts a tree of guesses from a draft's top-w candidates per level (the n-gram table's
:meth:`.ngram.NgramDraft.candidates`, or the draft head's own tree,
:meth:`.head.HeadRun.draft_tree`), in one of the shapes of :mod:`specdec_playable.sim.trees`:

* ``"spine"``: at each of ``depth`` levels, the draft's ``width`` best guesses, all hanging under
  the previous level's best guess (``width * depth`` nodes; width 1 is the chain of ``depth``);
* ``"full"``: every node gets the draft's ``width`` best guesses after its own path
  (``width + ... + width^depth`` nodes);
* ``"dynamic"`` (the draft head only; EAGLE-2's dynamic tree): the head expands, level by level,
  the ``width`` guesses whose path it finds likeliest, then keeps the ``width * depth`` likeliest
  nodes of all it drafted (as many as a spine).

With the n-gram table, a level (or, in a full tree, a node's children) is drafted only where the
draft's best guess clears its ``min_share`` (exactly where the chain draft
:meth:`.ngram.NgramDraft.propose` would go on), and only where the draft knows the context; so a
real tree may be smaller than its shape. The draft head always drafts the whole shape.

One target pass scores the root (the last committed token, not yet fed) and every node. Each node
sits at the rotary position of its depth after the committed text, and attends to the committed
text, the root and its own ancestors only (:func:`tree_mask`, built on
:func:`specdec_playable.sim.trees.ancestor_mask`). A node is accepted when its parent was accepted
(or is the root) and its token is the target's greedy token at its parent. Siblings differ, so the
accepted nodes form one path; the target's own token after the path's end is written too (a
correction when that end had children, all rejected; a bonus when it is a leaf). The cache then keeps
the root and the accepted path only (:meth:`.model.KVCache.compact`).

Greedy only: the output equals plain greedy decoding token for token (a test checks it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, fields

import numpy as np

from ..sim import validate as _v
from ..sim import trees
from ..sim.events import Event
from .decode import Clock, Generation, RunLog, Update, captures, check_run, drafted_by, finish
from .drafts import DraftsTrees, GivesCandidates, Observes

SHAPES = ("spine", "full")
#: The shape only the draft head grows (EAGLE-2's dynamic tree: see :meth:`.head.HeadRun.draft_tree`).
DYNAMIC = "dynamic"
#: Largest width (the draft keeps 8 continuations per context), depth and tree (nodes per pass).
WIDTH_MAX = 8
DEPTH_MAX = 16
NODES_MAX = 64


@dataclass(frozen=True, eq=False)
class DraftTree:
    """A draft tree: node ``i`` holds token ``tokens[i]`` under ``parents[i]`` (-1: the root).

    Nodes are numbered parents first; siblings hold different tokens.

    Attributes
    ----------
    parents : numpy.ndarray of int64, shape (n,)
    tokens : numpy.ndarray of int64, shape (n,)
    probs : numpy.ndarray of float64, shape (n,)
        The draft's probability of each node's token after its parent's path (NaN if unknown).
    """

    parents: np.ndarray
    tokens: np.ndarray
    probs: np.ndarray

    def __len__(self) -> int:
        return int(self.parents.size)

    @property
    def depths(self) -> np.ndarray:
        """Depth of each node (children of the root: 1); empty for an empty tree."""
        return trees.depths(self.parents) if len(self) else np.zeros(0, np.int64)

    @property
    def depth(self) -> int:
        return int(self.depths.max()) if len(self) else 0

    def subtree(self, keep) -> "DraftTree":
        """The nodes ``keep`` (ascending indices, each with its parent among them), renumbered."""
        keep = np.asarray(keep, np.int64)
        old = self.parents[keep]
        parents = np.where(old < 0, -1, np.searchsorted(keep, old)).astype(np.int64)
        return DraftTree(parents, self.tokens[keep], self.probs[keep])

    def path_to(self, node: int) -> list[int]:
        """Nodes from the root's child down to ``node`` (inclusive)."""
        path = []
        while node >= 0:
            path.append(int(node))
            node = int(self.parents[node])
        return path[::-1]



def most_valued(parents: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """Indices (ascending) of the ``size`` nodes of highest value that form a tree (parents are
    numbered before their children). A child's value is its parent's times a q <= 1, so in order
    of value, a parent before its children at equal value, every node comes after its parent; a
    node whose parent was not taken is passed over all the same."""
    depth = np.zeros(parents.size, np.int64)
    for i, p in enumerate(parents.tolist()):
        depth[i] = 0 if p < 0 else depth[p] + 1
    taken = np.zeros(parents.size, bool)
    count = 0
    for i in np.lexsort((np.arange(parents.size), depth, -values)).tolist():
        if count == size:
            break
        if parents[i] < 0 or taken[parents[i]]:
            taken[i] = True
            count += 1
    return np.flatnonzero(taken)

EMPTY_TREE = DraftTree(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))


def check_tree(parents, tokens, vocab: int, probs=None) -> DraftTree:
    """Validate a tree for :func:`verify_tree`; raise ``ValueError`` saying what is wrong.

    Parameters
    ----------
    parents : array_like of int, shape (n,)
        Parent of each node: -1 (the root) or an earlier node. ``n`` may be 0.
    tokens : array_like of int, shape (n,)
        Token ids in ``[0, vocab)``; children of one parent must differ.
    vocab : int
    probs : array_like of float, optional
    """
    p = np.asarray(parents)
    t = np.asarray(tokens)
    if p.size == 0 and t.size == 0:
        return EMPTY_TREE
    if p.size > NODES_MAX:
        raise ValueError(f"a tree may have at most {NODES_MAX} nodes; got {p.size}")
    trees.depths(p)  # raises ValueError naming a bad parent (or a bad array)
    p = p.astype(np.int64)
    if t.shape != p.shape or t.dtype.kind not in "iu":
        raise ValueError(f"tokens must be {p.size} integers, one per node; got shape {t.shape}, "
                         f"dtype {t.dtype}")
    t = t.astype(np.int64)
    if t.min() < 0 or t.max() >= vocab:
        raise ValueError(f"tokens must be ids in [0, {vocab - 1}]")
    pairs = np.stack([p, t], axis=1)
    if np.unique(pairs, axis=0).shape[0] != p.size:
        raise ValueError("children of one parent must hold different tokens")
    q = np.full(p.size, np.nan) if probs is None else np.asarray(probs, np.float64)
    if q.shape != p.shape:
        raise ValueError(f"probs must have shape {p.shape}; got {q.shape}")
    return DraftTree(p, t, q)


def tree_mask(parents) -> np.ndarray:
    """The attention mask of a verify pass over ``[root, *nodes]``, shape (n + 1, n + 1).

    Row and column 0 are the root: every node sees it; node ``i`` (row ``i + 1``) also sees itself
    and its ancestors (:func:`specdec_playable.sim.trees.ancestor_mask`). Every committed token
    before the root is visible to all (outside this matrix).

    Examples
    --------
    >>> tree_mask([-1, -1, 0]).astype(int).tolist()
    [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 0, 1]]
    """
    p = np.asarray(parents)
    n = int(p.size)
    mask = np.zeros((n + 1, n + 1), bool)
    mask[:, 0] = True
    if n:
        mask[1:, 1:] = trees.ancestor_mask(p)
    return mask


def tree_positions(parents, past: int) -> np.ndarray:
    """Rotary positions of ``[root, *nodes]``: the root at ``past``, a node at ``past + depth``."""
    p = np.asarray(parents)
    d = trees.depths(p) if p.size else np.zeros(0, np.int64)
    return past + np.concatenate([[0], d]).astype(np.int64)


@dataclass(frozen=True, eq=False)
class Verdict:
    """What one tree verify pass decided.

    Attributes
    ----------
    path : tuple of int
        Accepted nodes, from the root's child down (empty: none accepted).
    judged : numpy.ndarray of bool, shape (n,)
        Nodes the target checked: those whose parent is the root or accepted. Judged nodes off
        the path were rejected; the others were discarded unjudged.
    token : int
        The target's greedy token after the path (the round's last token).
    mark : str
        ``"correction"`` (the path's end had children, all rejected), ``"bonus"`` (it is a leaf)
        or ``"generate"`` (the tree was empty: a plain pass).
    target : numpy.ndarray of int64, shape (n + 1,)
        The target's greedy token after the root (entry 0) and after each node.
    mask : numpy.ndarray of bool, shape (n + 1, n + 1)
        The attention mask the pass used (:func:`tree_mask`).
    positions : numpy.ndarray of int64, shape (n + 1,)
        The rotary positions the pass used (:func:`tree_positions`).
    """

    path: tuple
    judged: np.ndarray
    token: int
    mark: str
    target: np.ndarray
    mask: np.ndarray
    positions: np.ndarray

    @property
    def n_accepted(self) -> int:
        return len(self.path)


def judge_tree(tree: DraftTree, target: np.ndarray) -> tuple[tuple, np.ndarray]:
    """Greedy judging: (accepted path, judged nodes) given the target's token after each row."""
    n = len(tree)
    accepted = np.zeros(n, bool)
    judged = np.zeros(n, bool)
    deepest = -1
    for i in range(n):
        parent = int(tree.parents[i])
        if parent < 0 or accepted[parent]:
            judged[i] = True
            if tree.tokens[i] == target[parent + 1]:
                accepted[i] = True
                deepest = i  # siblings differ, so at most one child of a node is accepted
    return (tuple(tree.path_to(deepest)) if deepest >= 0 else ()), judged


def verify_tree(model, cache, root: int, tree: DraftTree, observer: Observes | None = None) -> Verdict:
    """Score ``[root, *tree]`` in ONE target pass, accept the longest agreeing path, fix the cache.

    Parameters
    ----------
    model : Model
    cache : KVCache
        Holds the committed text before ``root``. Afterwards it holds that text, the root and the
        accepted path, exactly as if they had been fed in order.
    root : int
        The last committed token, not yet in the cache.
    tree : DraftTree
        From :func:`build_tree` or :func:`check_tree`.
    observer : Observes, optional
        A proposer that reads the target's features: given the hidden states of the rows kept (the
        root and the accepted path), as the chain decoder gives a draft head its features.

    Returns
    -------
    Verdict
    """
    tree = check_tree(tree.parents, tree.tokens, model.config.vocab_size, tree.probs)
    past = cache.length
    mask = tree_mask(tree.parents)
    positions = tree_positions(tree.parents, past)
    fw = model.forward([int(root), *tree.tokens.tolist()], cache, positions=positions, mask=mask,
                       logits="all", capture=captures(observer))
    target = np.argmax(fw.logits, axis=-1).astype(np.int64)
    path, judged = judge_tree(tree, target)
    end = path[-1] if path else -1
    token = int(target[end + 1])
    if not len(tree):
        mark = "generate"
    elif np.any(tree.parents == end):
        mark = "correction"
    else:
        mark = "bonus"
    kept = [0, *(i + 1 for i in path)]
    if observer is not None:
        observer.observe(*fw.features(kept))
    cache.compact(past, kept)
    return Verdict(path=path, judged=judged, token=token, mark=mark, target=target, mask=mask,
                   positions=positions)


def shape_parents(shape: str, width: int, depth: int) -> np.ndarray:
    """The full parent array of a shape (the most a round can draft)."""
    if shape == "spine":
        return trees.spine_tree(width, depth)
    if shape == "full":
        return trees.full_tree(width, depth)
    raise ValueError(f"shape must be one of {SHAPES}; got {shape!r}")


def check_shape(shape, width, depth, *, dynamic: bool = False) -> tuple[str, int, int, int]:
    """``(shape, width, depth, nodes)`` checked; ``dynamic``: the draft can grow a dynamic tree
    (the draft head), which verifies as many nodes as a spine of the same width and depth."""
    width = _v.integer("width", width, 1, WIDTH_MAX)
    depth = _v.integer("depth", depth, 1, DEPTH_MAX)
    shapes = SHAPES + (DYNAMIC,) if dynamic else SHAPES
    if shape == DYNAMIC and not dynamic:
        raise ValueError("only the draft head grows a dynamic tree (it ranks its guesses by their "
                         "path's probability); use the spine or the full shape")
    if shape not in shapes:
        raise ValueError(f"shape must be one of {shapes}; got {shape!r}"[:120])
    size = width * depth if shape in ("spine", DYNAMIC) else sum(width**j for j in range(1, depth + 1))
    if size > NODES_MAX:
        raise ValueError(f"a {shape} tree of width {width} and depth {depth} has {size} nodes; "
                         f"at most {NODES_MAX} are allowed")
    return shape, width, depth, size


def build_tree(proposer, context, width: int, depth: int, *, shape: str = "spine") -> DraftTree:
    """Draft a tree after ``context`` from the draft's top-``width`` candidates per level.

    Parameters
    ----------
    proposer
        A draft's run (``draft.begin(model)``): one with its own
        ``draft_tree(context, width, depth, shape)`` (the draft head) is asked for the tree;
        otherwise anything with ``candidates(context, w) -> Candidates`` (the n-gram table).
    context : sequence of int
        The committed text (prompt and output so far).
    width, depth : int
        Candidates per level (1..8) and levels (1..16).
    shape : {"spine", "full"}

    Returns
    -------
    DraftTree
        Possibly smaller than the shape (see the module docstring); empty when the draft has no
        confident guess.

    Examples
    --------
    >>> run = NgramDraft(min_share=0.0).begin(None)                        # doctest: +SKIP
    >>> build_tree(run, tok.encode("import os.path"), 2, 2).parents.tolist()  # doctest: +SKIP
    [-1, -1, 0, 0]
    """
    shape, width, depth, _ = check_shape(shape, width, depth, dynamic=isinstance(proposer, DraftsTrees))
    if isinstance(proposer, DraftsTrees):
        return proposer.draft_tree(context, width, depth, shape)
    ctx = list(np.asarray(context, dtype=np.int64)[-3:])
    return grow_tree(lambda path: proposer.candidates(np.array((ctx + path)[-3:], np.int64), width),
                     depth, spread=shape == "full")


def grow_tree(candidates, depth: int, *, spread: bool) -> DraftTree:
    """A tree grown level by level: ``candidates(path)`` gives the guesses after the committed text
    and ``path`` (the tokens from the root's child down to a node; a :class:`.ngram.Candidates`),
    and only a confident node's guesses are kept. With ``spread`` every guess grows children of its
    own (a full tree), else only each level's first (a spine)."""
    parents: list[int] = []
    tokens: list[int] = []
    probs: list[float] = []
    frontier: list[tuple[int, list[int]]] = [(-1, [])]  # (node, its path) the next level drafts under
    for _ in range(depth):
        nxt = []
        for node, path in frontier:
            cand = candidates(path)
            if not len(cand) or not cand.confident:
                continue
            for j, (tok, pr) in enumerate(zip(cand.tokens.tolist(), cand.probs.tolist())):
                parents.append(node)
                tokens.append(tok)
                probs.append(pr)
                if spread or j == 0:
                    nxt.append((len(tokens) - 1, path + [tok]))
        frontier = nxt
        if not frontier:
            break
    if not tokens:
        return EMPTY_TREE
    return DraftTree(np.array(parents, np.int64), np.array(tokens, np.int64), np.array(probs))


@dataclass(frozen=True, eq=False)
class TreeRound:
    """One round of :func:`speculate_tree`: the tree drafted, the pass that checked it, the verdict.

    Attributes
    ----------
    round : int
        Target pass number (1 is the first after the prefill).
    position : int
        Output position of the depth-1 nodes (the root is the token before it).
    root, root_text
        The last committed token (not yet fed when the round began) and its text.
    tree : DraftTree
    texts : tuple of str
        Each node's token text.
    verdict : Verdict
        The accepted path, the judged nodes, the mask and positions used, the target's tokens.
    target_texts : tuple of str
        Text of the target's greedy token after the root and after each node.
    text : str
        Text of ``verdict.token``.
    draft_ms, verify_ms : float
        Time to draft the tree, and for the verify pass (including the cache fix).
    """

    round: int
    position: int
    root: int
    root_text: str
    tree: DraftTree
    texts: tuple
    verdict: Verdict
    target_texts: tuple
    text: str
    draft_ms: float
    verify_ms: float


@dataclass(frozen=True, eq=False)
class TreeGeneration(Generation):
    """A finished :func:`speculate_tree` run: a :class:`.decode.Generation` plus its rounds.

    ``k`` is the tree's depth. ``proposed`` counts nodes; ``accepted`` the nodes on accepted paths;
    ``rejected`` the rounds that ended on a correction; ``accept_at[j]`` is the share of rounds
    judging level ``j + 1`` whose path went through it.

    Attributes
    ----------
    shape : str
    width, depth : int
    rounds : tuple of TreeRound
        Every round after the prefill, in order.
    judged : int
        Nodes the target checked (their parent was the root or accepted).

    Examples
    --------
    >>> r = speculate_tree(m, m.tokenizer.chat("Hi"), NgramDraft(0.0), 2, 2)   # doctest: +SKIP
    >>> r.rounds[0].verdict.mask.shape                                         # doctest: +SKIP
    (5, 5)
    """

    shape: str = "spine"
    width: int = 1
    depth: int = 1
    rounds: tuple = ()
    judged: int = 0

    @property
    def tokens_per_round(self) -> float:
        """Mean tokens each verify pass decided (accepted nodes + the target's own token).

        Unlike :attr:`tokens_per_pass`, a round that wrote the end-of-sequence token counts it, so
        this is the quantity the closed form (:meth:`expected_tokens`) predicts.
        """
        if not self.rounds:
            return float("nan")
        return float(np.mean([r.verdict.n_accepted + 1 for r in self.rounds]))

    @property
    def candidate_acceptance(self) -> float:
        """Accepted nodes over judged nodes: the measured per-candidate acceptance (NaN if none)."""
        return self.accepted / self.judged if self.judged else float("nan")

    def expected_tokens(self, q: float | None = None) -> float:
        """Closed-form tokens per pass for this run's own trees at per-candidate acceptance ``q``.

        The mean over rounds of :func:`specdec_playable.sim.trees.expected_tokens` of each round's
        tree (1 for an empty tree): what the independent-acceptance model predicts for the trees
        this run actually drafted. ``q`` defaults to :attr:`candidate_acceptance`.
        """
        q = self.candidate_acceptance if q is None else q
        if not self.rounds or not np.isfinite(q):
            return float("nan")
        return float(np.mean([trees.expected_tokens(r.tree.parents, q) if len(r.tree) else 1.0
                              for r in self.rounds]))


def speculate_tree_passes(model, prompt: Sequence[int], draft, width: int, depth: int, *,
                          shape: str = "spine", max_new: int = 64, cancel=None,
                          max_seconds: float | None = None, clock: Clock = time.perf_counter,
                          wall: Clock | None = None) -> Generator[Update, None, "TreeGeneration"]:
    """Greedy token-tree speculative decoding, pass by pass: draft a tree, verify it in one pass,
    keep a path.

    Parameters
    ----------
    model : Model
    prompt : sequence of int
    draft : NgramDraft or DraftHead
        Or any draft whose ``begin(model)`` returns a proposer that drafts trees
        (:class:`.drafts.DraftsTrees`) or gives top-w candidates (:class:`.drafts.GivesCandidates`).
    width, depth : int
        Candidates per level (1..8) and levels (1..16); at most 64 nodes in all. Width 1 is the
        chain :func:`.decode.speculate_passes` drafts with ``k = depth``, round for round.
    shape : {"spine", "full", "dynamic"}
        ``"dynamic"`` with the draft head only.
    max_new, cancel, max_seconds, clock, wall
        As for :func:`.decode.generate_passes`. Near the budget the tree is cut to fewer levels, so
        the output never exceeds ``max_new``.

    Returns
    -------
    generator
        Yields an :class:`.decode.Update` per pass, whose ``tree`` is the round's
        :class:`TreeRound` (None for the prefill); returns the :class:`TreeGeneration`.
    """
    proposer = draft.begin(model)
    check_tree_draft(draft, proposer)
    shape, width, depth, size = check_shape(shape, width, depth, dynamic=isinstance(proposer, DraftsTrees))
    ids, max_new, _, _, max_seconds = check_run(model, prompt, max_new=max_new, temperature=0.0,
                                                top_p=1.0, max_seconds=max_seconds, extra=size + 1)
    observer = proposer if isinstance(proposer, Observes) else None
    run = RunLog(model, ids, max_new=max_new, temperature=0.0, top_p=1.0, rng=None,
                 cancel=cancel, max_seconds=max_seconds, draft_name=str(draft.name), k=depth,
                 clock=clock, wall=wall)
    cache = model.new_cache(capacity=ids.size + max_new + size + 2)
    passes = run.drive(lambda: run.prefill(cache, observer),
                       lambda: tree_round(run, cache, proposer, observer, shape=shape, width=width,
                                          depth=depth))
    return _as_tree_run((yield from passes), run.updates, shape, width, depth)


def speculate_tree(model, prompt: Sequence[int], draft, width: int, depth: int, *,
                   progress: Callable[[Update], None] | None = None, **kwargs) -> "TreeGeneration":
    """:func:`speculate_tree_passes` driven to its end; ``progress(update)`` after every pass.

    Examples
    --------
    >>> r = speculate_tree(m, m.tokenizer.chat("Hi"), NgramDraft(0.0), 2, 2)   # doctest: +SKIP
    >>> r.rounds[0].verdict.mask.shape                                         # doctest: +SKIP
    (5, 5)
    """
    return finish(speculate_tree_passes(model, prompt, draft, width, depth, **kwargs), progress)


def check_tree_draft(draft, proposer) -> None:
    """Raise ``ValueError`` unless ``proposer`` (``draft``'s run) can draft a tree."""
    if not isinstance(proposer, (DraftsTrees, GivesCandidates)):
        raise ValueError(f"draft {draft.name!r} cannot give top-w candidates; "
                         "use the n-gram table (NgramDraft) or the draft head (DraftHead)")


def tree_round(run: RunLog, cache, proposer, observer: Observes | None, *, shape: str, width: int,
               depth: int) -> Update:
    """Draft a tree -> verify it in one pass -> judge -> record."""
    rnd, first, pos0 = run.passes + 1, len(run.events), len(run.out)
    levels = min(depth, run.max_new - pos0 - 1)
    t = run.now()
    tree = build_tree(proposer, run.context(), width, levels, shape=shape) if levels else EMPTY_TREE
    t1 = run.now()
    texts = tuple(run.tok.token_text(x) for x in tree.tokens.tolist())
    _record_drafts(run, tree, texts, rnd, (run.ms(t), run.ms(t1)))
    root = run.out[-1]
    v0 = run.now()
    verdict = verify_tree(run.model, cache, root, tree, observer)
    v1 = run.now()
    run.passes += 1
    last_text = _record_verdict(run, tree, texts, verdict, rnd, (run.ms(v0), run.ms(v1)))
    record = TreeRound(
        round=rnd, position=pos0, root=int(root), root_text=run.tok.token_text(root), tree=tree,
        texts=texts, verdict=verdict,
        target_texts=tuple(run.tok.token_text(x) for x in verdict.target.tolist()),
        text=last_text, draft_ms=(t1 - t) * 1e3, verify_ms=(v1 - v0) * 1e3)
    a = verdict.n_accepted
    new = [int(tree.tokens[i]) for i in verdict.path] + [verdict.token]
    return run.emit(rnd, "verify" if len(tree) else "generate", new,
                    ["accepted"] * a + [verdict.mark], pass_ms=(v1 - v0) * 1e3,
                    positions=1 + len(tree), draft_ms=(t1 - t) * 1e3,
                    proposed=tree.tokens.tolist(), n_accepted=a, judged=tree.depth if len(tree) else 0,
                    missed=bool(len(tree)) and verdict.mark == "correction", first_event=first,
                    tree=record, drafted_by=credit(proposer, tree, verdict.path))


def credit(proposer, tree: DraftTree, path) -> str:
    """Whose guesses a tree round kept: the proposer's own word where it drafts from several
    sources (the hybrid's ``credit``), else where its guesses came from (``last_source``)."""
    judge = getattr(proposer, "credit", None)
    if judge is not None and len(tree):
        return str(judge(tree, [int(i) for i in path]))
    return drafted_by(proposer, tree.tokens)


def _record_drafts(run: RunLog, tree: DraftTree, texts, rnd: int, span) -> None:
    pos0 = len(run.out)
    run.events += [Event("draft", "draft", rnd, pos0 + int(depth) - 1, texts[i], *span)
                   for i, depth in enumerate(tree.depths.tolist())]


def _record_verdict(run: RunLog, tree: DraftTree, texts, verdict: Verdict, rnd: int, span) -> str:
    """Log the verify pass over ``span`` and each node's verdict; return the last token's text."""
    vs, ve = span
    pos0, n, a = len(run.out), len(tree), verdict.n_accepted
    at = [pos0 + int(d) - 1 for d in tree.depths.tolist()]
    if n:
        run.events.append(Event("big", "verify", rnd, pos0, "", vs, ve))
        run.events += [Event("big", "accepted", rnd, at[i], texts[i], ve, ve) for i in verdict.path]
        on_path = set(verdict.path)
        run.events += [Event("big", "rejected" if verdict.judged[i] else "discarded", rnd, at[i],
                             texts[i], ve, ve) for i in range(n) if i not in on_path]
    last_text = run.tok.token_text(verdict.token)
    run.events.append(Event("big", verdict.mark, rnd, pos0 + a, last_text,
                            vs if verdict.mark == "generate" else ve, ve))
    return last_text


def _as_tree_run(g: Generation, updates, shape, width, depth) -> "TreeGeneration":
    """A finished run as a :class:`TreeGeneration`: its rounds are its updates' trees."""
    rounds = tuple(u.tree for u in updates if u.tree is not None)
    judged = sum(int(r.verdict.judged.sum()) for r in rounds)
    return TreeGeneration(**{f.name: getattr(g, f.name) for f in fields(Generation)}, shape=shape,
                          width=width, depth=depth, rounds=rounds, judged=judged)

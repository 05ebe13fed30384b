"""One real token-tree step, as a record a page can draw without the model.

:func:`example_tree_step` runs the target greedily up to a chosen point of its reply, drafts one
tree there with the learned draft (:func:`.tree.build_tree`), verifies it in one pass
(:func:`.tree.verify_tree`) and returns everything a picture of that step needs: per node its
parent, token, text, depth and verdict; the accepted path; the attention mask and the rotary
positions the pass used. ``scripts/make_tree_step_example.py`` stores one such step for a shared
prompt as ``assets/lm/tree_step_example.json``; :func:`load_tree_step_example` reads it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..sim import validate as _v
from .tree import NODES_MAX, build_tree, check_shape, check_tree_draft, verify_tree

#: Most plain greedy tokens written before the step.
AFTER_MAX = 256


@dataclass(frozen=True, eq=False)
class TreeStep:
    """One tree verify pass of the real model: the tree, the verdict, the mask.

    Node ``i`` is row and column ``i + 1`` of ``mask`` and entry ``i + 1`` of ``positions``; row
    and column 0 are the root (the last committed token, fed in the same pass). Arrays are
    read-only.

    Attributes
    ----------
    shape : str
        ``"spine"`` or ``"full"`` (see :mod:`.tree`).
    width, depth : int
        The shape asked for; the drafted tree may be smaller where the draft knows no context.
    prompt_tokens : int
        Tokens of the prompt (chat template included).
    reply_tokens : tuple of int
        The target's greedy reply before the step, the root (its last token) included.
    reply_text : str
    root : int
    root_text : str
    parents : numpy.ndarray of int64, shape (n,)
        Parent of each node (-1: the root); parents come first.
    tokens : numpy.ndarray of int64, shape (n,)
    texts : tuple of str
        Each node's token text.
    depths : numpy.ndarray of int64, shape (n,)
        1 for the root's children.
    probs : numpy.ndarray of float64, shape (n,)
        The draft's probability of each node's token after its parent's path.
    judged : numpy.ndarray of bool, shape (n,)
        Nodes the target checked (parent is the root or accepted).
    accepted : numpy.ndarray of bool, shape (n,)
        Nodes on the accepted path.
    path : tuple of int
        The accepted nodes from the root's child down (empty: none accepted).
    targets : numpy.ndarray of int64, shape (n + 1,)
        The target's greedy token after the root and after each node.
    target_texts : tuple of str
        Their texts.
    token : int
        The target's own token after the path (the step's last token).
    text : str
    mark : str
        ``"bonus"`` (the path ends at a leaf), ``"correction"`` or ``"generate"`` (empty tree).
    mask : numpy.ndarray of bool, shape (n + 1, n + 1)
        ``mask[i, j]``: row ``i`` may attend to row ``j`` (every committed token is visible to all).
    positions : numpy.ndarray of int64, shape (n + 1,)
        Rotary positions: the root at the committed length, a node at that plus its depth.
    """

    shape: str
    width: int
    depth: int
    prompt_tokens: int
    reply_tokens: tuple
    reply_text: str
    root: int
    root_text: str
    parents: np.ndarray
    tokens: np.ndarray
    texts: tuple
    depths: np.ndarray
    probs: np.ndarray
    judged: np.ndarray
    accepted: np.ndarray
    path: tuple
    targets: np.ndarray
    target_texts: tuple
    token: int
    text: str
    mark: str
    mask: np.ndarray
    positions: np.ndarray

    def __post_init__(self):
        for name in ("parents", "tokens", "depths", "probs", "judged", "accepted", "targets",
                     "mask", "positions"):
            getattr(self, name).setflags(write=False)

    @property
    def n_accepted(self) -> int:
        return len(self.path)

    def to_dict(self) -> dict:
        """Plain JSON-ready values (lists, ints, floats, strings; the mask as 0/1 rows)."""
        out = {}
        for name in _FIELDS:
            v = getattr(self, name)
            if isinstance(v, np.ndarray):
                v = v.astype(int).tolist() if v.dtype == bool else v.tolist()
            elif isinstance(v, tuple):
                v = list(v)
            out[name] = v
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "TreeStep":
        """The inverse of :meth:`to_dict`."""
        kinds = {"parents": np.int64, "tokens": np.int64, "depths": np.int64, "probs": np.float64,
                 "judged": bool, "accepted": bool, "targets": np.int64, "mask": bool,
                 "positions": np.int64}
        vals = {}
        for name in _FIELDS:
            v = d[name]
            if name in kinds:
                v = np.array(v, dtype=kinds[name])
            elif name in ("reply_tokens", "texts", "path", "target_texts"):
                v = tuple(v)
            vals[name] = v
        return cls(**vals)


_FIELDS = tuple(TreeStep.__dataclass_fields__)


def example_tree_step(model, prompt: str | Sequence[int], draft, width: int, depth: int, *,
                      shape: str = "spine", after: int = 0) -> TreeStep:
    """Run the target greedily for ``after`` tokens, then one tree step; return what it did.

    The same step as a round of :func:`.tree.speculate_tree` at that point of the reply, with the
    same draft: the tree comes from :func:`.tree.build_tree`, the verdict from
    :func:`.tree.verify_tree`. The model is only read.

    Parameters
    ----------
    model : Model
    prompt : str or sequence of int
        A user message (wrapped in the chat template with the default system turn) or token ids
        used as they are.
    draft : NgramDraft or DraftHead
        Or any draft whose ``begin(model)`` gives ``candidates(context, w)`` or ``draft_tree``.
    width, depth : int
        As for :func:`.tree.build_tree` (1..8 and 1..16, at most 64 nodes).
    shape : {"spine", "full"}
    after : int
        Greedy reply tokens before the root, in [0, 256]: the root is reply token ``after``
        (0: the first token, the one the prompt's pass writes).

    Returns
    -------
    TreeStep

    Raises
    ------
    ValueError
        For a bad setting, or a reply that ends (end-of-sequence) before token ``after``.

    Examples
    --------
    >>> s = example_tree_step(model, "Write a haiku.", NgramDraft(0.0), 2, 3)  # doctest: +SKIP
    >>> s.mask.shape == (len(s.tokens) + 1,) * 2                          # doctest: +SKIP
    True
    """
    tok = model.tokenizer
    ids = tok.chat(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
    after = _v.integer("after", after, 0, AFTER_MAX)
    shape, width, depth, _ = check_shape(shape, width, depth)
    if not ids:
        raise ValueError("prompt must hold at least one token")
    if len(ids) + after + NODES_MAX + 2 > model.config.context:
        raise ValueError(f"prompt too long: {len(ids)} tokens")
    proposer = draft.begin(model)
    check_tree_draft(draft, proposer)
    cache = model.new_cache(capacity=len(ids) + after + 80)
    reply = [int(np.argmax(model.forward(ids, cache, logits="last").logits[-1]))]
    while len(reply) <= after and reply[-1] != tok.eos_id:
        reply.append(int(np.argmax(model.step(reply[-1], cache))))
    if tok.eos_id in reply:
        raise ValueError(f"the reply ends at token {len(reply) - 1}; choose after < "
                         f"{len(reply) - 1}")
    root = reply[-1]
    tree = build_tree(proposer, np.array(ids + reply, np.int64), width, depth, shape=shape)
    v = verify_tree(model, cache, root, tree)
    accepted = np.zeros(len(tree), bool)
    accepted[list(v.path)] = True
    return TreeStep(
        shape=shape, width=int(width), depth=int(depth), prompt_tokens=len(ids),
        reply_tokens=tuple(reply), reply_text=tok.decode(reply), root=root,
        root_text=tok.token_text(root),
        parents=tree.parents.copy(), tokens=tree.tokens.copy(),
        texts=tuple(tok.token_text(t) for t in tree.tokens.tolist()), depths=tree.depths,
        probs=tree.probs.copy(), judged=v.judged.copy(), accepted=accepted, path=v.path,
        targets=v.target.copy(),
        target_texts=tuple(tok.token_text(t) for t in v.target.tolist()), token=v.token,
        text=tok.token_text(v.token), mark=v.mark, mask=v.mask.copy(),
        positions=v.positions.copy())



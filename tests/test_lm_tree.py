"""Token trees with the real model: one masked pass over a tree, greedy exactness, the cache after.

Tolerances (float32 throughout): logits are O(10-40) and a pass over many positions sums in a
different order from a pass over a few (a matrix-matrix product vs matrix-vector products), so
equal computations differ by rounding only. Measured: max abs logit difference between one pass
over a 14-node tree and separate passes over its 8 root-to-leaf paths 5.1e-5 on logits up to 37
(tolerance 1e-3, as for the model's own tests); keys and values of a compacted cache vs a cache fed
the accepted path directly 1.7e-5 on values up to 19 (tolerance 1e-4). Timing is not tested here
(see benchmarks/bench_trees.py).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from specdec_playable.sim import trees
from specdec_playable.lm import get_model
from specdec_playable.lm.decode import MARKS, generate, speculate
from specdec_playable.lm.drafts import PromptLookup
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.tree import (EMPTY_TREE, DraftTree, TreeGeneration, build_tree,
                                      check_tree, speculate_tree, tree_mask, tree_positions,
                                      verify_tree)

LOGIT_ATOL = 1e-3
KV_ATOL = 1e-4
MAX_NEW = 16
#: (width, depth, shape): chains (width 1), spines and a full tree, 1 to 6 verified positions.
CONFIGS = [(1, 1, "spine"), (1, 4, "spine"), (2, 2, "spine"), (2, 3, "spine"), (3, 2, "spine"),
           (2, 2, "full")]
EAGER = NgramDraft(min_share=0.0)  # drafts wherever the table knows the context: the harder case


@pytest.fixture(scope="module")
def model():
    return get_model()


def _chat(model, name):
    """A shared prompt's user message, without the system turn (a cheaper prefill)."""
    return model.tokenizer.chat(PROMPTS[name].message, system=None)


@pytest.fixture(scope="module")
def plain(model):
    """Plain greedy runs of the shared prompts, computed once."""
    return {name: generate(model, _chat(model, name), max_new=MAX_NEW) for name in PROMPTS}


def _prefilled(model, ids):
    """A cache holding ``ids[:-1]``; the last id is the pending root."""
    cache = model.new_cache()
    model.forward(ids[:-1], cache, logits="none")
    return cache, ids[-1]


# ------------------------------------------------------------------------------- drafting a tree

def test_a_tree_holds_the_drafts_top_candidates_per_level(model):
    tok = model.tokenizer
    run = EAGER.begin(model)
    ids = tok.encode("import os\n\n\ndef main(argv):\n    for name in")
    spine = build_tree(run, ids, 3, 3)
    depths = spine.depths
    assert spine.depth == 3
    ctx, top = list(ids), -1
    for level in (1, 2, 3):  # each level: the top 3 after the previous level's top guess, under it
        nodes = np.flatnonzero(depths == level)
        cand = run.candidates(ctx, 3)
        assert spine.tokens[nodes].tolist() == cand.tokens.tolist()
        np.testing.assert_allclose(spine.probs[nodes], cand.probs)
        assert set(spine.parents[nodes].tolist()) == {top}
        top = int(nodes[0])
        ctx.append(int(spine.tokens[top]))
    full = build_tree(run, ids, 2, 2, shape="full")
    for i in range(len(full)):  # every node's children: the top 2 after its own path
        kids = np.flatnonzero(full.parents == i)
        if full.depths[i] < 2:
            path = ids + full.tokens[full.path_to(i)].tolist()
            assert full.tokens[kids].tolist() == run.candidates(path, 2).tokens.tolist()
        else:
            assert kids.size == 0
    # Width 1 is the chain the draft proposes, with or without its confidence threshold.
    for draft in (EAGER, NgramDraft(min_share=0.5), NgramDraft(min_share=1.0)):
        r = draft.begin(model)
        for text in ("    def __init__(self", "The cat sat on the", "if __name__ == '__"):
            ctx = tok.encode(text)
            assert build_tree(r, ctx, 1, 5).tokens.tolist() == r.propose(ctx, 5).tokens.tolist()


# ------------------------------------------------------------------------------- the masked pass

def test_tree_mask_and_positions_follow_the_tree():
    assert np.array_equal(tree_mask(trees.chain(3)), np.tri(4, dtype=bool))  # a chain is causal
    m = tree_mask(trees.spine_tree(2, 2))  # nodes [-1, -1, 0, 0]
    assert m[:, 0].all() and np.array_equal(m[1:, 1:], trees.ancestor_mask([-1, -1, 0, 0]))
    assert not m[2, 1] and m[3, 1] and not m[3, 2]  # siblings never see each other
    assert tree_positions([-1, -1, 0, 0], 10).tolist() == [10, 11, 11, 12, 12]
    assert tree_mask(np.zeros(0, np.int64)).tolist() == [[True]]


def test_one_tree_pass_equals_running_each_root_to_leaf_path_alone(model):
    tok = model.tokenizer
    ids = tok.encode("import os\n\n\ndef main(argv):\n    for name in")
    cache, root = _prefilled(model, ids)
    past = cache.length
    # A full tree of width 2 and depth 3 (14 nodes), each node a different real token.
    words = tok.encode(" items range values keys enumerate sorted zip reversed list dict set tuple str int")
    tree = check_tree(trees.full_tree(2, 3), list(dict.fromkeys(words))[:14], model.config.vocab_size)
    assert len(tree) == 14 and tree.depth == 3
    fw = model.forward([root, *tree.tokens.tolist()], cache, positions=tree_positions(tree.parents, past),
                       mask=tree_mask(tree.parents), logits="all")
    assert fw.logits.dtype == np.float32
    leaves = [i for i in range(len(tree)) if not np.any(tree.parents == i)]
    assert len(leaves) == 8
    worst = 0.0
    for leaf in leaves:
        path = tree.path_to(leaf)
        cache.rollback(past)
        alone = model.forward([root, *tree.tokens[path].tolist()], cache, logits="all").logits
        worst = max(worst, float(np.abs(fw.logits[[0, *(i + 1 for i in path)]] - alone).max()))
    assert worst < LOGIT_ATOL, worst  # measured 5.1e-5


# ------------------------------------------------------------------------------- cache and verdict

@pytest.mark.parametrize("ends_on", ["bonus", "correction"])
def test_compaction_leaves_the_cache_of_the_accepted_path_fed_directly(model, ends_on):
    tok = model.tokenizer
    ids = tok.chat("Count from one to ten in words, separated by commas.", system=None)
    g = generate(model, ids, max_new=4).tokens  # the target's greedy continuation
    wrong = [t for t in tok.encode(" banana split sundae") if t not in g][:3]
    # root -> {wrong0, g0}; g0 -> {wrong1, g1}; g1 -> {g2 (bonus) or wrong2 (correction)}.
    last = g[2] if ends_on == "bonus" else wrong[2]
    tree = check_tree([-1, -1, 1, 1, 3], [wrong[0], g[0], wrong[1], g[1], last], model.config.vocab_size)
    cache = model.new_cache()
    model.forward(ids, cache, logits="none")
    past = cache.length - 1
    cache.rollback(past)  # the prompt's last token is the pending root
    v = verify_tree(model, cache, ids[-1], tree)
    if ends_on == "bonus":
        assert v.path == (1, 3, 4) and v.mark == "bonus" and v.token == g[3]
        kept = [*g[:3]]
    else:
        assert v.path == (1, 3) and v.mark == "correction" and v.token == g[2]
        kept = [*g[:2]]
    assert v.judged.tolist() == [True, True, True, True, True]
    assert v.mask.shape == (6, 6) and v.positions.tolist() == [past, *(past + trees.depths(tree.parents))]
    assert cache.length == past + 1 + len(kept)
    ref = model.new_cache()
    model.forward(ids + kept, ref, logits="none")
    n = cache.length
    assert ref.length == n
    assert np.abs(cache.keys(end=n) - ref.keys(end=n)).max() < KV_ATOL
    assert np.abs(cache.v[:, :, :n] - ref.v[:, :, :n]).max() < KV_ATOL
    # And the run goes on from it exactly as from the directly fed cache.
    nxt = v.token
    assert np.abs(model.step(nxt, cache) - model.step(nxt, ref)).max() < LOGIT_ATOL


def test_an_empty_tree_is_a_plain_pass(model):
    ids = model.tokenizer.chat("Hi", system=None)
    cache, root = _prefilled(model, ids)
    past = cache.length
    v = verify_tree(model, cache, root, EMPTY_TREE)
    assert v.path == () and v.mark == "generate" and cache.length == past + 1
    assert v.token == generate(model, ids, max_new=1).tokens[0]


# ------------------------------------------------------------------------------- exactness

@pytest.mark.parametrize("width, depth, shape", CONFIGS)
def test_greedy_tree_speculation_writes_exactly_the_plain_greedy_tokens(model, plain, width, depth, shape):
    assert len(PROMPTS) >= 6
    for name in PROMPTS:
        r = speculate_tree(model, _chat(model, name), EAGER, width, depth, shape=shape,
                           max_new=MAX_NEW)
        ref = plain[name]
        assert r.tokens == ref.tokens, (name, width, depth, shape)
        assert r.stopped == ref.stopped and set(r.marks) <= set(MARKS)
        assert len(r.rounds) == r.passes
        for rd in r.rounds:  # every round respects its shape
            assert len(rd.tree) <= len(trees.spine_tree(width, depth) if shape == "spine"
                                       else trees.full_tree(width, depth))
            assert rd.tree.depth <= depth


@pytest.mark.parametrize("k, min_share", [(1, 0.0), (3, 0.5), (5, 0.0)])
def test_width_one_is_the_chain_round_for_round(model, k, min_share):
    draft = NgramDraft(min_share=min_share)
    for name in ("code-edit", "json-reshape"):
        ids = _chat(model, name)
        rounds = []
        chain = speculate(model, ids, draft, k, max_new=MAX_NEW, progress=rounds.append)
        tree = speculate_tree(model, ids, draft, 1, k, max_new=MAX_NEW)
        assert tree.tokens == chain.tokens and tree.marks == chain.marks
        assert (tree.passes, tree.proposed, tree.accepted, tree.rejected) == (
            chain.passes, chain.proposed, chain.accepted, chain.rejected)
        np.testing.assert_array_equal(tree.accept_at, chain.accept_at)
        assert [rd.tree.tokens.tolist() for rd in tree.rounds] == [list(u.proposed) for u in rounds[1:]]
        for rd in tree.rounds:
            assert np.array_equal(rd.verdict.mask, np.tri(len(rd.tree) + 1, dtype=bool))


# ------------------------------------------------------------------------------- records and control

def test_rounds_record_the_tree_the_path_and_the_events(model):
    tok = model.tokenizer
    updates = []
    r = speculate_tree(model, _chat(model, "code-edit"), EAGER, 2, 2, max_new=MAX_NEW,
                       progress=updates.append)
    assert isinstance(r, TreeGeneration) and (r.width, r.depth, r.shape) == (2, 2, "spine")
    assert updates[0].tree is None and [u.tree for u in updates[1:]] == list(r.rounds)
    out = list(r.tokens[:1])
    for rd in r.rounds:
        v, t = rd.verdict, rd.tree
        assert rd.position == len(out) and rd.root == out[-1]
        assert len(rd.texts) == len(t) == v.target.size - 1 == len(rd.target_texts) - 1
        assert v.mask.shape == (len(t) + 1,) * 2
        path_tokens = t.tokens[list(v.path)].tolist()
        assert [t.depths[i] for i in v.path] == list(range(1, len(v.path) + 1))
        out += path_tokens + [v.token]
        ev = r.events.where(r.events.round == rd.round)
        assert (ev.kind == "draft").sum() == len(t)
        assert (ev.kind == "accepted").sum() == len(v.path)
        assert (ev.kind == "rejected").sum() == int(v.judged.sum()) - len(v.path)
        assert (ev.kind == "discarded").sum() == len(t) - int(v.judged.sum())
        assert (ev.kind == v.mark).sum() == 1
    assert out[:len(r.tokens)] == list(r.tokens)
    assert r.proposed == sum(len(rd.tree) for rd in r.rounds)
    assert r.accepted == sum(len(rd.verdict.path) for rd in r.rounds)
    assert 0 < r.candidate_acceptance < 1
    assert r.stopped == "budget" and r.tokens_per_round * r.passes == pytest.approx(len(r.tokens) - 1)
    # The closed form over the run's own trees: 1 token per pass at q = 0, 1 + depth at q = 1.
    assert r.expected_tokens(0.0) == 1.0
    assert r.expected_tokens(1.0) == pytest.approx(np.mean([1 + rd.tree.depth for rd in r.rounds]))


def test_cancel_and_time_budget_stop_the_run(model):
    ids = _chat(model, "poem")
    flag = threading.Event()
    r = speculate_tree(model, ids, EAGER, 2, 2, max_new=MAX_NEW,
                       progress=lambda u: flag.set() if u.round >= 2 else None, cancel=flag)
    assert r.stopped == "cancelled" and r.passes == 2
    r = speculate_tree(model, ids, EAGER, 2, 2, max_new=MAX_NEW, max_seconds=1e-6)
    assert r.stopped == "time" and r.tokens == ()


def test_bad_trees_and_settings_raise_clear_errors(model):
    vocab = model.config.vocab_size
    with pytest.raises(ValueError, match=r"parents\[1\]"):
        check_tree([-1, 1], [5, 6], vocab)  # a node under itself
    with pytest.raises(ValueError, match="tokens must be 2 integers"):
        check_tree([-1, 0], [5], vocab)
    with pytest.raises(ValueError, match="ids in"):
        check_tree([-1, 0], [5, vocab], vocab)
    with pytest.raises(ValueError, match="different tokens"):
        check_tree([-1, -1], [5, 5], vocab)
    with pytest.raises(ValueError, match="at most 64 nodes"):
        check_tree(np.arange(-1, 65), np.arange(66), vocab)
    with pytest.raises(ValueError, match="probs"):
        check_tree([-1], [5], vocab, probs=[0.5, 0.5])
    cache = model.new_cache()
    with pytest.raises(ValueError, match="different tokens"):
        verify_tree(model, cache, 1, DraftTree(np.array([-1, -1]), np.array([5, 5]), np.zeros(2)))
    assert cache.length == 0  # refused before the pass
    ids = model.tokenizer.chat("Hi", system=None)
    with pytest.raises(ValueError, match="width"):
        speculate_tree(model, ids, EAGER, 0, 2)
    with pytest.raises(ValueError, match="width"):
        speculate_tree(model, ids, EAGER, 9, 2)
    with pytest.raises(ValueError, match="depth"):
        speculate_tree(model, ids, EAGER, 2, 0)
    with pytest.raises(ValueError, match="shape"):
        speculate_tree(model, ids, EAGER, 2, 2, shape="ring")
    with pytest.raises(ValueError, match="84 nodes"):
        speculate_tree(model, ids, EAGER, 4, 3, shape="full")
    with pytest.raises(ValueError, match="candidates"):
        speculate_tree(model, ids, PromptLookup(), 2, 2)
    with pytest.raises(ValueError, match="mask"):  # a tree mask that hides a node from itself
        bad = tree_mask([-1, 0])
        bad[2, 2] = False
        model.forward([1, 2, 3], model.new_cache(), positions=[0, 1, 2], mask=bad)


# ------------------------------------------------------------------------------- the draft head

HEAD_CONFIGS = [(1, 4, "spine"), (2, 3, "spine"), (3, 2, "spine"), (2, 2, "full"), (2, 3, "full"),
                (2, 4, "dynamic"), (3, 3, "dynamic")]


@pytest.mark.parametrize("width, depth, shape", HEAD_CONFIGS)
def test_greedy_tree_speculation_with_the_head_writes_the_plain_greedy_tokens(model, plain, width,
                                                                              depth, shape):
    from specdec_playable.lm.head import DraftHead

    for name in ("code-edit", "json-person", "sum-function", "sky"):
        r = speculate_tree(model, _chat(model, name), DraftHead(), width, depth, shape=shape,
                           max_new=MAX_NEW)
        assert r.tokens == plain[name].tokens, (name, width, depth, shape)
        # The head drafts the whole shape every round, cut only by the token budget.
        for rd in r.rounds:
            levels = min(depth, MAX_NEW - rd.position - 1)
            want = len(trees.spine_tree(width, levels) if shape in ("spine", "dynamic")
                       else trees.full_tree(width, levels)) if levels else 0
            assert len(rd.tree) == want, (name, rd.round)
    assert r.accepted > 0


def test_the_heads_width_one_tree_is_its_chain_round_for_round(model):
    from specdec_playable.lm.head import DraftHead

    for name in ("sum-function", "json-person"):
        ids = _chat(model, name)
        rounds = []
        chain = speculate(model, ids, DraftHead(), 4, max_new=MAX_NEW, progress=rounds.append)
        tree = speculate_tree(model, ids, DraftHead(), 1, 4, max_new=MAX_NEW)
        assert tree.tokens == chain.tokens and tree.marks == chain.marks
        assert [rd.tree.tokens.tolist() for rd in tree.rounds] == [list(u.proposed) for u in rounds[1:]]


def test_each_head_node_has_the_children_its_own_path_would_draft(model, plain):
    """A full tree's node: its children are the head's top-w after feeding that node's path as a
    chain, in a fresh run (so saving and restoring each branch's keys and values is exact)."""
    from specdec_playable.lm import head as lmhead
    from specdec_playable.lm import sampling

    w = lmhead.load_head()
    ctx = np.array(_chat(model, "sum-function") + list(plain["sum-function"].tokens[:6]), np.int64)
    tree = lmhead.DraftHead().begin(model).draft_tree(ctx, 2, 3, "full")
    assert len(tree) == 2 + 4 + 8 and tree.probs.min() > 0
    for node in range(len(tree)):
        kids = np.flatnonzero(tree.parents == node)
        if not kids.size:
            continue
        run = lmhead.DraftHead().begin(model)
        f = run._sync(ctx)
        for t in tree.tokens[tree.path_to(node)].tolist():
            f = lmhead.head_forward(w, f, model.weights.embed[[t]], run.cache)
        q = sampling.probabilities(run._logits(f), 1.0)
        top = np.argsort(-q, kind="stable")[:2]
        assert tree.tokens[kids].tolist() == w.vocab[top].tolist(), node
        np.testing.assert_allclose(tree.probs[kids], q[top], rtol=1e-5)


def test_a_head_tree_run_hands_the_head_the_features_of_its_own_passes(model, plain):
    """The verify pass's kept rows feed the head (as the chain decoder does), so it never runs the
    target a second time to find them."""
    from specdec_playable.lm.head import DraftHead

    runs = []

    class Watched(DraftHead):
        def begin(self, m):
            runs.append(super().begin(m))
            return runs[-1]

    r = speculate_tree(model, _chat(model, "sum-function"), Watched(), 2, 3, max_new=MAX_NEW)
    assert r.tokens == plain["sum-function"].tokens
    assert runs[0].target_cache is None  # the fallback that computes features was never needed


def test_a_dynamic_tree_keeps_the_head_s_most_valued_nodes(model, plain):
    """EAGLE-2's tree: every kept node's path probability (the product of q along it) is at least
    that of every drafted node left out, the kept nodes form a tree numbered parents first, and
    each node's children are its parent's top guesses in order; only the head grows one."""
    from specdec_playable.lm import head as lmhead
    from specdec_playable.lm.ngram import NgramDraft

    ctx = np.array(_chat(model, "json-person") + list(plain["json-person"].tokens[:5]), np.int64)
    tree = lmhead.DraftHead().begin(model).draft_tree(ctx, 3, 3, "dynamic")
    assert len(tree) == 9 and (tree.parents < np.arange(9)).all()
    value = np.array([np.prod(tree.probs[tree.path_to(i)]) for i in range(9)])
    for i in range(9):
        if tree.parents[i] >= 0:
            assert value[i] <= value[tree.parents[i]]
    # Grown without the cut (all drafted nodes kept), the kept ones are the 9 most valued.
    run = lmhead.DraftHead().begin(model)
    f = run._sync(ctx)
    top, q = run._top(f, 3)
    assert sorted(tree.tokens[tree.parents == -1].tolist()) == sorted(
        run.w.vocab[top[:int((tree.parents == -1).sum())]].tolist())
    with pytest.raises(ValueError, match="dynamic"):
        speculate_tree(model, _chat(model, "sky"), NgramDraft(), 2, 2, shape="dynamic")


def test_most_valued_keeps_a_tree():
    from specdec_playable.lm.tree import most_valued

    parents = np.array([-1, -1, 0, 0, 1, 2, 4])
    values = np.array([0.5, 0.4, 0.3, 0.1, 0.35, 0.05, 0.34])
    assert most_valued(parents, values, 4).tolist() == [0, 1, 4, 6]
    assert most_valued(parents, values, 5).tolist() == [0, 1, 2, 4, 6]
    # a node valued above its (left out) parent is passed over: the kept nodes stay a tree
    assert most_valued(np.array([-1, -1, 1]), np.array([0.5, 0.1, 0.3]), 2).tolist() == [0, 1]
    # a child valued as high as its parent comes after it
    assert most_valued(np.array([-1, 0, -1]), np.array([0.5, 0.5, 0.4]), 2).tolist() == [0, 1]
    assert most_valued(parents, values, 7).tolist() == list(range(7))

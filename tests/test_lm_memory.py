"""lm.memory: the memory draft's index and proposer against a brute-force search, and the shipped
index's provenance and hygiene (no held-out reply, no benchmark text in it)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_playable.lm import memory
from specdec_playable.shipped import asset_path

# ------------------------------------------------------------------------------ brute force


def brute_match(rows, text, max_len=memory.MAX_MATCH):
    """(length, source, {token: count}, total) by direct search: the longest suffix of ``text``
    found in the rows (global) or earlier in ``text`` (the request), the request's where longer."""
    text = [int(t) for t in text]
    corpus = [int(t) for t in memory.corpus_of(rows)] if rows else []

    def glob():
        for n in range(min(max_len, len(text)), 0, -1):
            pat = text[-n:]
            after = [corpus[p + n] for p in range(len(corpus) - n) if corpus[p:p + n] == pat]
            if after:
                return n, after
        return 0, []

    def local():
        for n in range(min(max_len, len(text) - 1), 0, -1):
            pat = text[-n:]
            after = [text[j + 1] for j in range(n - 1, len(text) - 1) if text[j - n + 1:j + 1] == pat]
            if after:
                return n, after
        return 0, []

    m_g, a_g = glob()
    m_l, a_l = local()
    if m_l > m_g:
        m, after, src = m_l, a_l, "request"
    elif m_g:
        m, after, src = m_g, a_g, "memory"
    else:
        return 0, "", {}, 0
    counts = Counter(t for t in after if t != memory.SEP)
    return m, src, dict(counts), len(after)


tokens = st.integers(0, 5)
rows_st = st.lists(st.lists(tokens, min_size=0, max_size=12), min_size=0, max_size=6)


@settings(max_examples=300, deadline=None)
@given(rows=rows_st, text=st.lists(tokens, min_size=1, max_size=14), max_len=st.integers(1, 6))
def test_the_match_is_the_longest_and_counts_every_continuation(rows, text, max_len):
    index = memory.build_index([np.array(r, np.int64) for r in rows]) if rows else None
    got = memory.match(index, np.array(text), max_len)
    m, src, counts, total = brute_match(rows, text, max_len)
    assert (got.length, got.source, got.total) == (m, src, total)
    assert dict(zip(got.tokens.tolist(), got.counts.tolist())) == counts
    # most frequent first, ties by the smaller token
    assert list(zip((-got.counts).tolist(), got.tokens.tolist())) == sorted(
        zip((-got.counts).tolist(), got.tokens.tolist()))


def test_the_request_wins_only_where_it_matches_longer():
    rows = [np.array([1, 2, 3, 9], np.int64)]
    index = memory.build_index(rows)
    # "2 3" is in memory (then 9) and in the request (then 7): equal lengths, the memory's
    tie = memory.match(index, np.array([2, 3, 7, 2, 3]))
    assert (tie.length, tie.source, tie.tokens.tolist()) == (2, "memory", [9])
    # "5 2 3" only in the request: longer there, so the request's continuation
    longer = memory.match(index, np.array([5, 2, 3, 7, 5, 2, 3]))
    assert (longer.length, longer.source, longer.tokens.tolist()) == (3, "request", [7])


def test_large_ranges_are_counted_exactly_from_a_sample():
    rng = np.random.default_rng(0)
    # one context followed by many different tokens, far more occurrences than SAMPLE
    nxt = rng.choice([10, 11, 12, 13], size=3000, p=[0.55, 0.3, 0.1, 0.05])
    rows = [np.array([1, 2, int(t)]) for t in nxt]
    index = memory.build_index(rows)
    got = memory.match(index, np.array([1, 2]))
    want = Counter(int(t) for t in nxt)
    assert got.total == 3000 and got.length == 2
    assert dict(zip(got.tokens.tolist(), got.counts.tolist())) == dict(want)


@settings(max_examples=100, deadline=None)
@given(rows=st.lists(st.lists(st.integers(0, 3), min_size=1, max_size=30), min_size=1, max_size=5))
def test_the_suffix_array_sorts_every_suffix(rows):
    corpus = memory.corpus_of([np.array(r) for r in rows])
    sa = memory.suffix_array(corpus)
    keys = [tuple(corpus[p:p + memory.SORT_DEPTH].tolist()) for p in sa.tolist()]
    assert sorted(sa.tolist()) == list(range(corpus.size))
    assert keys == sorted(keys)


def test_building_twice_gives_the_same_bytes():
    rng = np.random.default_rng(3)
    rows = [rng.integers(0, 40, rng.integers(5, 60)) for _ in range(200)]
    a, b = memory.build_index(rows), memory.build_index(rows)
    assert a["corpus"].tobytes() == b["corpus"].tobytes() and a["sa"].tobytes() == b["sa"].tobytes()
    assert memory.index_digest(a) == memory.index_digest(b)


def test_bad_tokens_are_refused():
    with pytest.raises(ValueError, match="token ids"):
        memory.corpus_of([np.array([1, memory.SEP])])
    with pytest.raises(ValueError, match="token ids"):
        memory.match(None, np.array([-1]))


# ------------------------------------------------------------------------------ the proposer


def _draft(tmp_path, rows, **kw):
    index = memory.build_index([np.array(r, np.int64) for r in rows])
    path = tmp_path / "index.npz"
    np.savez_compressed(path, **index)
    return memory.MemoryDraft(path=str(path), **kw)


def test_it_drafts_the_most_frequent_continuation_and_stops_where_unsure(tmp_path):
    rows = [[1, 2, 3, 4, 5, 6]] * 3 + [[1, 2, 3, 4, 7]]
    draft = _draft(tmp_path, rows, min_share=0.7, min_match=2, factor=4.0)
    run = draft.begin(None)
    # after "1 2": 3, 4 (4 of 4), then 5 (3 of 4 = 0.75), 6 (3 of 3)
    assert run.propose(np.array([9, 1, 2]), 8).tokens.tolist() == [3, 4, 5, 6]
    assert run.last_source == "memory"
    strict = _draft(tmp_path, rows, min_share=0.8, min_match=2, factor=4.0).begin(None)
    assert strict.propose(np.array([9, 1, 2]), 8).tokens.tolist() == [3, 4]  # 5's share is 0.75
    short = _draft(tmp_path, rows, min_share=0.0, min_match=3, factor=4.0).begin(None)
    assert len(short.propose(np.array([9, 1, 2]), 8)) == 0  # a 2-token match is too short
    assert short.last_source == ""


def test_the_draft_grows_with_the_match(tmp_path):
    rows = [list(range(1, 20))]
    run = _draft(tmp_path, rows, min_share=0.0, min_match=1, factor=1.0).begin(None)
    assert len(run.propose(np.array([40, 5]), 8)) == 1           # a 1-token match: 1 guess
    assert len(run.propose(np.array([40, 3, 4, 5]), 8)) == 3     # a 3-token match: 3
    assert len(run.propose(np.array([1, 2, 3, 4, 5, 6]), 4)) == 4  # capped by k


def test_candidates_and_q_follow_the_counts(tmp_path):
    rows = [[1, 2, 3]] * 6 + [[1, 2, 4]] * 3 + [[1, 2]]  # after "1 2": 3 x6, 4 x3, end x1
    run = _draft(tmp_path, rows, min_share=0.5, min_match=2).begin(None)
    c = run.candidates(np.array([1, 2]), 8)
    assert c.tokens.tolist() == [3, 4] and c.order == 2 and c.confident
    np.testing.assert_allclose(c.probs, [6 / 9, 3 / 9], rtol=0, atol=1e-12)
    assert c.kept_mass == pytest.approx(0.9, abs=1e-12)
    q = run.distribution(np.array([1, 2]), 10, temperature=0.5)
    np.testing.assert_allclose(q[[3, 4]], [36 / 45, 9 / 45], rtol=0, atol=1e-12)
    assert q.sum() == pytest.approx(1.0, abs=1e-12)


def test_a_sampled_draft_carries_its_q(tmp_path):
    rows = [[1, 2, 3, 5]] * 2 + [[1, 2, 4, 5]] * 2
    run = _draft(tmp_path, rows, min_share=0.4, min_match=2, factor=4.0).begin(None)
    prop = run.propose(np.array([1, 2]), 2, temperature=1.0, rng=np.random.default_rng(0))
    assert prop.p_draft is not None and prop.p_draft.shape == (len(prop), 49152)
    assert prop.p_draft[0, 3] == pytest.approx(0.5) and prop.p_draft[0, 4] == pytest.approx(0.5)
    assert prop.tokens[0] in (3, 4)


def test_trees_branch_over_the_candidates(tmp_path):
    rows = [[1, 2, 3, 5]] * 3 + [[1, 2, 4, 6]] * 2
    run = _draft(tmp_path, rows, min_share=0.5, min_match=2).begin(None)
    spine = run.draft_tree(np.array([1, 2]), 2, 2, "spine")
    assert spine.tokens.tolist() == [3, 4, 5] and spine.parents.tolist() == [-1, -1, 0]
    full = run.draft_tree(np.array([1, 2]), 2, 2, "full")
    assert full.tokens.tolist() == [3, 4, 5, 6] and full.parents.tolist() == [-1, -1, 0, 1]


def test_settings_are_checked():
    for bad in (dict(min_share=1.5), dict(min_match=0), dict(factor=0.0), dict(factor=17)):
        with pytest.raises(ValueError):
            memory.MemoryDraft(**bad)


# ------------------------------------------------------------------------------ the shipped asset


def test_a_missing_or_corrupt_index_is_a_clear_error_and_other_drafts_still_run(tmp_path):
    from specdec_playable.lm.drafts import PromptLookup

    with pytest.raises(memory.MemoryIndexError, match="missing"):
        memory.load_index(tmp_path / "nothing.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(memory.MemoryIndexError, match="could not be read"):
        memory.MemoryDraft(path=str(bad)).begin(None)
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, corpus=np.array([1, 2], np.uint16), sa=np.array([0, 1], np.uint32))
    with pytest.raises(memory.MemoryIndexError, match="separator"):
        memory.load_index(wrong)
    assert PromptLookup().begin(None).propose(np.array([5, 6, 7, 5, 6]), 2).tokens.tolist() == [7, 5]


def test_a_shipped_index_or_provenance_that_is_not_there_is_a_clear_error(monkeypatch):
    def absent(name):
        raise FileNotFoundError(f"asset {name!r} not found")

    monkeypatch.setattr(memory, "_INDEX", None)
    monkeypatch.setattr(memory, "asset_path", absent)
    with pytest.raises(memory.MemoryIndexError, match="missing; build it with"):
        memory.MemoryDraft().begin(None)
    monkeypatch.undo()
    monkeypatch.setattr(memory, "_INDEX", None)
    monkeypatch.setattr(memory, "index_meta", lambda: absent(memory.META))
    with pytest.raises(memory.MemoryIndexError, match="provenance"):
        memory.load_index()


@pytest.fixture(scope="module")
def shipped():
    return memory.load_index(), json.loads(asset_path(memory.META).read_text("utf-8"))


def test_the_shipped_index_matches_its_provenance(shipped):
    index, meta = shipped
    assert memory.index_digest(index) == meta["index_sha256"]
    assert index["corpus"].size == meta["tokens"]
    assert asset_path(memory.ASSET).stat().st_size <= 12e6
    assert int((index["corpus"] == memory.SEP).sum()) == meta["rows"]
    assert not index["corpus"].flags.writeable and not index["sa"].flags.writeable


def test_the_shipped_index_holds_no_benchmark_text(shipped):
    """No 64-token window (every 8th start; whole texts when shorter) of Episode 4's texts or of
    any prompt the pages and benchmarks share occurs in the index."""
    from specdec_playable.lm.model import get_model
    from specdec_playable.train.corpus import held_out_strings

    index, _ = shipped
    tok = get_model("q4").tokenizer
    for name, text in held_out_strings().items():
        ids = np.asarray(tok.encode(text), np.int64)
        n = min(64, ids.size)
        for s in range(0, ids.size - n + 1, 8):
            pat = np.ascontiguousarray(ids[s:s + n])
            lo, hi = memory._range(index["corpus"], index["sa"], pat, n)
            assert hi == lo, f"{name} holds a {n}-token window of the memory index"


def test_the_shipped_index_holds_no_held_out_reply(shipped):
    """Every held-out reply of the split by prompt has some 64-token window the index lacks (a
    whole held-out row is never in it), and at most a small share of all their windows occur
    (the same boilerplate written for different prompts)."""
    from specdec_playable.lm.model import get_model
    from specdec_playable.train.corpus import cut_loop, read_selfdistill, selfdistill_rows

    index, meta = shipped
    path = Path(__file__).resolve().parents[2] / "shared/data/selfdistill/smollm2_replies.npz"
    if not path.is_file():
        pytest.skip("the self-distillation corpus is not beside this checkout")
    sd = read_selfdistill(path)
    _, held = selfdistill_rows(sd, held_share=meta["split"]["held_share"], seed=meta["split"]["seed"])
    assert held.size == meta["split"]["held_out_rows"]
    head = [get_model("q4").tokenizer.im_start]
    found = windows = 0
    for i in held.tolist():
        ids = np.concatenate([head, cut_loop(sd.replies[i]).astype(np.int64)])
        if ids.size < 64:
            continue
        hits = []
        for s in range(0, ids.size - 63, 16):
            lo, hi = memory._range(index["corpus"], index["sa"], np.ascontiguousarray(ids[s:s + 64]), 64)
            hits.append(hi > lo)
        assert not all(hits), f"held-out row {i} is in the memory index"
        found += sum(hits)
        windows += len(hits)
    assert found / windows < 0.05


# ------------------------------------------------------------------------------ the hybrid's tree


def test_the_memory_chain_is_grafted_where_it_leaves_the_heads_tree():
    from specdec_playable.lm.hybrid import _credit, merge_chain
    from specdec_playable.lm.tree import DraftTree

    head = DraftTree(np.array([-1, 0, 1]), np.array([5, 6, 7]), np.array([0.9, 0.8, 0.7]))
    tree = merge_chain(head, np.array([5, 6, 9, 10]))
    assert tree.parents.tolist() == [-1, 0, 1, 1, 3] and tree.tokens.tolist() == [5, 6, 7, 9, 10]
    assert np.isnan(tree.probs[3:]).all() and not np.isnan(tree.probs[:3]).any()
    chain = [5, 6, 9, 10]
    assert _credit(tree, [0, 1], chain, "memory") == "head+memory"  # both had 5 6
    assert _credit(tree, [0, 1, 2], chain, "memory") == "head"      # 7: the head's alone
    assert _credit(tree, [0, 1, 3, 4], chain, "request") == "request"
    # a chain the head's tree holds whole adds nothing; an empty head tree takes the chain alone
    assert len(merge_chain(head, np.array([5, 6]))) == 3
    alone = merge_chain(DraftTree(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)), np.array([1, 2]))
    assert alone.parents.tolist() == [-1, 0] and alone.tokens.tolist() == [1, 2]


def test_the_hybrid_refuses_bad_settings():
    from specdec_playable.lm.hybrid import HybridDraft

    for bad in (0, 17, 1.5):
        with pytest.raises(ValueError, match="min_memory"):
            HybridDraft(min_memory=bad)
    with pytest.raises(ValueError, match="prices_of"):
        HybridDraft(prices_of="int8")


@pytest.mark.parametrize("fmt", ["f32", "q4"])
def test_the_hybrids_prices_are_the_shipped_pass_cost_curves(fmt):
    """A pass's price in steps is the shipped curve's median over its one-position pass, within
    0.005 of a step at every position priced."""
    from specdec_playable.data import hardware
    from specdec_playable.lm.hybrid import PRICES

    curve = (hardware.load_cpu_pass_costs() if fmt == "f32" else hardware.load_cpu_q4_pass_costs())
    at = dict(zip(curve.n_positions.tolist(), (curve.median_ms / curve.median_ms[0]).tolist()))
    p = PRICES[fmt]
    for n, steps in zip(p.positions, p.steps):
        assert steps == pytest.approx(at[n], abs=0.005), (fmt, n)
    assert all(a < b for a, b in zip(p.steps, p.steps[1:]))


def _closed_subsets(parents):
    """Every set of nodes that holds each member's parent (a tree from the root)."""
    n = len(parents)
    for mask in range(1 << n):
        nodes = [i for i in range(n) if mask >> i & 1]
        if all(parents[i] < 0 or mask >> parents[i] & 1 for i in nodes):
            yield nodes


@settings(max_examples=150, deadline=None)
@given(data=st.data(), fmt=st.sampled_from(["f32", "q4"]))
def test_a_priced_tree_keeps_the_subtree_worth_most_per_step(data, fmt):
    """Against every subtree of a small merged tree: the priced tree is a subtree of it (each kept
    node under its own parent, with its token), and no subtree gives more expected tokens per
    step of its pass; the values are the products of q (or 0.8 x the memory's share) along paths."""
    from specdec_playable.lm.hybrid import PRICES, SHARE_KEPT, merge_chain, node_values, priced_tree
    from specdec_playable.lm.tree import DraftTree

    depth = data.draw(st.integers(1, 4))
    head_toks = data.draw(st.lists(st.integers(0, 3), min_size=depth, max_size=depth))
    q = data.draw(st.lists(st.floats(0.0, 1.0), min_size=depth, max_size=depth))
    head = DraftTree(np.arange(-1, depth - 1), np.array(head_toks), np.array(q))
    chain = data.draw(st.lists(st.integers(0, 3), max_size=4))
    shares = data.draw(st.lists(st.floats(0.3, 1.0), min_size=len(chain), max_size=len(chain)))
    tree = merge_chain(head, np.array(chain, np.int64))
    values = node_values(tree, chain, shares)
    for i in range(len(tree)):  # a node's value: its parent's times the larger of q and 0.8 x share
        assert 0.0 <= values[i] <= (values[tree.parents[i]] if tree.parents[i] >= 0 else 1.0) + 1e-12
    if len(chain):
        assert values[0 if tree.tokens[0] == chain[0] else depth] >= SHARE_KEPT * shares[0] - 1e-12
    p = PRICES[fmt]
    got = priced_tree(tree, chain, shares, p)
    paths = {tuple(tree.tokens[tree.path_to(i)].tolist()): values[i] for i in range(len(tree))}
    kept = [tuple(got.tokens[got.path_to(i)].tolist()) for i in range(len(got))]
    assert len(set(kept)) == len(kept) and all(k in paths for k in kept)
    worth = (1 + sum(paths[k] for k in kept)) / p.pass_steps(1 + len(kept))
    best = max((1 + values[s].sum()) / p.pass_steps(1 + len(s)) for s in _closed_subsets(tree.parents.tolist()))
    assert worth == pytest.approx(best, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=20), min_size=1, max_size=6),
       text=st.lists(st.integers(0, 4), min_size=1, max_size=20), k=st.integers(1, 8),
       share=st.sampled_from([0.0, 0.25, 0.3, 0.5, 1.0]), mm=st.integers(1, 3),
       factor=st.sampled_from([0.5, 1.0, 2.0, 16.0]))
def test_the_compiled_chain_proposes_what_the_step_by_step_rule_does(tmp_path_factory, rows, text, k,
                                                                      share, mm, factor):
    path = tmp_path_factory.mktemp("idx") / "i.npz"
    np.savez(path, **memory.build_index([np.array(r) for r in rows]))
    run = memory.MemoryDraft(min_share=share, min_match=mm, factor=factor, path=str(path)).begin(None)
    fast = run.propose(np.array(text), k)
    fast_src = run.last_source
    slow = run.propose_reference(np.array(text), k)
    assert fast.tokens.tolist() == slow.tokens.tolist()
    assert fast_src == run.last_source
    # Each guess's share is its match's: the share of the occurrences its continuation had.
    toks, shares = run.chain(np.array(text), k)
    assert toks.tolist() == slow.tokens.tolist() and len(shares) == len(toks)
    for i in range(len(toks)):
        assert shares[i] == pytest.approx(run.match(text + toks[:i].tolist()).share, abs=1e-12)


def test_the_shipped_index_is_shared_through_a_checked_unpacked_copy(monkeypatch, tmp_path):
    """The first load writes the index unpacked into the user's cache and maps it; a later process
    maps the copy (its pages belong to the file, so model processes share them); a copy that does
    not match the provenance is replaced from the asset; without the asset the copy is not used."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(memory, "_INDEX", None)
    first = memory.load_index()
    folder = memory.mapped_dir() / memory.index_meta()["index_sha256"][:16]
    assert sorted(p.name for p in folder.iterdir()) == ["corpus.npy", "sa.npy"]
    monkeypatch.setattr(memory, "_INDEX", None)
    again = memory.load_index()
    for a in again.values():
        assert isinstance(a.base, np.memmap) or isinstance(getattr(a.base, "base", None), np.memmap)
        assert not a.flags.writeable
    assert memory.index_digest(again) == memory.index_digest(first) == memory.index_meta()["index_sha256"]
    # A damaged copy: one token changed. The next load reads the asset and writes the copy again.
    corpus = np.load(folder / "corpus.npy")
    corpus[0] ^= 1
    np.save(folder / "corpus.npy", corpus)
    monkeypatch.setattr(memory, "_INDEX", None)
    mended = memory.load_index()
    assert memory.index_digest(mended) == memory.index_meta()["index_sha256"]
    assert memory.index_digest({"corpus": np.load(folder / "corpus.npy"),
                                "sa": np.load(folder / "sa.npy")}) == memory.index_meta()["index_sha256"]

    def absent(name):
        raise FileNotFoundError(f"asset {name!r} not found")

    monkeypatch.setattr(memory, "_INDEX", None)
    monkeypatch.setattr(memory, "asset_path", absent)
    with pytest.raises(memory.MemoryIndexError, match="missing; build it with"):
        memory.load_index()

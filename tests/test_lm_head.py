"""The trained draft head (lm.head): the shipped asset, its numpy layer and its draft.

Greedy exactness with the head is tested beside every other draft in test_lm_decode.py
(k = 1..8, six prompts). Here: the asset matches its provenance, a missing asset fails in one line
that names the script (and the other drafts still work), the draft's proposals agree with its
teacher-forced scoring, and speculative sampling with its real q emits the target's distribution
(chi-square at a fixed seed).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from specdec_playable.lm import get_model, sampling
from specdec_playable.lm import head as lmhead
from specdec_playable.lm.decode import generate, judge, speculate
from specdec_playable.lm.drafts import PromptLookup
from specdec_playable.lm.head import DraftHead, HeadNotInstalled
from specdec_playable.lm.kernel import Packed
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.score import accepted_along, score_text
from specdec_playable.shipped import asset_path
from specdec_playable.sim.sampling import chi_square


@pytest.fixture(scope="module")
def model():
    return get_model()


def test_the_shipped_head_matches_its_provenance():
    meta = lmhead.head_meta()
    path = asset_path(lmhead.ASSET)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == meta["sha256"]
    assert path.stat().st_size == meta["asset_bytes"] <= 20e6
    w = lmhead.load_head()
    assert w.vocab.size == meta["vocab_size"] and (np.diff(w.vocab) > 0).all()
    assert w.precision == "int8"  # the matrices quantized at load, a scale per row
    assert all(a.dtype == (np.int8 if name in lmhead.MATRICES else np.float32)
               for name, a in w.arrays.items() if name not in ("vocab", "layers"))
    stored = [a.data if isinstance(a, Packed) else a for a in w.arrays.values()]
    assert not any(a.flags.writeable for a in stored)
    assert all(isinstance(w[name], Packed) for name in lmhead.MATRICES if name in w.arrays)
    assert lmhead.load_head() is w  # loaded once, shared


def test_the_int8_head_computes_the_float16_head_it_was_quantized_from(model):
    """Drafting uses the head in eight bits (half the bytes of the float16 the asset stores, for
    the matrices and the readout rows alike); its logits along a text stay within 2% of the
    largest |logit| of the float16 head's, its first guesses agree at 90% of positions or more,
    and where they differ the float16 head itself was all but tied between the two tokens (its
    logits within 1% of the largest |logit|). Seen with the shipped head: 1.8%, 26 of 28 first
    guesses along this text, and one near-tie (0.06%) in the logits. An unknown precision is
    refused."""
    w8, w16 = lmhead.load_head(), lmhead.load_head(precision="half")
    assert w8 is not w16 and w16.precision == "half" and lmhead.load_head(precision="half") is w16
    for name in lmhead.MATRICES:
        if name in w8.arrays:
            assert w8[name].int8 and w16[name].half and w8[name].nbytes * 2 == w16[name].nbytes
    r8, r16 = lmhead.readout(model, w8), lmhead.readout(model, w16)
    assert r8.int8 and r16.half and r8.nbytes * 2 == r16.nbytes
    text = model.tokenizer.encode("def mean(values):\n    total = 0\n    for v in values:\n"
                                  "        total += v\n    return total / len(values)\n")
    a = score_text(model, text, draft=DraftHead(), chunk=16)
    b = score_text(model, text, draft=DraftHead(precision="half"), chunk=16)
    assert (a.draft_top == b.draft_top).mean() >= 0.90
    fw = model.forward(text, model.new_cache(), logits="none", capture=w8.layers)
    feats = lmhead.head_inputs(w8, fw.hidden, fw.captured)
    embeds = model.weights.embed[text[1:]]
    f8 = lmhead.head_forward(w8, feats[:-1], embeds, lmhead.HeadCache(w8))
    f16 = lmhead.head_forward(w16, feats[:-1], embeds, lmhead.HeadCache(w16))
    z8, z16 = lmhead.matmul_t(f8, r8), lmhead.matmul_t(f16, r16)
    assert np.abs(z8 - z16).max() <= 0.02 * np.abs(z16).max()
    assert np.abs(z8 - z16).max() > 0  # really quantized
    rows = np.arange(len(z16))
    top8, top16 = z8.argmax(axis=1), z16.argmax(axis=1)
    assert (top8 == top16).mean() >= 0.90
    gap = z16[rows, top16] - z16[rows, top8]  # 0 where they agree
    assert (gap <= 0.01 * np.abs(z16).max()).all()
    for bad in ("float8", "", None):
        with pytest.raises(ValueError, match="precision"):
            DraftHead(precision=bad)
        with pytest.raises(ValueError, match="precision"):
            lmhead.load_head(precision=bad)


def test_a_missing_head_says_which_script_makes_it(monkeypatch, model):
    def missing(name):
        raise FileNotFoundError(name)

    monkeypatch.setattr(lmhead, "asset_path", missing)
    monkeypatch.setattr(lmhead, "_HEADS", {})
    with pytest.raises(HeadNotInstalled) as err:
        DraftHead().begin(model)
    msg = str(err.value)
    assert "\n" not in msg and "scripts/train_draft_head.py" in msg
    # Every other draft still works.
    ids = model.tokenizer.chat(PROMPTS["capital"].message, system=None)
    plain = generate(model, ids, max_new=6)
    for draft in (PromptLookup(), NgramDraft()):
        assert speculate(model, ids, draft, 3, max_new=6).tokens == plain.tokens


def test_proposals_agree_with_teacher_forced_scoring(model):
    ids = model.tokenizer.encode("def mean(values):\n    total = 0\n    for v in values:\n"
                                 "        total += v\n    return total / len(values)\n")
    scores = score_text(model, ids, draft=DraftHead(), chunk=16)
    run = DraftHead().begin(model)  # no features observed: the run computes them itself
    first = [run.propose(np.array(ids[:i + 1]), 2).tokens[0] for i in range(1, len(ids) - 1)]
    assert scores.draft_top[0] == -1  # nothing before the first token's feature
    assert (scores.draft_top[1:] == np.array(first)).mean() > 0.97  # float32 near-ties aside
    assert ((scores.alpha >= 0) & (scores.alpha <= 1 + 1e-6)).all()


def test_rounds_along_a_text_count_what_a_speculative_round_keeps(model):
    ids = model.tokenizer.chat(PROMPTS["sum-function"].message)
    g = generate(model, ids, max_new=24)
    seq = ids + list(g.tokens)
    kept = accepted_along(model, seq, DraftHead(), 4, every=3)
    assert kept.shape == (len(range(0, len(seq) - 1, 3)),) and kept.max() <= 4
    # Along the model's own greedy reply, a round keeps at most what the reply then says.
    spec = speculate(model, ids, DraftHead(), 4, max_new=24)
    assert spec.tokens == g.tokens and spec.accepted > 0


N_DRAWS = 20_000
ALPHA = 1e-3


def _p_value(counts: np.ndarray, p: np.ndarray) -> float:
    n = counts.sum()
    big = p * n >= 5
    obs = np.append(counts[big], counts[~big].sum())
    probs = np.append(p[big], p[~big].sum())
    return chi_square(obs, probs / probs.sum()).p_value


def test_speculative_sampling_with_the_head_emits_the_target_distribution(model):
    ids = model.tokenizer.chat(PROMPTS["poem"].message)
    run = DraftHead().begin(model)
    fw = model.forward(ids, model.new_cache(), logits="all", capture=run.capture)
    p = sampling.probabilities(fw.logits[-1], 1.0)
    run.observe(*fw.features(slice(0, -1)))
    prop = run.propose(np.array(ids), 1, temperature=1.0, rng=np.random.default_rng(0))
    q = prop.p_draft[0]
    assert abs(q.sum() - 1) < 1e-9 and (q[np.setdiff1d(np.arange(q.size), run.w.vocab)] == 0).all()
    rng = np.random.default_rng(20261201)
    counts = np.zeros(p.size, np.int64)
    accepted = 0
    for _ in range(N_DRAWS):
        x = sampling.draw(q, rng)
        a, last = judge(np.stack([p, p]), [x], q[None, :], rng)
        accepted += a
        counts[x if a == 1 else last] += 1
    assert _p_value(counts, p) > ALPHA
    expect = np.minimum(p, q).sum()
    assert abs(accepted / N_DRAWS - expect) < 4 * np.sqrt(expect * (1 - expect) / N_DRAWS)


def test_sampled_runs_with_the_head_are_reproducible(model):
    ids = model.tokenizer.chat(PROMPTS["poem"].message)
    a = speculate(model, ids, DraftHead(), 3, max_new=12, temperature=0.8, rng=3)
    b = speculate(model, ids, DraftHead(), 3, max_new=12, temperature=0.8, rng=3)
    assert a.tokens == b.tokens and a.proposed > 0


def test_one_head_run_moved_to_a_shorter_context_drafts_as_a_fresh_one(model):
    """A run that drafted after a long context, asked about a shorter one (another prompt), keeps
    only what the two share and drafts exactly as a fresh run does."""
    long_ctx = np.array(model.tokenizer.chat(PROMPTS["sum-function"].message) + [330, 1212, 314], np.int64)
    short = np.array(model.tokenizer.chat(PROMPTS["sky"].message)[:20], np.int64)
    reused = DraftHead().begin(model)
    reused.propose(long_ctx, 3)
    got = reused.propose(short, 3).tokens.tolist()
    assert got == DraftHead().begin(model).propose(short, 3).tokens.tolist()
    assert reused.propose(long_ctx, 3).tokens.tolist() == DraftHead().begin(model).propose(
        long_ctx, 3).tokens.tolist()


@pytest.fixture(scope="module")
def fused_head(tmp_path_factory):
    """A head fed several layers (EAGLE-3), made from the shipped one: a fusion of the residual
    streams after blocks 2 and 15 with the last layer's feature, seeded, that really reads all
    three (the identity on the last layer plus a perturbation over every input)."""
    with np.load(asset_path(lmhead.ASSET)) as z:
        arrays = {k: z[k] for k in z.files}
    d = arrays["fc"].shape[0]
    layers = (2, 15)
    fuse = np.zeros((d, d * (len(layers) + 1)), np.float32)
    fuse[:, -d:] = np.eye(d, dtype=np.float32)
    fuse += np.random.default_rng(7).standard_normal(fuse.shape).astype(np.float32) * 0.3 / np.sqrt(d)
    arrays.update(fuse=fuse.astype(np.float16), layers=np.array(layers, np.int32))
    path = tmp_path_factory.mktemp("head") / "fused_head.npz"
    np.savez(path, **arrays)
    return DraftHead(path=str(path))


def test_a_head_fed_several_layers_is_served_what_it_reads(model, fused_head):
    """The decoders capture the blocks the head names and hand it their streams: its drafts
    after observed passes equal those of a run that computes every feature itself, and equal
    its teacher-forced scoring; greedy output still equals plain decoding."""
    w = fused_head.weights()
    assert w.layers == (2, 15) and fused_head.capture == (2, 15)
    ids = model.tokenizer.chat(PROMPTS["sum-function"].message)
    fw = model.forward(ids, model.new_cache(), logits="none", capture=w.layers)
    observed = fused_head.begin(model)
    observed.observe(*fw.features(slice(0, -1)))
    computed = fused_head.begin(model)  # observes nothing: runs the target itself
    assert observed.propose(np.array(ids), 4).tokens.tolist() == computed.propose(np.array(ids), 4).tokens.tolist()
    with pytest.raises(ValueError, match="residual stream"):
        fused_head.begin(model).observe(fw.hidden)  # the streams are missing
    text = model.tokenizer.encode("def mean(values):\n    total = 0\n    for v in values:\n"
                                  "        total += v\n    return total / len(values)\n")
    scores = score_text(model, text, draft=fused_head, chunk=16)
    run = fused_head.begin(model)
    first = [run.propose(np.array(text[:i + 1]), 2).tokens[0] for i in range(1, len(text) - 1)]
    assert (scores.draft_top[1:] == np.array(first)).mean() > 0.97  # float32 near-ties aside
    plain = generate(model, ids, max_new=24)
    spec = speculate(model, ids, fused_head, 4, max_new=24)
    assert spec.tokens == plain.tokens and spec.proposed > 0
    # The lower layers change what it guesses (the fusion is not the last layer alone).
    shipped = DraftHead().begin(model)
    guesses = [(fused_head.begin(model).propose(np.array(text[:i + 1]), 1).tokens[0],
                shipped.propose(np.array(text[:i + 1]), 1).tokens[0]) for i in range(1, len(text) - 1, 4)]
    assert any(a != b for a, b in guesses)


@pytest.fixture(scope="module")
def deep_head(tmp_path_factory):
    """A head of two blocks, made from the shipped one: its block again as a second block (the
    same matrices under the names ``_1``), so both blocks change what it computes."""
    with np.load(asset_path(lmhead.ASSET)) as z:
        arrays = {k: z[k] for k in z.files}
    for name, again in zip(lmhead.block_names(0), lmhead.block_names(1)):
        arrays[again] = arrays[name]
    path = tmp_path_factory.mktemp("head") / "deep_head.npz"
    np.savez(path, **arrays)
    return DraftHead(path=str(path))


def test_a_head_of_two_blocks_drafts_with_both_and_keeps_greedy_output(model, deep_head):
    """A deeper head: the second block changes its guesses (against the shipped head's), its
    drafts after observed passes equal a run computing its own features, and greedy output equals
    plain decoding with a chain (k = 4) and a dynamic tree (2 x 3), whose branches each keep their
    own path in both blocks' caches."""
    from specdec_playable.lm.tree import speculate_tree

    w = deep_head.weights()
    assert w.n_blocks == 2 and lmhead.load_head().n_blocks == 1
    assert lmhead.HeadCache(w).k.shape[0] == 2
    ids = model.tokenizer.chat(PROMPTS["sum-function"].message)
    text = model.tokenizer.encode("def mean(values):\n    total = 0\n    for v in values:\n"
                                  "        total += v\n    return total / len(values)\n")
    guesses = [(deep_head.begin(model).propose(np.array(text[:i + 1]), 1).tokens[0],
                DraftHead().begin(model).propose(np.array(text[:i + 1]), 1).tokens[0])
               for i in range(1, len(text) - 1)]
    assert any(a != b for a, b in guesses)  # seen: 4 of 27
    fw = model.forward(ids, model.new_cache(), logits="none", capture=w.layers)
    observed = deep_head.begin(model)
    observed.observe(*fw.features(slice(0, -1)))
    assert (observed.propose(np.array(ids), 4).tokens.tolist()
            == deep_head.begin(model).propose(np.array(ids), 4).tokens.tolist())
    plain = generate(model, ids, max_new=24)
    chain = speculate(model, ids, deep_head, 4, max_new=24)
    tree = speculate_tree(model, ids, deep_head, 2, 3, shape="dynamic", max_new=24)
    assert chain.tokens == plain.tokens == tree.tokens and chain.proposed > 0


#: How far the compiled layer may stray from the numpy one, relative to the largest output: the
#: same float32 arithmetic summed in another order (seen: 4e-7).
COMPILED_RTOL = 1e-5


@pytest.mark.skipif(not lmhead.HAVE_NUMBA, reason="the compiled layer needs numba")
@pytest.mark.parametrize("past,n,deep", [(0, 1, False), (5, 1, False), (40, 3, False), (250, 7, False),
                                         (300, 1, False), (300, 16, False), (5, 1, True), (300, 7, True)])
def test_the_compiled_layer_computes_the_numpy_layer(monkeypatch, request, past, n, deep):
    """Drafted guesses (one position) and a verify pass's kept tokens (several) run the compiled
    layer; it must give numpy's features and cache (every block's), including where the attention
    window (256) cuts the cache (past 300) and where the cache has to grow; for the shipped head
    and a head of two blocks."""
    w = request.getfixturevalue("deep_head").weights() if deep else lmhead.load_head()
    d = w["wo"].shape[0]
    rng = np.random.default_rng(7)
    feats = rng.standard_normal((n, d)).astype(np.float32) * 3
    embeds = rng.standard_normal((n, d)).astype(np.float32) * 0.05

    def cache():
        c = lmhead.HeadCache(w, capacity=past + 1)  # too small for n > 1: reserve grows it
        c.k[:, :, :past] = rng.standard_normal(c.k[:, :, :past].shape)
        c.v[:, :, :past] = rng.standard_normal(c.v[:, :, :past].shape)
        c.length = past
        return c

    a = cache()
    b = lmhead.HeadCache(w, capacity=a.k.shape[2])
    b.k[...], b.v[...], b.length = a.k, a.v, a.length
    got = lmhead.head_forward(w, feats, embeds, a)
    monkeypatch.setattr(lmhead, "HAVE_NUMBA", False)
    want = lmhead.head_forward(w, feats, embeds, b)
    assert a.length == b.length == past + n
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=COMPILED_RTOL * scale)
    for name in ("k", "v"):
        x, y = getattr(a, name)[:, :, :past + n], getattr(b, name)[:, :, :past + n]
        np.testing.assert_allclose(x, y, rtol=0, atol=COMPILED_RTOL * np.abs(y).max())


def test_long_spans_keep_the_numpy_layer(monkeypatch):
    """A prefill longer than COMPILED_UP_TO keeps numpy's batched attention (the compiled one
    loops position by position)."""
    w = lmhead.load_head()
    called = []
    monkeypatch.setattr(lmhead, "_forward_compiled", lambda *a: called.append(a[1].shape[0]))
    d = w["wo"].shape[0]
    for n in (lmhead.COMPILED_UP_TO, lmhead.COMPILED_UP_TO + 1):
        lmhead.head_forward(w, np.ones((n, d), np.float32), np.ones((n, d), np.float32),
                            lmhead.HeadCache(w))
    assert called == ([lmhead.COMPILED_UP_TO] if lmhead.HAVE_NUMBA else [])


def test_warmup_runs_the_layer_and_the_readout(model, monkeypatch):
    seen = []
    real = lmhead.head_forward
    monkeypatch.setattr(lmhead, "head_forward", lambda w, f, e, c: seen.append(f.shape[0]) or real(w, f, e, c))
    assert lmhead.warmup(model) > 0
    assert seen == [1, 2]
    assert any(src is model.weights.embed for src, _ in lmhead.load_head().readouts)  # packed
    monkeypatch.setattr(lmhead, "load_head", lambda: (_ for _ in ()).throw(HeadNotInstalled("x")))
    assert lmhead.warmup(model) == 0.0

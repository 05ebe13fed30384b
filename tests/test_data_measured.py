"""The real model's measured numbers (assets/lm/measured_texts.json): reproducible, bounded, usable."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specdec_playable.sim import adaptive, relay, sampling
import hand_texts as texts

from specdec_playable.data import measured
from specdec_playable.shipped import asset_path
from specdec_playable.lm import get_model
from specdec_playable.lm.head import DraftHead
from specdec_playable.lm.measure import measure_text, next_token, token_pieces, top_only

#: Re-scoring matches the asset within this (it keeps 4 decimals; float32 passes over different
#: chunkings differ in the last bits).
TOL = 2e-3


@pytest.fixture(scope="module")
def model():
    return get_model()


def test_every_text_is_tokenised_by_the_model_and_bounded():
    m = measured.load_measured()
    assert set(m.texts) == {t.id for t in texts.load_texts()} | {"py-account"}
    for t in m.texts.values():
        assert "".join(t.pieces) == t.source
        assert len(t.pieces) == t.alpha.size == t.greedy.size == t.p_token.size == len(t.guess)
        assert ((t.alpha >= 0) & (t.alpha <= 1)).all() and not t.alpha.flags.writeable
        assert ((t.p_token >= 0) & (t.p_token <= 1)).all()
    for t in texts.load_texts():  # the bundled texts, unchanged
        assert m.texts[t.id].source == t.source
    assert m.texts["py-account"].source == measured.python_text()["source"]


def test_provenance_names_model_draft_command_and_counts():
    meta = json.loads(asset_path(measured.META).read_text())
    m = measured.load_measured()
    assert len(meta["model"]["sha256"]) == 64 and meta["model"]["file"].endswith(".gguf")
    assert meta["draft"]["file"] == "assets/lm/draft_head.npz" and len(meta["draft"]["sha256"]) == 64
    assert meta["learned"]["file"] == "assets/lm/ngram_draft.npz" and len(meta["learned"]["sha256"]) == 64
    assert meta["command"] == "python scripts/score_texts.py" and meta["date"].startswith("20")
    assert meta["tokens"] == {i: len(t) for i, t in m.texts.items()}
    assert meta["seconds"]["score"] > 0


@pytest.mark.parametrize("tid, chars", [("js-loop", 60), ("poem-kettle", 70), ("translation-fr", 160)])
def test_a_slice_rescored_matches_the_asset(model, tid, chars):
    """Scoring is causal, so a prefix of the text gives the same numbers for its tokens (all but
    the last, which a cut may tokenise differently)."""
    shipped = measured.load_measured().texts[tid]
    fresh = measure_text(model, shipped.source[:chars])
    n = len(fresh) - 1
    assert n >= 10
    assert fresh.pieces[:n] == shipped.pieces[:n]
    np.testing.assert_allclose(fresh.alpha[:n], shipped.alpha[:n], atol=TOL)
    np.testing.assert_allclose(fresh.p_token[:n], shipped.p_token[:n], atol=TOL)
    assert (fresh.greedy[:n] == shipped.greedy[:n]).mean() >= 0.95  # a near-tie may flip
    assert fresh.guess[:n] == shipped.guess[:n]


def test_a_context_rescored_matches_the_asset(model):
    ctx = measured.CONTEXTS[-1]
    rec = next(c for c in json.loads(asset_path(measured.ASSET).read_text())["contexts"]
               if c["context"] == ctx)
    nt = next_token(model, ctx, draft=DraftHead(), top=len(rec["target"]),
                    draft_top=len(rec["draft"]))
    assert [t for t, _ in nt.target] == [t for t, _ in rec["target"]]
    np.testing.assert_allclose([p for _, p in nt.target], [p for _, p in rec["target"]], atol=TOL)
    kept, alpha = top_only(nt)
    assert [t for t, _, _ in kept] == [t for t, _, _ in rec["draft"]]
    np.testing.assert_allclose([q for _, q, _ in kept], [q for _, q, _ in rec["draft"]], atol=TOL)
    assert alpha == pytest.approx(rec["alpha"], abs=TOL)
    assert nt.alpha == pytest.approx(rec["alpha_full"], abs=TOL)
    assert 1.0 - nt.draft_rest == pytest.approx(rec["draft_top_mass"], abs=TOL)


def test_keeping_the_drafts_top_tokens_renormalises_and_scores_exactly():
    from specdec_playable.lm.measure import NextToken

    nt = NextToken("x", (("a", 0.6), ("b", 0.3)), (("b", 0.3, 0.3), ("c", 0.1, 0.0)), 0.1, 0.6, 0.3)
    kept, alpha = top_only(nt)
    assert [t for t, _, _ in kept] == ["b", "c"] and [p for _, _, p in kept] == [0.3, 0.0]
    assert [q for _, q, _ in kept] == pytest.approx([0.75, 0.25]) and alpha == pytest.approx(0.3)
    with pytest.raises(ValueError, match="no token"):
        top_only(NextToken("x", (("a", 1.0),), (), 0.0, 1.0, 0.0))


def test_pieces_join_back_even_when_a_character_spans_tokens(model):
    s = "Le vieux pont était fermé — “déjà”, 東京 🙂"
    ids = model.tokenizer.encode(s)
    pieces = token_pieces(model.tokenizer, ids)
    assert len(pieces) == len(ids) and "".join(pieces) == s


def test_measuring_stops_when_asked_and_reports_progress(model):
    seen = []
    out = measure_text(model, measured.load_measured().texts["py-account"].source, chunk=16,
                       stopped=lambda: len(seen) >= 3, report=lambda d, n: seen.append((d, n)))
    assert not out.complete and len(out) == 32
    assert seen[0] == (0, seen[0][1]) and seen[-1][0] == 32


def test_measured_text_feeds_the_relay():
    t = measured.measured_text("py-account")
    assert t.tokens == measured.load_measured().texts["py-account"].pieces
    np.testing.assert_array_equal(t.q, measured.load_measured().texts["py-account"].alpha)
    r = relay.run(t.tokens, t.q, 4, rng=0, decoys=t.decoys)
    assert r.output == t.tokens
    # A draft right nowhere (alpha 0 everywhere) is never kept; the relay reads q per token.
    zero = relay.run(t.tokens, np.zeros(len(t)), 4, rng=0, decoys=t.decoys)
    assert zero.acceptance.accepted == 0 and r.acceptance.accepted > 0


def test_histogram_shares_sum_to_one_and_bin_the_edges():
    h = measured.histogram([0.0, 0.1, 0.95, 1.0, 0.5])
    assert h.sum() == pytest.approx(1.0) and h.size == measured.BINS
    assert h[0] == pytest.approx(0.2) and h[-1] == pytest.approx(0.4)
    with pytest.raises(ValueError):
        measured.histogram([1.5])


def test_stream_is_the_measured_texts_back_to_back():
    s = measured.measured_stream(("js-loop", "poem-kettle"), 2)
    a, b = (measured.load_measured().texts[i] for i in ("js-loop", "poem-kettle"))
    assert len(s) == 2 * (len(a) + len(b))
    assert s.segments == (("code", 0, 2 * len(a)), ("poem", 2 * len(a), len(s)))
    np.testing.assert_array_equal(s.q[:len(a)], a.alpha)
    runs = adaptive.race(s, adaptive.default_policies(), 0.3, rng=1)
    assert all(r.output == s.tokens for r in runs)


def test_contexts_are_distributions_with_the_real_alpha():
    for text in measured.CONTEXTS:
        c = measured.context(text)
        assert c.labels[-1] == measured.REST and len(c.labels) == c.p.size == c.q.size
        assert c.p.sum() == pytest.approx(1.0) and c.q.sum() == pytest.approx(1.0)
        assert c.p[: c.n_target].tolist() == sorted(c.p[: c.n_target], reverse=True)
        # The draft is kept to its listed tokens, so the grouped alpha is the real one.
        assert np.minimum(c.p, c.q).sum() == pytest.approx(c.alpha, abs=TOL)
    with pytest.raises(ValueError):
        measured.context("not a context")


def test_distort_keeps_support_and_moves_the_stated_share():
    q = np.array([0.6, 0.3, 0.1, 0.0])
    np.testing.assert_allclose(measured.distort(q, 1.0, 0.0, 0), q)
    d = measured.distort(q, 2.0, 0.25, 3)
    assert d.sum() == pytest.approx(1.0) and d[3] == pytest.approx(0.25)
    assert d[0] / d[1] == pytest.approx(np.sqrt(2.0))  # temperature 2 flattens: ratio ** (1/2)
    with pytest.raises(ValueError):
        measured.distort(q, 0.0, 0.0, 0)


@pytest.mark.parametrize("text", measured.CONTEXTS)
def test_speculative_sampling_over_real_p_passes_chi_square(text):
    """Seed 2024, 100,000 draws, a draft bent away from the target (temperature 3, 40 % bias to
    the target's 5th token): the outputs fit the model's real p (p-value > 0.001) and not q."""
    c = measured.context(text)
    q = measured.distort(c.q, 3.0, 0.4, 4)
    r = sampling.speculative_sample(c.p, q, 100_000, rng=2024)
    assert sampling.chi_square(r.counts(), c.p).p_value > 1e-3
    assert sampling.chi_square(r.counts(), q).p_value < 1e-6


def test_a_model_process_measures_as_this_process_does(model):
    """Episode 4's paste is scored in a worker's child process (runtime.model_process): the same numbers,
    progress reported per pass, and a partial result when the time runs out."""
    from specdec_playable.runtime import model_process as remote

    text = measured.load_measured().texts["py-account"].source
    child = remote.ModelProcess(blas_threads=1)
    try:
        seen = []
        out = child.measure(text[:200], max_seconds=120, report=seen.append)
        here = measure_text(model, text[:200])
        assert out.complete and out.pieces == here.pieces
        np.testing.assert_allclose(out.alpha, here.alpha, atol=TOL)
        assert seen[0][0] == 0 and seen[-1] == (len(out), len(out))
        # the memory draft's first guesses come back beside the head's, one per token
        from specdec_playable.lm.memory import MemoryDraft

        mine = measure_text(model, text[:200], beside={"memory": MemoryDraft()}).kept_beside("memory")
        theirs = out.kept_beside("memory")
        assert theirs is not None and theirs.shape == mine.shape
        assert (theirs == mine).mean() >= 0.95  # a near-tie of the target's top token may flip
        cut = child.measure(text, max_seconds=1e-6)  # out of time before its first pass
        assert not cut.complete and len(cut) == 0
    finally:
        child.close()


@pytest.mark.parametrize("tid", ["py-account", "form-letter"])
def test_the_match_lengths_recomputed_equal_the_asset(model, tid):
    """The memory draft's match before each token (integers from the shipped index and the
    model's tokenizer: equal on any machine)."""
    from specdec_playable.lm.memory import load_index, match

    shipped = measured.load_measured().texts[tid]
    ids = np.asarray(model.tokenizer.encode(shipped.source), dtype=np.int64)
    assert shipped.match.shape == (ids.size,) and shipped.match[0] == 0
    index = load_index()
    fresh = [match(index, ids[:i]).length for i in range(1, 40)]
    assert fresh == shipped.match[1:40].tolist()
    # and Episode 6's stream lays them out as it lays out the tokens
    both = measured.match_lengths((tid, "poem-kettle"), repeats=2)
    n = len(shipped)
    assert both[:n].tolist() == both[n:2 * n].tolist() == shipped.match.tolist()


def test_the_memory_draft_measured_beside_the_head_leaves_the_heads_numbers_and_checks_its_guess(model):
    """Episode 4's paste: the memory's first greedy guess at each token against the target's own
    top token (from an independent scoring), the head's columns unchanged by it."""
    from specdec_playable.lm.memory import MemoryDraft
    from specdec_playable.lm.score import score_text

    source = measured.load_measured().texts["form-letter"].source[:200]
    alone = measure_text(model, source)
    both = measure_text(model, source, beside={"memory": MemoryDraft()})
    np.testing.assert_array_equal(both.greedy, alone.greedy)
    np.testing.assert_allclose(both.alpha, alone.alpha, atol=1e-6)
    kept = both.kept_beside("memory")
    assert kept.shape == (len(both),) and kept.dtype == bool and not kept.flags.writeable
    assert both.kept_beside("other") is None and alone.kept_beside("memory") is None
    seq = np.concatenate([[model.tokenizer.bos_id], both.ids])
    top = score_text(model, seq).target_top  # the target's choice after seq[:i + 1]
    run = MemoryDraft().begin(model)
    for i in range(len(both)):
        guess = run.propose(seq[:i + 1], 1).tokens
        assert kept[i] == (len(guess) > 0 and int(guess[0]) == int(top[i])), i
    assert kept.any()  # a form letter: the memory has seen its stock phrases


def test_a_pasted_texts_description_says_both_drafts_first_guess_kept(model):
    from specdec_playable.episodes.ep4.state import kept_words, pasted_text
    from specdec_playable.lm.memory import MemoryDraft

    result = measure_text(model, "Thank you for your letter. I look forward to hearing from you.",
                          beside={"memory": MemoryDraft()})
    said = kept_words(result)
    head = float(result.greedy.mean())
    memory = float(result.kept_beside("memory").mean())
    assert said == (f" First guess kept: the head {head:.0%} of its tokens, the memory draft "
                    f"{memory:.0%}.")
    assert pasted_text(result).description.endswith(said)
    assert kept_words(measure_text(model, "Hello there.")) == ""  # not measured: nothing said

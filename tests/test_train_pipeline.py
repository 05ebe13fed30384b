"""The training pipeline's stages on a tiny corpus: loops are found where they start and loop-free
text is left alone; the held-out split never shares a prompt with training; every stage resumes
to the same output after an interruption; and the features stage agrees with the layers the
serving model captures as it decodes.

The features and training tests run the real model (as every lm test does) and, for training,
JAX and optax (the ``test`` extra).
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.train import corpus
from specdec_playable.train.corpus import (SelfDistill, cut_loop, loop_start, loop_weights,
                                           read_selfdistill, selfdistill_items, selfdistill_rows,
                                           split_by_prompt)

# ------------------------------------------------------------------------------------ loops


def _loop_free(rng, n: int) -> np.ndarray:
    """``n`` token ids in which no token repeats the one ``p`` before it for ``p`` up to 64
    over more than a few positions (a draw from 49,152 ids)."""
    return rng.integers(0, 49152, n)


def test_loop_free_text_is_left_unchanged():
    rng = np.random.default_rng(0)
    for n in (0, 1, 5, 40, 320):
        ids = _loop_free(rng, n)
        assert loop_start(ids) == n and np.array_equal(cut_loop(ids), ids)
        assert np.array_equal(loop_weights(ids), np.ones(n, np.float32))
    # Repetition that stops before the end is not a loop: a list, then fresh text.
    ids = np.concatenate([rng.integers(0, 100, 5), np.tile([7, 8, 9], 20), _loop_free(rng, 40)])
    assert loop_start(ids) == ids.size
    # Too short to count: two copies of a unit, or fewer than 32 tokens.
    assert loop_start(np.concatenate([_loop_free(rng, 30), np.tile(np.arange(20), 2)])) == 70
    assert loop_start(np.concatenate([_loop_free(rng, 30), np.tile([1, 2, 3], 10)])) == 60


@pytest.mark.parametrize("period", [1, 2, 12, 64])
def test_a_loop_is_cut_where_it_starts(period):
    """A prefix, then one unit repeated to the end: the cut keeps the prefix and one copy."""
    rng = np.random.default_rng(period)
    unit = rng.integers(1000, 2000, period)
    prefix = np.concatenate([rng.integers(3000, 4000, 50), [5]])  # 5: not the unit's last token
    copies = max(3, -(-40 // period))
    ids = np.concatenate([prefix, np.tile(unit, copies), unit[:period // 2]])
    start = prefix.size + period
    assert loop_start(ids) == start
    assert np.array_equal(cut_loop(ids), ids[:start])
    w = loop_weights(ids, 0.25)
    assert (w[:start] == 1).all() and np.allclose(w[start:], 0.25, atol=0)


def test_a_loop_with_a_counter_is_found_with_a_tolerance():
    """"16. **Seychelles**", "17. ...": every copy differs in one token; exact matching finds no
    loop, a tolerance of 0.2 finds it where the counting lines begin repeating."""
    rng = np.random.default_rng(3)
    prefix = rng.integers(3000, 4000, 40)
    lines = np.concatenate([[100 + i, 11, 12, 13, 14, 15, 16] for i in range(12)])
    ids = np.concatenate([prefix, lines])
    assert loop_start(ids) == ids.size
    assert loop_start(ids, tolerance=0.2) == prefix.size + 7 + 1  # the first copy's first match


# ------------------------------------------------------------------------------------ the corpus

def _tiny_corpus(path, prompts, replies, finished):
    user = [p.encode() for p in prompts]
    np.savez(path, user_utf8=np.frombuffer(b"".join(user), np.uint8),
             user_offsets=np.cumsum([0] + [len(u) for u in user]),
             reply=np.concatenate(replies).astype(np.uint16),
             offsets=np.cumsum([0] + [len(r) for r in replies]),
             finished=np.array(finished), source=np.ones(len(prompts), np.uint8))
    return read_selfdistill(path)


def test_the_held_out_split_never_shares_a_prompt_with_training():
    rng = np.random.default_rng(1)
    base = [f"Write a note number {i} about item {j}." for i in range(120) for j in range(3)]
    # the same prompt again, in other case and spacing, lands on the same side
    prompts = base + [p.upper() for p in base[::7]] + ["  " + p.replace(" ", "   ") for p in base[::5]]
    sd = SelfDistill(tuple(prompts), tuple(rng.integers(0, 500, (len(prompts), 4))),
                     np.zeros(len(prompts), bool), np.ones(len(prompts), np.uint8))
    held = split_by_prompt(sd.prompts, 0.2, seed=4)
    assert 0.1 < held.mean() < 0.3  # a seeded share near the one asked for
    norm = [corpus.normal_prompt(p) for p in prompts]
    assert not {n for n, h in zip(norm, held) if h} & {n for n, h in zip(norm, held) if not h}
    train_rows, held_rows = selfdistill_rows(sd, held_share=0.2, seed=4)
    assert sorted(np.concatenate([train_rows, held_rows]).tolist()) == list(range(len(prompts)))
    assert not {norm[i] for i in train_rows} & {norm[i] for i in held_rows}
    first = selfdistill_rows(sd, held_share=0.2, seed=4, rows=50)[0]
    assert np.array_equal(first, train_rows[:50])  # a smaller choice is a prefix of a larger


def test_the_corpus_reader_builds_each_row_as_the_model_read_it(tmp_path):
    from specdec_playable.lm import get_model

    tok = get_model().tokenizer
    loop = np.concatenate([np.arange(300, 340), np.tile([50, 51, 52, 53], 12)])
    sd = _tiny_corpus(tmp_path / "c.npz", ["Say hi.", "Count."], [np.array([9, 10, 11]), loop],
                      [True, False])
    a, b = (sd.row_ids(tok, i, cut=True) for i in (0, 1))
    chat = [list(tok.chat(p)) for p in sd.prompts]
    assert a.tolist() == chat[0] + [9, 10, 11, tok.im_end]
    assert b.tolist() == chat[1] + loop[:44].tolist()  # the loop cut after its first copy
    assert sd.row_ids(tok, 1, cut=False).tolist() == chat[1] + loop.tolist()
    items = selfdistill_items(sd, tok, [0, 1], cut=True, drop={1})
    assert [d.source for d, _ in items] == ["selfdistill/model-written/0"]


def test_a_row_that_quotes_a_held_out_text_is_found():
    from specdec_playable.lm.prompts import PASSAGE

    texts = ["a harmless reply", "here it is: " + PASSAGE[10:90] + " and more", "another"]
    assert set(corpus.overlapping_rows(texts)) == {1}
    assert corpus.overlapping_rows(["nothing here", "at all"]) == {}


def test_every_benchmark_prompt_is_held_out_of_the_corpus():
    """The extra fresh prompts the heads are compared on are held out like the pages' own: a row
    quoting one is found, and no key names two prompts."""
    from specdec_playable.lm.prompts import EVERY, FRESH, PROMPTS

    assert not set(FRESH) & set(PROMPTS) and len(EVERY) == len(FRESH) + len(PROMPTS)
    for key, t in FRESH.items():
        assert corpus.held_out_strings()[f"prompt: {key}"] == t.message
        assert set(corpus.overlapping_rows(["a reply", "as asked: " + t.message])) == {1}, key


def test_no_fresh_prompt_is_a_near_copy_of_a_chat_prompt_trained_on():
    """The extra fresh prompts are fresh for a head trained on this CPU's chat replies too: the
    words of each share at most half of their union with those of any prompt of
    ``train.chat_prompts`` (a near copy, such as one that swaps a single word, shares more)."""
    import re

    from specdec_playable.lm.prompts import FRESH
    from specdec_playable.train.chat_prompts import CHAT, CHAT_GREEDY

    def words(text):
        return set(re.findall(r"[a-z]+", text.lower()))

    for key, t in FRESH.items():
        w = words(t.message)
        worst = max(CHAT + CHAT_GREEDY, key=lambda p: len(w & words(p)) / len(w | words(p)))
        assert len(w & words(worst)) / len(w | words(worst)) <= 0.5, (key, worst)


# ------------------------------------------------------------------------------------ features

@pytest.fixture(scope="module")
def model():
    from specdec_playable.lm import get_model

    return get_model()


def _seqs(model, n: int = 5) -> list[np.ndarray]:
    tok = model.tokenizer
    texts = ["def add(a, b):\n    return a + b\n", "The sea was calm and the boats were still.",
             '{"name": "Ada", "year": 1843}', "Dear Sam, thank you for the lovely tea.",
             "for i in range(3):\n    print(i)\n"]
    return [np.array(tok.chat("Write something.") + tok.encode(t), np.int64) for t in texts[:n]]


def test_the_features_stage_resumes_to_the_same_shards(model, tmp_path):
    from specdec_playable.train.features import Stopped, collect

    seqs = _seqs(model)
    whole = collect(model, seqs, tmp_path / "a", 32, (2, 15), shard=2)
    with pytest.raises(Stopped):
        collect(model, seqs, tmp_path / "b", 32, (2, 15), shard=2, max_shards=1)
    assert len(list((tmp_path / "b").glob("shard_*"))) == 1
    with pytest.raises(Stopped):  # a second interruption, one shard further
        collect(model, seqs, tmp_path / "b", 32, (2, 15), shard=2, max_shards=1)
    resumed = collect(model, seqs, tmp_path / "b", 32, (2, 15), shard=2)
    assert len(list((tmp_path / "b").glob("shard_*"))) == 3 and not list((tmp_path / "b").glob("*.tmp*"))
    assert sorted(whole) == sorted(resumed) == ["feats", "lens", "low", "seq", "toks"]
    for k in whole:  # the same computation: the same bits
        assert np.array_equal(np.asarray(whole[k]), np.asarray(resumed[k])), k
    # every token of every sequence is in one row, in order (a last window of one token, which
    # predicts nothing, is left out)
    lens, toks = np.asarray(whole["lens"]), np.asarray(whole["toks"])
    for i, s in enumerate(seqs):
        rows = np.flatnonzero(whole["seq"] == i)
        got = np.concatenate([toks[r, :lens[r]] for r in rows])
        assert got.size >= s.size - 1 and np.array_equal(got, s[:got.size])


def test_a_shared_start_goes_through_the_model_once_and_changes_nothing_but_rounding(model):
    """Sequences that open with the same chat template: the template's pass is shared, and every
    feature stays within 1% of its row's RMS of a single pass over the whole sequence."""
    from specdec_playable.train.features import common_prefix, sequence_features, shard_features

    seqs = _seqs(model, 3)
    assert common_prefix(seqs) == len(model.tokenizer.chat("Write something."))
    assert common_prefix([seqs[0], seqs[0][:20]]) == 18  # each keeps two tokens of its own
    for (h, low), c in zip(shard_features(model, seqs, (2, 15)), seqs):
        h1, low1 = sequence_features(model, c, (2, 15))
        for a, b in ((h, h1), (low, low1)):
            assert a.shape == b.shape
            rms = np.sqrt((b.astype(np.float64) ** 2).mean(axis=-1, keepdims=True))
            assert (np.abs(a - b) <= 0.01 * rms).all()


def test_the_features_agree_with_the_layers_the_serving_model_captures(model, tmp_path):
    """One pass over the whole row (the features stage) against a prompt's prefill and then
    verify passes of 5 positions with the layers captured (what a decoder hands the head):
    every value within 1% of the RMS of its row (float16 storage and the kernels' float
    rounding; measured at most 0.6%)."""
    from specdec_playable.train.features import collect

    ids = _seqs(model, 4)[3]
    data = collect(model, [ids], tmp_path, 256, (2, 15))
    stored = [np.asarray(data["feats"])[0, :ids.size], np.asarray(data["low"])[0, :ids.size]]
    cache, got = model.new_cache(capacity=ids.size + 8), []
    cut = len(model.tokenizer.chat("Write something."))
    for lo, hi in [(0, cut)] + [(s, min(s + 5, ids.size)) for s in range(cut, ids.size, 5)]:
        fw = model.forward(ids[lo:hi], cache, logits="all", capture=(2, 15))
        got.append((fw.hidden, np.stack([fw.captured[2], fw.captured[15]], axis=1)))
    served = [np.concatenate([g[0] for g in got]), np.concatenate([g[1] for g in got])]
    for a, b in zip(stored, served):
        rms = np.sqrt((b.astype(np.float64) ** 2).mean(axis=-1, keepdims=True))
        assert (np.abs(a.astype(np.float64) - b) <= 0.01 * rms).all()
    assert np.array_equal(model.head(stored[0].astype(np.float32)).argmax(1),
                          model.head(served[0]).argmax(1))


# ------------------------------------------------------------------------------------ training

@pytest.mark.parametrize("draws", [[], ["--sampler", "epoch", "--sort-window", "4"]])
def test_training_resumes_to_the_same_weights_after_an_interruption(tmp_path, draws):
    """A run stopped at step 5 (checkpointed with the optimizer's state and the data position)
    and run again ends with the weights and loss curve of a run never stopped: the same
    computation, so the same bits; also where rows are sorted by length over runs of 4 steps,
    so it stops within a run."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from specdec_playable.train import cli, pipeline

    common = ["--tiny", "--seed", "7", "--steps", "12", "--no-write",
              "--features-dir", str(tmp_path / "features"), *draws]
    whole = pipeline.run(cli.parse_args(common + ["--work", str(tmp_path / "a")]))
    first = pipeline.run(cli.parse_args(common + ["--work", str(tmp_path / "b"), "--stop-at", "5"]))
    assert first["stopped"] == "training" and len(first["history"]) == 5
    # a copy of the checkpoint at step 5, measured later (--checkpoint), is the head at step 5
    ckpt = next((tmp_path / "b").glob("ckpt_*.npz"))
    copy = tmp_path / "step5.npz"
    copy.write_bytes(ckpt.read_bytes())
    copy.with_suffix(".json").write_text(ckpt.with_suffix(".json").read_text())
    snap = pipeline.run(cli.parse_args(common + ["--work", str(tmp_path / "c"), "--checkpoint", str(copy)]))
    assert snap["results"]["step"] == 5
    assert snap["results"]["tokens_seen"] == round(sum(h["tokens_seen"] / h["step"] for h in first["history"]))
    for k in first["arrays"]:
        np.testing.assert_array_equal(snap["arrays"][k], first["arrays"][k], err_msg=k)
    resumed = pipeline.run(cli.parse_args(common + ["--work", str(tmp_path / "b")]))
    assert [h["step"] for h in resumed["history"]] == list(range(1, 13))
    np.testing.assert_array_equal([h["loss"] for h in resumed["history"]],
                                  [h["loss"] for h in whole["history"]])
    for k in whole["arrays"]:
        np.testing.assert_array_equal(resumed["arrays"][k], whole["arrays"][k], err_msg=k)
    with np.load(next((tmp_path / "b").glob("ckpt_*.npz"))) as z:
        assert int(z["step"]) == int(z["data_position"]) == 12


# ------------------------------------------------------------------------------------ evaluation

def test_tokens_per_pass_on_greedy_replies_match_speculative_decoding(model, tmp_path):
    """On the model's own greedy replies, walking the reply round by round with the head fed the
    features stage's features gives the rounds of speculative decoding with the shipped head
    (k = 4): started after the reply's first token (which speculative decoding takes from the
    prompt's pass), as many rounds as verify passes (within one) and the same tokens per pass
    (within 0.1: the verify passes' float rounding may flip a near-tie). The walk the evaluation
    uses, from the prompt's end, covers the reply and differs from that only by the first token's
    round and the last round's overshoot: at most 2 tokens over its rounds (and the same 0.1)."""
    from specdec_playable.lm.decode import generate, speculate
    from specdec_playable.lm.head import DraftHead, load_head
    from specdec_playable.shipped import asset_path
    from specdec_playable.train.evaluate import greedy_rounds
    from specdec_playable.train.features import collect

    head = load_head()
    with np.load(asset_path("lm/draft_head.npz")) as z:
        layers = tuple(int(m) for m in z["layers"]) if "layers" in z.files else ()
    for prompt in ("Write a Python function that doubles a number.", "Give a JSON object for a pen."):
        ids = model.tokenizer.chat(prompt)
        reply = generate(model, ids, max_new=40).tokens
        seq = np.array(list(ids) + list(reply), np.int64)
        data = collect(model, [seq], tmp_path, 256, layers)
        n = seq.size
        hidden = np.asarray(data["feats"])[0, :n].astype(np.float32)
        low = np.asarray(data["low"])[0, :n].astype(np.float32) if layers else None
        rounds = greedy_rounds(model, head, seq, hidden, low, start=len(ids), k=4)
        assert ((rounds >= 0) & (rounds <= 4)).all()
        assert len(reply) <= (rounds + 1).sum() <= len(reply) + 1
        spec = speculate(model, ids, DraftHead(), 4, max_new=40)
        assert list(spec.tokens) == list(reply) and spec.written == len(reply) - 1
        after = greedy_rounds(model, head, seq, hidden, low, start=len(ids) + 1, k=4)
        assert abs(after.size - spec.passes) <= 1, (after, spec.passes)
        assert abs(spec.written / after.size - spec.tokens_per_pass) <= 0.1, (after, spec.tokens_per_pass)
        slack = 2 / rounds.size + 0.1
        assert abs((rounds + 1).mean() - spec.tokens_per_pass) <= slack, (rounds, spec.tokens_per_pass)


def test_the_fresh_prompts_pool_replies_as_speculative_decoding_counts_them(model):
    """``evaluate.fresh_prompts`` on two prompts pooled (greedy replies of 24 tokens): the shipped
    head's tokens per pass is the two runs' tokens over their passes as speculative decoding
    counts them (within 0.1: a verify pass's float rounding may flip a near-tie), and every
    reply position has its teacher-forced first guess. Every pool names prompts there are."""
    from specdec_playable.lm.decode import speculate
    from specdec_playable.lm.head import DraftHead
    from specdec_playable.lm.prompts import EVERY, POOLS
    from specdec_playable.shipped import asset_path
    from specdec_playable.train.evaluate import fresh_prompts

    assert all(key in EVERY for keys in POOLS.values() for key in keys)
    keys = ("json-flight", "explain-dogs")
    with np.load(asset_path("lm/draft_head.npz")) as z:
        got = fresh_prompts(model, {k: z[k] for k in z.files}, pools={"two": keys}, max_new=24)["two"]
    runs = [speculate(model, model.tokenizer.chat(EVERY[key].message), DraftHead(), 4, max_new=24)
            for key in keys]
    written = sum(g.written for g in runs)
    assert abs(got["tokens_per_pass"] - written / sum(g.passes for g in runs)) <= 0.1, (got, runs)
    assert got["positions"] == sum(len(g.tokens) for g in runs) and got["prompts"] == 2
    assert 0.0 <= got["first_guess"] <= 1.0


def sd_rows_of(path, tok, i: int) -> np.ndarray:
    """Row ``i`` of a corpus file, uncut, as the features stage reads it."""
    return read_selfdistill(path).row_ids(tok, i, cut=False)


def test_a_tiny_run_on_the_models_replies_trains_and_measures_held_out_replies(model, tmp_path):
    """The GPU corpus's path end to end on eight rows: split by prompt, loops weighted down in
    the features (``--sd-loops weight``), a few training steps, and tokens per pass measured on
    the held-out replies (cut, unweighted) from the features alone."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from specdec_playable.train import cli, pipeline
    from specdec_playable.train.evaluate import replies_tokens_per_pass

    tok = model.tokenizer
    texts = ["The sea is calm tonight and the stars are out.", "def add(a, b):\n    return a + b",
             '{"name": "Ada", "year": 1843}', "Dear Sam, thank you for the tea.",
             "Plant the tree in spring and water it.", "SELECT name FROM books;",
             "Leaves turn red in autumn.", "A list: apples, pears, plums."]
    replies = [np.array(tok.encode(t), np.int64) for t in texts]
    replies[1] = np.concatenate([replies[1], np.tile(replies[1][:5], 10)])  # a loop to the end
    _tiny_corpus(tmp_path / "sd.npz", [f"Prompt number {i}?" for i in range(8)], replies,
                 [True, False] + [True] * 6)
    argv = ["--tiny", "--data-scale", "0", "--selfdistill", str(tmp_path / "sd.npz"),
            "--sd-held-share", "0.3", "--sd-loops", "weight", "--steps", "6", "--no-write",
            "--work", str(tmp_path / "work")]
    prep = pipeline.run(cli.parse_args(argv + ["--prepare-only"]))["prep"]
    sd = prep["summary"]["selfdistill"]
    assert sd["train"]["rows"] + sd["held"]["rows"] == 8 and sd["held"]["rows"] >= 1
    lens, weight = np.asarray(prep["train"]["lens"]), np.asarray(prep["train"]["weight"])
    real = np.arange(weight.shape[1])[None, :] < lens[:, None]
    down = np.isclose(weight, 0.1, rtol=0, atol=1e-6) & real
    assert (np.isclose(weight, 1.0, rtol=0, atol=1e-6) | down)[real].all()
    assert (weight[~real] == 0).all()  # padding: no weight
    assert "weight" not in prep["held"]  # held out: cut, so the same shards as a cut run's
    assert sd["train"]["rows_with_loops"] == 1  # row 1, on the training side at this seed
    looping = sd_rows_of(tmp_path / "sd.npz", tok, 1)
    assert down.sum() == looping.size - loop_start(looping) > 0
    out = pipeline.run(cli.parse_args(argv))
    assert len(out["history"]) == 6 and np.isfinite([h["loss"] for h in out["history"]]).all()
    got = replies_tokens_per_pass(model, out["arrays"], prep["held"], prep["prompt_lens"], k=3)
    assert got["replies"] == len(prep["prompt_lens"]) == sd["held"]["rows"]
    assert 1.0 <= got["tokens_per_pass"] <= 4.0


@pytest.mark.parametrize("vocab_from, vocab_rows, counted", [("corpus", 0, 256), ("corpus", 40, 40),
                                                             ("model", 0, 600), ("model", 40, 40)])
def test_a_corpus_ranked_vocabulary_counts_the_models_choices_on_a_sample_only(
        monkeypatch, vocab_from, vocab_rows, counted):
    """``--vocab-from corpus`` ranks the readout by the stored tokens; the model's own choices
    (the full head at every position, minutes a thousand rows) then only measure the coverage, on
    ``COVERAGE_ROWS`` seeded rows unless ``--vocab-rows`` says otherwise. ``--vocab-from model``
    still counts every row by default. A fake counter stands in for the model."""
    from types import SimpleNamespace

    from specdec_playable.train import cli, pipeline

    assert pipeline.COVERAGE_ROWS == 256
    rng = np.random.default_rng(3)
    toks = rng.integers(0, 300, size=(600, 8))
    data = {"toks": toks, "lens": np.full(600, 8)}
    seen = []

    def choices(model, sample):
        seen.append(sample["toks"].shape[0])
        return np.bincount(sample["toks"].ravel(), minlength=300)

    monkeypatch.setattr(pipeline, "model_choices", choices)
    tok = SimpleNamespace(eos_id=2, im_end=3)
    args = cli.parse_args(["--vocab-from", vocab_from, "--vocab-rows", str(vocab_rows),
                           "--n-vocab", "64", "--no-write"])
    prep = {"train": data, "summary": {}, "seconds": {}}
    vocab = pipeline.vocabulary(SimpleNamespace(tokenizer=tok), prep, args)
    assert seen == [counted]
    assert vocab.size == 64 and {2, 3} <= set(vocab.tolist())
    assert 0.0 < prep["summary"]["vocab_covers_model_choices"] <= 1.0


# ------------------------------------------------------------------------------------ the mixture


def test_the_documents_are_drawn_their_share_of_the_time():
    """``--doc-share s``: the documents' chunks together get chance ``s`` and the replies ``1 - s``,
    evenly within each; 0 (or one kind alone) draws every row alike; a share outside (0, 1) is
    refused. Over 4,000 seeded batches of 8 the documents' share of draws is within 0.02 of ``s``
    (its standard error is about 0.003)."""
    from specdec_playable.train.loop import row_chances

    genre = np.array(["python"] * 30 + ["json"] * 10 + ["selfdistill"] * 960)
    data = {"genre": genre}
    p = row_chances(data, 0.4)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    assert p[:40].sum() == pytest.approx(0.4, abs=1e-12) and np.ptp(p[:40]) == 0 and np.ptp(p[40:]) == 0
    assert row_chances(data, 0.0) is None and row_chances({}, 0.4) is None
    assert row_chances({"genre": genre[40:]}, 0.4) is None and row_chances({"genre": genre[:40]}, 0.4) is None
    for bad in (1.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="doc_share"):
            row_chances(data, bad)
    draws = np.concatenate([np.random.default_rng([0, 2, step]).choice(genre.size, 8, replace=False, p=p)
                            for step in range(4000)])
    assert np.mean(draws < 40) == pytest.approx(0.4, abs=0.02)


def test_a_weighted_genre_is_drawn_that_many_times_as_often():
    """``--genre-weights json=3``: within the documents' share, a JSON row's chance is three times
    a Python row's, the documents still share ``doc_share`` and the replies keep theirs; with
    ``doc_share`` 0 the weights alone set the chances. Weights out of range, on the replies, or
    naming no document genre are refused. Over 4,000 seeded batches of 8 the JSON rows' share of
    the documents' draws is within 0.02 of 3 x 10 / (30 + 3 x 10) = 0.5."""
    from specdec_playable.train import cli
    from specdec_playable.train.loop import row_chances

    genre = np.array(["python"] * 30 + ["json"] * 10 + ["selfdistill"] * 960)
    p = row_chances({"genre": genre}, 0.4, {"json": 3.0})
    assert p.sum() == pytest.approx(1.0, abs=1e-12) and p[:40].sum() == pytest.approx(0.4, abs=1e-12)
    assert p[35] == pytest.approx(3 * p[0], rel=1e-12) and p[40:].sum() == pytest.approx(0.6, abs=1e-12)
    alone = row_chances({"genre": genre}, 0.0, {"json": 3.0})
    assert alone[35] == pytest.approx(3 * alone[0], rel=1e-12) and alone[40] == pytest.approx(alone[0], rel=1e-12)
    for bad in ({"json": 0.0}, {"json": 50.0}, {"selfdistill": 2.0}):
        with pytest.raises(ValueError, match="genre weight"):
            row_chances({"genre": genre}, 0.4, bad)
    assert cli.parse_args(["--genre-weights", "json=2, chat=1.5"]).genre_weights == {"json": 2.0, "chat": 1.5}
    for bad in ("yaml=2", "json=two", "json=0", "selfdistill=2"):
        with pytest.raises(SystemExit):
            cli.parse_args(["--genre-weights", bad])
    draws = np.concatenate([np.random.default_rng([0, 3, step]).choice(genre.size, 8, replace=False, p=p)
                            for step in range(4000)])
    docs = draws[draws < 40]
    assert np.mean(docs >= 30) == pytest.approx(0.5, abs=0.02)


def test_the_vocabulary_is_ranked_on_the_mixture_drawn():
    """Row weights count each row's tokens that many times: a token common only in rows that are
    rarely drawn falls out of the vocabulary, and equal weights rank as no weights do."""
    from specdec_playable.train.features import pick_vocab

    toks = np.zeros((4, 6), np.int64)
    toks[0], toks[1] = [10, 10, 10, 10, 11, 12], [10, 10, 10, 11, 12, 13]  # rows drawn rarely
    toks[2], toks[3] = [20, 21, 22, 20, 21, 23], [20, 21, 22, 24, 11, 12]  # rows drawn often
    lens, choices = np.full(4, 6), np.zeros(30, np.int64)
    plain = pick_vocab(choices, toks, lens, 4, always=(2,))
    assert 10 in plain
    weighted = pick_vocab(choices, toks, lens, 4, always=(2,), row_weight=np.array([0.01, 0.01, 1, 1]))
    assert 10 not in weighted and {2, 20, 21} <= set(weighted.tolist())
    np.testing.assert_array_equal(pick_vocab(choices, toks, lens, 4, always=(2,), row_weight=np.full(4, 0.25)), plain)


def test_a_head_continued_on_a_new_vocabulary_keeps_every_weight():
    """The readout is the model's own embedding over the vocabulary, so ``--revocab`` continues the
    shipped head's trained weights unchanged on another vocabulary size; without it a size that
    differs from the asset's is refused with a one-line reason."""
    from pathlib import Path

    from specdec_playable.train import cli
    from specdec_playable.train.loop import params_from_asset

    asset = Path(__file__).resolve().parents[1] / "assets" / "lm" / "draft_head.npz"
    with np.load(asset) as z:
        layers, shipped = ",".join(str(int(m)) for m in z["layers"]), {k: z[k] for k in z.files}
    base = ["--layers", layers, "--n-vocab", str(shipped["vocab"].size * 3 // 2), "--init-from", str(asset)]
    params = params_from_asset(asset, cli.parse_args(base + ["--revocab"]))
    for k in ("fc", "wgu", "wdown", "fuse", "wo"):
        np.testing.assert_array_equal(params[k], shipped[k].astype(np.float32), err_msg=k)
    with pytest.raises(SystemExit, match="shape"):
        params_from_asset(asset, cli.parse_args(base))


def test_a_head_measured_on_a_new_vocabulary_keeps_its_weights_and_names_its_source(model, tmp_path):
    """``--evaluate HEAD --revocab``: the head read out over a vocabulary picked afresh (here from a
    head whose readout was cut to 300 tokens back to the 512 the tiny run picked), written with the source's
    sha256 in its provenance; every trained weight is the source's, bit for bit."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    import json

    from specdec_playable.train import cli, pipeline
    from specdec_playable.train.ship import sha256_file

    common = ["--tiny", "--steps", "3", "--work", str(tmp_path / "work")]
    trained = pipeline.run(cli.parse_args(common + ["--no-write"]))["arrays"]
    narrow = dict(trained, vocab=np.sort(trained["vocab"][:300]))
    source = tmp_path / "narrow.npz"
    np.savez(source, **narrow)
    out = tmp_path / "wide.npz"
    pipeline.run(cli.parse_args(common + ["--evaluate", str(source), "--revocab", "--out", str(out)]))
    with np.load(out) as z:
        wide = {k: z[k] for k in z.files}
    np.testing.assert_array_equal(wide["vocab"], trained["vocab"])  # picked as the run picked it
    assert {model.tokenizer.eos_id, model.tokenizer.im_end} <= set(wide["vocab"].tolist())
    for k in set(narrow) - {"vocab"}:
        np.testing.assert_array_equal(wide[k], narrow[k], err_msg=k)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["reread"]["source_sha256"] == sha256_file(source) and meta["vocab_size"] == 512
    assert "over 512 tokens" in meta["kind"] and "over 300 tokens" not in meta["kind"]
    assert meta["sha256"] == sha256_file(out)


def test_a_widened_feed_forward_drafts_what_the_head_drafted():
    """``--widen-ff`` with a larger ``--d-ff``: the shipped head's units are kept bit for bit and
    the new ones' output columns start at zero, so the widened head's predicted features equal
    the shipped head's within float32 summation order (tolerance 1e-5 of the features' scale),
    on the compiled path (4 positions) and numpy's (24), seed 0."""
    from pathlib import Path

    from specdec_playable.lm.head import HeadCache, head_forward, weights_from_arrays
    from specdec_playable.train import cli
    from specdec_playable.train.loop import export, params_from_asset

    asset = Path(__file__).resolve().parents[1] / "assets" / "lm" / "draft_head.npz"
    with np.load(asset) as z:
        shipped = {k: z[k] for k in z.files}
    old_ff = shipped["wgu"].shape[0] // 2
    layers = ",".join(str(int(m)) for m in shipped["layers"])
    args = cli.parse_args(["--layers", layers, "--init-from", str(asset), "--d-ff", str(2 * old_ff),
                           "--n-vocab", str(shipped["vocab"].size), "--widen-ff"])
    wide = dict(export(params_from_asset(asset, args), shipped["vocab"], args))
    assert wide["wgu"].shape == (4 * old_ff, shipped["wgu"].shape[1])
    np.testing.assert_array_equal(wide["wgu"][:old_ff], shipped["wgu"][:old_ff])
    np.testing.assert_array_equal(wide["wgu"][2 * old_ff:3 * old_ff], shipped["wgu"][old_ff:])
    assert not wide["wdown"][:, old_ff:].any() and wide["wgu"][old_ff:2 * old_ff].std() > 0
    rng = np.random.default_rng(0)
    d = shipped["fc"].shape[0]
    for n in (4, 24):
        feats, embeds = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(2))
        got = [head_forward(w, feats, embeds, HeadCache(w)) for w in (
            weights_from_arrays(shipped, "half"), weights_from_arrays(wide, "half"))]
        np.testing.assert_allclose(got[1], got[0], atol=1e-5 * np.abs(got[0]).max(), rtol=0)


@pytest.mark.parametrize("n,batch", [(10, 3), (7, 7), (5, 8), (16151, 8)])
def test_the_epoch_sampler_takes_every_row_once_an_epoch(n, batch):
    """``--sampler epoch``: the first ``n`` draws (over as many steps as they take) are every row
    once, and so are the next ``n``; the same step draws the same rows (a resumed run's), another
    seed another order; the random sampler by contrast repeats rows within an epoch's draws
    (seeded, n = 16151: 12,288 draws reach about 54% of the rows, as the curve's run did)."""
    from specdec_playable.train.loop import batch_rows

    b = min(batch, n)
    steps = -(-3 * n // b)
    draws = np.concatenate([batch_rows(n, batch, s, 0, sampler="epoch") for s in range(steps)])
    for e in range(2):
        np.testing.assert_array_equal(np.sort(draws[e * n:(e + 1) * n]), np.arange(n))
    again = batch_rows(n, batch, steps - 1, 0, sampler="epoch")
    np.testing.assert_array_equal(again, draws[(steps - 1) * b:steps * b])
    if n > b:
        assert not np.array_equal(batch_rows(n, batch, 0, 1, sampler="epoch"), draws[:b])
    if n == 16151:
        rand = np.concatenate([batch_rows(n, batch, s, 0) for s in range(1536)])
        assert 0.50 < np.unique(rand).size / n < 0.58
        assert np.unique(draws[:1536 * b]).size == 1536 * b  # within one epoch, never a row twice
    with pytest.raises(ValueError, match="alike"):
        batch_rows(n, batch, 0, 0, p=np.full(n, 1 / n), sampler="epoch")
    from specdec_playable.train import cli

    with pytest.raises(SystemExit):  # the command line refuses what the sampler cannot honour
        cli.parse_args(["--sampler", "epoch", "--genre-weights", "json=2"])
    assert cli.parse_args(["--sampler", "epoch", "--doc-share", "0.25"]).doc_share == 0.25


@pytest.mark.parametrize("n_docs,n_replies,batch,share", [(13, 40, 8, 0.25), (5, 7, 4, 0.3),
                                                          (2, 30, 8, 0.5), (300, 1000, 8, 0.1)])
def test_the_epoch_sampler_keeps_the_documents_share_and_each_kinds_epochs(n_docs, n_replies, batch, share):
    """``--sampler epoch --doc-share s``: after every step the documents are ``s`` of the rows
    drawn to within one row, each batch has ``batch`` rows, each kind's draws run through every
    row of that kind once before any comes again (whole epochs of each checked), and a step draws
    the same rows however it is reached (the kinds' rows interleaved at seed 0)."""
    from types import SimpleNamespace

    from specdec_playable.train.loop import mixed_epoch_rows, row_sampler

    rng = np.random.default_rng(0)
    genre = rng.permutation(np.array(["python"] * n_docs + ["selfdistill"] * n_replies))
    is_doc = genre != "selfdistill"
    args = SimpleNamespace(doc_share=share, sampler="epoch", genre_weights={}, batch=batch, seed=0)
    rows_of = row_sampler({"genre": genre, "lens": np.ones(genre.size)}, args)
    steps = 3 * max(n_docs, n_replies) // batch + 2
    batches = [rows_of(s) for s in range(steps)]
    assert all(b.size == batch for b in batches)
    drawn = np.concatenate(batches)
    docs_so_far = np.cumsum([is_doc[b].sum() for b in batches])
    assert np.all(np.abs(docs_so_far - share * batch * np.arange(1, steps + 1)) <= 1.0)
    for kind, n in ((is_doc, n_docs), (~is_doc, n_replies)):
        mine = drawn[kind[drawn]]
        for e in range(mine.size // n):
            np.testing.assert_array_equal(np.sort(mine[e * n:(e + 1) * n]), np.flatnonzero(kind))
    np.testing.assert_array_equal(mixed_epoch_rows(is_doc, share, batch, steps - 1, 0), batches[-1])
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match="share"):
            mixed_epoch_rows(is_doc, bad, batch, 0, 0)
    with pytest.raises(ValueError, match="both kinds"):
        mixed_epoch_rows(np.zeros(10, bool), share, batch, 0, 0)


def test_a_deepened_head_drafts_what_the_head_drafted_and_its_new_block_learns_at_full_rate(tmp_path):
    """``--n-blocks 2`` with ``--init-from`` a head of one: the head's weights are kept bit for bit
    and the added block's output projections start at zero, so the deeper head's predicted
    features equal the head's within float32 summation order (tolerance 1e-5 of the features'
    scale) on the compiled path (4 positions) and numpy's (24), seed 0; under ``--old-lr-scale``
    the added block's weights take full updates, the carried ones the scale; a head of two
    blocks is never continued as one of one."""
    from pathlib import Path

    from specdec_playable.lm.head import HeadCache, block_names, head_forward, weights_from_arrays
    from specdec_playable.train import cli
    from specdec_playable.train.loop import export, params_from_asset, update_scale

    asset = Path(__file__).resolve().parents[1] / "assets" / "lm" / "draft_head.npz"
    with np.load(asset) as z:
        shipped = {k: z[k] for k in z.files}
    layers = ",".join(str(int(m)) for m in shipped["layers"])
    args = cli.parse_args(["--layers", layers, "--init-from", str(asset), "--n-blocks", "2",
                           "--n-vocab", str(shipped["vocab"].size)])
    params = params_from_asset(asset, args)
    deep = dict(export(params, shipped["vocab"], args))
    for name in set(shipped) - {"vocab", "layers", "n_heads", "window", "rope_base", "eps"}:
        np.testing.assert_array_equal(deep[name], shipped[name], err_msg=name)
    wqkv, wo, wgu, wdown = block_names(1)
    assert not deep[wo].any() and not deep[wdown].any() and deep[wqkv].std() > 0 and deep[wgu].std() > 0
    w_deep = weights_from_arrays(deep, "half")
    assert w_deep.n_blocks == 2
    rng = np.random.default_rng(0)
    d = shipped["fc"].shape[0]
    for n in (4, 24):
        feats, embeds = (rng.standard_normal((n, d)).astype(np.float32) for _ in range(2))
        got = [head_forward(w, feats, embeds, HeadCache(w)) for w in (
            weights_from_arrays(shipped, "half"), w_deep)]
        np.testing.assert_allclose(got[1], got[0], atol=1e-5 * np.abs(got[0]).max(), rtol=0)
    scale = update_scale(params, shipped["wgu"].shape[0] // 2, 0.25, old_blocks=1)
    assert all((scale[k] == 1.0).all() for k in block_names(1))
    assert all((scale[k] == 0.25).all() for k in ("fc", "fuse", *block_names(0)))
    path = tmp_path / "deep.npz"  # a head of two blocks is never continued as one of one
    np.savez(path, **deep)
    with pytest.raises(SystemExit, match="blocks"):
        params_from_asset(path, cli.parse_args(["--layers", layers, "--init-from", str(path),
                                                "--n-vocab", str(shipped["vocab"].size)]))


def test_the_carried_weights_move_at_their_scale_and_the_new_units_learn(tmp_path):
    """``--old-lr-scale 0`` with ``--widen-ff``: three steps of the tiny run leave every weight
    carried over from ``--init-from`` bit for bit and move the added units; the scale applies
    to exactly the carried weights. Out-of-range scales and widening without a head are refused."""
    pytest.importorskip("jax")
    pytest.importorskip("optax")
    from specdec_playable.train import cli, pipeline
    from specdec_playable.train.loop import update_scale

    common = ["--tiny", "--steps", "3", "--no-write"]
    first = pipeline.run(cli.parse_args(common + ["--work", str(tmp_path / "a")]))["arrays"]
    source = tmp_path / "first.npz"
    np.savez(source, **first)
    args = cli.parse_args(common + ["--work", str(tmp_path / "b"), "--init-from", str(source),
                                    "--widen-ff", "--old-lr-scale", "0"])
    old_ff, args.d_ff = args.d_ff, 2 * args.d_ff  # --tiny sets its own d_ff
    wide = pipeline.run(args)["arrays"]
    for k in set(first) - {"wgu", "wdown"}:
        np.testing.assert_array_equal(wide[k], first[k], err_msg=k)
    np.testing.assert_array_equal(wide["wgu"][:old_ff], first["wgu"][:old_ff])
    np.testing.assert_array_equal(wide["wgu"][2 * old_ff:3 * old_ff], first["wgu"][old_ff:])
    np.testing.assert_array_equal(wide["wdown"][:, :old_ff], first["wdown"])
    assert np.abs(wide["wdown"][:, old_ff:].astype(np.float32)).max() > 0

    params = dict(wgu=np.zeros((2 * 6, 3)), wdown=np.zeros((3, 6)), fc=np.zeros((3, 6)))
    scale = update_scale(params, 4, 0.25)
    assert (scale["fc"] == 0.25).all()
    assert scale["wgu"][:, 0].tolist() == [0.25] * 4 + [1.0] * 2 + [0.25] * 4 + [1.0] * 2
    assert scale["wdown"][0].tolist() == [0.25] * 4 + [1.0] * 2
    for bad in (["--old-lr-scale", "1.5"], ["--old-lr-scale", "-0.1"], ["--widen-ff"]):
        with pytest.raises(SystemExit):
            cli.parse_args(bad)


def test_the_models_confidence_is_the_top_of_its_softmax_at_the_scored_positions(model):
    """``model_confidence`` at the positions ``reply_first_guesses`` scores: the model's softmax
    top (``lm.sampling.probabilities`` at temperature 1, within 1e-5), one per scored position,
    in (0, 1] exactly (``by_confidence`` refuses anything outside its edges); the positions are
    those whose next token is a reply token."""
    from specdec_playable.lm.sampling import probabilities
    from specdec_playable.lm.head import load_head
    from specdec_playable.train.evaluate import model_confidence, reply_first_guesses, reply_positions
    from specdec_playable.train.features import sequence_features

    ids = _seqs(model, 1)[0]
    start = len(model.tokenizer.chat("Write something."))
    w = load_head()
    hidden, low = sequence_features(model, ids, w.layers)
    t = reply_positions(ids.size, start)
    assert t[0] + 1 == start and t[-1] == ids.size - 2
    p1 = model_confidence(model, hidden, t)
    want = probabilities(model.head(hidden[t]), 1.0).max(axis=1)
    np.testing.assert_allclose(p1, want, atol=1e-5)
    assert p1.shape == reply_first_guesses(model, w, ids, hidden, low, start=start).shape
    assert (p1 > 0).all() and (p1 <= 1).all()  # 1 over a sum that holds exp(0) = 1 itself


def test_the_guesses_are_binned_by_the_models_confidence():
    """``by_confidence`` against a count by hand: each position in the bin its probability opens
    (1.0 in the last, closed bin), shares that sum to 1, None for an empty bin; bad input refused.
    Random probabilities and outcomes at seed 3, checked bin by bin."""
    from specdec_playable.train.evaluate import CONFIDENCE_EDGES, by_confidence

    p1 = np.array([0.1, 0.3, 0.3, 0.45, 0.95, 1.0])
    kept = np.array([True, False, True, True, False, True])
    got = by_confidence(p1, kept)
    assert [c["low"] for c in got] == list(CONFIDENCE_EDGES[:-1])
    assert [round(c["share"], 6) for c in got] == [round(x / 6, 6) for x in (1, 3, 0, 0, 2)]
    assert [c["kept"] for c in got] == [1.0, 2 / 3, None, None, 0.5]
    rng = np.random.default_rng(3)
    p1, kept = rng.random(1000), rng.random(1000) < 0.5
    got = by_confidence(p1, kept)
    assert abs(sum(c["share"] for c in got) - 1.0) < 1e-12
    for c in got:
        m = (p1 >= c["low"]) & (p1 < c["high"])
        assert c["share"] == m.mean() and c["kept"] == kept[m].mean()
    for bad in [dict(p1=[0.5, 0.6], kept=[True]), dict(p1=[1.2], kept=[True]),
                dict(p1=[-0.1], kept=[False]), dict(p1=[0.5], kept=[True], edges=(0.0, 0.5, 0.5, 1.0)),
                dict(p1=[0.5], kept=[True], edges=(1.0,))]:
        with pytest.raises(ValueError):
            by_confidence(**bad)


def _rows_of_lengths(lens, width: int = 256, d: int = 48, seed: int = 0) -> dict:
    """A features dict of rows of ``lens`` real tokens (random features, lower layers and loop
    weights; padding past each row's length as the shards hold it)."""
    rng = np.random.default_rng(seed)
    n = len(lens)
    return dict(toks=rng.integers(0, 64, (n, width)), lens=np.asarray(lens),
                feats=rng.standard_normal((n, width, d)).astype(np.float16),
                low=rng.standard_normal((n, width, 2, d)).astype(np.float16),
                weight=rng.uniform(0.1, 1.0, (n, width)).astype(np.float32))


@pytest.mark.parametrize("lens,width", [((100, 17, 64), 128), ((256, 3, 40), 256), ((64, 2), 64),
                                        ((65,), 128), ((250, 251), 256)])
def test_a_batch_is_cut_to_its_longest_row_and_its_loss_is_unchanged(lens, width, monkeypatch):
    """``make_batch`` keeps the positions up to the longest row rounded up to a multiple of 64
    (``width``) and no more than the rows hold; the padding it cuts is never scored, so the loss
    and each drafting step's agreement equal those of the uncut batch (relative tolerance 1e-5:
    the sums run in another order), on a tiny head at seed 7, three steps unrolled; a batch's
    weight multiplies its loss and leaves each step's own loss as it was."""
    pytest.importorskip("jax")
    from specdec_playable.train import loop

    data = _rows_of_lengths(lens)
    embed = np.random.default_rng(8).standard_normal((64, 48)).astype(np.float32)
    idx = np.arange(len(lens))
    cut = loop.make_batch(data, idx, embed)
    assert loop.batch_width(np.asarray(lens), 256) == width
    assert cut[0].shape == (len(lens), width - 1, 48) and cut[1].shape == (len(lens), width - 1, 2, 48)
    monkeypatch.setattr(loop, "LENGTH_STEP", 1024)
    whole = loop.make_batch(data, idx, embed)
    assert whole[0].shape[1] == 255 and whole[-1].sum() == pytest.approx(cut[-1].sum(), rel=1e-6)
    params = loop.init_params(48, 32, True, np.ones(48, np.float32), 7, n_layers=2)
    cfg = dict(unroll=3, n_heads=3, reg_weight=0.5)
    got = [loop.loss_fn(params, b, embed, cfg) for b in (cut, whole)]
    assert float(got[0][0]) == pytest.approx(float(got[1][0]), rel=1e-5)
    for (la, aa), (lb, ab) in zip(got[0][1], got[1][1]):
        assert float(la) == pytest.approx(float(lb), rel=1e-5)
        assert float(aa) == pytest.approx(float(ab), abs=1e-6)
    weighted = loop.loss_fn(params, cut, embed, cfg, np.float32(2.5))
    assert float(weighted[0]) == pytest.approx(2.5 * float(got[0][0]), rel=1e-5)
    assert float(weighted[1][0][0]) == pytest.approx(float(got[0][1][0][0]), rel=1e-6)


@pytest.mark.parametrize("sampler,share,window", [("epoch", 0.0, 8), ("random", 0.0, 4),
                                                  ("epoch", 0.25, 8), ("random", 0.3, 3)])
def test_sorting_by_length_deals_the_same_rows_with_less_padding(sampler, share, window):
    """``--sort-window W``: over each run of W steps the batches hold exactly the rows the unsorted
    draw gives (as multisets), in order of length; any step alone draws what it draws in the run;
    and the positions kept (``batch_width`` summed) are never more than unsorted, and fewer here
    (seed 1: lengths spread over 16-256, as the corpus's rows are)."""
    from types import SimpleNamespace

    from specdec_playable.train.loop import batch_width, row_sampler

    rng = np.random.default_rng(1)
    lens = rng.integers(16, 257, 300)
    genre = np.where(rng.random(300) < 0.2, "python", "selfdistill")
    data = {"lens": lens, "genre": genre, "toks": np.zeros((300, 256), np.int64)}
    args = SimpleNamespace(doc_share=share, sampler=sampler, genre_weights={}, batch=8, seed=0,
                           sort_window=1)
    plain = row_sampler(data, args)
    args.sort_window = window
    ranked = row_sampler(data, args)
    kept = {"plain": 0, "ranked": 0}
    for first in range(0, 10 * window, window):
        before = [plain(first + i) for i in range(window)]
        after = [ranked(first + i) for i in range(window)]
        np.testing.assert_array_equal(np.sort(np.concatenate(before)), np.sort(np.concatenate(after)))
        assert [a.size for a in after] == [b.size for b in before]
        assert np.all(np.diff(lens[np.concatenate(after)]) >= 0)
        widths = [sum(batch_width(lens[b], 256) for b in run) for run in (before, after)]
        assert widths[1] <= widths[0]
        kept["plain"], kept["ranked"] = kept["plain"] + widths[0], kept["ranked"] + widths[1]
        scales = [ranked.scale(first + i) for i in range(window)]  # every position alike
        scored = [float(np.sum(lens[a] - 1)) for a in after]
        np.testing.assert_allclose(scales, np.array(scored) * window / sum(scored), rtol=1e-12)
        assert sum(scales) == pytest.approx(window) and scales == sorted(scales)
    np.testing.assert_array_equal(row_sampler(data, args)(3 * window + 1), ranked(3 * window + 1))
    assert kept["ranked"] < kept["plain"] and not hasattr(plain, "scale")
    from specdec_playable.train import cli

    for bad in ("0", "65"):
        with pytest.raises(SystemExit):
            cli.parse_args(["--sort-window", bad])

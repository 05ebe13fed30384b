"""The draft head's training pipeline (``specdec_playable.train``, also run as
``scripts/train_draft_head.py``) runs end to end on a tiny corpus, and its loss falls.

Seeded (corpus draw, initial weights, batch order), so the run is the same every time. JAX and
optax are in the ``test`` extra (``bash scripts/bootstrap.sh test``), so CI runs this; it skips
only where they are not installed. Each stage's resuming is tested in test_train_pipeline.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    """The pipeline's functions, as the old single script offered them."""
    pytest.importorskip("jax", reason="jax is not installed (pip install -e '.[train]')")
    pytest.importorskip("optax", reason="optax is not installed (pip install -e '.[train]')")
    from specdec_playable.train import cli, evaluate, loop, pipeline, replies

    return SimpleNamespace(parse_args=cli.parse_args, run=pipeline.run, init_params=loop.init_params,
                           identity_fuse=loop.identity_fuse, unrolled=loop.unrolled,
                           export=loop.export, measure_cost=evaluate.measure_cost,
                           chat_docs=replies.chat_docs, replies=replies)


def test_the_script_is_the_package_command_line():
    """``scripts/train_draft_head.py`` (named by the docs and by a missing head's message) and
    ``python -m specdec_playable.train`` offer the same options."""
    helps = [subprocess.run([sys.executable, *cmd, "--help"], capture_output=True, text=True,
                            check=True, cwd=ROOT).stdout
             for cmd in (["scripts/train_draft_head.py"], ["-m", "specdec_playable.train"])]
    for flag in ("--tiny", "--measure-cost", "--init-from", "--unroll", "--layers", "--selfdistill",
                 "--sd-loops", "--stop-at", "--max-shards"):
        assert all(flag in h for h in helps), flag


def test_a_tiny_training_run_lowers_the_loss(tmp_path):
    script = _script()
    args = script.parse_args(["--tiny", "--seed", "3", "--work", str(tmp_path), "--no-write"])
    out = script.run(args)
    loss = np.array([h["loss"] for h in out["history"]])
    assert loss.size == args.steps and np.isfinite(loss).all()
    assert loss[-10:].mean() < 0.7 * loss[:5].mean(), loss
    # The weights it would ship load in the numpy serving code.
    from specdec_playable.lm.head import weights_from_arrays

    w = weights_from_arrays(out["arrays"])
    assert w.vocab.size == args.n_vocab and w.attention
    # Resuming from the last checkpoint repeats nothing and gives the same weights.
    again = script.run(args)
    assert len(again["history"]) == args.steps
    assert all(np.array_equal(out["arrays"][k], again["arrays"][k]) for k in out["arrays"])


def test_a_tiny_unrolled_run_fed_several_layers_lowers_the_loss_of_every_drafting_step(tmp_path):
    """EAGLE-3's recipe end to end on the tiny corpus: three drafting steps, the residual streams
    after blocks 2 and 15 fused with the last layer's feature; resuming gives the same weights."""
    script = _script()
    args = script.parse_args(["--tiny", "--seed", "5", "--unroll", "3", "--layers", "2,15",
                              "--work", str(tmp_path), "--no-write"])
    out = script.run(args)
    per_step = np.array([h["losses"] for h in out["history"]])
    assert per_step.shape == (args.steps, 3) and np.isfinite(per_step).all()
    assert (per_step[-10:].mean(axis=0) < 0.8 * per_step[:5].mean(axis=0)).all(), per_step
    from specdec_playable.lm.head import weights_from_arrays

    w = weights_from_arrays(out["arrays"])
    assert w.layers == (2, 15) and w["fuse"].shape == (576, 3 * 576)
    again = script.run(args)
    assert all(np.array_equal(out["arrays"][k], again["arrays"][k]) for k in out["arrays"])


def _tiny_head(script, seed: int, d: int = 48, n_heads: int = 3, d_ff: int = 32, n_layers: int = 0,
               n_blocks: int = 1):
    """Seeded weights whose float16 export is exact (head dim 16: the folded 1/4 is exact too);
    with ``n_layers``, a fusion of that many lower layers that reads all of them; with
    ``n_blocks``, that many blocks."""
    from specdec_playable.lm.head import block_names

    rng = np.random.default_rng(seed)
    p = script.init_params(d, d_ff, True, 1.0 + 0.1 * rng.standard_normal(d), seed,
                           n_layers=n_layers, n_blocks=n_blocks)
    for b in range(n_blocks):  # attention that matters, so a wrong mask shows
        p[block_names(b)[1]] = p[block_names(b)[1]] * 10.0
    if n_layers:
        p["fuse"] = p["fuse"] + rng.standard_normal(p["fuse"].shape).astype(np.float32) / np.sqrt(d)
    return {k: v.astype(np.float16).astype(np.float32) for k, v in p.items()}


def test_a_fusion_starts_as_the_last_layer_alone():
    script = _script()
    fuse = script.identity_fuse(4, 2)
    z = np.arange(12, dtype=np.float32)
    assert fuse.shape == (4, 12) and np.array_equal(fuse @ z, z[8:])


@pytest.mark.parametrize("n_blocks", [1, 2])
def test_the_unrolled_steps_are_what_drafting_computes_from_the_heads_own_features(n_blocks):
    """Step s of the training-time test at index j equals the numpy serving code drafting its
    (s+1)-th guess from a draft that starts at j - s: real features up to j - s, then the head's
    own predictions, each attending over what the draft's cache holds (every block's). Fed the
    target's real features instead, step s would be step 0, which it is not (checked)."""
    script = _script()
    from specdec_playable.lm.head import weights_from_arrays

    d, n_heads, t, steps = 48, 3, 14, 4
    params = _tiny_head(script, seed=11, d=d, n_heads=n_heads, n_blocks=n_blocks)
    args = script.parse_args(["--tiny", "--n-heads", str(n_heads), "--chunk", "64",
                              "--n-blocks", str(n_blocks)])
    rng = np.random.default_rng(12)
    feats = rng.standard_normal((t, d)).astype(np.float32)
    embeds = rng.standard_normal((t, d)).astype(np.float32)
    preds = [np.asarray(x)[0] for x in script.unrolled(params, feats[None], embeds[None], n_heads,
                                                       steps)]
    # float16 as exported: the training's arithmetic to float rounding (drafting's int8 rounds more)
    w = weights_from_arrays(script.export(params, np.arange(8), args), precision="half")
    assert w.n_blocks == n_blocks
    assert _drafts_match(w, feats, embeds, preds) == (t - steps + 1) * (steps - 1)
    for start in range(0, t - steps + 1):  # fed the target's features, step s would be step 0
        for s in range(1, steps):
            assert not np.allclose(preds[s][start + s], preds[0][start + s], atol=1e-3)


def _drafts_match(w, inputs, embeds, preds) -> int:
    """Check that the numpy serving code, drafting from every start with the head's inputs up to
    it, gives each unrolled step's prediction (``preds[s]`` at ``start + s``); return how many
    later guesses it checked."""
    from specdec_playable.lm.head import HeadCache, head_forward

    steps, checked = len(preds), 0
    for start in range(0, inputs.shape[0] - steps + 1):
        cache = HeadCache(w)
        f = head_forward(w, inputs[:start + 1], embeds[:start + 1], cache)[-1:]
        np.testing.assert_allclose(f[0], preds[0][start], rtol=1e-4, atol=1e-4)
        for s in range(1, steps):
            f = head_forward(w, f, embeds[start + s:start + s + 1], cache)
            np.testing.assert_allclose(f[0], preds[s][start + s], rtol=1e-4, atol=1e-4,
                                       err_msg=f"draft from {start}, guess {s + 1}")
            checked += 1
    return checked


def test_a_head_fed_several_layers_drafts_as_it_was_trained():
    """With a fusion of two lower layers, the unrolled steps equal the numpy serving code fed the
    same target pass (:func:`lm.head.head_inputs` of its features and residual streams), draft by
    draft; and the lower layers matter (other streams, other guesses)."""
    script = _script()
    from specdec_playable.lm.head import head_inputs, weights_from_arrays

    d, n_heads, t, steps, layers = 48, 3, 12, 3, (2, 15)
    params = _tiny_head(script, seed=21, d=d, n_heads=n_heads, n_layers=len(layers))
    args = script.parse_args(["--tiny", "--n-heads", str(n_heads), "--chunk", "64",
                              "--layers", ",".join(map(str, layers))])
    rng = np.random.default_rng(22)
    feats = rng.standard_normal((t, d)).astype(np.float32)
    low = rng.standard_normal((t, len(layers), d)).astype(np.float32) * 3.0
    embeds = rng.standard_normal((t, d)).astype(np.float32)
    preds = [np.asarray(x)[0] for x in script.unrolled(params, feats[None], embeds[None], n_heads,
                                                       steps, low[None])]
    other = np.asarray(script.unrolled(params, feats[None], embeds[None], n_heads, 1,
                                       low[None] * -1.0)[0])[0]
    assert not np.allclose(other, preds[0], atol=1e-3)
    # float16 as exported: the training's arithmetic to float rounding (drafting's int8 rounds more)
    w = weights_from_arrays(script.export(params, np.arange(8), args), precision="half")
    assert w.layers == layers
    u = head_inputs(w, feats, {m: low[:, i] for i, m in enumerate(layers)})
    assert _drafts_match(w, u, embeds, preds) == (t - steps + 1) * (steps - 1)
    with pytest.raises(ValueError, match="residual stream"):
        head_inputs(w, feats, {2: low[:, 0]})  # block 15's stream is missing


def test_measuring_the_cost_again_rewrites_only_the_cost_and_keeps_the_training_runs(tmp_path):
    """``--measure-cost`` times the shipped head as drafting keeps it (int8) and writes that into
    its provenance with the date; the training run's figure is kept once, beside it, and the
    weights are untouched. A file that is not the head its provenance records is refused."""
    import json
    import shutil

    from specdec_playable.shipped import asset_path

    script = _script()
    out = tmp_path / "draft_head.npz"
    shutil.copy(asset_path("lm/draft_head.npz"), out)
    shutil.copy(asset_path("lm/draft_head.json"), out.with_suffix(".json"))
    before = json.loads(out.with_suffix(".json").read_text())
    weights = out.read_bytes()
    cost = script.measure_cost(out, repeats=2)
    assert cost["runs"] == 3 and cost["c_range"][0] <= cost["c"] <= cost["c_range"][1]
    after = json.loads(out.with_suffix(".json").read_text())
    assert out.read_bytes() == weights
    assert after["measured"]["cost"] == cost and cost["precision"] == "int8" and cost["date"][:4] >= "2026"
    assert cost["c"] == pytest.approx(cost["draft_step_ms"] / cost["decode_step_ms"], abs=1e-3)
    was = before["measured"].get("cost_when_trained", before["measured"]["cost"])
    assert {k: after["measured"]["cost_when_trained"][k] for k in ("c", "draft_step_ms")} == \
        {k: was[k] for k in ("c", "draft_step_ms")}
    assert {k: v for k, v in after.items() if k != "measured"} == \
        {k: v for k, v in before.items() if k != "measured"}
    again = script.measure_cost(out, repeats=2)  # the training run's figure is not overwritten
    assert json.loads(out.with_suffix(".json").read_text())["measured"]["cost_when_trained"] == \
        after["measured"]["cost_when_trained"] and again["precision"] == "int8"
    out.write_bytes(weights[:-1] + bytes([weights[-1] ^ 1]))
    with pytest.raises(SystemExit, match="sha256"):
        script.measure_cost(out, repeats=2)
    with pytest.raises(SystemExit, match="not found"):
        script.measure_cost(tmp_path / "elsewhere.npz", repeats=2)


def test_self_distillation_asks_greedy_only_prompts_once_and_resumes_from_its_cache(tmp_path, monkeypatch):
    """Prompts of ``greedy_only`` get a greedy reply and no sampled one; a second call with more
    prompts writes only the replies it lacks; the documents returned are those asked for."""
    script = _script()
    calls = []

    def fake_reply(job):
        key, prompt, mode, max_new, seed = job
        calls.append(key)
        return key, [len(prompt), 0 if mode == "greedy" else 1]

    monkeypatch.setattr(script.replies, "_reply", fake_reply)
    got = script.chat_docs(None, tmp_path, ("a?",), max_new=8, seed=0, greedy_only=("b?",))
    assert sorted(calls) == ["greedy|a?", "greedy|b?", "sampled|a?"]
    assert sorted(d.source.split("/")[1] for d, _ in got) == ["greedy", "greedy", "sampled"]
    calls.clear()
    got = script.chat_docs(None, tmp_path, ("a?",), max_new=8, seed=0, greedy_only=("b?", "cc?"))
    assert calls == ["greedy|cc?"]  # the cached three are not written again
    assert len(got) == 4
    calls.clear()
    got = script.chat_docs(None, tmp_path, (), max_new=8, seed=0, greedy_only=("cc?",))
    assert calls == [] and [ids for _, ids in got] == [[3, 0]]  # only what was asked for

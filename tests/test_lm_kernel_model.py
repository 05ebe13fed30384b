"""The compiled forward pass (lm.fused + lm.kernel) equals the numpy reference path of the same model.

With numba present :meth:`Model.forward` runs the blocks in one compiled call
(:func:`lm.fused.run_blocks`) on the packed weights and the head through :func:`lm.kernel.matmul_t`;
with ``model.FUSED`` False and the products on :func:`lm.kernel.matmul_t_numpy` the same pass is
numpy code (the reference). Both sum the same float32 numbers in different orders (and the compiled
path's ``exp`` is its own, within 5e-7), so logits agree to rounding, not bit for bit. Logits are
O(10-40); measured largest difference about 1e-4, so the tolerance is 2e-3 absolute. Greedy
outputs of three prompts are compared token for token (a top-two tie within rounding could flip
one; none of these prompts has one). Packing must keep one copy of the weights: the blocks' packed
matrices are views of four stacked arrays, and a process that loads the model and runs passes
grows by the weights plus a bounded margin, not by a second copy.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from specdec_playable.lm import get_model, kernel
from specdec_playable.lm import model as model_mod
from specdec_playable.lm.decode import generate

LOGIT_ATOL = 2e-3
PROMPTS = ("Write a Python function that adds two numbers.",
           "Write a short poem about the sea.",
           'Give a JSON object with the keys "name" and "age" for Ada, 36.')

needs_numba = pytest.mark.skipif(not kernel.HAVE_NUMBA, reason="the compiled path needs numba")


@pytest.fixture(scope="module")
def model():
    return get_model()


@pytest.fixture
def numpy_path(monkeypatch):
    """Switch the model to the numpy reference path for the rest of a test."""
    def use_numpy():
        monkeypatch.setattr(model_mod, "FUSED", False)
        monkeypatch.setattr(model_mod, "matmul_t", kernel.matmul_t_numpy)
    return use_numpy


def _both(numpy_path, run):
    got = run()
    numpy_path()
    return got, run()


@needs_numba
@pytest.mark.parametrize("prompt", PROMPTS)
def test_logits_of_a_pass_equal_numpy_within_tolerance(model, numpy_path, prompt):
    ids = model.tokenizer.chat(prompt)

    def run():
        cache = model.new_cache()
        out = [model.forward(ids, cache, logits="last").logits]
        for n in (1, 2, 5, 6, 7, 9, 16, 17, 33):
            out.append(model.forward(ids[-n:], cache, logits="all").logits)
        return out

    for got, want in zip(*_both(numpy_path, run)):
        assert got.dtype == np.float32 and want.dtype == np.float32
        assert got.shape == want.shape
        assert np.abs(got - want).max() < LOGIT_ATOL


@needs_numba
def test_tree_mask_positions_capture_and_early_exit_equal_numpy(model, numpy_path):
    ids = model.tokenizer.chat(PROMPTS[0])
    mask = np.tri(7, dtype=bool)
    mask[3:, 1:3] = False  # two branches after the first token
    mask[5, 3] = mask[6, 3] = mask[6, 4] = False

    def run():
        cache = model.new_cache()
        model.forward(ids, cache, logits="none")
        past = cache.length
        tree = model.forward(ids[:7], cache, positions=past + np.array([0, 1, 2, 1, 2, 1, 2]),
                             mask=mask, capture=(0, 4, 30))
        cache.compact(past, [0, 3, 4])
        after = model.forward(ids[7:9], cache)
        short = model.forward(ids[:5], model.new_cache(n_layers=6), n_layers=6, capture=(6,))
        return [tree.logits, tree.hidden, *tree.captured.values(), after.logits, short.logits,
                short.captured[6]]

    a, b = _both(numpy_path, run)
    assert len(a) == len(b)
    for got, want in zip(a, b):
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.abs(got - want).max() < LOGIT_ATOL


@needs_numba
def test_the_cache_holds_the_same_keys_and_values(model, numpy_path):
    ids = model.tokenizer.chat(PROMPTS[2])

    def run():
        cache = model.new_cache()
        model.forward(ids, cache, logits="none")
        model.forward(ids[:9], cache, logits="none")
        return cache.keys(), cache.v[:, :, :cache.length].copy()

    for got, want in zip(*_both(numpy_path, run)):
        assert np.abs(got - want).max() < 1e-3  # keys and values are O(1-10)


def test_the_cache_keeps_keys_in_panels_of_64_positions(model):
    cfg = model.config
    cache = model.new_cache(capacity=70, n_layers=2)
    assert cache.capacity == 128 and cache.k.shape == (2, cfg.n_kv_heads, 2, cfg.head_dim, 64)
    rng = np.random.default_rng(3)
    keys = rng.standard_normal((2, cfg.n_kv_heads, 100, cfg.head_dim)).astype(np.float32)
    vals = rng.standard_normal(keys.shape).astype(np.float32)
    for layer in range(2):
        cache.put(layer, 0, keys[layer, :, :60], vals[layer, :, :60])
    cache.length = 60
    assert np.array_equal(cache.k[1, 2, 0, :, 7], keys[1, 2, 7])  # position t at [t // 64, :, t % 64]
    cache.reserve(100)  # grows, keeps what it had
    assert cache.capacity >= 160 and np.array_equal(cache.keys(), keys[:, :, :60])
    for layer in range(2):
        cache.put(layer, 60, keys[layer, :, 60:], vals[layer, :, 60:])
    cache.length = 100
    assert np.array_equal(cache.keys(1), keys[1]) and np.array_equal(cache.v[:, :, :100], vals)
    cache.compact(50, [1, 14, 40])  # positions 51, 64, 90 become 50, 51, 52
    assert cache.length == 53
    want = keys[:, :, [*range(50), 51, 64, 90]]
    assert np.array_equal(cache.keys(), want) and np.array_equal(cache.keys(0, 52), want[0, :, :52])
    assert np.array_equal(cache.v[:, :, :53], vals[:, :, [*range(50), 51, 64, 90]])


def test_greedy_outputs_unchanged(model, numpy_path):
    outs = _both(numpy_path, lambda: [generate(model, model.tokenizer.chat(p), max_new=24).tokens
                                      for p in PROMPTS])
    assert outs[0] == outs[1]


def test_the_kernel_is_what_the_model_uses(model):
    assert model_mod.matmul_t is kernel.matmul_t
    assert model_mod.FUSED == kernel.HAVE_NUMBA
    b = model.weights.blocks[0]
    assert isinstance(b.wqkv, kernel.Packed) and isinstance(model.weights.embed, kernel.Packed)
    x = np.ones((3, model.config.d_model), np.float32)
    y = model_mod.linear(x, b.wqkv)
    assert y.dtype == np.float32 and y.shape == (3, b.wqkv.shape[0])


def test_packing_keeps_one_copy(model):
    w = model.weights
    kinds = ("wqkv", "wo", "wgu", "wdown")
    for i, b in enumerate(w.blocks):
        for kind, stack in zip(kinds, w.stacks):
            data = getattr(b, kind).data
            assert data.base is stack and np.shares_memory(data, stack[i])
    stored = w.embed.nbytes + sum(s.nbytes for s in w.stacks) + w.final_norm.nbytes + w.inv_freq.nbytes
    assert stored == w.nbytes
    assert not any(np.shares_memory(w.embed.data, s) for s in w.stacks)


RSS_CODE = """
import gc
def rss():
    for line in open('/proc/self/status'):
        if line.startswith('VmRSS:'):
            return int(line.split()[1]) * 1024
from specdec_playable.lm import get_model, kernel
kernel.warmup()
before = rss()
m = get_model()
loaded = rss()
cache = m.new_cache()
m.forward(m.tokenizer.chat('Hello there'), cache)
for n in (1, 5, 9, 17):
    m.forward(list(range(100, 100 + n)), cache)
gc.collect()
print(loaded - before, rss() - loaded, m.weights.nbytes)
"""


def test_a_loaded_process_holds_the_weights_once():
    # Measured on this project's machine: loading grows the process by about 1.09x the weights
    # (1.13x before the weights were packed, which kept the loader's freed heap); a second copy of
    # the blocks would make it about 1.9x. Passes add their buffers (0.05x).
    out = subprocess.run([sys.executable, "-c", RSS_CODE], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    load, passes, weights = map(int, out.stdout.split())
    assert weights < load < 1.3 * weights
    assert passes < 0.3 * weights


OTHER_LAYOUT_CODE = """
import sys
import numpy as np
from specdec_playable.lm import get_model, kernel
m = get_model()
assert m.weights.strips == kernel.NARROW and m.weights.embed.strips == kernel.NARROW
ids = m.tokenizer.chat(sys.argv[1])
cache = m.new_cache()
out = [m.forward(ids, cache, logits="last").logits]
for n in (1, 5, 9):
    out.append(m.forward(ids[-n:], cache, logits="all").logits)
np.savez(sys.argv[2], *out)
"""


@needs_numba
def test_the_other_layout_gives_the_same_logits(model, numpy_path, tmp_path):
    """The model in the layout this CPU does not use by default (strips and narrow tiles where it
    has AVX-512, panels and wide tiles where it has not: ``SPECDEC_TILES``), in a fresh process,
    gives the numpy path's logits within LOGIT_ATOL."""
    import os
    other = "wide" if kernel.NARROW else "narrow"
    env = dict(os.environ, SPECDEC_TILES=other)
    out = subprocess.run([sys.executable, "-c", OTHER_LAYOUT_CODE, PROMPTS[0], str(tmp_path / "o.npz")],
                         capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr
    got = np.load(tmp_path / "o.npz")
    got = [got[f"arr_{i}"] for i in range(len(got.files))]
    numpy_path()
    ids = model.tokenizer.chat(PROMPTS[0])
    cache = model.new_cache()
    want = [model.forward(ids, cache, logits="last").logits]
    for n in (1, 5, 9):
        want.append(model.forward(ids[-n:], cache, logits="all").logits)
    assert model.weights.strips == kernel.NARROW
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and np.abs(g - w).max() < LOGIT_ATOL

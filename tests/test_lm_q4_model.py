"""The model in 4 bits (``weights="q4"``): the file's Q4_1 and Q8_0 blocks streamed by the block
tiles, against the float32 model.

Both formats compute with the same weights, the ones the file defines, and float32 activations; they
differ in rounding only: the float32 model folds the RMSNorm weights and the query scale into its
matrices and rounds ``d * q + m`` twice, the 4-bit one applies them to the activations and rounds
each weight once, and the sums run in other orders. Measured on 6 prompts, the largest logit
difference is about 5e-6 of the largest |logit| (2e-4 on logits of about 38); the tolerance is
1e-4 of it, while a wrong nibble, block or norm moves logits by whole units. Greedy tokens must be
equal wherever the float32 model's top-two margin is clear (over 0.05, a hundred times the largest
difference measured); a near-tie may flip, a clear choice may not.

That holds for the float tiles (float32 activations), forced here with ``tuning.set_int_isa("")``.
Where the CPU has the integer tile (the default there: 8-bit activations, ``test_lm_q4_int.py``),
the 8-bit activations move logits by up to 5.4e-2 of the largest |logit| (measured on the same 6
prompts by ``benchmarks/bench_int_accuracy.py``; qkv contributes most, then the others alike), and
flipped greedy tokens where the float32 margin was up to 0.13: its tolerance is 0.15 of the
largest |logit| and a clear margin is 0.3 (most positions are still clear: over half of every
prompt's). Its pass is held tightly (1e-4) to the numpy path doing
the same 8-bit arithmetic (``kernel.reference.matmul_t_int_numpy``).
"""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest

from specdec_playable.lm import get_model, kernel
from specdec_playable.lm import model as model_mod
from specdec_playable.lm.decode import generate
from specdec_playable.lm.prompts import FORMAT_CHECKS
from specdec_playable.lm.kernel import Packed, QPacked, tuning
from specdec_playable.lm.kernel.reference import matmul_t_int_numpy, matmul_t_numpy

LOGIT_RTOL = 1e-4
CLEAR_MARGIN = 0.05
#: The integer tile's (8-bit activations): (logit tolerance, clear margin); see the docstring.
INT_RTOL, INT_MARGIN = 0.15, 0.3
TILES = ["float"] + (["int"] if tuning.INT_ISA else [])
PROMPTS = FORMAT_CHECKS


@pytest.fixture(scope="module")
def f32():
    return get_model()


@pytest.fixture(scope="module")
def q4():
    return get_model("q4")


@pytest.fixture(params=TILES)
def tiles(request):
    """The 4-bit model's products by the float tiles or (where the CPU has it) the integer tile;
    its (logit tolerance, clear margin)."""
    tuning.set_int_isa("" if request.param == "float" else None)
    yield (LOGIT_RTOL, CLEAR_MARGIN) if request.param == "float" else (INT_RTOL, INT_MARGIN)
    tuning.set_int_isa(None)


def _passes(model, ids):
    """Logits of a prompt and of passes over 1, 5, 9, 17 and 33 positions after it."""
    cache = model.new_cache()
    out = [model.forward(ids, cache, logits="all").logits]
    for n in (1, 5, 9, 17, 33):
        out.append(model.forward(ids[-n:] if n <= len(ids) else (ids * n)[:n], cache).logits)
    return out


def test_the_4_bit_model_keeps_the_files_blocks_once(q4, f32):
    w = q4.weights
    assert q4.format == w.format == "q4" and f32.format == "f32"
    assert get_model("q4") is q4 and model_mod.loaded("q4") and model_mod.loaded("f32")
    assert isinstance(w.embed, QPacked) and w.embed.kind == "q8_0"
    for b in w.blocks:
        for kind, stack in zip(("wqkv", "wo", "wgu", "wdown"), w.stacks):
            m = getattr(b, kind)
            assert isinstance(m, QPacked) and m.kind == "q4_1" and m.data.base is stack
    assert all(not a.flags.writeable for a in w.arrays())
    stored = w.embed.nbytes + sum(s.nbytes for s in w.stacks) + w.final_norm.nbytes + w.inv_freq.nbytes
    assert stored + w.norms.nbytes == w.nbytes
    # the file's 98.4 MB hold the blocks, the float32 norms and the tokenizer; the panels' padding
    # rows (wqkv: 960 rows in 15 panels, exactly) add nothing here
    assert 0.17 * f32.weights.nbytes < w.nbytes < 100e6
    assert w.norms.shape == (q4.config.n_layers, 2, q4.config.d_model) and w.norms.dtype == np.float32
    assert abs(w.q_scale - 1 / np.sqrt(q4.config.head_dim)) < 1e-9


@pytest.mark.parametrize("prompt", PROMPTS)
def test_logits_equal_the_float32_models_within_tolerance(f32, q4, prompt, tiles):
    ids = f32.tokenizer.chat(prompt)
    for got, want in zip(_passes(q4, ids), _passes(f32, ids), strict=True):
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.abs(got - want).max() < tiles[0] * np.abs(want).max()


@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_tokens_equal_wherever_the_float32_margin_is_clear(f32, q4, prompt, tiles):
    CLEAR_MARGIN = tiles[1]
    ids = f32.tokenizer.chat(prompt)
    text = list(ids) + list(generate(f32, ids, max_new=32).tokens)
    want = f32.forward(text, f32.new_cache()).logits[len(ids) - 1:]
    got = q4.forward(text, q4.new_cache()).logits[len(ids) - 1:]
    top2 = np.sort(want, axis=1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > CLEAR_MARGIN
    assert clear.mean() > (0.8 if CLEAR_MARGIN == 0.05 else 0.5)  # the check is not vacuous
    assert np.array_equal(got.argmax(1)[clear], want.argmax(1)[clear])
    first_tie = int(np.argmin(clear)) if not clear.all() else len(clear)
    q_tokens = list(generate(q4, ids, max_new=32).tokens)
    assert q_tokens[:first_tie] == text[len(ids):len(ids) + first_tie]


def test_the_numpy_path_gives_the_compiled_paths_logits(q4, monkeypatch, tiles):
    ids = q4.tokenizer.chat(PROMPTS[0])
    compiled = _passes(q4, ids)
    int_tile = tiles[0] == INT_RTOL

    def reference(x, w, out=None):  # the compiled path's arithmetic, in numpy
        y = matmul_t_int_numpy(x, w) if int_tile and isinstance(w, QPacked) else matmul_t_numpy(x, w)
        if out is None:
            return y
        out[...] = y
        return out

    monkeypatch.setattr(model_mod, "FUSED", False)
    monkeypatch.setattr(model_mod, "matmul_t", reference)
    # 8-bit codes amplify float32 rounding: where the two paths' inputs differ in the last bit, a
    # code can round the other way, so the integer tile's paths agree to its own tolerance (the
    # products themselves are held to 1e-5 in test_lm_q4_int.py)
    for got, want in zip(_passes(q4, ids), compiled, strict=True):
        assert np.abs(got - want).max() < tiles[0] * np.abs(want).max()


def test_an_unknown_format_is_an_error_naming_the_choices():
    for bad in ("q8", "F32", None, 4):
        with pytest.raises(ValueError, match=r"\['f32', 'q4'\]"):
            get_model(bad)
        with pytest.raises(ValueError, match=r"\['f32', 'q4'\]"):
            model_mod.load(weights=bad)


def test_tensors_the_tiles_do_not_read_fall_back_to_float32_with_a_reason(f32, monkeypatch, caplog, tiles):
    """A file whose feed-forward down projections and embedding were in formats the block tiles do
    not read: those load as float32 panels (the others stay in blocks), the log says which and
    why, and the logits are the float32 model's within tolerance."""
    readable = model_mod._unreadable

    def unreadable(tensors, kinds):
        if any("ffn_down" in t.name or "token_embd" in t.name for t in tensors):
            return f"{tensors[0].name} is Q6_K; the block tiles read {', '.join(kinds)}"
        return readable(tensors, kinds)

    monkeypatch.setattr(model_mod, "_unreadable", unreadable)
    with caplog.at_level(logging.WARNING, logger=model_mod.__name__):
        mixed = model_mod.load(weights="q4")
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "ffn_down weights stay float32" in said and "embedding stays float32" in said and "Q6_K" in said
    assert isinstance(mixed.weights.embed, Packed) and isinstance(mixed.weights.blocks[0].wdown, Packed)
    assert isinstance(mixed.weights.blocks[0].wgu, QPacked)
    assert all(getattr(b, k).strips == mixed.weights.strips for b in mixed.weights.blocks
               for k in ("wqkv", "wo", "wgu", "wdown"))  # one layout for every product of a pass
    ids = f32.tokenizer.chat(PROMPTS[3])
    for got, want in zip(_passes(mixed, ids), _passes(f32, ids), strict=True):
        assert np.abs(got - want).max() < tiles[0] * np.abs(want).max()


RSS_CODE = """
import gc, sys
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return int(line.split()[1]) * 1024
from specdec_playable.lm import get_model, kernel
kernel.warmup()
before = status('VmRSS')
m = get_model(sys.argv[1])
loaded = status('VmRSS')
cache = m.new_cache()
m.forward(m.tokenizer.chat('Hello there'), cache)
for n in (1, 5, 9, 17, 33):
    m.forward(list(range(100, 100 + n)), cache)
gc.collect()
print(loaded - before, status('VmRSS'), status('RssAnon'), m.weights.nbytes)
"""


def test_a_fresh_4_bit_process_stays_within_its_memory_bound():
    # Measured on this project's machine (Intel Xeon, 2026-12-04): loading grows the process by
    # 1.35x the 97 MB of blocks (the tokenizer and the loader's heap besides); after passes over
    # up to 33 positions it holds 223 MB of its own (anonymous) memory, and 131 MB of mapped files,
    # mostly LLVM's library, which every model process shares. A second copy of the weights, or
    # the float32 model (538 MB), would break both bounds.
    out = subprocess.run([sys.executable, "-c", RSS_CODE, "q4"], capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    load, rss, anon, weights = map(int, out.stdout.split())
    assert weights < load < 1.6 * weights
    assert anon <= 250e6
    assert rss <= 420e6


OTHER_LAYOUT_CODE = """
import sys
import numpy as np
from specdec_playable.lm import get_model, kernel
m = get_model("q4")
assert m.weights.strips == m.weights.embed.strips == (sys.argv[3] == "narrow")
ids = m.tokenizer.chat(sys.argv[1])
cache = m.new_cache()
out = [m.forward(ids, cache, logits="last").logits]
for n in (1, 4, 5, 9):
    out.append(m.forward(ids[-n:], cache, logits="all").logits)
np.savez(sys.argv[2], *out)
"""


def test_the_other_tile_layout_gives_the_same_4_bit_logits(q4, tmp_path):
    """The 4-bit model in the layout this CPU does not use by default (panels of 64 rows where it
    packs blocks in strips of 16 (the integer tile's, or narrow tiles'), strips where it packs
    panels: ``SPECDEC_TILES``), in a fresh process, gives this layout's logits within LOGIT_RTOL of
    the largest (the integer tile sums each row alike in both layouts)."""
    import os
    other = "wide" if q4.weights.strips else "narrow"
    env = dict(os.environ, SPECDEC_TILES=other)
    out = subprocess.run([sys.executable, "-c", OTHER_LAYOUT_CODE, PROMPTS[1], str(tmp_path / "o.npz"), other],
                         capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr
    got = np.load(tmp_path / "o.npz")
    got = [got[f"arr_{i}"] for i in range(len(got.files))]
    ids = q4.tokenizer.chat(PROMPTS[1])
    cache = q4.new_cache()
    want = [q4.forward(ids, cache, logits="last").logits]
    for n in (1, 4, 5, 9):
        want.append(q4.forward(ids[-n:], cache, logits="all").logits)
    assert q4.weights.strips == kernel.tuning.BLOCKS_STRIPS
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and np.abs(g - w).max() < LOGIT_RTOL * np.abs(w).max()


@pytest.mark.parametrize("k", range(1, 9))
def test_greedy_speculation_in_4_bits_writes_exactly_plain_4_bit_decoding(q4, tiles, k):
    """In 4 bits greedy speculation writes plain 4-bit decoding's tokens with each draft, in chains
    and trees. With the integer tile a position's logits do not depend on how many positions its
    pass holds, bit for bit (each position's activations quantised alone, every sum in one order,
    the softmax's in fixed lanes); with the float tiles they differ by about 1e-4 of the largest,
    below every top-two margin of these replies."""
    from specdec_playable.lm.drafts import PromptLookup
    from specdec_playable.lm.head import DraftHead
    from specdec_playable.lm.memory import MemoryDraft
    from specdec_playable.lm.decode import speculate
    from specdec_playable.lm.tree import speculate_tree

    for prompt in (PROMPTS[0], PROMPTS[2]):
        ids = q4.tokenizer.chat(prompt)
        plain = generate(q4, ids, max_new=24)
        for draft in (PromptLookup(), DraftHead(), MemoryDraft()):
            spec = speculate(q4, ids, draft, k, max_new=24)
            assert spec.tokens == plain.tokens, (prompt, type(draft).__name__, k)
        if k in (2, 4):
            tree = speculate_tree(q4, ids, MemoryDraft(), 2, k, shape="spine", max_new=24)
            assert tree.tokens == plain.tokens, (prompt, "tree", k)


def test_speculative_sampling_in_4_bits_emits_the_4_bit_models_own_distribution(q4, tiles):
    """At a real context, the 4-bit model's next-token law from a verify pass over 5 positions is
    the law of a plain step there (bit for bit with the integer tile), and speculative sampling with the memory draft's q
    emits it: chi-square against the plain step's p, 20,000 draws, seed fixed, alpha 1e-3 (the
    test fails by chance with probability 0.001)."""
    from specdec_playable.lm import sampling
    from specdec_playable.lm.decode import judge
    from specdec_playable.lm.memory import MemoryDraft
    from specdec_playable.sim.sampling import chi_square

    ids = q4.tokenizer.chat(PROMPTS[1]) + q4.tokenizer.encode("The sea")
    step = q4.forward(ids, q4.new_cache(), logits="last").logits[-1]
    cache = q4.new_cache()
    q4.forward(ids[:-1], cache, logits="none")
    verify = q4.forward([ids[-1], 11, 12, 13, 14], cache, logits="all").logits[0]
    if tiles[0] == INT_RTOL:  # the integer tile: the pass's size changes no bit
        assert np.array_equal(verify, step)
    else:  # the float tiles sum in an order that may depend on the pass's size (1e-4 measured)
        assert np.abs(verify - step).max() < LOGIT_RTOL * np.abs(step).max()
    p = sampling.probabilities(step, 1.0)
    q = MemoryDraft().distribution(ids, q4.config.vocab_size, temperature=1.0)
    assert (q > 0).sum() >= 1 and np.abs(p - q).sum() > 0.3
    rng = np.random.default_rng(20261207)
    p_rows = np.stack([sampling.probabilities(verify, 1.0)] * 2)
    counts = np.zeros(p.size, np.int64)
    for _ in range(20_000):
        x = sampling.draw(q, rng)
        a, last = judge(p_rows, [x], q[None, :], rng)
        counts[x if a == 1 else last] += 1
    big = p * counts.sum() >= 5  # Pearson's test, tokens with expected count < 5 pooled in one bin
    obs = np.append(counts[big], counts[~big].sum())
    probs = np.append(p[big], p[~big].sum())
    assert chi_square(obs, probs / probs.sum()).p_value > 1e-3

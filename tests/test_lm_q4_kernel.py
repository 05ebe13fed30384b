"""lm.kernel on weights in GGUF blocks: Q4_1 and Q8_0 repacked into panel order, multiplied by the
block tiles, against a float64 dequantise-and-multiply reference.

The reference reads the GGUF bytes itself (float16 scale ``d``, float16 minimum ``m``, 4-bit codes,
low nibbles first; or ``d`` and int8 codes) and computes ``(d q + m) . x`` in float64. The tile
dequantises in float32 with a fused multiply-add (one rounding of each weight, relative 6e-8) and
sums in float32 in its own order, so it agrees to float32 rounding: measured errors are below 1e-6
of the largest |output|; the tolerance is 1e-5 (a wrong index, nibble or block gives errors of
order 1). Every position count from 1 to 33 runs (one group of 1-6 in registers, then chunked
groups), both tile widths (panels of 64 rows for AVX-512, strips of 16 for other CPUs), row counts
that leave a panel or a strip partly padded, and input counts of 1 to 7 blocks (a short last chunk).
These are the float tiles (float32 activations): every test here runs with the integer tile off
(``tuning.set_int_isa("")``); the integer tile's tests are in ``test_lm_q4_int.py``.
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.lm import kernel
from specdec_playable.lm.kernel import blocks, tuning

gguf = pytest.importorskip("gguf")

TOL = 1e-5
TYPES = {"q4_1": gguf.GGMLQuantizationType.Q4_1, "q8_0": gguf.GGMLQuantizationType.Q8_0}
SHAPES = [(67, 96), (200, 160), (5, 32), (130, 224), (64, 64)]


@pytest.fixture(autouse=True)
def float_tiles():
    """The float tiles multiply every weight in blocks (the integer tile off), then back."""
    tuning.set_int_isa("")
    yield
    tuning.set_int_isa(None)


def quantized(kind: str, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    """A random weight's GGUF blocks, uint8 ``(rows, blocks * size)``, with the spread of scales
    and offsets a trained model has (each row its own scale and mean)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols)) * rng.uniform(0.01, 0.2, (rows, 1)) + rng.normal(0, 0.02, (rows, 1))
    return gguf.quants.quantize(w.astype(np.float32), TYPES[kind])


def dequantize64(raw: np.ndarray, kind: str) -> np.ndarray:
    """The weight GGUF's blocks define, in float64, read from the bytes without the package."""
    rows = raw.shape[0]
    size = 20 if kind == "q4_1" else 34
    b = raw.reshape(rows, -1, size)
    d = b[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float64)[..., None]
    if kind == "q8_0":
        return (d * b[..., 2:].copy().view(np.int8).astype(np.float64)).reshape(rows, -1)
    m = b[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float64)[..., None]
    codes = b[..., 4:]
    q = np.concatenate((codes & 15, codes >> 4), axis=-1).astype(np.float64)  # inputs 0-15, 16-31
    return (d * q + m).reshape(rows, -1)


def rel_err(got: np.ndarray, x: np.ndarray, w64: np.ndarray) -> float:
    want = x.astype(np.float64) @ w64.T
    return float(np.abs(got - want).max() / np.abs(want).max())


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}" for m, k in SHAPES])
def test_block_tiles_equal_the_float64_reference_for_1_to_33_positions(shape, kind, strips):
    rows, cols = shape
    raw = quantized(kind, rows, cols)
    w64 = dequantize64(raw, kind)
    pw = blocks.pack_blocks(raw, kind, strips=strips)
    assert pw.shape == shape and pw.strips is strips and pw.dtype == np.uint8
    rng = np.random.default_rng(rows + cols)
    for n in range(1, 34):
        x = rng.standard_normal((n, cols)).astype(np.float32)
        got = kernel.matmul_t(x, pw)
        assert got.dtype == np.float32 and got.shape == (n, rows)
        assert rel_err(got, x, w64) < TOL, n
        out = np.full((n, rows), np.nan, np.float32)
        assert kernel.matmul_t(x, pw, out=out) is out and rel_err(out, x, w64) < TOL, n


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
def test_the_numpy_fallback_dequantises_blockwise_then_multiplies(kind, strips):
    raw = quantized(kind, 200, 160, seed=1)
    w64 = dequantize64(raw, kind)
    pw = blocks.pack_blocks(raw, kind, strips=strips)
    rng = np.random.default_rng(2)
    for n in (1, 2, 5, 9, 33):
        x = rng.standard_normal((n, 160)).astype(np.float32)
        assert rel_err(kernel.matmul_t_numpy(x, pw), x, w64) < TOL
        assert rel_err(kernel.reference.matmul_t_numpy(x, pw), x, w64) < TOL


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
def test_repacking_keeps_every_byte_and_dequantises_as_gguf(kind, strips):
    rows, cols = 67, 96
    raw = quantized(kind, rows, cols, seed=3)
    pw = blocks.pack_blocks(raw, kind, strips=strips)
    panels = -(-rows // kernel.PANEL)
    assert pw.nbytes == panels * kernel.PANEL * raw.shape[1]  # the file's bytes, padded to a panel
    assert not pw.data.flags.writeable
    ref = gguf.quants.dequantize(raw, TYPES[kind])
    scale = np.abs(ref).max()
    assert np.abs(pw.unpack() - ref).max() <= 1e-7 * scale
    ids = [0, rows - 1, 17, -1]
    assert np.abs(pw[ids] - ref[ids]).max() <= 1e-7 * scale
    assert pw[5].shape == (cols,) and np.abs(pw[5] - ref[5]).max() <= 1e-7 * scale
    assert np.abs(pw[10:20] - ref[10:20]).max() <= 1e-7 * scale
    assert np.abs(dequantize64(raw, kind) - ref).max() <= 1e-6 * scale  # the test's own reader
    with pytest.raises(IndexError):
        pw[[rows]]


def test_a_prefetch_or_a_plan_changes_no_result(monkeypatch):
    """Prefetch distances, and one group unpacking in registers or through scratch panels
    (``tuning.BLOCKS_SCRATCH_FROM``), change the speed, never the products."""
    raw = quantized("q4_1", 200, 224, seed=4)
    w64 = dequantize64(raw, "q4_1")
    rng = np.random.default_rng(5)
    for strips in (False, True):
        pw = blocks.pack_blocks(raw, "q4_1", strips=strips)
        for ahead, scratch_from in ((0, 7), (1, 1), (8, 3), (64, 7)):
            monkeypatch.setattr(tuning, "BLOCKS_AHEAD", (ahead,) * kernel.MAX_GROUP)
            monkeypatch.setattr(tuning, "BLOCKS_SCRATCH_FROM", scratch_from)
            for n in (1, 4, 6, 7, 13):
                assert tuning.blocks_plan(n) == (ahead, 4 if n >= scratch_from else 0, -1, 0, 0)
                x = rng.standard_normal((n, 224)).astype(np.float32)
                assert rel_err(kernel.matmul_t(x, pw), x, w64) < TOL


def test_block_packing_is_checked():
    raw = quantized("q4_1", 10, 64)
    with pytest.raises(ValueError, match="one of"):
        blocks.pack_blocks(raw, "q5_0")
    with pytest.raises(ValueError):
        blocks.pack_blocks(raw[:, :30], "q4_1")  # not whole blocks
    with pytest.raises(ValueError):
        blocks.pack_blocks(raw.astype(np.int16), "q4_1")
    with pytest.raises(ValueError):
        blocks.pack_blocks(raw, "q4_1", out=np.empty((1, 7), np.uint8))
    pw = blocks.pack_blocks(raw, "q4_1")
    with pytest.raises(ValueError):
        kernel.matmul_t(np.ones((2, 32), np.float32), pw)  # 32 inputs for a 64-input weight
    with pytest.raises(TypeError):
        kernel.matmul_t(np.ones((2, 64)), pw)  # float64 activations


def test_the_read_floor_reads_blocks_as_bytes():
    raw = quantized("q4_1", 130, 96)
    for strips in (False, True):
        pw = blocks.pack_blocks(raw, "q4_1", strips=strips)
        assert isinstance(kernel.read_all([pw, kernel.pack(np.ones((3, 8), np.float32))]), float)
    odd = blocks.pack_blocks(quantized("q8_0", 5, 32), "q8_0")  # a panel of 8.5 inputs' bytes
    assert isinstance(kernel.read_all([odd]), float)

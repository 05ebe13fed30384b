"""lm.kernel's integer tile: weights in GGUF blocks times 8-bit activations, by the CPU's integer
dot-product instructions (AVX-512 VNNI, AVX2), against numpy references of the same arithmetic.

* The activations' quantiser: the compiled form (reading the kernel's grouped inputs) gives the
  numpy reference's codes, scales and sums bit for bit.
* The integer sums, bit for bit: activations that are integers with each block's largest
  magnitude 127 quantise to themselves with scale 1, and weights with ``d = 1`` (and ``m = 0``)
  make every product an exact integer sum, so the tile's output must equal numpy's int64 product
  exactly (sums below 2**24 are exact in float32).
* After the scales, within 1e-5 of the largest |output| against
  :func:`.kernel.reference.matmul_t_int_numpy` (the same 8-bit arithmetic in float64): the tile sums
  blocks in float32 (measured errors below 1e-6; a wrong code, nibble, block or position gives
  errors of order 1e-2 and more).
* Against the float64 product of the unquantised activations: the error the 8-bit activations add,
  within 2e-2 of the largest |output| on random inputs (measured about 4e-3).

Every position count from 1 to 33 (the tile holds up to 8, then equal groups), both layouts, both
formats and each instruction set this CPU has, forced one at a time (``tuning.set_int_isa``); one
this CPU lacks is skipped with its reason.
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.lm import kernel
from specdec_playable.lm.kernel import activations, blocks, tuning
from specdec_playable.lm.kernel.reference import block_codes, matmul_t_int_numpy

gguf = pytest.importorskip("gguf")
if not kernel.HAVE_NUMBA:
    pytest.skip("the integer tile is compiled code (numba)", allow_module_level=True)

TYPES = {"q4_1": gguf.GGMLQuantizationType.Q4_1, "q8_0": gguf.GGMLQuantizationType.Q8_0}
SHAPES = [(67, 96), (200, 160), (5, 32), (130, 224)]
TOL = 1e-5


@pytest.fixture(params=tuning.ISA)
def isa(request):
    """Each instruction set this CPU has, forced for the test, then the default back."""
    if not tuning.supported(request.param):
        pytest.skip(f"this CPU lacks {request.param}")
    tuning.set_int_isa(request.param)
    yield request.param
    tuning.set_int_isa(None)


def quantized(kind: str, rows: int, cols: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((rows, cols)) * rng.uniform(0.01, 0.2, (rows, 1)) + rng.normal(0, 0.02, (rows, 1))
    return gguf.quants.quantize(w.astype(np.float32), TYPES[kind])


def unit_scaled(kind: str, rows: int, cols: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """GGUF blocks with every scale 1 and minimum 0, and their integer codes ``(rows, cols)``:
    Q4_1 0-15, Q8_0 the full range -128-127."""
    rng = np.random.default_rng(seed)
    nb = cols // 32
    one = np.float16(1.0).view(np.uint16)
    if kind == "q4_1":
        q = rng.integers(0, 16, (rows, nb, 32))
        raw = np.zeros((rows, nb, 20), np.uint8)
        raw[..., 0:2] = np.array([one], np.uint16).view(np.uint8)
        raw[..., 4:] = (q[..., :16] | (q[..., 16:] << 4)).astype(np.uint8)
    else:
        q = rng.integers(-128, 128, (rows, nb, 32))
        raw = np.zeros((rows, nb, 34), np.uint8)
        raw[..., 0:2] = np.array([one], np.uint16).view(np.uint8)
        raw[..., 2:] = q.astype(np.int8).view(np.uint8)
    return raw.reshape(rows, -1), q.reshape(rows, cols)


def integer_activations(n: int, cols: int, seed: int) -> np.ndarray:
    """Integers in [-127, 127] with 127 or -127 somewhere in every block: scale 1, codes = x."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-127, 128, (n, cols)).astype(np.float32)
    x[:, ::32] = rng.choice([-127.0, 127.0], (n, cols // 32))
    return x


@pytest.mark.parametrize("n", [1, 2, 5, 9, 17, 33])
def test_the_compiled_quantiser_gives_the_references_codes_bit_for_bit(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((n, 160)).astype(np.float32) * rng.uniform(0.01, 10, (n, 1)).astype(np.float32)
    x[0, 32:64] = 0.0  # a zero block: scale 0, codes 0
    x[-1, 5] = 0.5 * 127 / 127  # values that land near ties
    a, s, ms, sums = activations.quantize(x)
    got = (np.empty((n, 160), np.int8), np.empty((n, 5), np.float32), np.empty((n, 5), np.float32),
           np.empty((n, 5), np.int32))
    activations.quantize_grouped(kernel.group_positions(x), n, *got)
    for want, have in zip((a, s, ms, sums), got):
        assert np.array_equal(want, have)
    assert s[0, 1] == 0 and not a[0, 32:64].any()
    blocks_of = x.reshape(n, -1, 32)
    assert np.all(np.abs(blocks_of - a.reshape(n, -1, 32) * s[..., None]) <= s[..., None] / 2 * (1 + 1e-6))
    assert np.abs(a).max() == 127 and np.array_equal(sums, a.reshape(n, -1, 32).sum(axis=2))


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
def test_integer_sums_are_exact_for_every_position_count(isa, kind, strips):
    rows, cols = 70, 96
    raw, q = unit_scaled(kind, rows, cols, seed=7)
    pw = blocks.pack_blocks(raw, kind, strips=strips)
    codes, d, m = block_codes(pw)
    real = d.transpose(0, 2, 1).reshape(-1, cols // 32)[:rows]  # the padding rows' are 0
    assert (real == 1).all() and (m is None or (m == 0).all())
    for n in range(1, 34):
        x = integer_activations(n, cols, seed=n)
        want = x.astype(np.int64) @ q.T
        got = kernel.matmul_t(x, pw)
        assert np.array_equal(got, want.astype(np.float32)), (isa, n)


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
@pytest.mark.parametrize("kind", ["q4_1", "q8_0"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}" for m, k in SHAPES])
def test_the_integer_tile_equals_its_numpy_reference_after_scales(isa, shape, kind, strips):
    rows, cols = shape
    raw = quantized(kind, rows, cols)
    pw = blocks.pack_blocks(raw, kind, strips=strips)
    w64 = gguf.quants.dequantize(raw, TYPES[kind]).astype(np.float64)
    rng = np.random.default_rng(rows + cols)
    for n in range(1, 34):
        x = rng.standard_normal((n, cols)).astype(np.float32)
        got = kernel.matmul_t(x, pw)
        want = matmul_t_int_numpy(x, pw)
        scale = np.abs(want).max()
        assert got.shape == (n, rows) and np.abs(got - want).max() < TOL * scale, (isa, n)
        exact = x.astype(np.float64) @ w64.T  # the 8-bit activations' own error
        assert np.abs(got - exact).max() < 2e-2 * np.abs(exact).max(), (isa, n)


def test_each_plan_names_the_tile_it_runs():
    chosen = tuning.INT_ISA
    try:
        assert tuning.set_int_isa("") == ""
        assert tuning.blocks_plan(5)[2:] == (-1, 0, 0)
        for isa in tuning.ISA:
            if tuning.supported(isa):
                tuning.set_int_isa(isa)
                for n in (1, 5, 9, 33):
                    plan = tuning.blocks_plan(n)
                    use = n >= tuning.INT_FROM[isa]
                    assert plan[2:] == ((tuning.ISA.index(isa), tuning.INT_GROUP[isa], tuning.INT_AHEAD[isa]) if use else (-1, 0, 0))
            else:
                with pytest.raises(ValueError, match="lacks"):
                    tuning.set_int_isa(isa)
        with pytest.raises(ValueError):
            tuning.supported("sse2")
    finally:
        tuning.set_int_isa(None)
    assert tuning._INT[0] == chosen


def test_the_cpu_features_named_for_another_cpu_decide_what_is_compiled(monkeypatch):
    monkeypatch.setenv("NUMBA_CPU_NAME", "znver3")
    monkeypatch.setenv("NUMBA_CPU_FEATURES", "+avx2,+fma,+f16c,-avx512f")
    tuning.host_features.cache_clear()
    try:
        assert tuning.supported("avx2") and not tuning.supported("vnni")
        monkeypatch.setenv("SPECDEC_INT_DOT", "vnni")
        with pytest.raises(ValueError, match="lacks"):
            tuning._default_int_isa()
        monkeypatch.setenv("SPECDEC_INT_DOT", "off")
        assert tuning._default_int_isa() == ""
        monkeypatch.delenv("SPECDEC_INT_DOT")
        assert tuning._default_int_isa() == "avx2"
        monkeypatch.setenv("SPECDEC_INT_DOT", "sse")
        with pytest.raises(ValueError, match="SPECDEC_INT_DOT"):
            tuning._default_int_isa()
    finally:
        monkeypatch.undo()
        tuning.host_features.cache_clear()


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
def test_a_compiled_pass_multiplies_blocks_by_the_integer_tile(isa, strips):
    """``kernel.drive.multiply`` (what ``lm.fused`` calls inside a pass) with a plan naming the
    integer tile gives the integer reference's products (the layer stacks are Q4_1)."""
    from numba import njit

    from specdec_playable.lm.kernel.drive import multiply

    @njit
    def via(xg, w, n, out, ahead, strips):
        multiply(xg, w, n, out, ahead, strips)

    rows, cols = 200, 224
    pw = blocks.pack_blocks(quantized("q4_1", rows, cols, seed=9), "q4_1", strips=strips)
    rng = np.random.default_rng(10)
    for n in (1, 2, 5, 8, 9, 17, 20):
        plan = (kernel.prefetch_ahead(n, strips), *tuning.blocks_plan(n))
        assert plan[3] == tuning.ISA.index(isa)
        x = rng.standard_normal((n, cols)).astype(np.float32)
        out = np.full((n, pw.data.shape[0] * kernel.PANEL), np.nan, np.float32)
        via(kernel.group_positions(x), pw.data, n, out, plan, strips)
        want = matmul_t_int_numpy(x, pw)
        assert np.abs(out[:, :rows] - want).max() < TOL * np.abs(want).max(), n


def test_the_compiled_code_is_cached_by_a_hash_of_every_source_it_is_built_from(tmp_path, monkeypatch):
    """numba keys a cached function by its own file only; a pass's compiled code holds tiles from
    other files, so the cache folder is named by a hash of them all: a change to any one of them
    moves it."""
    import numba

    from specdec_playable.lm.kernel import backend

    assert numba.config.CACHE_DIR == str(backend.cache_dir())
    assert backend.cache_dir().name == f"specdec-kernel-{backend.source_stamp()}"
    names = {p.name for p in backend.SOURCES}
    assert {"codegen_int.py", "codegen_blocks.py", "drive.py", "fused.py"} <= names
    files = [tmp_path / n for n in ("a.py", "b.py")]
    for f in files:
        f.write_text("x = 1\n")
    before = backend.source_stamp(files)
    assert backend.source_stamp(files) == before
    files[1].write_text("x = 2\n")
    assert backend.source_stamp(files) != before
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "c"))
    assert backend.cache_dir().parent == tmp_path / "c"

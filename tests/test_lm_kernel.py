"""lm.kernel: the packed layout, the tile products against a float64 reference, and the fallbacks.

``matmul_t(x, pack(w))`` must equal ``x @ w.T`` for every tile shape the kernel uses (1..6 positions
in one group, then equal groups of at most 6 in chunks of the input), so every position count from
1 to 33 is checked, with row counts that leave a panel partly padded and input sizes that leave a
chunk short. The kernel and BLAS sum in different orders, so they agree to float32 rounding, not
bit for bit: measured errors are about 1e-6 of the largest |output|; 1e-5 leaves room for long
inputs without hiding a wrong index or a lost chunk (errors of order 1).
"""
import os

import numpy as np
import pytest

from specdec_playable.lm import kernel

TOL = 1e-5
RNG = np.random.default_rng(1234)


def rel_err(y, x, w):
    ref = x.astype(np.float64) @ w.astype(np.float64).T
    scale = max(float(np.abs(ref).max()), 1e-30)
    return float(np.abs(y.astype(np.float64) - ref).max()) / scale


def rand(*shape):
    return RNG.standard_normal(shape, dtype=np.float32)


# rows: a partial panel, exactly one, several and a partial last one, the model's; cols: odd, one
# chunk short of a multiple, the model's two input sizes
SHAPES = [(7, 13), (64, 1), (130, 64), (200, 129), (960, 576), (576, 1536), (13, 200)]


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", range(1, 34))
def test_kernel_equals_float64_for_every_position_count(shape, n, strips):
    """Panels with wide tiles (64 rows) and strips with narrow ones (16 rows, the choice without
    AVX-512) alike, whichever this CPU uses by default."""
    m, k = shape
    w = rand(m, k)
    x = rand(n, k)
    y = kernel.matmul_t(x, kernel.pack(w, strips=strips))
    assert y.dtype == np.float32
    assert y.shape == (n, m)
    assert y.flags.c_contiguous
    assert rel_err(y, x, w) < TOL


@pytest.mark.parametrize("n", [1, 5, 6, 7, 9, 13, 17, 33])
def test_numpy_path_on_the_packed_layout(n):
    w = rand(130, 70)
    x = rand(n, 70)
    y = kernel.matmul_t_numpy(x, kernel.pack(w))
    assert y.dtype == np.float32 and y.shape == (n, 130) and y.flags.c_contiguous
    assert rel_err(y, x, w) < TOL


def test_a_plain_weight_is_multiplied_by_numpy():
    w = rand(100, 40)
    x = rand(4, 40)
    y = kernel.matmul_t(x, w)
    assert y.dtype == np.float32
    assert rel_err(y, x, w) < TOL
    wt = rand(40, 100).T  # not C-contiguous: still right
    assert rel_err(kernel.matmul_t(x, wt), x, wt) < TOL


@pytest.mark.parametrize("n", [1, 3, 8, 20])
def test_x_need_not_be_contiguous(n):
    w = kernel.pack(rand(100, 40))
    big = rand(2 * n, 80)
    x = big[::2, ::2]  # strided view, shape (n, 40)
    assert not x.flags.c_contiguous
    y = kernel.matmul_t(x, w)
    assert y.dtype == np.float32
    assert rel_err(y, x, w.unpack()) < TOL
    xt = rand(40, n).T  # Fortran-ordered (n, 40)
    assert rel_err(kernel.matmul_t(xt, w), xt, w.unpack()) < TOL


def test_pack_layout_and_unpack():
    w = rand(70, 5)
    pw = kernel.pack(w, strips=False)
    assert pw.shape == (70, 5) and pw.rows == 70
    assert pw.data.shape == (2, 5, kernel.PANEL) and pw.data.dtype == np.float32
    assert pw.data.flags.c_contiguous and not pw.data.flags.writeable
    # data[p, k, j] is row PANEL * p + j, input k; the padding rows are zero
    assert pw.data[1, 3, 2] == w[kernel.PANEL + 2, 3]
    assert np.all(pw.data[1, :, 70 - kernel.PANEL:] == 0.0)
    assert np.array_equal(pw.unpack(), w)
    assert pw.nbytes == pw.data.nbytes


def test_pack_into_a_slice_of_a_stack():
    stack = np.empty((3, 2, 9, kernel.PANEL), np.float32)
    ws = [rand(100, 9) for _ in range(3)]
    packed = [kernel.pack(w, out=stack[i], strips=i == 1) for i, w in enumerate(ws)]
    for i, (w, pw) in enumerate(zip(ws, packed)):
        assert pw.data.base is stack and np.shares_memory(pw.data, stack[i])
        assert np.array_equal(pw.unpack(), w)
    with pytest.raises(ValueError):
        kernel.pack(ws[0], out=np.empty((2, 9, 16), np.float32))


def test_rows_are_gathered_from_the_packed_layout():
    w = rand(150, 11)
    pw = kernel.pack(w)
    ids = np.array([0, 63, 64, 149, 7, 7])
    assert np.array_equal(pw[ids], w[ids])
    assert np.array_equal(pw[[3]], w[[3]])
    assert np.array_equal(pw[5], w[5])
    assert np.array_equal(pw[-1], w[-1])
    assert np.array_equal(pw[10:20], w[10:20])
    with pytest.raises(IndexError):
        pw[[150]]
    with pytest.raises(TypeError):
        pw[0, 0]


def test_out_argument_and_no_overwrite_of_inputs():
    w = rand(50, 30)
    x = rand(5, 30)
    pw = kernel.pack(w)
    x0 = x.copy()
    out = np.full((5, 50), np.nan, np.float32)
    y = kernel.matmul_t(x, pw, out=out)
    assert y is out
    assert rel_err(out, x, w) < TOL
    assert np.array_equal(x, x0) and np.array_equal(pw.unpack(), w)
    full = np.full((3, 64), np.nan, np.float32)  # a whole panel: written in place
    assert kernel.matmul_t(x[:3], kernel.pack(rand(64, 30)), out=full) is full
    assert np.isfinite(full).all()


def test_zero_positions():
    y = kernel.matmul_t(np.zeros((0, 8), np.float32), kernel.pack(rand(5, 8)))
    assert y.shape == (0, 5) and y.dtype == np.float32


def test_rejects_float64_and_bad_shapes():
    w = kernel.pack(rand(5, 8))
    with pytest.raises(TypeError):
        kernel.matmul_t(np.zeros((2, 8)), w)  # float64 would silently slow everything down
    with pytest.raises(ValueError):
        kernel.matmul_t(rand(2, 7), w)
    with pytest.raises(ValueError):
        kernel.matmul_t(rand(2, 8), w, out=np.empty((2, 6), np.float32))
    with pytest.raises(ValueError):
        kernel.pack(np.zeros((4, 4)))  # float64
    with pytest.raises(ValueError):
        kernel.pack(np.zeros((0, 4), np.float32))


@pytest.mark.parametrize("n", [1, 6, 7, 12, 13, 33])
def test_grouped_inputs(n):
    x = rand(n, 10)
    xg = kernel.group_positions(x)
    groups, k, gs = xg.shape
    assert k == 10 and gs <= kernel.MAX_GROUP and groups * gs >= n
    assert groups == -(-n // kernel.MAX_GROUP)
    sizes = [hi - lo for lo, hi in (kernel.layouts._group_bounds(n, groups, g) for g in range(groups))]
    assert sum(sizes) == n and max(sizes) - min(sizes) <= 1 and max(sizes) == gs
    lo, hi = kernel.layouts._group_bounds(n, groups, groups - 1)
    assert np.array_equal(xg[groups - 1, :, :hi - lo], x[lo:hi].T)


def test_read_all_streams_every_weight_and_returns_a_number():
    ws = [kernel.pack(rand(70, 9)), kernel.pack(rand(64, 3))]
    assert kernel.read_all(ws) == 0.0  # every weight times zero
    nan = kernel.pack(np.full((3, 4), np.nan, np.float32))
    assert np.isnan(kernel.read_all([nan]))  # it did read them


def test_vexp_matches_exp_within_float32_rounding():
    pytest.importorskip("numba")
    if not kernel.HAVE_NUMBA:
        pytest.skip("numba switched off")
    from numba import njit

    @njit(fastmath=True)
    def many(a):
        out = np.empty_like(a)
        for i in range(a.size):
            out[i] = kernel.vexp(a[i])
        return out

    a = np.linspace(-87.0, 88.0, 100_001).astype(np.float32)
    got = many(a).astype(np.float64)
    want = np.exp(a.astype(np.float64))
    assert np.max(np.abs(got - want) / want) < 5e-7
    ends = many(np.array([-1e4, 1e4, np.float32(-np.inf)], np.float32))
    assert np.all(np.isfinite(ends)) and np.all(ends > 0)  # clamped, never inf or nan


def test_threads_positive_and_settable():
    assert kernel.threads() >= 1
    w = kernel.pack(rand(300, 20))
    x = rand(9, 20)
    pool = 2 if kernel.HAVE_NUMBA and kernel.numba.config.NUMBA_NUM_THREADS >= 2 else 1
    try:
        assert kernel.set_process_threads(2) == pool  # this process: at most the pool
        assert kernel.prepare_threads() == pool
        assert kernel.prepare_threads(kernel.PARALLEL_FROM) == pool
        assert kernel.prepare_threads(kernel.PARALLEL_FROM - 1) == 1  # small passes: one thread
        assert rel_err(kernel.matmul_t(x, w), x, w.unpack()) < TOL
        assert kernel.use_threads(1) == 1  # this thread's own choice wins
        assert rel_err(kernel.matmul_t(x, w), x, w.unpack()) < TOL
        assert kernel.use_threads(None) == pool
        with pytest.raises(ValueError):
            kernel.use_threads(0)
        with pytest.raises(ValueError):
            kernel.set_process_threads(0)
    finally:
        kernel.use_threads(None)
        kernel.set_process_threads(None)
    assert kernel.prepare_threads() == (min(kernel.threads(), kernel.numba.config.NUMBA_NUM_THREADS)
                                        if kernel.HAVE_NUMBA else 1)
    if kernel.PARALLEL_FROM > 1:  # where two cores stream no faster than one (AMD Zen 4)
        assert kernel.prepare_threads(1) == 1  # a decoding step: one thread unless asked
    avx512 = kernel.tuning._vector_registers() >= 32
    assert kernel.PARALLEL_FROM == kernel.tuning._parallel_from(kernel.cpu_vendor(), avx512)
    # the table's rows, and the fallbacks: the vendor's AVX-512 row, else AMD's
    assert kernel.tuning._parallel_from("AuthenticAMD", True) == 8
    assert kernel.tuning._parallel_from("AuthenticAMD", False) == 1
    assert kernel.tuning._parallel_from("GenuineIntel", False) == kernel.tuning._parallel_from("GenuineIntel", True) == 1
    assert kernel.tuning._parallel_from("", False) == kernel.tuning._parallel_from("HygonGenuine", True) == 8


def test_numba_is_used_when_installed():
    pytest.importorskip("numba")
    if os.environ.get("SPECDEC_NO_NUMBA"):
        pytest.skip("numba switched off by SPECDEC_NO_NUMBA")
    assert kernel.HAVE_NUMBA


@pytest.mark.parametrize("n", range(1, kernel.MAX_GROUP + 1))
def test_prefetch_distance_changes_no_result(n):
    """A prefetch is a hint: every distance (none, short, past the end of the weight) gives the
    float64 product to float32 rounding, and the setting goes back to this CPU's default."""
    w = rand(200, 129)
    x = rand(n, 129)
    default = kernel.set_prefetch(None)
    chunked = kernel.tuning.set_chunked_from(None)
    try:
        kernel.tuning.set_chunked_from(kernel.MAX_GROUP + 1)  # one group over whole panels
        for ahead in (0, 1, 16, 256):
            assert kernel.set_prefetch((ahead,) * kernel.MAX_GROUP) == (ahead,) * kernel.MAX_GROUP
            assert kernel.prefetch_ahead(n) == ahead
            assert rel_err(kernel.matmul_t(x, kernel.pack(w)), x, w) < TOL
    finally:
        assert kernel.set_prefetch(None) == default
        assert kernel.tuning.set_chunked_from(None) == chunked
    assert kernel.prefetch_ahead(kernel.MAX_GROUP + 1) == 0  # groups prefetch chunk by chunk


@pytest.mark.parametrize("n", range(2, kernel.MAX_GROUP + 1))
def test_one_group_in_chunks_gives_the_same_products(n):
    """From :data:`tuning.CHUNKED_FROM` positions on, one group of wide tiles runs chunk by chunk
    (``prefetch_ahead`` -1), as several groups do: the same float64 product to rounding."""
    w = rand(200, 129)
    x = rand(n, 129)
    chunked = kernel.tuning.set_chunked_from(None)
    try:
        assert kernel.tuning.set_chunked_from(2) == 2 and kernel.prefetch_ahead(n) == -1
        assert kernel.prefetch_ahead(1) >= 0  # a decoding step streams each panel whole
        assert rel_err(kernel.matmul_t(x, kernel.pack(w, strips=False)), x, w) < TOL
    finally:
        kernel.tuning.set_chunked_from(None)
    assert kernel.tuning.set_chunked_from(None) == chunked == kernel.tuning.CHUNKED_FROM.get(
        kernel.cpu_vendor(), kernel.tuning.CHUNKED_FROM["AuthenticAMD"])


def test_prefetch_settings_are_checked():
    if not os.environ.get("SPECDEC_PREFETCH"):  # the table's row for this CPU, AMD's for others
        want = kernel.PREFETCH.get(kernel.cpu_vendor(), kernel.PREFETCH["AuthenticAMD"])
        assert kernel.set_prefetch(None) == want
    assert kernel.tuning._parse_prefetch("12") == (12,) * kernel.MAX_GROUP
    assert kernel.tuning._parse_prefetch("0,8,8,0,0,0") == (0, 8, 8, 0, 0, 0)
    for bad in ("", "x", "1,2", "-1", "300", "1,2,3,4,5,6,7"):
        with pytest.raises(ValueError):
            kernel.tuning._parse_prefetch(bad)
    with pytest.raises(ValueError):
        kernel.set_prefetch((1, 2, 3))


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 7, 9, 12, 13, 17, 33])
def test_half_precision_weights_multiply_as_their_float16_values(n):
    """A weight packed in half precision streams half the bytes; the tile widens it to float32 as
    it loads, so the product is the float64 product of the float16-rounded weight to float32
    rounding, for every tile shape (one group, chunked groups) and the numpy fallback alike."""
    m, k = 200, 129  # a partial last panel, a short last chunk
    w = rand(m, k)
    x = rand(n, k)
    pw = kernel.pack(w, half=True)
    assert pw.half and pw.dtype == np.float16 and pw.nbytes == kernel.pack(w).nbytes // 2
    w16 = w.astype(np.float16).astype(np.float32)
    assert rel_err(kernel.matmul_t(x, pw), x, w16) < TOL
    other = kernel.pack(w, half=True, strips=not pw.strips)  # the other layout
    assert rel_err(kernel.matmul_t(x, other), x, w16) < TOL
    assert np.array_equal(other.unpack(), w16) and np.array_equal(other[[0, m - 1]], w16[[0, m - 1]])
    assert rel_err(kernel.matmul_t_numpy(x, pw), x, w16) < TOL
    assert rel_err(kernel.matmul_t(x, pw), x, w) > 1e-6  # really rounded: not the float32 weight
    assert pw.unpack().dtype == np.float32 and np.array_equal(pw.unpack(), w16)
    assert np.array_equal(pw[[0, m - 1]], w16[[0, m - 1]])
    assert np.array_equal(kernel.pack(w.astype(np.float16), half=True).data, pw.data)


def test_half_precision_packing_is_checked():
    w = rand(70, 9)
    with pytest.raises(ValueError):
        kernel.pack(w, out=np.empty((2, 9, kernel.PANEL), np.float32), half=True)
    with pytest.raises(ValueError):
        kernel.pack(w.astype(np.float16))  # float16 is packed only when asked
    with pytest.raises(TypeError):
        kernel.matmul_t(rand(2, 9), w.astype(np.float16))  # a plain float16 weight


def test_strips_layout(monkeypatch):
    """The strips layout holds each panel as four 16-row strips one after another; rows gather,
    unpack and the numpy path read it back; the CPU's default follows its vector registers unless
    SPECDEC_TILES says, and a bad SPECDEC_TILES is refused with its name."""
    w = rand(100, 7)  # a full panel and a partial one (36 rows: two full strips, a partial, a padding one)
    ps, pp = kernel.pack(w, strips=True), kernel.pack(w, strips=False)
    assert ps.strips and not pp.strips and ps.data.shape == pp.data.shape == (2, 7, 64)
    strip = ps.data[1].reshape(4, 7, 16)  # panel 1's memory as its strips
    assert np.array_equal(strip[1], w[80:96].T) and np.array_equal(strip[2, :, :4], w[96:100].T)
    assert not strip[2, :, 4:].any() and not strip[3].any()
    assert np.array_equal(pp.data[1, :, 16:32], w[80:96].T)
    for pw in (ps, pp):
        assert np.array_equal(pw.unpack(), w) and np.array_equal(pw[[99, 0, 37]], w[[99, 0, 37]])
    x = rand(3, 7)
    assert rel_err(kernel.matmul_t_numpy(x, ps), x, w) < TOL
    assert kernel.pack(w).strips == kernel.NARROW
    for env, want in (("narrow", True), ("WIDE", False), (" wide ", False)):
        monkeypatch.setenv("SPECDEC_TILES", env)
        assert kernel.tuning._default_narrow() is want
    monkeypatch.setenv("SPECDEC_TILES", "medium")
    with pytest.raises(ValueError, match="SPECDEC_TILES"):
        kernel.tuning._default_narrow()
    monkeypatch.delenv("SPECDEC_TILES")
    assert kernel.tuning._default_narrow() == (kernel.tuning._vector_registers() < 32)


def test_narrow_tiles_prefetch_from_two_positions(monkeypatch):
    """A decoding step's narrow tiles do not prefetch, passes over more do (STRIP_AHEAD: one group,
    several; or SPECDEC_STRIP_AHEAD, checked); every distance gives the same products."""
    one, several = kernel.tuning._STRIP_AHEAD
    assert kernel.prefetch_ahead(1, strips=True) == 0
    assert all(kernel.prefetch_ahead(n, strips=True) == one for n in range(2, kernel.MAX_GROUP + 1))
    assert all(kernel.prefetch_ahead(n, strips=True) == several for n in (kernel.MAX_GROUP + 1, 9, 33))
    for env, want in (("0", (0, 0)), ("64", (64, 64)), ("8, 40", (8, 40))):
        monkeypatch.setenv("SPECDEC_STRIP_AHEAD", env)
        assert kernel.tuning._strip_ahead() == want
    for bad in ("-1", "x", "257", "1,2,3", "4,"):
        monkeypatch.setenv("SPECDEC_STRIP_AHEAD", bad)
        with pytest.raises(ValueError, match="SPECDEC_STRIP_AHEAD"):
            kernel.tuning._strip_ahead()
    w = rand(200, 129)
    pw = kernel.pack(w, strips=True)
    for n in (2, 9):
        x = rand(n, 129)
        for ahead in (0, 1, 256):
            monkeypatch.setattr(kernel.tuning, "_STRIP_AHEAD", (ahead, ahead))
            assert rel_err(kernel.matmul_t(x, pw), x, w) < TOL


@pytest.mark.parametrize("strips", [False, True], ids=["panels", "strips"])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6, 7, 9, 12, 13, 17, 33])
@pytest.mark.parametrize("shape", [(200, 129), (130, 64), (64, 1), (7, 13)])
def test_int8_weights_multiply_as_their_scaled_values(shape, n, strips):
    """A weight packed in eight bits streams a quarter of float32's bytes; the tile widens each
    int8 to float32 as it loads (one and two positions over 4 and 2 interleaved sets of sums, the
    input counts of ``shape`` leaving 0-3 inputs after them) and each output is scaled by its
    row's scale: the float64 product of the dequantized weight to float32 rounding, for every tile
    shape, both layouts and the numpy fallback alike."""
    m, k = shape
    w = rand(m, k)
    x = rand(n, k)
    pw = kernel.pack(w, int8=True, strips=strips)
    assert pw.int8 and not pw.half and pw.dtype == np.int8
    assert pw.nbytes == kernel.pack(w, strips=strips).nbytes // 4
    q, s = kernel.quantize_rows(w)
    deq = q.astype(np.float32) * s[:, None]
    assert rel_err(kernel.matmul_t(x, pw), x, deq) < TOL
    assert rel_err(kernel.matmul_t_numpy(x, pw), x, deq) < TOL
    assert np.allclose(pw.unpack(), deq, rtol=0, atol=1e-7)
    assert np.allclose(pw[[0, m - 1]], deq[[0, m - 1]], rtol=0, atol=1e-7)
    out = np.full((n, m), np.nan, np.float32)  # into a given array (the panel padding cut off)
    assert kernel.matmul_t(x, pw, out=out) is out and rel_err(out, x, deq) < TOL


def test_int8_quantization_rounds_each_row_to_its_own_scale():
    """Each row is scaled by its largest magnitude over 127, rounded to nearest: the error of any
    weight is at most half its row's step, a row's largest weight is exact, and a zero row stays
    zero (scale 0, no division by it)."""
    w = rand(300, 77) * np.exp(rand(300, 1))  # rows of very different sizes
    w[5] = 0.0
    q, s = kernel.quantize_rows(w)
    assert q.dtype == np.int8 and s.dtype == np.float32 and s.shape == (300,)
    assert np.abs(q).max() == 127 and q.min() >= -127
    step = np.abs(w).max(axis=1) / 127
    assert np.all(np.abs(q * s[:, None] - w) <= 0.5 * step[:, None] * (1 + 1e-5) + 1e-12)
    assert s[5] == 0 and not q[5].any()
    top = np.abs(w).argmax(axis=1)
    rows = np.arange(300)
    assert np.allclose(np.abs(q[rows, top] * s), np.abs(w[rows, top]), rtol=1e-6)
    pw = kernel.pack(w, int8=True)
    assert not pw.unpack()[5].any() and pw.scale.shape == (pw.data.shape[0] * kernel.PANEL,)
    assert not pw.scale[300:].any() and not pw.scale.flags.writeable


def test_int8_packing_is_checked():
    w = rand(70, 9)
    with pytest.raises(ValueError):
        kernel.pack(w, half=True, int8=True)
    with pytest.raises(ValueError):
        kernel.pack(w, out=np.empty((2, 9, kernel.PANEL), np.float32), int8=True)
    bad = w.copy()
    bad[3, 4] = np.nan
    with pytest.raises(ValueError):
        kernel.pack(bad, int8=True)
    with pytest.raises(ValueError):
        kernel.quantize_rows(w[0])
    # a float16 weight is widened first: the same bytes as its float32 values
    h = w.astype(np.float16)
    assert np.array_equal(kernel.pack(h, int8=True).data, kernel.pack(h.astype(np.float32), int8=True).data)

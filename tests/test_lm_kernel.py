"""lm.kernel.matmul_t equals numpy's x @ w.T (float64 reference) within 1e-5 of the largest output.

The kernel and BLAS sum in different orders, so they agree to float32 rounding, not bit for bit:
measured errors are ~3e-7 (kernel) and ~7e-7 (BLAS) of the largest |output|; 1e-5 leaves room for
long inputs without hiding a wrong index (which gives errors of order 1).
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


SHAPES = [(7, 13), (1000, 576), (576, 1536), (13, 5), (1, 576), (12, 1), (25, 64), (960, 576)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", range(1, 17))
def test_equals_numpy(shape, n):
    m, k = shape
    w = rand(m, k)
    x = rand(n, k)
    y = kernel.matmul_t(x, w)
    assert y.dtype == np.float32
    assert y.shape == (n, m)
    assert y.flags.c_contiguous
    assert rel_err(y, x, w) < TOL
    assert np.allclose(y, x @ w.T, rtol=1e-4, atol=1e-4 * float(np.abs(y).max()))


@pytest.mark.parametrize("n", [1, 2, 5, 9, 16, 31, 32, 33, 64])
def test_both_sides_of_max_n(n):
    w = rand(300, 96)
    x = rand(n, 96)
    assert rel_err(kernel.matmul_t(x, w), x, w) < TOL


@pytest.mark.parametrize("n", [1, 3, 8])
def test_x_need_not_be_contiguous(n):
    w = rand(100, 40)
    big = rand(2 * n, 80)
    x = big[::2, ::2]  # strided view, shape (n, 40)
    assert not x.flags.c_contiguous
    y = kernel.matmul_t(x, w)
    assert y.dtype == np.float32
    assert rel_err(y, x, w) < TOL
    xt = rand(40, n).T  # Fortran-ordered (n, 40)
    assert rel_err(kernel.matmul_t(xt, w), xt, w) < TOL


def test_weight_not_contiguous_falls_back_to_numpy():
    wt = rand(40, 100)
    w = wt.T  # (100, 40), not C-contiguous
    x = rand(4, 40)
    y = kernel.matmul_t(x, w)
    assert y.dtype == np.float32
    assert rel_err(y, x, w) < TOL


def test_out_argument_and_no_overwrite_of_inputs():
    w = rand(50, 30)
    x = rand(5, 30)
    w0, x0 = w.copy(), x.copy()
    out = np.full((5, 50), np.nan, np.float32)
    y = kernel.matmul_t(x, w, out=out)
    assert y is out
    assert rel_err(out, x, w) < TOL
    assert np.array_equal(w, w0) and np.array_equal(x, x0)


def test_zero_positions():
    y = kernel.matmul_t(np.zeros((0, 8), np.float32), rand(5, 8))
    assert y.shape == (0, 5) and y.dtype == np.float32


def test_rejects_float64_and_bad_shapes():
    w = rand(5, 8)
    with pytest.raises(TypeError):
        kernel.matmul_t(np.zeros((2, 8)), w)  # float64 would silently slow everything down
    with pytest.raises(ValueError):
        kernel.matmul_t(rand(2, 7), w)


@pytest.mark.parametrize("n", [1, 2, 6, 7, 16])
def test_numpy_fallback_path(n):
    w = rand(1100, 64)  # more than one 1024-row block
    x = rand(n, 64)
    y = kernel.matmul_t_numpy(x, w)
    assert y.dtype == np.float32
    assert rel_err(y, x, w) < TOL


def test_threads_positive():
    assert kernel.threads() >= 1


def test_numba_is_used_when_installed():
    pytest.importorskip("numba")
    if os.environ.get("SPECDEC_NO_NUMBA"):
        pytest.skip("numba switched off by SPECDEC_NO_NUMBA")
    assert kernel.HAVE_NUMBA

"""The forward pass through the kernel equals the same pass through numpy's products.

``lm.model.linear`` runs every product of the pass in :func:`lm.kernel.matmul_t`; the numpy path
it replaced is :func:`lm.kernel.matmul_t_numpy` (matrix-vector products over row blocks, BLAS's
product beyond 6 positions). Both sum the same float32 numbers in different orders, so the logits
agree to rounding, not bit for bit. Logits are O(10-40); measured largest difference 6e-5, so the
tolerance is 2e-3 absolute. Greedy outputs of three prompts are compared token for token (a top-two
tie within rounding could flip one; none of these prompts has one).
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.lm import get_model, kernel
from specdec_playable.lm import model as model_mod
from specdec_playable.lm.decode import generate

LOGIT_ATOL = 2e-3
PROMPTS = ("Write a Python function that adds two numbers.",
           "Write a short poem about the sea.",
           'Give a JSON object with the keys "name" and "age" for Ada, 36.')


@pytest.fixture(scope="module")
def model():
    return get_model()


@pytest.fixture
def numpy_products(monkeypatch):
    """Run the model's products through the numpy path for the duration of a test."""
    def use_numpy():
        monkeypatch.setattr(model_mod, "matmul_t", kernel.matmul_t_numpy)
    return use_numpy


@pytest.mark.parametrize("prompt", PROMPTS)
def test_logits_of_a_pass_equal_numpy_within_tolerance(model, numpy_products, prompt):
    ids = model.tokenizer.chat(prompt)
    runs = []
    for _ in range(2):  # the kernel first, then numpy
        cache = model.new_cache()
        prefill = model.forward(ids, cache, logits="last")
        passes = [model.forward(ids[-n:], cache, logits="all").logits for n in (1, 5, 9, 16)]
        runs.append([prefill.logits, *passes])
        numpy_products()
    for got, want in zip(*runs):
        assert got.dtype == np.float32 and want.dtype == np.float32
        assert got.shape == want.shape
        assert np.abs(got - want).max() < LOGIT_ATOL


def test_greedy_outputs_unchanged(model, numpy_products):
    outs = []
    for _ in range(2):
        outs.append([generate(model, model.tokenizer.chat(p), max_new=24).tokens for p in PROMPTS])
        numpy_products()
    assert outs[0] == outs[1]


def test_the_kernel_is_what_the_model_uses(model):
    assert model_mod.matmul_t is kernel.matmul_t
    if kernel.HAVE_NUMBA:
        x = np.ones((3, model.config.d_model), np.float32)
        y = model_mod.linear(x, model.weights.blocks[0].wqkv)
        assert y.dtype == np.float32 and y.shape == (3, model.weights.blocks[0].wqkv.shape[0])

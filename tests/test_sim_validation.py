"""Every public core entry point rejects bad input with an actionable ValueError.

The message must name the parameter, repeat the bad value and state the
allowed range: ``"<name> must be <allowed>; got <value>"``.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from specdec_playable.sim import clocks, montecarlo, relay, theory
from specdec_playable.data import hardware

NAN, INF = math.nan, math.inf

PROB = "a finite number in [0, 1]"
K = "an integer in [1, 64]"
C = "a finite number in [0, 10]"
ROUNDS = "an integer in [1, 10000000]"
TIME = "a finite number in (0, 1e+09]"
N_TOKENS = "an integer in [1, 4096]"

BAD_PROB = [NAN, INF, -INF, -0.1, 1.0000001, 2, "0.5", True, None]
BAD_K = [0, 65, -3, 4.5, NAN, INF, "4", True, None]
BAD_C = [NAN, INF, -INF, -0.01, 10.01, "0.1", True, None]
BAD_ROUNDS = [0, -5, 10**7 + 1, 1000.0, 4.5, NAN, "1000", True, None]
BAD_TIME = [0, 0.0, -1.0, NAN, INF, -INF, 2e9, "600", True]

TOKENS = ["a", "b", "c", "d"]

# entry point -> {parameter: (call with that parameter set to a value, allowed, bad values)}
CASES = {
    "expected_tokens_per_round": {
        "q": (lambda v: theory.expected_tokens_per_round(v, 4), PROB, BAD_PROB),
        "k": (lambda v: theory.expected_tokens_per_round(0.5, v), K, BAD_K),
    },
    "expected_speedup": {
        "q": (lambda v: theory.expected_speedup(v, 4, 0.1), PROB, BAD_PROB),
        "k": (lambda v: theory.expected_speedup(0.5, v, 0.1), K, BAD_K),
        "c": (lambda v: theory.expected_speedup(0.5, 4, v), C, BAD_C),
    },
    "break_even_q": {
        "k": (lambda v: theory.break_even_q(v, 0.1), K, BAD_K),
        "c": (lambda v: theory.break_even_q(4, v), C, BAD_C),
    },
    "best_k": {
        "q": (lambda v: theory.best_k(v, 0.1), PROB, BAD_PROB),
        "c": (lambda v: theory.best_k(0.5, v), C, BAD_C),
        "k_max": (lambda v: theory.best_k(0.5, 0.1, v), K, BAD_K),
    },
    "accepted_pmf": {
        "q": (lambda v: theory.accepted_pmf(v, 4), PROB, BAD_PROB),
        "k": (lambda v: theory.accepted_pmf(0.5, v), K, BAD_K),
    },
    "simulate": {
        "q": (lambda v: montecarlo.simulate(v, 4, 0.1, 10, rng=0), PROB, BAD_PROB),
        "k": (lambda v: montecarlo.simulate(0.5, v, 0.1, 10, rng=0), K, BAD_K),
        "c": (lambda v: montecarlo.simulate(0.5, 4, v, 10, rng=0), C, BAD_C),
        "n_rounds": (lambda v: montecarlo.simulate(0.5, 4, 0.1, v, rng=0), ROUNDS, BAD_ROUNDS),
    },
    "accepted_per_round": {
        "q": (lambda v: montecarlo.accepted_per_round(np.full((3, 4), 0.5), v), PROB, BAD_PROB),
    },
    "sequential_vs_parallel": {
        "n_tokens": (lambda v: clocks.sequential_vs_parallel(v), N_TOKENS, [0, 4097, 6.0, NAN, "6", True, None]),
        "big_pass_ms": (lambda v: clocks.sequential_vs_parallel(6, v), TIME, BAD_TIME + [None]),
        "verify_pass_ms": (lambda v: clocks.sequential_vs_parallel(6, verify_pass_ms=v), TIME, BAD_TIME),
    },
    "relay.run": {
        "q": (lambda v: relay.run(TOKENS, v, 2, rng=0), PROB, BAD_PROB),
        "k": (lambda v: relay.run(TOKENS, 0.5, v, rng=0), K, BAD_K),
        "big_pass_ms": (lambda v: relay.run(TOKENS, 0.5, 2, rng=0, big_pass_ms=v), TIME, BAD_TIME + [None]),
        "draft_step_ms": (lambda v: relay.run(TOKENS, 0.5, 2, rng=0, draft_step_ms=v), TIME, BAD_TIME + [None]),
    },
}


def _params():
    for entry, by_param in CASES.items():
        for name, (call, allowed, bad_values) in by_param.items():
            for bad in bad_values:
                yield pytest.param(call, name, allowed, bad, id=f"{entry}-{name}={bad!r}")


@pytest.mark.parametrize(("call", "name", "allowed", "bad"), _params())
def test_rejects_bad_value_naming_parameter_value_and_range(call, name, allowed, bad):
    message = f"{name} must be {allowed}; got {bad!r}"
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        call(bad)


# --- array inputs name the first bad element -------------------------------------


@pytest.mark.parametrize(
    ("call", "name", "allowed", "shown"),
    [
        (lambda: theory.expected_speedup(np.array([0.5, NAN]), 4, 0.1), "q", PROB, "nan"),
        (lambda: theory.expected_speedup([0.2, 1.5, 0.3], 4, 0.1), "q", PROB, "1.5"),
        (lambda: theory.expected_speedup(0.5, [1, 2, 65], 0.1), "k", K, "65"),
        (lambda: theory.expected_speedup(0.5, np.array([2.0, 4.5]), 0.1), "k", K, "array([2. , 4.5])"),
        (lambda: theory.break_even_q(4, np.array([0.1, -INF])), "c", C, "-inf"),
        (lambda: theory.best_k([0.5, INF], 0.1), "q", PROB, "inf"),
        (lambda: relay.run(TOKENS, [0.1, 0.2, NAN, 0.4], 2, rng=0), "q", PROB, "nan"),
        (lambda: relay.run(TOKENS, [0.1, 0.2, 0.3, -0.4], 2, rng=0), "q", PROB, "-0.4"),
        (lambda: theory.expected_tokens_per_round([], 4), "q", PROB, "[]"),
    ],
)
def test_arrays_name_the_bad_element(call, name, allowed, shown):
    with pytest.raises(ValueError, match=f"^{re.escape(f'{name} must be {allowed}; got {shown}')}$"):
        call()


# --- other arguments ----------------------------------------------------------------


@pytest.mark.parametrize("bad", ["seed", 1.5, True, -1])
@pytest.mark.parametrize(
    "call",
    [
        lambda rng: montecarlo.simulate(0.5, 4, 0.1, 10, rng=rng),
        lambda rng: relay.run(TOKENS, 0.5, 2, rng=rng),
    ],
    ids=["simulate", "relay.run"],
)
def test_rejects_bad_rng(call, bad):
    pattern = f"^rng must be a numpy Generator, an integer seed or None; got {re.escape(repr(bad))}$"
    with pytest.raises(ValueError, match=pattern):
        call(bad)


@pytest.mark.parametrize(
    ("bad", "pattern"),
    [
        ("abcd", r"^target_tokens must be a sequence of strings; got str$"),
        (None, r"^target_tokens must be a sequence of strings; got NoneType$"),
        (42, r"^target_tokens must be a sequence of strings; got int$"),
        (["a", 1, "c"], r"^target_tokens\[1\] must be a string; got 1$"),
        (["a"] * (relay.TOKENS_MAX + 1), r"^target_tokens must have at most 100000 tokens; got 100001$"),
    ],
)
def test_relay_rejects_bad_target_tokens(bad, pattern):
    with pytest.raises(ValueError, match=pattern):
        relay.run(bad, 0.5, 2, rng=0)


def test_relay_rejects_q_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"^q must be one probability or one per token \(4\); got shape \(3,\)$"):
        relay.run(TOKENS, [0.1, 0.2, 0.3], 2, rng=0)


@pytest.mark.parametrize("decoys", ["abcd", ["x"] * 3])
def test_relay_rejects_decoys_of_the_wrong_length(decoys):
    with pytest.raises(ValueError, match=r"^decoys must have one string per token \(4\)$"):
        relay.run(TOKENS, 0.5, 2, rng=0, decoys=decoys)


@pytest.mark.parametrize(("shape", "shown"), [((4,), r"\(4,\)"), ((3, 0), r"\(3, 0\)"), ((2, 2, 2), r"\(2, 2, 2\)")])
def test_accepted_per_round_rejects_uniforms_of_the_wrong_shape(shape, shown):
    with pytest.raises(ValueError, match=rf"^uniforms must be a 2-D array \(rounds, k\) with k >= 1; got shape {shown}$"):
        montecarlo.accepted_per_round(np.full(shape, 0.5), 0.5)


@pytest.mark.parametrize("name", ["draft_model", "target_model"])
def test_draft_cost_ratio_rejects_unknown_models(name):
    known = "['llama-1b-shape', 'llama-8b-shape', 'tiny-160m-shape']"
    kwargs = {"draft_model": "llama-1b-shape", name: "gpt-5-shape"}
    with pytest.raises(ValueError, match=f"^{re.escape(f'{name} must be one of {known}; got ' + repr('gpt-5-shape'))}$"):
        hardware.draft_cost_ratio(**kwargs)


# --- the boundaries themselves are allowed ---------------------------------------------


def test_closed_boundaries_are_accepted():
    assert theory.expected_speedup(0.0, 1, 0.0) == 1.0
    assert theory.expected_speedup(1.0, 64, 10.0) == 65 / 641
    assert theory.best_k(1.0, 0.0, 64) == 64
    assert montecarlo.simulate(1.0, 64, 10.0, 1, rng=0).n_rounds == 1
    assert montecarlo.simulate(0.5, 1, 0.0, 10**7, rng=0).n_rounds == 10**7
    assert clocks.sequential_vs_parallel(4096, 1e9).n_tokens == 4096
    assert clocks.sequential_vs_parallel(1, 1e-9).parallel_ms == 1e-9
    assert relay.run(TOKENS, np.array([0.0, 1.0, 0.0, 1.0]), 64, rng=None).output == tuple(TOKENS)


def test_numpy_scalars_are_accepted():
    r = montecarlo.simulate(np.float32(0.5), np.int64(4), np.float64(0.1), np.int32(100), rng=np.uint8(3))
    assert (r.k, r.n_rounds) == (4, 100)
    assert theory.expected_speedup(np.float64(0.8), np.int16(5), np.float32(0.0)) == pytest.approx(3.68928)

"""Results shared by every session (runtime.shared): shared, read-only, keyed by their inputs, bounded."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np
import pytest

from specdec_playable.runtime import shared as sh


def _counting(maxsize=8):
    calls = []

    @sh.shared(maxsize=maxsize)
    def grid(n: int, scale: float = 1.0) -> np.ndarray:
        calls.append((n, scale))
        return np.arange(n) * scale

    return grid, calls


def test_one_result_object_is_shared_by_every_caller():
    grid, calls = _counting()
    a, b = grid(5), grid(5)
    assert a is b
    assert calls == [(5, 1.0)]
    assert grid.info()[1:3] == (1, 1)  # one hit, one miss


def test_results_are_read_only():
    grid, _ = _counting()
    a = grid(4)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0] = 99
    assert grid(4)[0] == 0


def test_the_key_is_the_bound_arguments_with_defaults():
    grid, calls = _counting()
    assert grid(3) is grid(n=3) is grid(3, 1.0) is grid(3, scale=1.0)
    assert len(calls) == 1
    # Different values, and the same value of another type, are different keys.
    assert grid(3, 2.0) is not grid(3)
    assert grid(3, 1) is not grid(3, 1.0)
    assert grid(3, 1).dtype == np.int64 and grid(3, 1.0).dtype == np.float64
    assert len(calls) == 3


def test_unhashable_arguments_are_refused():
    @sh.shared(maxsize=2)
    def total(xs) -> float:
        return float(sum(xs))

    assert total((1, 2)) == 3.0
    with pytest.raises(TypeError):
        total([1, 2])


def test_the_table_is_bounded_and_drops_the_least_recently_used():
    grid, calls = _counting(maxsize=2)
    a = grid(1)
    grid(2)
    assert grid(1) is a  # 1 is now the most recently used
    grid(3)  # evicts 2
    assert grid.info().size == 2
    n = len(calls)
    assert grid(1) is a and len(calls) == n  # still held
    grid(2)
    assert len(calls) == n + 1  # recomputed after its eviction
    assert grid.info().size == 2


@dataclass(frozen=True)
class _Run:
    label: str
    wall: np.ndarray


@dataclass
class _Loose:
    wall: np.ndarray


@pytest.mark.parametrize("value", [[1, 2], {"a": 1}, _Loose(np.zeros(2)), (1, [2]),
                                   np.array([object()], dtype=object)])
def test_mutable_results_are_refused_before_they_are_shared(value):
    @sh.shared(maxsize=2)
    def make() -> object:
        return value

    with pytest.raises(TypeError):
        make()
    assert make.info().size == 0


def test_nested_arrays_are_frozen_and_views_of_writable_arrays_copied():
    base = np.arange(6.0)

    @sh.shared(maxsize=2)
    def runs() -> tuple:
        return (_Run("a", np.ones(3)), _Run("b", base[:3]))

    out = runs()
    assert all(not r.wall.flags.writeable for r in out)
    assert out[1].wall.base is None  # copied, so writing `base` cannot change a shared result
    base[0] = 42.0
    assert out[1].wall[0] == 0.0


def test_threads_asking_for_the_same_missing_key_compute_it_once():
    calls = []
    start = threading.Barrier(6)

    @sh.shared(maxsize=4)
    def slow(n: int) -> int:
        calls.append(n)
        time.sleep(0.2)
        return n * n

    results = []

    def ask():
        start.wait()
        results.append(slow(7))

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [49] * 6
    assert calls == [7]


def test_a_failed_computation_is_not_kept_and_is_retried():
    attempts = []

    @sh.shared(maxsize=2)
    def flaky(n: int) -> int:
        attempts.append(n)
        if len(attempts) == 1:
            raise RuntimeError("first try fails")
        return n

    with pytest.raises(RuntimeError):
        flaky(1)
    assert flaky(1) == 1 and len(attempts) == 2


def test_primed_calls_are_computed_by_warm_and_checked_when_primed():
    grid, calls = _counting()
    grid.prime(6, scale=0.5)
    with pytest.raises(TypeError):
        grid.prime(6, colour="red")  # not in the signature: fails where it is written
    assert calls == []
    assert sh.warm() >= 1
    assert (6, 0.5) in calls
    before = len(calls)
    grid(6, 0.5)
    assert len(calls) == before


@pytest.mark.parametrize("maxsize", [0, -1, 1.5, True, None])
def test_maxsize_must_be_a_positive_integer(maxsize):
    with pytest.raises(ValueError):
        sh.shared(maxsize=maxsize)(lambda: 1)

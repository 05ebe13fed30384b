"""runtime.model_process's thread policy: a run alone uses both cores, two runs at once one each.

Every child is told its threads on its cancel pipe whenever the number of runs changes; a child
times its start-up passes with the threads it was told, and says so in its calibration.
"""

from __future__ import annotations

import os
import struct

import pytest

from specdec_playable.lm import kernel
from specdec_playable.runtime import model_process as mp


def test_threads_per_run_shares_the_cores():
    assert mp.threads_per_run(1, cores=2) == min(2, mp.THREADS_ALONE)
    assert mp.threads_per_run(0, cores=2) == min(2, mp.THREADS_ALONE)
    assert mp.threads_per_run(2, cores=2) == 1
    assert mp.threads_per_run(3, cores=2) == 1
    assert mp.threads_per_run(1, cores=1) == 1
    assert mp.threads_per_run(2, cores=16) == min(8, mp.THREADS_ALONE)


def test_every_child_is_told_when_the_runs_change(monkeypatch):
    r, w = os.pipe()

    class Child:  # what _tell_threads needs of a ModelProcess
        _cancel = mp.Descriptor(w)

    fake = Child()
    monkeypatch.setattr(mp, "_children", {fake})
    monkeypatch.setattr(mp, "_runs", [0])
    monkeypatch.setattr(mp.os, "cpu_count", lambda: 2)
    try:
        with mp._Running():
            with mp._Running():
                pass
        told = os.read(r, 64)
    finally:
        os.close(r)
        fake._cancel.close()
    values = [v - mp._THREADS_CODE for (v,) in struct.iter_unpack("I", told)]
    alone, shared = mp.threads_per_run(1, 2), mp.threads_per_run(2, 2)
    assert values == [alone, shared, alone, alone]  # one run, two, one, none
    assert mp._runs == [0]


@pytest.mark.skipif(not kernel.HAVE_NUMBA, reason="threads are the kernel's")
def test_a_child_times_its_passes_with_the_threads_it_was_told(monkeypatch):
    from specdec_playable.runtime import calibration as records

    monkeypatch.setenv(mp.CALIBRATE_ENV, "0.5")
    monkeypatch.setattr(records, "STORE", records.CalibrationStore())
    child = mp.ModelProcess(blas_threads=1)
    try:
        record = child.load()
    finally:
        child.close()
    assert record is not None
    assert record.times.threads == mp.threads_per_run(0)  # no run was going on while it loaded
    assert f"{record.times.threads} thread" in record.stamp()

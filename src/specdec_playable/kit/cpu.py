"""The CPU pass costs a page states, and where they were measured.

A server measures its forward passes once, in the first model process that loads the model
(``lm.calibrate``), and keeps that one stamped record (``runtime.calibration``;
``runtime.service.server_pass_times``): every page reads the same. Until one has, and wherever the model
is absent (a notebook without the model, an exported page), the pages use the shipped measurement
(``assets/pass_cost_cpu.csv``), made on the machine that built the package. Every sentence that
prices a CPU pass says which of the two it is, and the record's stamp (when, which CPU, threads,
weight format: :attr:`CpuPasses.source`).

A pass over more positions does all the work of a pass over fewer, so a curve that dips (a burst of
load during one size's repeats) is noise: the curve used is the running maximum (a server's record
is already monotone, ``lm.calibrate`` sees to that; the shipped medians may dip).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..data import hardware
from ..runtime import service as interface
from ..sim import theory
from ..sim.batching import PassTimeCurve, fit_roofline

HERE = "measured on this server"
SHIPPED = "measured on the machine that built this page"


@dataclass(frozen=True, eq=False)
class CpuPasses:
    """This CPU's pass-time curve for the real model, and its provenance.

    Attributes
    ----------
    curve : PassTimeCurve
        Pass time per number of positions (1 to 32 here, 1 to 64 shipped).
    here : bool
        True when measured by this server's own model process.
    machine : str
        The machine measured, as a phrase ("a 2-core AMD EPYC").
    threads : int
        Threads each product used.
    record : Calibration or None
        The server's calibration record it was made from (None: the shipped measurement).
    weights : str
        The weight format timed: ``"f32"`` or ``"q4"``.
    """

    curve: PassTimeCurve
    here: bool
    machine: str
    threads: int
    record: object = None
    weights: str = "f32"

    @property
    def weight_words(self) -> str:
        """``"float32 weights"`` or ``"4-bit weights"``."""
        return _SHIPPED_FILES[self.weights][2]

    def ratio(self, n: int) -> float:
        """A pass over ``n`` positions over one decoding step."""
        return float(self.curve.time_ms(n) / self.curve.time_ms(1))

    def free_draft_break_even(self, k: int = 4) -> float:
        """The acceptance rate a draft that costs nothing needs at ``k`` to pay here: E(q, k) equal
        to a pass over ``k + 1`` in steps (Leviathan's break-even with k c = ratio - 1). NaN when no
        q does (the pass costs ``k + 1`` steps or more); 0 when the pass costs no more than a step."""
        return free_break_even(self.curve, k)

    @property
    def where(self) -> str:
        """:data:`HERE` or :data:`SHIPPED`."""
        return HERE if self.here else SHIPPED

    @property
    def details(self) -> str:
        """The server record's stamp (``"a 2-core AMD EPYC at 20:14 UTC on 2026-12-04, 1 thread,
        4-bit weights"``), or ``"a 2-core AMD EPYC on 2026-11-30, 1 thread per run, float32 weights"``
        shipped."""
        if self.record is not None:
            return self.record.details()
        return (f"{self.machine}, {self.threads} thread{'s' if self.threads != 1 else ''} per run, "
                f"{self.weight_words}")

    @property
    def source(self) -> str:
        """``"measured on this server: a 2-core AMD EPYC at 20:14 UTC on 2026-12-04, 1 thread,
        4-bit weights"`` or the shipped equivalent (it goes inside brackets on the pages)."""
        return f"{self.where}: {self.details}"


def free_break_even(curve: PassTimeCurve, k: int = 4) -> float:
    """The acceptance rate a draft that costs nothing needs at ``k`` to pay on ``curve``: E(q, k)
    equal to a pass over ``k + 1`` in steps (Leviathan's break-even with k c = ratio - 1). NaN when
    no q does (the pass costs ``k + 1`` steps or more); 0 when it costs no more than a step."""
    extra = float(curve.time_ms(k + 1) / curve.time_ms(1)) - 1.0
    if extra >= k:
        return float("nan")
    return float(theory.break_even_q(k, max(extra, 0.0) / k))


def _monotone(n_positions, ms, label: str) -> PassTimeCurve:
    order = np.argsort(np.asarray(n_positions))
    ms = np.maximum.accumulate(np.asarray(ms, dtype=float)[order])
    return fit_roofline(np.asarray(n_positions)[order], ms, label=label)


@lru_cache(maxsize=4)
def _from_server(record) -> CpuPasses:
    times = record.times
    curve = _monotone(times.n_positions, times.ms, f"SmolLM2-135M, {record.weight_words} ({HERE})")
    return CpuPasses(curve, True, record.machine, int(times.threads), record, record.weights)


#: Per weight format: the shipped file's series and its provenance (``data.hardware``).
_SHIPPED_FILES = {
    "f32": (hardware.load_cpu_pass_costs, hardware.load_cpu_meta, "float32 weights"),
    "q4": (hardware.load_cpu_q4_pass_costs, hardware.load_cpu_q4_meta, "4-bit weights"),
}


@lru_cache(maxsize=2)
def shipped_passes(weights: str = "f32") -> CpuPasses:
    """The shipped measurement of ``weights`` (``"f32"`` or ``"q4"``), its dips levelled as every
    curve here is (the running maximum, see the module's doc), so every page draws the one shipped
    curve of each format."""
    series_of, meta_of, words = _SHIPPED_FILES[weights]
    meta = meta_of()
    machine = f"a {meta.get('cores', '?')}-core {meta.get('cpu') or 'CPU'} on {meta.get('date_utc', '')}"
    series = series_of()
    curve = _monotone(series.n_positions, series.median_ms, f"SmolLM2-135M, {words} ({SHIPPED})")
    return CpuPasses(curve, False, machine, int(meta.get("threads", 1)), weights=weights)


def server_passes(weights: str) -> CpuPasses | None:
    """This server's calibration record for ``weights`` (``"f32"`` or ``"q4"``: a model process
    of each format measures once), or None before one was made."""
    from ..runtime.calibration import STORE

    record = STORE.get(weights)
    return None if record is None else _from_server(record)


def passes_for(cpu: CpuPasses, weights: str) -> CpuPasses:
    """The pass times of ``weights`` (``"f32"`` or ``"q4"``) beside a page's ``cpu``
    (:func:`cpu_passes`): ``cpu`` itself where it is of that format (this server's record of it,
    or the shipped float32 one), else this server's record of ``weights`` once a model process of
    that format measured it, else the shipped one."""
    if weights == cpu.weights:
        return cpu
    return server_passes(weights) or shipped_passes(weights)


def cpu_passes() -> CpuPasses:
    """This server's calibration record once its first model process has made it, else the
    shipped measurement."""
    record = interface.server_pass_times()
    return shipped_passes("f32") if record is None else _from_server(record)


__all__ = ["HERE", "SHIPPED", "CpuPasses", "cpu_passes", "free_break_even", "passes_for", "server_passes",
           "shipped_passes"]

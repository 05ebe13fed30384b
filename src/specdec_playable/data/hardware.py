"""Measured forward-pass times on real hardware (``assets/pass_cost_h200.csv``).

Provenance (see ``assets/PROVENANCE.md``): one NVIDIA H200, torch 2.11.0+cu130,
transformers 5.17.0, measured 2026-11-30 with random bf16 weights. ``median_ms``
is the median of 50 or 20 timed repeats after warm-up (CUDA events).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..shipped import asset_path
from ..sim.batching import PassTimeCurve, fit_roofline

CSV_NAME = "pass_cost_h200.csv"
META_NAME = "pass_cost_h200.meta.json"
#: The real model's own pass times on this project's CPU (``benchmarks/bench_lm.py --write-csv``).
CPU_CSV_NAME = "pass_cost_cpu.csv"
CPU_META_NAME = "pass_cost_cpu.meta.json"
#: llama.cpp on the same GGUF file (its 4-bit Q4_1 weights as stored), same threads, same run
#: (``benchmarks/bench_lm.py --only passes --llama --write-csv``).
LLAMA_CSV_NAME = "pass_cost_cpu_llamacpp.csv"
LLAMA_META_NAME = "pass_cost_cpu_llamacpp.meta.json"
#: This project's kernel streaming the file's 4-bit blocks (``weights="q4"``), one thread, timed
#: interleaved with float32 (``benchmarks/bench_weights.py --write-csv``).
CPU_Q4_CSV_NAME = "pass_cost_cpu_q4.csv"
CPU_Q4_META_NAME = "pass_cost_cpu_q4.meta.json"


@dataclass(frozen=True, eq=False)
class PassCosts:
    """One model shape and implementation: time of a pass vs positions scored."""

    model: str
    impl: str
    n_positions: np.ndarray
    median_ms: np.ndarray
    p10_ms: np.ndarray
    p90_ms: np.ndarray
    weight_bytes: int | None

    def at(self, n_positions: int) -> float:
        """Median ms of a pass over exactly ``n_positions`` (must be a measured row)."""
        hit = np.flatnonzero(self.n_positions == n_positions)
        if hit.size == 0:
            raise ValueError(
                f"n_positions={n_positions} was not measured for {self.model}/{self.impl}; "
                f"measured: {self.n_positions.tolist()}"
            )
        return float(self.median_ms[hit[0]])


@lru_cache(maxsize=1)
def load_pass_costs() -> dict[tuple[str, str], PassCosts]:
    """All measured H200 series keyed by ``(model, impl)``; read once, then shared read-only."""
    return _read_pass_costs(CSV_NAME)


@lru_cache(maxsize=1)
def load_cpu_pass_costs() -> PassCosts:
    """The real model's pass times on this project's 2-core CPU (one series; no weight column).

    Provenance: ``assets/PROVENANCE.md`` and ``assets/pass_cost_cpu.meta.json``.
    """
    (series,) = _read_pass_costs(CPU_CSV_NAME).values()
    return series


@lru_cache(maxsize=1)
def load_cpu_meta() -> dict:
    """The CPU measurement's metadata: the machine (``cpu``, ``cores``), ``threads``, ``date_utc``."""
    return json.loads(Path(asset_path(CPU_META_NAME)).read_text())


@lru_cache(maxsize=1)
def load_llamacpp_meta() -> dict:
    """The llama.cpp measurement's metadata (its machine, threads, ``file_bytes``, version)."""
    return json.loads(Path(asset_path(LLAMA_META_NAME)).read_text())


@lru_cache(maxsize=1)
def load_llamacpp_pass_costs() -> PassCosts:
    """llama.cpp's pass times on the same machine, file and thread count (one series)."""
    (series,) = _read_pass_costs(LLAMA_CSV_NAME).values()
    return series


def _read_pass_costs(name: str) -> dict[tuple[str, str], PassCosts]:
    rows: dict[tuple[str, str], list] = {}
    with open(asset_path(name), newline="") as fh:
        for rec in csv.DictReader(fh):
            rows.setdefault((rec["model"], rec["impl"]), []).append(rec)
    out = {}
    for key, recs in rows.items():
        recs.sort(key=lambda r: int(r["n_positions"]))
        col = lambda name, kind=float: np.array([kind(r[name]) for r in recs])  # noqa: E731
        out[key] = PassCosts(
            model=key[0],
            impl=key[1],
            n_positions=col("n_positions", int),
            median_ms=col("median_ms"),
            p10_ms=col("p10_ms"),
            p90_ms=col("p90_ms"),
            weight_bytes=int(recs[0]["weight_bytes"]) if "weight_bytes" in recs[0] else None,
        )
    for series in out.values():
        for arr in (series.n_positions, series.median_ms, series.p10_ms, series.p90_ms):
            arr.setflags(write=False)
    return out


def load_meta() -> dict:
    """The measurement's metadata (GPU, library versions, date)."""
    return json.loads(Path(asset_path(META_NAME)).read_text())


def draft_cost_ratio(draft_model: str, target_model: str = "llama-8b-shape") -> float:
    """Draft-to-target cost of one decode step (1 position, CUDA-graph rows).

    Examples
    --------
    >>> round(draft_cost_ratio("llama-1b-shape"), 3)
    0.236
    >>> round(draft_cost_ratio("tiny-160m-shape"), 3)
    0.095
    """
    costs = load_pass_costs()
    known = sorted(model for model, impl in costs if impl == "gemm-cudagraph")
    for name, model in (("draft_model", draft_model), ("target_model", target_model)):
        if model not in known:
            raise ValueError(f"{name} must be one of {known}; got {model!r}")
    return costs[(draft_model, "gemm-cudagraph")].at(1) / costs[(target_model, "gemm-cudagraph")].at(1)


def measured_curve(model: str = "llama-8b-shape", impl: str = "gemm-cudagraph") -> PassTimeCurve:
    """The roofline fit of one measured H200 series (``assets/pass_cost_h200.csv``).

    Examples
    --------
    >>> curve = measured_curve()
    >>> curve.n_max, round(curve.time_ms(1), 2), round(curve.time_ms(512), 1)
    (512, 4.8, 11.1)
    """
    costs = load_pass_costs()
    if (model, impl) not in costs:
        raise ValueError(f"(model, impl) must be one of {sorted(costs)}; got {(model, impl)!r}")
    series = costs[(model, impl)]
    return fit_roofline(series.n_positions, series.median_ms,
                        label=f"{model}, {impl} (measured on one NVIDIA H200)")


def cpu_curve() -> PassTimeCurve:
    """The real model's pass times as shipped (``assets/pass_cost_cpu.csv``: measured on the machine
    that built the package; a server measures its own as it loads the model, see
    ``lm.calibrate``).

    Examples
    --------
    >>> curve = cpu_curve()
    >>> curve.n_max, bool(curve.time_ms(5) < 2 * curve.time_ms(1))
    (64, True)
    """
    series = load_cpu_pass_costs()
    return fit_roofline(series.n_positions, series.median_ms,
                        label=f"{series.model}, {series.impl} (measured on the machine that built this page)")


def llamacpp_curve() -> PassTimeCurve:
    """llama.cpp's pass times, 4-bit weights, on the machine that built the package.

    Examples
    --------
    >>> curve = llamacpp_curve()
    >>> bool(curve.time_ms(9) > 2 * curve.time_ms(1))   # unpacking 4-bit weights: compute-bound soon
    True
    """
    series = load_llamacpp_pass_costs()
    return fit_roofline(series.n_positions, series.median_ms,
                        label=f"{series.model}, {series.impl} (measured on the machine that built this page)")


@lru_cache(maxsize=1)
def load_cpu_q4_meta() -> dict:
    """The 4-bit measurement's metadata: machine, threads, date, ``weight_bytes``, and the float32
    medians of the same interleaved loop (``f32_median_ms``)."""
    return json.loads(Path(asset_path(CPU_Q4_META_NAME)).read_text())


@lru_cache(maxsize=1)
def load_cpu_q4_pass_costs() -> PassCosts:
    """This project's kernel on the file's 4-bit blocks, per positions (one series), as shipped in
    ``assets/pass_cost_cpu_q4.csv`` (provenance beside it)."""
    (series,) = _read_pass_costs(CPU_Q4_CSV_NAME).values()
    return series


def cpu_q4_curve() -> PassTimeCurve:
    """This project's kernel on the file's 4-bit blocks, on the machine that built the package.

    Examples
    --------
    >>> curve = cpu_q4_curve()
    >>> bool(curve.time_ms(9) > 1.5 * curve.time_ms(1))   # fewer bytes: arithmetic sets the price
    True
    """
    series = load_cpu_q4_pass_costs()
    return fit_roofline(series.n_positions, series.median_ms,
                        label=f"{series.model}, {series.impl} (measured on the machine that built this page)")

"""The real model on this CPU: decode step vs its matrix products, pass cost per positions, drafts.

Run from a checkout after ``bash scripts/bootstrap.sh``:

    .venv/bin/python benchmarks/bench_lm.py               # every table
    .venv/bin/python benchmarks/bench_lm.py --only step,passes --repeats 30

Prints tables (and, with ``--write-csv``, writes ``assets/pass_cost_cpu.csv``). The machine may be
shared: every ratio is taken within one run, each figure is a median of repeats, and the load
average is printed so a reader can judge the noise.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import gc
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np

from specdec_playable.core.lm import get_model
from specdec_playable.core.lm import model as model_mod
from specdec_playable.core.lm.model import linear

ROOT = Path(__file__).resolve().parents[1]
PASS_NS = (1, 2, 4, 5, 8, 16, 32, 64)
CONTEXT = 128  # cached positions before the timed pass (a prompt plus some output)


def _median_ms(fn, repeats: int, warmup: int = 2) -> tuple[float, float, float]:
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    a = np.array(ts)
    return float(np.median(a)), float(np.percentile(a, 10)), float(np.percentile(a, 90))


def _matmuls(model, n: int):
    """The pass's matrix products alone, same shapes and operands, nothing else."""
    w = model.weights
    d, f = model.config.d_model, model.config.d_ff
    x = np.ones((n, d), np.float32)
    a = np.ones((n, f), np.float32)

    def run():
        for b in w.blocks:
            linear(x, b.wqkv), linear(x, b.wo), linear(x, b.wgu), linear(a, b.wdown)
        model.head(x)
    return run


def _pass(model, n: int):
    """One forward pass over n new positions after CONTEXT cached ones, then rolled back."""
    ids = np.arange(1000, 1000 + CONTEXT + n) % model.config.vocab_size
    cache = model.new_cache(capacity=CONTEXT + 64)
    model.forward(ids[:CONTEXT], cache, logits="none")
    new = ids[CONTEXT:]

    def run():
        model.forward(new, cache, logits="all")
        cache.rollback(CONTEXT)
    return run


def bench_step(model, repeats: int) -> dict:
    step = _median_ms(_pass(model, 1), repeats)
    mm = _median_ms(_matmuls(model, 1), repeats)
    # The memory floor: the bytes a step must read, at the speed a large matrix-vector product reads.
    big = model.weights.embed
    v = np.ones(big.shape[1], np.float32)
    head = _median_ms(lambda: big @ v, repeats)
    gbps = big.nbytes / (head[0] / 1e3) / 1e9
    floor = model.weights.nbytes / (gbps * 1e9) * 1e3
    print("\n## Decode step vs its matrix products (one position, %d cached)" % CONTEXT)
    print("| what | median ms | p10 | p90 |")
    print("|---|---|---|---|")
    print("| full decode step | %.1f | %.1f | %.1f |" % step)
    print("| its matrix products alone | %.1f | %.1f | %.1f |" % mm)
    print("| weights read at the head's matvec speed (%.1f GB/s) | %.1f | | |" % (gbps, floor))
    print(f"\nstep / matmuls = **{step[0] / mm[0]:.2f}x** (target <= 1.3x); "
          f"matmuls / memory floor = {mm[0] / floor:.2f}x")
    return dict(step_ms=step[0], matmul_ms=mm[0], overhead=step[0] / mm[0], floor_ms=floor, gbps=gbps)


def _interleaved(fns: dict, repeats: int) -> dict:
    """Median, p10 and p90 ms of each function, timed round-robin so load spikes hit all alike."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1e3)
    return {name: (float(np.median(v)), float(np.percentile(v, 10)), float(np.percentile(v, 90)))
            for name, v in times.items()}


def _gemm_only(fn):
    def run():
        saved = model_mod.GEMV_MAX_N
        model_mod.GEMV_MAX_N = 1  # every product of 2+ positions as one matrix-matrix product
        try:
            fn()
        finally:
            model_mod.GEMV_MAX_N = saved
    return run


def bench_passes(model, repeats: int, write_csv: bool) -> list[dict]:
    fns = {}
    for n in PASS_NS:
        fns[("pass", n)] = _pass(model, n)
        fns[("matmul", n)] = _matmuls(model, n)
        fns[("gemm", n)] = _gemm_only(_pass(model, n))
    got = _interleaved(fns, repeats)
    rows = []
    for n in PASS_NS:
        med, p10, p90 = got[("pass", n)]
        rows.append(dict(n_positions=n, median_ms=med, p10_ms=p10, p90_ms=p90,
                         matmul_ms=got[("matmul", n)][0], gemm_ms=got[("gemm", n)][0],
                         gemm_p10=got[("gemm", n)][1]))
    print("\n## One pass scoring n new positions (%d cached), full vocabulary head at each" % CONTEXT)
    print("| n | pass ms (median) | p10 | p90 | matmuls alone | pass(n)/pass(1) median | p10 ratio "
          "| ms per position | with OpenBLAS gemm only (median) |")
    print("|---|---|---|---|---|---|---|---|---|")
    base, base10 = rows[0]["median_ms"], rows[0]["p10_ms"]
    for r in rows:
        print("| %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.1f | %.1f |" % (
            r["n_positions"], r["median_ms"], r["p10_ms"], r["p90_ms"], r["matmul_ms"],
            r["median_ms"] / base, r["p10_ms"] / base10, r["median_ms"] / r["n_positions"],
            r["gemm_ms"]))
    five = next(r for r in rows if r["n_positions"] == 5)
    print(f"\npass(5)/pass(1) = **{five['median_ms'] / base:.2f}x** (p10: {five['p10_ms'] / base10:.2f}x; "
          f"gemm only: {five['gemm_ms'] / base:.2f}x; H200, 8B shape: {4.839 / 4.8036:.3f}x)")
    if write_csv:
        path = ROOT / "assets" / "pass_cost_cpu.csv"
        with path.open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["model", "impl", "n_positions", "median_ms", "p10_ms", "p90_ms",
                          "matmul_ms", "gemm_only_ms", "context"])
            for r in rows:
                out.writerow(["smollm2-135m", "numpy-float32-kvcache", r["n_positions"],
                              f"{r['median_ms']:.3f}", f"{r['p10_ms']:.3f}", f"{r['p90_ms']:.3f}",
                              f"{r['matmul_ms']:.3f}", f"{r['gemm_ms']:.3f}", CONTEXT])
        meta = dict(cpu=_cpu_name(), cores=os.cpu_count(), numpy=np.__version__,
                    python=platform.python_version(),
                    date_utc=_dt.datetime.now(_dt.UTC).date().isoformat(),
                    load_average=round(os.getloadavg()[0], 2), repeats=repeats, blas=_blas(),
                    gemv_max_n=model_mod.GEMV_MAX_N, gemv_rows=model_mod.GEMV_ROWS)
        (ROOT / "assets" / "pass_cost_cpu.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        print(f"wrote {path.relative_to(ROOT)} and its .meta.json")
    return rows


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _blas() -> str:
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg["Build Dependencies"]["blas"]
        return f"{blas.get('name')} {blas.get('version')}"
    except Exception:  # noqa: BLE001 - only a label
        return "unknown"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="step,passes,drafts,speed,memory",
                    help="comma-separated tables: step, passes, drafts, speed, memory")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--write-csv", action="store_true", help="write assets/pass_cost_cpu.csv")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    t = time.perf_counter()
    model = get_model()
    load_s = time.perf_counter() - t
    print(f"# bench_lm: {_cpu_name()}, {os.cpu_count()} cores, numpy {np.__version__} ({_blas()}), "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"model loaded in {load_s:.1f} s")
    if "step" in only:
        bench_step(model, args.repeats)
    if "passes" in only:
        bench_passes(model, args.repeats, args.write_csv)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

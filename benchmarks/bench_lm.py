"""The real model on this CPU: decode step vs its matrix products, pass cost per positions, drafts.

Run from a checkout after ``bash scripts/bootstrap.sh``:

    .venv/bin/python benchmarks/bench_lm.py               # every table
    .venv/bin/python benchmarks/bench_lm.py --only step,passes --repeats 30
    .venv/bin/python benchmarks/bench_lm.py --only passes --llama   # beside llama.cpp (below)

``passes`` times the forward pass over 1..64 new positions three ways in one interleaved loop:
through the compiled path (``lm.fused`` and ``lm.kernel``: what the model uses), through the
numpy reference path (``model.FUSED = False``, products by ``kernel.matmul_t_numpy``), and the
read floor (``kernel.read_all``: a kernel that only reads every packed float32 weight once, with
the pass's threads). ``breakdown`` splits a pass at 1, 5 and 9 positions into its products, its
attention, its norms and SwiGLU, the head and what is left (Python). ``prefetch`` times passes over
1-6 positions at one thread with each prefetch distance of the one-group tile (the table
``kernel.PREFETCH`` keeps per CPU vendor). With ``--llama``, and
``llama-cpp-python``
importable, llama.cpp evaluates the same GGUF file (its 4-bit weights as stored) with the same
thread count in the same loop. llama-cpp-python is not a dependency: on this project's CPU build it
with ``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" pip install
--no-cache-dir llama-cpp-python`` (about 7 minutes; a native build or a wheel cached from another
machine can die with "Illegal instruction").

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
import sys
import time
from pathlib import Path

import numpy as np

from specdec_playable.lm import get_model
from specdec_playable.lm import model as model_mod
from specdec_playable.lm.model import linear

from _local import PASS_CONTEXT as CONTEXT, model_pass, read_floor

ROOT = Path(__file__).resolve().parents[1]
PASS_NS = (1, 2, 4, 5, 8, 9, 16, 17, 32, 33, 64)


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


def bench_step(model, repeats: int) -> dict:
    # The memory floor: every weight read once by the kernel's own read loop.
    got = _interleaved({"step": model_pass(model, 1), "matmul": _matmuls(model, 1),
                        "floor": read_floor(model)}, repeats)
    step, mm, floor = got["step"], got["matmul"], got["floor"]
    gbps = model.weights.nbytes / (floor[0] / 1e3) / 1e9
    print("\n## Decode step vs its matrix products (one position, %d cached; interleaved repeats)"
          % CONTEXT)
    print("| what | median ms | p10 | p90 |")
    print("|---|---|---|---|")
    print("| full decode step | %.1f | %.1f | %.1f |" % step)
    print("| its matrix products alone | %.1f | %.1f | %.1f |" % mm)
    print("| every weight read once (%.1f GB/s) | %.1f | %.1f | %.1f |" % ((gbps,) + floor))
    print(f"\nstep / matmuls = **{step[0] / mm[0]:.2f}x** median, {step[1] / mm[1]:.2f}x p10; "
          f"step / read floor = {step[0] / floor[0]:.2f}x")
    return dict(step_ms=step[0], matmul_ms=mm[0], overhead=step[0] / mm[0], floor_ms=floor[0], gbps=gbps)


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


def _with_numpy_products(fn):
    """``fn`` on the numpy reference path: numpy blocks, products by ``kernel.matmul_t_numpy``."""
    from specdec_playable.lm import kernel

    def run():
        saved = model_mod.matmul_t, model_mod.FUSED
        model_mod.matmul_t, model_mod.FUSED = kernel.matmul_t_numpy, False
        try:
            fn()
        finally:
            model_mod.matmul_t, model_mod.FUSED = saved
    return run


def _llama_pass(threads: int):
    """llama.cpp's pass over n new positions after a short prompt (None without llama-cpp-python)."""
    try:
        from llama_cpp import Llama
    except ImportError:
        print("\n(--llama: llama-cpp-python is not installed; skipping its rows)")
        return None
    from specdec_playable.lm.source import model_file

    llm = Llama(model_path=str(model_file()), n_threads=threads, n_threads_batch=threads,
                logits_all=True, n_ctx=CONTEXT + max(PASS_NS) + 8, n_batch=512, verbose=False)
    ids = [int(t) for t in (np.arange(CONTEXT + max(PASS_NS)) * 7919 + 1000) % llm.n_vocab()]
    llm.reset()
    llm.eval(ids[:CONTEXT])

    def make(n):
        def run():
            llm._ctx.kv_cache_seq_rm(-1, CONTEXT, -1)  # back to the cached prefix
            llm.n_tokens = CONTEXT
            llm.eval(ids[CONTEXT:CONTEXT + n])
        return run
    return make


def _pass_rows(got: dict, t: int, llama: bool, numpy: bool) -> list[dict]:
    rows = []
    for n in PASS_NS:
        r = dict(n_positions=n, median_ms=got[("pass", n, t)][0], p10_ms=got[("pass", n, t)][1],
                 p90_ms=got[("pass", n, t)][2], matmul_ms=got[("matmul", n, t)][0],
                 numpy_ms=got[("numpy", n, t)][0] if numpy else float("nan"))
        if llama:
            r.update(llama_ms=got[("llama", n, t)][0], llama_p10=got[("llama", n, t)][1],
                     llama_p90=got[("llama", n, t)][2])
        rows.append(r)
    return rows


def _print_passes(rows: list[dict], floor: tuple, llama: bool, threads: int, loads: tuple) -> None:
    print("\n## One pass scoring n new positions (%d cached), full vocabulary head at each, "
          "%d thread(s); every column in one interleaved loop (load average %.2f -> %.2f)"
          % (CONTEXT, threads, *loads))
    print(f"read floor (kernel.read_all: every packed float32 weight streamed once, nothing else): "
          f"median {floor[0]:.1f} ms, p10 {floor[1]:.1f} ms")
    head = "| n | pass ms | p10 | ÷ floor | ÷ step | products alone | numpy path ms | ÷ its step |"
    line = "|---|---|---|---|---|---|---|---|"
    if llama:
        head += " llama.cpp 4-bit ms | ÷ its step | ours ÷ llama.cpp |"
        line += "---|---|---|"
    print(head)
    print(line)
    b, nb = rows[0]["median_ms"], rows[0]["numpy_ms"]
    for r in rows:
        numpy = "- | -" if np.isnan(nb) else f"{r['numpy_ms']:.1f} | {r['numpy_ms'] / nb:.2f}"
        out = (f"| {r['n_positions']} | {r['median_ms']:.1f} | {r['p10_ms']:.1f} "
               f"| {r['median_ms'] / floor[0]:.2f} | {r['median_ms'] / b:.2f} | {r['matmul_ms']:.1f} "
               f"| {numpy} |")
        if llama:
            out += (f" {r['llama_ms']:.1f} | {r['llama_ms'] / rows[0]['llama_ms']:.2f} "
                    f"| {r['median_ms'] / r['llama_ms']:.2f} |")
        print(out)
    at = {r["n_positions"]: r for r in rows}
    ratio = {n: at[n]["median_ms"] / b for n in (5, 9, 17) if n in at}
    print(f"\nTargets: step ÷ floor = **{b / floor[0]:.2f}** (<= 1.05); pass(5) ÷ step = "
          f"**{ratio.get(5, float('nan')):.2f}** (<= 1.2); pass(9) ÷ step = "
          f"**{ratio.get(9, float('nan')):.2f}** (<= 1.35); pass(17) ÷ step = "
          f"**{ratio.get(17, float('nan')):.2f}** (<= 2)")
    if llama:
        print(f"pass(5): ours {at[5]['median_ms']:.1f} ms vs llama.cpp {at[5]['llama_ms']:.1f} ms "
              f"(target: faster)")


def _at_threads(t: int, fn):
    """``fn`` with the kernel's products on ``t`` threads."""
    from specdec_playable.lm import kernel

    def run():
        kernel.use_threads(t)
        try:
            fn()
        finally:
            kernel.use_threads(None)
    return run


def bench_passes(model, repeats: int, write_csv: bool, llama: bool = False,
                 threads: tuple = ()) -> dict:
    """Every pass size at every thread count (the numpy path at the first, as BLAS was started),
    llama.cpp beside each, all in one interleaved loop; print one table per thread count and
    write the first one's to the CSV files."""
    from specdec_playable.lm import kernel

    threads = tuple(threads) or (kernel.threads(),)
    fns = {}
    for i, t in enumerate(threads):
        fns[("floor", 0, t)] = _at_threads(t, read_floor(model))
        make_llama = _llama_pass(t) if llama else None
        llama = make_llama is not None
        for n in PASS_NS:
            fns[("pass", n, t)] = _at_threads(t, model_pass(model, n))
            fns[("matmul", n, t)] = _at_threads(t, _matmuls(model, n))
            if i == 0:
                fns[("numpy", n, t)] = _with_numpy_products(model_pass(model, n))
            if llama:
                fns[("llama", n, t)] = make_llama(n)
    load0 = os.getloadavg()[0]
    got = _interleaved(fns, repeats)
    loads = (load0, os.getloadavg()[0])
    out = {}
    for i, t in enumerate(threads):
        out[t] = rows = _pass_rows(got, t, llama, i == 0)
        _print_passes(rows, got[("floor", 0, t)], llama, t, loads)
    if write_csv:
        t = threads[0]
        _write_pass_csv(out[t], repeats, got[("floor", 0, t)][0], llama, model, t, loads)
    return out


def _write_pass_csv(rows: list[dict], repeats: int, floor_ms: float, llama: bool, model,
                    threads: int, loads: tuple) -> None:
    from specdec_playable.lm import kernel

    path = ROOT / "assets" / "pass_cost_cpu.csv"
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["model", "impl", "n_positions", "median_ms", "p10_ms", "p90_ms",
                      "matmul_ms", "numpy_path_ms", "context"])
        for r in rows:
            out.writerow(["smollm2-135m", "float32-kernel-kvcache", r["n_positions"],
                          f"{r['median_ms']:.3f}", f"{r['p10_ms']:.3f}", f"{r['p90_ms']:.3f}",
                          f"{r['matmul_ms']:.3f}", f"{r['numpy_ms']:.3f}", CONTEXT])
    command = "benchmarks/bench_lm.py " + " ".join(sys.argv[1:])
    meta = dict(cpu=_cpu_name(), cores=os.cpu_count(), threads=int(threads),
                kernel="numba" if kernel.HAVE_NUMBA else "numpy", numpy=np.__version__,
                python=platform.python_version(),
                date_utc=_dt.datetime.now(_dt.UTC).date().isoformat(),
                load_average=round(loads[1], 2), load_average_start=round(loads[0], 2),
                repeats=repeats, blas=_blas(), floor_ms=round(floor_ms, 2),
                weight_bytes=int(model.weights.nbytes), command=command)
    (ROOT / "assets" / "pass_cost_cpu.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)} and its .meta.json")
    if llama:
        import llama_cpp

        path = ROOT / "assets" / "pass_cost_cpu_llamacpp.csv"
        with path.open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["model", "impl", "n_positions", "median_ms", "p10_ms", "p90_ms", "context"])
            for r in rows:
                out.writerow(["smollm2-135m", "llama.cpp-q4_1", r["n_positions"], f"{r['llama_ms']:.3f}",
                              f"{r['llama_p10']:.3f}", f"{r['llama_p90']:.3f}", CONTEXT])
        from specdec_playable.lm.source import model_file

        meta.update(llama_cpp_python=llama_cpp.__version__, weights="the same GGUF file, Q4_1 as stored",
                    file_bytes=os.path.getsize(model_file()))
        (ROOT / "assets" / "pass_cost_cpu_llamacpp.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        print(f"wrote {path.relative_to(ROOT)} and its .meta.json")


def _breakdown_parts(model, n: int) -> dict:
    """Functions timing the parts of a pass over n positions: the whole pass, its blocks (one
    compiled call), the blocks' products alone, their attention alone, their norms, SwiGLU and
    residual adds alone (each as compiled loops over the 30 blocks, so no Python between them),
    and the head (final norm and logits, from Python)."""
    from numba import njit

    from specdec_playable.lm import fused, kernel

    cfg, w = model.config, model.weights
    ids = np.arange(1000, 1000 + CONTEXT + n) % cfg.vocab_size
    cache = model.new_cache(capacity=CONTEXT + 64)
    model.forward(ids[:CONTEXT], cache, logits="none")
    x0 = w.embed[ids[CONTEXT:]]
    ang = (CONTEXT + np.arange(n)).astype(np.float32)[:, None] * w.inv_freq[None, :]
    rope = (np.cos(ang), np.sin(ang), np.tri(n, dtype=bool))
    narrow = w.strips
    ahead = kernel.prefetch_ahead(n, narrow)
    dims = (cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.eps, ahead, narrow)
    capture = (np.full(cfg.n_layers + 1, -1, np.int64), np.empty((0, n, cfg.d_model), np.float32))
    xg = kernel.group_positions(x0)
    ag = kernel.group_positions(np.ones((n, cfg.d_ff), np.float32))
    qkv, o, gu, down = w.stacks
    outs = [np.empty((n, s.shape[1] * kernel.PANEL), np.float32) for s in w.stacks]
    groups = xg.shape[0]
    grouping = (n // groups, n - (n // groups) * groups)

    @njit
    def products(xg, ag, outs, n, ahead, narrow):
        for layer in range(qkv.shape[0]):
            kernel.products(xg, qkv[layer], n, outs[0], ahead, narrow)
            kernel.products(xg, o[layer], n, outs[1], ahead, narrow)
            kernel.products(xg, gu[layer], n, outs[2], ahead, narrow)
            kernel.products(ag, down[layer], n, outs[3], ahead, narrow)

    @njit
    def attention(q, ck, cv, past, rope, heads, og, grouping):
        for layer in range(ck.shape[0]):
            fused._attend(q.copy(), (ck[layer], cv[layer], past), rope, heads, og, grouping)

    @njit
    def norms(x, eps, xg, gu, d_ff, ag, grouping, layers):
        base, extra = grouping
        for _ in range(layers):
            y = x.copy()
            fused._norm_grouped(y, eps, xg, base, extra)
            fused._add(y, x)
            fused._norm_grouped(y, eps, xg, base, extra)
            fused._swiglu_grouped(gu, d_ff, ag, base, extra)
            fused._add(y, x)

    q = np.random.default_rng(0).standard_normal(outs[0].shape).astype(np.float32) * 0.1
    gu_in = np.random.default_rng(1).standard_normal(outs[2].shape).astype(np.float32)
    h = np.ones((n, cfg.d_model), np.float32)
    new = ids[CONTEXT:]

    def whole():
        model.forward(new, cache, logits="all")
        cache.rollback(CONTEXT)

    return {
        "pass": whole,
        "blocks": lambda: fused.run_blocks(x0.copy(), w.stacks, (cache.k, cache.v, CONTEXT), rope, dims,
                                           capture),
        "products": lambda: products(xg, ag, tuple(outs), n, ahead, narrow),
        "attention": lambda: attention(q, cache.k, cache.v, CONTEXT, rope, (cfg.n_heads, cfg.n_kv_heads),
                                       xg, grouping),
        "norms": lambda: norms(x0, np.float32(cfg.eps), xg, gu_in, cfg.d_ff, ag, grouping, cfg.n_layers),
        "head": lambda: model.head(h),
    }


def bench_breakdown(model, repeats: int, ns=(1, 5, 9)) -> None:
    """Where a pass's time goes, at 1, 5 and 9 positions (interleaved repeats, medians)."""
    from specdec_playable.lm import kernel

    fns = {("floor", 0): read_floor(model)}
    for n in ns:
        fns.update({(part, n): fn for part, fn in _breakdown_parts(model, n).items()})
    load0 = os.getloadavg()[0]
    got = _interleaved(fns, repeats)
    print(f"\n## Where a pass's time goes, {kernel.threads()} thread(s), {CONTEXT} cached positions "
          f"(medians of {repeats} interleaved repeats; load average {load0:.2f} -> "
          f"{os.getloadavg()[0]:.2f}); read floor {got[('floor', 0)][0]:.1f} ms")
    print("| n | pass ms | blocks (one call) | their products | their attention | their norms, SwiGLU, "
          "residuals | head (norm, logits) | Python and the rest |")
    print("|---|---|---|---|---|---|---|---|")
    for n in ns:
        t = {part: got[(part, n)][0] for part in ("pass", "blocks", "products", "attention", "norms", "head")}
        rest = t["pass"] - t["blocks"] - t["head"]
        print(f"| {n} | {t['pass']:.1f} | {t['blocks']:.1f} | {t['products']:.1f} | {t['attention']:.2f} "
              f"| {t['norms']:.2f} | {t['head']:.1f} | {rest:.2f} |")


def bench_prefetch(model, repeats: int) -> None:
    """How far ahead a tile should prefetch its weights, on this CPU: passes at one thread with
    every distance (0: none) in one interleaved loop, beside the read floor. Panels: a one-group
    wide tile over whole panels for 1-6 positions, in inputs of 256 bytes (``kernel.PREFETCH``
    keeps one row per CPU vendor from this table; from ``kernel.tuning.CHUNKED_FROM`` positions on
    one group runs chunk by chunk instead, and only a step streams whole panels). Strips: narrow tiles over 2-9 positions, in cache lines of a strip
    (``kernel.STRIP_AHEAD`` keeps one group's and several groups' distance)."""
    from specdec_playable.lm import kernel

    if model.weights.strips:
        saved = kernel.tuning._STRIP_AHEAD

        def setting(d):
            kernel.tuning._STRIP_AHEAD = saved if d is None else (d, d)
        _prefetch_table(model, repeats, (2, 3, 4, 5, 6, 7, 9), (0, 8, 16, 32, 64), setting,
                        lambda d: f"{d} lines", "narrow tiles (strips layout)", saved)
        return
    saved = kernel.set_prefetch(None)
    chunked = kernel.tuning.set_chunked_from(None)

    def setting(d):  # whole panels for 1-6 positions while measuring (tuning.CHUNKED_FROM)
        kernel.set_prefetch(saved if d is None else (d,) * kernel.MAX_GROUP)
        kernel.tuning.set_chunked_from(chunked if d is None else kernel.MAX_GROUP + 1)
    _prefetch_table(model, repeats, range(1, kernel.MAX_GROUP + 1), (0, 4, 8, 12, 16, 24, 32), setting,
                    lambda d: f"{d / 4:g} KB", f"a one-group tile, {kernel.cpu_vendor() or 'unknown vendor'}",
                    saved)


def _prefetch_table(model, repeats, ns, distances, setting, label, title, saved) -> None:
    """Time passes over ``ns`` positions with each prefetch distance (``setting(d)`` puts it in
    force, ``setting(None)`` puts back what was), interleaved, and print the table."""
    def with_distance(d, fn):
        def run():
            setting(d)
            try:
                fn()
            finally:
                setting(None)
        return run

    fns = {("floor", 0): _at_threads(1, read_floor(model))}
    for n in ns:
        for d in distances:
            fns[(n, d)] = _at_threads(1, with_distance(d, model_pass(model, n)))
    load0 = os.getloadavg()[0]
    got = _interleaved(fns, repeats)
    floor = got[("floor", 0)][0]
    print(f"\n## Prefetch distance of {title}, one thread (pass ms, medians of {repeats} interleaved "
          f"repeats; load average {load0:.2f} -> {os.getloadavg()[0]:.2f}); read floor {floor:.1f} ms; "
          f"in force now: {saved}")
    print("| n | " + " | ".join("none" if d == 0 else label(d) for d in distances) + " | best | best ÷ floor |")
    print("|---|" + "---|" * (len(distances) + 2))
    for n in ns:
        ms = [got[(n, d)][0] for d in distances]
        best = int(np.argmin(ms))
        print(f"| {n} | " + " | ".join(f"{v:.1f}" for v in ms)
              + f" | {distances[best]} | {ms[best] / floor:.2f} |")


def _compete(threads: int, n: int = 5) -> None:
    """A competing run: another model process verifying n positions a pass until it is killed."""
    from specdec_playable.lm import kernel

    model = get_model()
    kernel.use_threads(threads)  # as asked, whatever the pass size
    run = model_pass(model, n)
    print("ready", flush=True)
    while True:
        run()


def _competitor(threads: int):
    import subprocess

    env = {**os.environ, "NUMBA_NUM_THREADS": "2", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, __file__, "--compete", str(threads)], env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.0)
    return proc


def bench_threads(model, repeats: int, ns=(1, 2, 5, 9, 17, 33)) -> None:
    """Passes at one and two threads, interleaved: with the machine to this run, then while
    another model process verifies 5 positions a pass at one thread, then at two."""
    from specdec_playable.lm import kernel

    if kernel.numba is None or kernel.numba.config.NUMBA_NUM_THREADS < 2:
        print("\n(threads: needs numba with a pool of 2 threads; NUMBA_NUM_THREADS=2)")
        return

    def at(t, fn):
        def run():
            kernel.use_threads(t)
            try:
                fn()
            finally:
                kernel.use_threads(None)
        return run

    fns = {}
    for t in (1, 2):
        fns[("floor", t)] = at(t, read_floor(model))
        for n in ns:
            fns[(n, t)] = at(t, model_pass(model, n))
    print(f"\n## Threads: one pass over n positions at 1 and 2 threads, {CONTEXT} cached (medians of "
          f"{repeats} interleaved repeats; ms)")
    print("| n | alone, 1 thread | alone, 2 threads | 2 ÷ 1 | beside a run at 1 thread: 1 | 2 | 2 ÷ 1 "
          "| beside a run at 2 threads: 1 | 2 | 2 ÷ 1 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    phases, loads = [], []
    for other in (None, 1, 2):
        proc = _competitor(other) if other else None
        try:
            loads.append(os.getloadavg()[0])
            phases.append(_interleaved(fns, repeats))
        finally:
            if proc is not None:
                proc.kill()
                proc.wait()
    for n in ("floor", *ns):
        cells = []
        for got in phases:
            a, b = got[(n, 1)][0], got[(n, 2)][0]
            cells += [f"{a:.1f}", f"{b:.1f}", f"{b / a:.2f}"]
        print(f"| {n} | " + " | ".join(cells) + " |")
    print("load average at the start of each part: " + ", ".join(f"{x:.2f}" for x in loads))


def _drafts():
    from specdec_playable.lm.registry import make_draft

    return {name: (lambda n=name: make_draft(n)) for name in ("lookup", "ngram", "head")}


def bench_speed(model, repeats: int, k: int, max_new: int) -> dict:
    """Plain vs speculative on Episode 7's tasks, each pair raced (``lm.race``: the two runs take
    turns pass by pass in one process, so the machine's load hits both alike)."""
    from specdec_playable.lm.prompts import TASKS
    from specdec_playable.lm.race import fair_speedup, race

    drafts = _drafts()
    res = {(n, d): [] for n in TASKS for d in drafts}
    for _ in range(repeats):
        for n in TASKS:
            ids = model.tokenizer.chat(TASKS[n].message)
            for dname, draft in drafts.items():
                r = race(model, ids, draft(), k, max_new=max_new)
                assert r.spec.tokens == r.plain.tokens
                res[(n, dname)].append((r, fair_speedup(r.turns, rng=7)))
    print(f"\n## Tokens per second, plain vs speculative, Episode 7's tasks, greedy, k={k}, up to "
          f"{max_new} new tokens (each pair raced; median of {repeats} races; prompt pass excluded)")
    print("| task | copy-heavy | tokens | draft | plain tok/s | spec tok/s | speedup [95% interval] "
          "| idle-machine (work) figure | acceptance | tokens/pass |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    info = {}
    for n, copy_heavy in ((n, t.copy) for n, t in TASKS.items()):
        for i, dname in enumerate(drafts):
            runs = res[(n, dname)]
            mid = sorted(runs, key=lambda rf: rf[1].speedup)[len(runs) // 2]
            r, f = mid
            acc = "-" if np.isnan(r.spec.acceptance_rate) else f"{r.spec.acceptance_rate:.2f}"
            print(f"| {n if i == 0 else ''} | {('yes' if copy_heavy else 'no') if i == 0 else ''} "
                  f"| {len(r.plain.tokens) if i == 0 else ''} | {dname} "
                  f"| {1e3 / f.plain_ms_per_token:.1f} | {1e3 / f.spec_ms_per_token:.1f} "
                  f"| {f.speedup:.2f}x [{f.low:.2f}, {f.high:.2f}] | {f.work_speedup:.2f}x | {acc} "
                  f"| {f.tokens_per_pass:.2f} |")
            info[(n, dname)] = dict(speedup=f.speedup, work=f.work_speedup, low=f.low, high=f.high)
    return info


def bench_ksweep(model, repeats: int, max_new: int, draft: str = "lookup",
                 tasks: tuple = ("repeat",)) -> None:
    """One draft on some of Episode 7's tasks at every k: where verification cost meets
    acceptance (by default prompt lookup on the copy task)."""
    from specdec_playable.lm.prompts import PROMPTS
    from specdec_playable.lm.race import fair_speedup, race

    make = _drafts()[draft]
    ks = (1, 2, 3, 4, 6, 8)
    for task in tasks:
        ids = model.tokenizer.chat(PROMPTS[task].message)
        got = {k: [] for k in ks}
        for _ in range(repeats):
            for k in ks:
                r = race(model, ids, make(), k, max_new=max_new)
                got[k].append((r, fair_speedup(r.turns, rng=7)))
        print(f"\n## {draft} on {task}, by k (raced; median of {repeats}; load average "
              f"{os.getloadavg()[0]:.2f})")
        print("| k | acceptance | tokens per pass | pass(k+1) ÷ step | speedup [95% interval] "
              "| work figure |")
        print("|---|---|---|---|---|---|")
        for k in ks:
            r, f = sorted(got[k], key=lambda rf: rf[1].speedup)[len(got[k]) // 2]
            print(f"| {k} | {r.spec.acceptance_rate:.2f} | {f.tokens_per_pass:.2f} "
                  f"| {f.cost_of(k + 1):.2f} | {f.speedup:.2f}x [{f.low:.2f}, {f.high:.2f}] "
                  f"| {f.work_speedup:.2f}x |")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bench_memory(rss_before: float, after_load: float, load_s: float, model, sessions: int,
                 max_new: int) -> None:
    """RSS of the shared model, and what each extra concurrent session adds."""
    import threading

    from specdec_playable.lm.decode import speculate
    from specdec_playable.lm.drafts import PromptLookup
    from specdec_playable.lm.prompts import PROMPTS

    ids = model.tokenizer.chat(PROMPTS["json-reshape"].message)
    speculate(model, ids, PromptLookup(), 4, max_new=8)  # the compiled code loaded, as in a server
    peaks = {}
    for n in (1, sessions):
        gc.collect()
        base = _rss_mb()
        done = threading.Event()
        peak = [base]

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], _rss_mb())
                done.wait(0.005)

        watcher = threading.Thread(target=sample)
        watcher.start()
        workers = [threading.Thread(target=speculate, args=(model, ids, PromptLookup(), 4),
                                    kwargs=dict(max_new=max_new)) for _ in range(n)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        done.set()
        watcher.join()
        peaks[n] = peak[0] - base
    per_extra = (peaks[sessions] - peaks[1]) / (sessions - 1)
    one = model.new_cache(capacity=1)
    kv = one.nbytes / one.capacity  # one position, every layer
    print("\n## Load time and memory")
    print("| what | value |")
    print("|---|---|")
    print(f"| model load (read GGUF, dequantise, fuse, tokenizer) | {load_s:.1f} s |")
    print(f"| weights held (float32) | {model.weights.nbytes / 1e6:.0f} MB |")
    print(f"| process RSS before / after loading | {rss_before:.0f} MB / {after_load:.0f} MB |")
    print(f"| peak extra RSS, 1 session generating | {peaks[1]:.1f} MB |")
    print(f"| peak extra RSS, {sessions} sessions at once (threads) | {peaks[sessions]:.1f} MB |")
    print(f"| per additional session | {per_extra:.1f} MB (KV cache {kv / 1e3:.0f} kB per token; "
          f"no weights copied) |")


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
    ap.add_argument("--only", default="step,passes,breakdown,threads,speed,ksweep,memory",
                    help="comma-separated tables: step, passes, breakdown, prefetch, threads, speed, "
                    "ksweep, memory")
    ap.add_argument("--compete", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--write-csv", action="store_true", help="write assets/pass_cost_cpu.csv "
                    "(and, with --llama, assets/pass_cost_cpu_llamacpp.csv)")
    ap.add_argument("--llama", action="store_true",
                    help="time llama.cpp on the same file beside the passes (needs llama-cpp-python)")
    ap.add_argument("--threads", default="", help="comma-separated thread counts of the passes "
                    "table, interleaved (default: the kernel's, from the environment); the CSV "
                    "files get the first; NUMBA_NUM_THREADS must allow the largest")
    ap.add_argument("--process-threads", type=int, default=0,
                    help="the process-wide thread setting a server's model process gets when its run "
                    "is alone (kernel.set_process_threads; passes under kernel.PARALLEL_FROM "
                    "positions still use one); 0: the environment's")
    ap.add_argument("--k", type=int, default=4, help="draft length for the speed table")
    ap.add_argument("--sweep-draft", default="lookup", choices=("lookup", "ngram", "learned", "head"),
                    help="the draft of the k sweep")
    ap.add_argument("--sweep-tasks", default="repeat",
                    help="comma-separated Episode 7 tasks of the k sweep")
    ap.add_argument("--max-new", type=int, default=64, help="tokens per run in the speed table")
    ap.add_argument("--sessions", type=int, default=4, help="concurrent sessions in the memory table")
    args = ap.parse_args(argv)
    if args.compete:
        _compete(args.compete)
    only = set(args.only.split(","))
    rss_before = _rss_mb()
    if args.process_threads:
        from specdec_playable.lm import kernel

        kernel.set_process_threads(args.process_threads)
    t = time.perf_counter()
    model = get_model()
    load_s = time.perf_counter() - t
    after_load = _rss_mb()
    from specdec_playable.lm import kernel

    print(f"# bench_lm: {_cpu_name()}, {os.cpu_count()} cores, numpy {np.__version__} ({_blas()}), "
          f"load average {os.getloadavg()[0]:.2f}; threads: {kernel.prepare_threads()} "
          f"({kernel.prepare_threads(1)} for passes under {kernel.PARALLEL_FROM} positions)")
    print(f"model loaded in {load_s:.1f} s")
    if "step" in only:
        bench_step(model, args.repeats)
    if "passes" in only:
        bench_passes(model, args.repeats, args.write_csv, args.llama,
                     tuple(int(t) for t in args.threads.split(",") if t))
    if "breakdown" in only:
        bench_breakdown(model, args.repeats)
    if "prefetch" in only:
        bench_prefetch(model, args.repeats)
    if "threads" in only:
        bench_threads(model, args.repeats)
    if "speed" in only:
        bench_speed(model, max(1, args.repeats // 7), args.k, args.max_new)
    if "ksweep" in only:
        bench_ksweep(model, max(1, args.repeats // 7), args.max_new, args.sweep_draft,
                     tuple(t for t in args.sweep_tasks.split(",") if t))
    if "memory" in only:
        bench_memory(rss_before, after_load, load_s, model, args.sessions, args.max_new)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

from specdec_playable.lm import get_model
from specdec_playable.lm import model as model_mod
from specdec_playable.lm.model import linear

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
    # The memory floor: the bytes a step must read, at the speed a large matrix-vector product reads.
    big = model.weights.embed
    v = np.ones(big.shape[1], np.float32)
    got = _interleaved({"step": _pass(model, 1), "matmul": _matmuls(model, 1),
                        "head": lambda: big @ v}, repeats)
    step, mm, head = got["step"], got["matmul"], got["head"]
    gbps = big.nbytes / (head[0] / 1e3) / 1e9
    floor = model.weights.nbytes / (gbps * 1e9) * 1e3
    print("\n## Decode step vs its matrix products (one position, %d cached; interleaved repeats)"
          % CONTEXT)
    print("| what | median ms | p10 | p90 |")
    print("|---|---|---|---|")
    print("| full decode step | %.1f | %.1f | %.1f |" % step)
    print("| its matrix products alone | %.1f | %.1f | %.1f |" % mm)
    print("| weights read at the head's matvec speed (%.1f GB/s) | %.1f | | |" % (gbps, floor))
    print(f"\nstep / matmuls = **{step[0] / mm[0]:.2f}x** median, {step[1] / mm[1]:.2f}x p10 "
          f"(target <= 1.3x); matmuls / memory floor = {mm[0] / floor:.2f}x")
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


def _drafts():
    from specdec_playable.lm.drafts import EarlyExit, PromptLookup
    from specdec_playable.lm.ngram import NgramDraft

    return {"lookup": PromptLookup(), "learned": NgramDraft(), "early-exit m=6": EarlyExit(6)}


def bench_speed(model, repeats: int, k: int, max_new: int) -> dict:
    """Plain vs speculative tokens per second on the four benchmark prompts, interleaved runs."""
    from specdec_playable.lm.decode import draft_cost, generate, speculate
    from specdec_playable.lm.prompts import PROMPTS

    names = ("code-edit", "extraction", "json-reshape", "poem")
    drafts = _drafts()
    res = {(n, d): [] for n in names for d in ["plain", *drafts]}
    info = {}
    for _ in range(repeats):
        for n in names:
            ids = model.tokenizer.chat(PROMPTS[n][1])
            plain = generate(model, ids, max_new=max_new)
            res[(n, "plain")].append(plain)
            for dname, draft in drafts.items():
                spec = speculate(model, ids, draft, k, max_new=max_new)
                assert spec.tokens == plain.tokens
                res[(n, dname)].append(spec)
    print(f"\n## Tokens per second, plain vs speculative, greedy, k={k}, up to {max_new} new tokens "
          f"(median of {repeats} interleaved runs; prompt pass excluded)")
    print("| prompt | tokens | plain tok/s | draft | spec tok/s | speedup | acceptance | tokens/pass "
          "| draft cost c |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in names:
        plains = res[(n, "plain")]
        p_tps = float(np.median([p.tokens_per_second for p in plains]))
        for i, dname in enumerate(drafts):
            specs = res[(n, dname)]
            s_tps = float(np.median([s.tokens_per_second for s in specs]))
            ratio = float(np.median([s.tokens_per_second / p.tokens_per_second
                                     for s, p in zip(specs, plains)]))
            cs = [draft_cost(p, s) for s, p in zip(specs, plains) if s.proposed]
            s0 = specs[0]
            acc = "-" if np.isnan(s0.acceptance_rate) else f"{s0.acceptance_rate:.2f}"
            print(f"| {n if i == 0 else ''} | {len(plains[0].tokens) if i == 0 else ''} "
                  f"| {f'{p_tps:.1f}' if i == 0 else ''} | {dname} | {s_tps:.1f} | {ratio:.2f}x "
                  f"| {acc} | {s0.tokens_per_pass:.2f} | {np.median(cs) if cs else 0:.3f} |")
            info[(n, dname)] = dict(speedup=ratio, acceptance=s0.acceptance_rate,
                                    tokens_per_pass=s0.tokens_per_pass)
    return info


def bench_ksweep(model, repeats: int, max_new: int) -> None:
    """Prompt lookup on the code edit at every k: where verification cost meets acceptance."""
    from specdec_playable.lm.decode import generate, speculate
    from specdec_playable.lm.drafts import PromptLookup
    from specdec_playable.lm.prompts import PROMPTS

    ids = model.tokenizer.chat(PROMPTS["code-edit"][1])
    ks = (1, 2, 3, 4, 6, 8)
    ratios = {k: [] for k in ks}
    specs = {}
    for _ in range(repeats):
        for k in ks:
            plain = generate(model, ids, max_new=max_new)
            spec = speculate(model, ids, PromptLookup(), k, max_new=max_new)
            assert spec.tokens == plain.tokens
            ratios[k].append(spec.tokens_per_second / plain.tokens_per_second)
            specs[k] = spec
    print(f"\n## Prompt lookup on the code edit, by k (each run right after a plain run; median of "
          f"{repeats})")
    print("| k | acceptance | tokens per pass | speedup |")
    print("|---|---|---|---|")
    for k in ks:
        print(f"| {k} | {specs[k].acceptance_rate:.2f} | {specs[k].tokens_per_pass:.2f} "
              f"| {np.median(ratios[k]):.2f}x |")


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

    ids = model.tokenizer.chat(PROMPTS["json-reshape"][1])
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
    kv = model.new_cache(capacity=1).nbytes  # one position, every layer
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
    ap.add_argument("--only", default="step,passes,speed,ksweep,memory",
                    help="comma-separated tables: step, passes, speed, ksweep, memory")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--write-csv", action="store_true", help="write assets/pass_cost_cpu.csv")
    ap.add_argument("--k", type=int, default=4, help="draft length for the speed table")
    ap.add_argument("--max-new", type=int, default=64, help="tokens per run in the speed table")
    ap.add_argument("--sessions", type=int, default=4, help="concurrent sessions in the memory table")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    rss_before = _rss_mb()
    t = time.perf_counter()
    model = get_model()
    load_s = time.perf_counter() - t
    after_load = _rss_mb()
    print(f"# bench_lm: {_cpu_name()}, {os.cpu_count()} cores, numpy {np.__version__} ({_blas()}), "
          f"load average {os.getloadavg()[0]:.2f}")
    print(f"model loaded in {load_s:.1f} s")
    if "step" in only:
        bench_step(model, args.repeats)
    if "passes" in only:
        bench_passes(model, args.repeats, args.write_csv)
    if "speed" in only:
        bench_speed(model, max(1, args.repeats // 7), args.k, args.max_new)
    if "ksweep" in only:
        bench_ksweep(model, max(1, args.repeats // 7), args.max_new)
    if "memory" in only:
        bench_memory(rss_before, after_load, load_s, model, args.sessions, args.max_new)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

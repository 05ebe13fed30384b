"""The two weight formats side by side: float32 (``weights="f32"``) and the file's 4-bit blocks
(``weights="q4"``), at one thread and at two, in one interleaved run.

Run from a checkout after ``bash scripts/bootstrap.sh``:

    nice .venv/bin/python benchmarks/bench_weights.py                 # 15 repeats
    nice .venv/bin/python benchmarks/bench_weights.py --repeats 25 --threads 1

For each thread count, one loop times, round-robin so that load spikes hit every cell alike:

* the read floor of each format: every packed weight (float32 panels, or the blocks' bytes) read
  once by the kernel's own read loop (``kernel.read_all``), nothing computed;
* a decoding step (a pass over 1 new position) and passes over 2, 5, 9, 17 and 33 new positions,
  each after 128 cached positions, logits for every new position (``Model.forward``), rolled back;
* where the CPU has the integer tile (``kernel.tuning.INT_ISA``: 8-bit activations, what the
  4-bit model uses there), the same 4-bit passes by the float tiles too (float32 activations,
  ``tuning.set_int_isa("")``; column "q4 float tiles").

Then each format is loaded in a fresh process that runs passes over up to 33 positions, and its
resident memory is printed: all of it (VmRSS) and its own (RssAnon, what a second process does not
share; the rest is mostly mapped libraries such as LLVM's).

With ``--llama`` and llama-cpp-python importable, llama.cpp evaluates the same GGUF file (its
4-bit weights as stored, activations quantised to 8 bits) with the same thread count in the same
loop: a step and the same passes after the same number of cached positions (see
``benchmarks/bench_lm.py`` for how to build it for this CPU).

Prints two Markdown tables, the median and the minimum ms of the repeats (and the ratio to the same
format's step), with the date, the CPU, the load average before and after, and the command. The
machine may be shared: compare the cells of one table, not figures from different runs; on a busy
machine the minimum is the less disturbed figure.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import subprocess
import sys
import time

import numpy as np
from pathlib import Path

from specdec_playable.data import hardware
from specdec_playable.lm import get_model, kernel
from specdec_playable.lm.kernel import tuning

from _local import PASS_CONTEXT as CONTEXT, model_pass, read_floor

ROOT = Path(__file__).resolve().parents[1]
PASSES = (1, 2, 5, 9, 17, 33)
FORMATS = ("f32", "q4")

RSS_CODE = """
import gc, sys
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return int(line.split()[1]) * 1024
from specdec_playable.lm import get_model, kernel
kernel.warmup()
m = get_model(sys.argv[1])
cache = m.new_cache()
m.forward(m.tokenizer.chat('Hello there'), cache)
for n in (1, 2, 5, 9, 17, 33):
    m.forward(list(range(100, 100 + n)), cache)
gc.collect()
print(status('VmRSS'), status('RssAnon'), m.weights.nbytes)
"""


def _llama_cells(threads: int) -> dict:
    """llama.cpp's step and passes at ``threads`` threads, as cells ("llama", n); none without
    llama-cpp-python."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return {}
    from specdec_playable.lm.source import model_file

    llm = Llama(model_path=str(model_file()), n_threads=threads, n_threads_batch=threads,
                logits_all=True, n_ctx=CONTEXT + max(PASSES) + 8, n_batch=512, verbose=False)
    ids = [int(i) for i in (np.arange(CONTEXT + max(PASSES)) + 1000) % llm.n_vocab()]
    llm.reset()
    llm.eval(ids[:CONTEXT])

    def make(n):
        def run():
            llm._ctx.kv_cache_seq_rm(-1, CONTEXT, -1)  # back to the cached prefix
            llm.n_tokens = CONTEXT
            llm.eval(ids[CONTEXT:CONTEXT + n])
        return run
    return {("llama", n): make(n) for n in PASSES}


def _float_tiles(fn):
    """``fn`` run with the float tiles multiplying the blocks (the integer tile off), then back."""
    def run():
        tuning.set_int_isa("")
        try:
            fn()
        finally:
            tuning.set_int_isa(None)
    return run


def _cells(models: dict) -> dict:
    """What one loop times: (format, row) -> function; where this CPU has the integer tile, the
    4-bit model's passes by the float tiles too (format "q4f", the same weights)."""
    cells = {}
    for fmt, model in models.items():
        cells[(fmt, "floor")] = read_floor(model)
        for n in PASSES:
            cells[(fmt, n)] = model_pass(model, n)
            if fmt == "q4" and tuning.INT_ISA:
                cells[("q4f", n)] = _float_tiles(model_pass(model, n))
    return cells


def time_interleaved(cells: dict, threads: int, repeats: int) -> dict:
    """Every cell's ms at ``threads`` threads, round-robin over ``repeats`` rounds: the list."""
    kernel.use_threads(threads)
    try:
        for fn in cells.values():
            fn(), fn()
        times = {key: [] for key in cells}
        for _ in range(repeats):
            for key, fn in cells.items():
                t = time.perf_counter()
                fn()
                times[key].append((time.perf_counter() - t) * 1e3)
    finally:
        kernel.use_threads(None)
    return times


def resident(fmt: str) -> tuple[float, float, float]:
    """(VmRSS MB, RssAnon MB, weights MB) of a fresh process holding the model in ``fmt``."""
    out = subprocess.run([sys.executable, "-c", RSS_CODE, fmt], capture_output=True, text=True,
                         timeout=900, check=True)
    rss, anon, weights = map(int, out.stdout.split())
    return rss / 1e6, anon / 1e6, weights / 1e6


def _cpu() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        name = next(ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name"))
        return f"{name}, {os.cpu_count()} CPUs"
    except (OSError, StopIteration, subprocess.SubprocessError):
        return platform.processor() or "unknown CPU"


def _row(label: str, got: dict, key, columns) -> str:
    cells = []
    for t, fmt in columns:
        ms = got[t].get((fmt, key))
        ratio = "" if ms is None or key in ("floor", 1) else f" ({ms / got[t][(fmt, 1)]:.2f}x)"
        cells.append("" if ms is None else f"{ms:.1f}{ratio}")
    return f"| {label} | " + " | ".join(cells) + " |"


def table(got: dict, memory: dict, threads, stat: str = "median") -> list[str]:
    """The Markdown table of one statistic of the times (``median`` or ``min``, with ratios to
    the format's step) and resident memory; llama.cpp's columns where it ran."""
    fmts = FORMATS + (("q4f",) if any(("q4f", 1) in got[t] for t in threads) else ())
    fmts += (("llama",) if any(("llama", 1) in got[t] for t in threads) else ())
    columns = [(t, fmt) for t in threads for fmt in fmts]
    names = {"llama": "llama.cpp", "q4f": "q4 float tiles", "q4": f"q4 {tuning.INT_ISA or 'float'} tile"}
    head = " | ".join(f"{names.get(fmt, fmt)} {t} thr" for t, fmt in columns)
    lines = [f"| {stat} ms (x step) | {head} |", "|---" + "|---:" * len(columns) + "|"]
    lines.append(_row("read floor", got, "floor", columns))
    lines.append(_row("decode step", got, 1, columns))
    lines += [_row(f"pass({n})", got, n, columns) for n in PASSES[1:]]
    for label, cell in (("resident after passes (own)", lambda m: f"{m[0]:.0f} MB ({m[1]:.0f} own)"),
                        ("weights held", lambda m: f"{m[2]:.0f} MB")):
        row = " | ".join(cell(memory[fmt]) if fmt in memory else "" for _, fmt in columns)
        lines.append(f"| {label} | {row} |")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--llama", action="store_true", help="llama.cpp on the same file in the same loop")
    ap.add_argument("--write-csv", action="store_true", help="write the 4-bit curve at one thread "
                    f"(assets/{hardware.CPU_Q4_CSV_NAME} and its .meta.json) for Episode 8")
    args = ap.parse_args(argv)
    if args.write_csv and 1 not in [int(t) for t in args.threads.split(",")]:
        raise SystemExit("--write-csv records the one-thread curve: include 1 in --threads")
    threads = [int(t) for t in args.threads.split(",")]
    load0 = os.getloadavg()
    kernel.warmup()
    models = {fmt: get_model(fmt) for fmt in FORMATS}
    cells = _cells(models)
    times = {t: time_interleaved({**cells, **(_llama_cells(t) if args.llama else {})}, t, args.repeats)
             for t in threads}
    load1 = os.getloadavg()
    memory = {fmt: resident(fmt) for fmt in FORMATS}
    print(f"\n{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d %H:%M} UTC, {_cpu()}, "
          f"load average {load0[0]:.2f} before, {load1[0]:.2f} after the timed loops; "
          f"`{' '.join(['python', 'benchmarks/bench_weights.py', *sys.argv[1:]])}`, "
          f"{args.repeats} interleaved repeats, {CONTEXT} cached positions\n")
    for stat, fn in (("median", np.median), ("min", np.min)):
        got = {t: {key: float(fn(v)) for key, v in times[t].items()} for t in threads}
        print("\n".join(table(got, memory, threads, stat)) + "\n")
    if args.write_csv:
        write_csv(times[1], models, dict(load_average_start=round(load0[0], 2),
                                          load_average=round(load1[0], 2), repeats=args.repeats))
    return 0


def write_csv(times: dict, models: dict, run: dict) -> None:
    """The 4-bit kernel's one-thread pass times as Episode 8 reads them (the float32 medians of
    the same interleaved loop go in the metadata beside them)."""
    import csv
    import json

    out = ROOT / "assets" / hardware.CPU_Q4_CSV_NAME
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["model", "impl", "n_positions", "median_ms", "p10_ms", "p90_ms", "context"])
        for n in PASSES:
            v = np.asarray(times[("q4", n)])
            w.writerow(["smollm2-135m", "q4-kernel-kvcache", n, f"{np.median(v):.3f}",
                        f"{np.percentile(v, 10):.3f}", f"{np.percentile(v, 90):.3f}", CONTEXT])
    cpu = _cpu()
    meta = dict(cpu=cpu.rsplit(",", 1)[0], cores=os.cpu_count(), threads=1, kernel="numba" if kernel.HAVE_NUMBA else "numpy",
                numpy=np.__version__, python=platform.python_version(),
                date_utc=f"{_dt.datetime.now(_dt.timezone.utc):%Y-%m-%d}", **run,
                floor_ms=round(float(np.median(times[("q4", "floor")])), 3),
                weight_bytes=int(models["q4"].weights.nbytes),
                weights="the GGUF file's blocks as stored: Q4_1, and Q8_0 for the embedding and tied head",
                f32_median_ms={str(n): round(float(np.median(times[("f32", n)])), 3) for n in PASSES},
                q4_median_ms={str(n): round(float(np.median(times[("q4", n)])), 3) for n in PASSES},
                f32_floor_ms=round(float(np.median(times[("f32", "floor")])), 3),
                tile=(f"integer ({tuning.INT_ISA}): 8-bit activations" if tuning.INT_ISA
                      else "float (float32 activations)"),
                **({"q4_float_tiles_median_ms": {str(n): round(float(np.median(times[("q4f", n)])), 3)
                                                 for n in PASSES}} if ("q4f", 1) in times else {}),
                command="benchmarks/bench_weights.py " + " ".join(sys.argv[1:]))
    out.with_name(hardware.CPU_Q4_META_NAME).write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {out} and {hardware.CPU_Q4_META_NAME}")


if __name__ == "__main__":
    raise SystemExit(main())

"""Is the race fair when the machine changes? Its speedup, quiet, under a load that arrives half
way, and with two or three races at once, beside the work-based figure and the old two-clock way.

For one prompt and draft (greedy, so every run writes the same tokens), each condition is run
``--repeats`` times, every race in a process of its own with one thread per run, as the server's
model processes run them:

* quiet: nothing else runs;
* load half way: ``--busy`` busy processes start when the plain run has written half its tokens
  (what another visitor's Run does to a race already going);
* a class of 2 and of 3: two or three races start together, each in its own process (a class
  pressing Run on a two-core server), and each race is reported;
* two clocks (the old way, for comparison): ``speculate`` then ``generate`` one after the other,
  quiet and with the load arriving when the speculative run ends, so the plain run alone meets it.

The claim under test: the race's speedup stays within 10% of the quiet median under every
condition. Where the physics changes under load (a memory-bound pass slowed more than a
compute-bound one), the work-based figure, measured from the same race's own passes, moves with
the speedup; the table prints both, and their ratios to the quiet medians, side by side.

The race times its passes by the process's CPU time (``lm.race.CPU_CLOCK``); ``--clock wall``
times them by the wall clock instead, to see what a wait for a core does to it.

Run: ``python benchmarks/bench_fair_race.py [--task repeat] [--draft lookup] [--k 4]
[--max-new 64] [--busy 2] [--repeats 5] [--class-sizes 2 3] [--clock cpu|wall]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.race import N_RESAMPLES, LEVEL
from specdec_playable.lm.registry import DRAFTS, draft_key

MAX_BUSY = 8
#: One thread per run, as the server's model processes run (runtime.jobs.blas_env and the kernel's).
ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                                      "NUMBA_NUM_THREADS")}
#: Within this share of the quiet median, the race counts as fair.
FAIR = 0.10


def two_clock_speedup(spec, plain, *, rng=0, n_resamples: int = N_RESAMPLES,
                      level: float = LEVEL) -> tuple[float, float, float]:
    """The old method: two runs timed one after the other, each pass resampled on its own clock.
    Returns ``(speedup, low, high)``; its interval cannot see a load change between the runs."""
    rng = np.random.default_rng(rng)

    def per_pass(run):
        ev = run.events.where((run.events.lane == "big") & (run.events.round > 0))
        ms, tok = {}, {}
        for kind, rnd, s, e in zip(ev.kind.tolist(), ev.round.tolist(), ev.start_ms.tolist(),
                                   ev.end_ms.tolist()):
            if kind in ("generate", "verify"):
                ms[rnd] = ms.get(rnd, 0.0) + (e - s)
            if kind in ("generate", "accepted", "correction", "bonus"):
                tok[rnd] = tok.get(rnd, 0) + 1
        dr = run.events.of_kind("draft")
        for rnd, s, e in zip(dr.round.tolist(), dr.start_ms.tolist(), dr.end_ms.tolist()):
            ms[rnd] = ms.get(rnd, 0.0) + (e - s)
        keys = sorted(ms)
        return np.array([ms[k] for k in keys]), np.array([tok.get(k, 0) for k in keys], float)

    (sm, st), (pm, pt) = per_pass(spec), per_pass(plain)
    point = (pm.sum() / pt.sum()) / (sm.sum() / st.sum())
    i = rng.integers(0, sm.size, (n_resamples, sm.size))
    j = rng.integers(0, pm.size, (n_resamples, pm.size))
    boot = (pm[j].sum(1) / pt[j].sum(1)) / (sm[i].sum(1) / st[i].sum(1))
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(boot, [tail, 100 - tail])
    return float(point), float(low), float(high)


class Load:
    """Busy processes (``while True: pass``), started on demand and always stopped."""

    def __init__(self, n: int) -> None:
        self.n, self.procs = n, []

    def start(self) -> None:
        if not self.procs:
            self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                          for _ in range(self.n)]

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            p.wait(10)
        self.procs = []


# --- one race, in a child process -------------------------------------------------------------


def child(args) -> int:
    """Run one measurement in this process and print it as JSON (called with ``--child``)."""
    from specdec_playable.lm import get_model, kernel
    from specdec_playable.lm.decode import generate, speculate
    from specdec_playable.lm.race import CPU_CLOCK, fair_speedup, race
    from specdec_playable.lm.registry import make_draft

    model = get_model()
    kernel.warmup()
    ids = model.tokenizer.chat(PROMPTS[args.task].message)
    generate(model, ids, max_new=4)  # warm caches outside the timed runs
    if args.start_at:
        time.sleep(max(0.0, args.start_at - time.time()))
    load = Load(args.busy) if args.load_half_way else None
    try:
        if args.method == "race":
            def on_turn(run, update):
                if load is not None and run == "plain" and update.total_tokens >= args.max_new // 2:
                    load.start()

            clock = time.perf_counter if args.clock == "wall" else CPU_CLOCK
            r = race(model, ids, make_draft(args.draft), args.k, max_new=args.max_new, progress=on_turn,
                     clock=clock)
            f = fair_speedup(r.turns, rng=0)
            out = dict(speedup=f.speedup, low=f.low, high=f.high, work=f.work_speedup,
                       tokens_per_pass=f.tokens_per_pass, step_ms=f.step_ms,
                       pass_cost=f.cost_of(f.common_size), same=r.spec.tokens == r.plain.tokens)
        else:
            spec = speculate(model, ids, make_draft(args.draft), args.k, max_new=args.max_new)
            if load is not None:
                load.start()
            plain = generate(model, ids, max_new=args.max_new)
            sp, lo, hi = two_clock_speedup(spec, plain)
            out = dict(speedup=sp, low=lo, high=hi, work=float("nan"), same=spec.tokens == plain.tokens)
    finally:
        if load is not None:
            load.stop()
    out["load_average"] = os.getloadavg()[0]
    print(json.dumps(out))
    return 0


def run_children(args, n: int, *, method: str, load_half_way: bool) -> list[dict]:
    """``n`` measurements at once, each in its own process, starting together."""
    start_at = time.time() + 18.0 + 4.0 * n  # after every child has loaded the model
    cmd = [sys.executable, __file__, "--child", "--task", args.task, "--draft", args.draft,
           "--k", str(args.k), "--max-new", str(args.max_new), "--busy", str(args.busy),
           "--method", method, "--start-at", str(start_at), "--clock", args.clock]
    if load_half_way:
        cmd.append("--load-half-way")
    env = {**os.environ, **ONE_THREAD}
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True) for _ in range(n)]
    outs = []
    for p in procs:
        stdout, _ = p.communicate(timeout=600)
        if p.returncode != 0:
            raise RuntimeError(f"a measurement failed with exit code {p.returncode}")
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    return outs


CONDITIONS = {
    # name: (method, races at once, load half way)
    "race, quiet": ("race", 1, False),
    "race, load half way": ("race", 1, True),
    "two clocks, quiet": ("two-clock", 1, False),
    "two clocks, load half way": ("two-clock", 1, True),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="repeat", choices=sorted(PROMPTS))
    ap.add_argument("--draft", default="lookup", type=draft_key, help=f"one of {list(DRAFTS)}")
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--busy", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--class-sizes", type=int, nargs="*", default=[2, 3])
    ap.add_argument("--clock", default="cpu", choices=("cpu", "wall"),
                    help="what the race times its passes by (default: the process's CPU time)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--method", default="race", choices=("race", "two-clock"), help=argparse.SUPPRESS)
    ap.add_argument("--load-half-way", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--start-at", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if not 1 <= args.busy <= MAX_BUSY or not 1 <= args.repeats <= 10 or not 4 <= args.max_new <= 256 \
            or not 1 <= args.k <= 16 or any(not 2 <= n <= 4 for n in args.class_sizes):
        ap.error(f"--busy 1-{MAX_BUSY}, --repeats 1-10, --max-new 4-256, --k 1-16, class sizes 2-4")
    if args.child:
        return child(args)
    conditions = dict(CONDITIONS)
    for n in args.class_sizes:
        conditions[f"race, a class of {n}"] = ("race", n, False)
    print(f"{args.task}, {args.draft}, k = {args.k}, {args.max_new} tokens, greedy, one thread per "
          f"run, the race timed by {'the wall clock' if args.clock == 'wall' else 'CPU time'}; load: "
          f"{args.busy} busy processes from half way; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d %H:%M')}\n")
    print("| condition | repeat | speedup | 95% interval | by the work | tokens/pass | pass cost | "
          "load avg |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    results: dict[str, list[dict]] = {name: [] for name in conditions}
    for rep in range(1, args.repeats + 1):
        for name, (method, n, half) in conditions.items():
            for out in run_children(args, n, method=method, load_half_way=half):
                results[name].append(out)
                assert out["same"], "greedy runs must write the same tokens"
                print(f"| {name} | {rep} | {out['speedup']:.2f}x | {out['low']:.2f}x-{out['high']:.2f}x | "
                      f"{_x(out['work'])} | {_f(out.get('tokens_per_pass'))} | {_f(out.get('pass_cost'))} | "
                      f"{out['load_average']:.1f} |", flush=True)
    print()
    summarise(results)
    return 0


def summarise(results: dict[str, list[dict]]) -> None:
    """Per condition: the median speedup and work-based figure, each over its quiet median."""
    def median(name, key):
        vals = [r[key] for r in results[name] if np.isfinite(r[key])]
        return statistics.median(vals) if vals else float("nan")

    quiet = {m: (median(f"{m}, quiet", "speedup"), median(f"{m}, quiet", "work"))
             for m in ("race", "two clocks")}
    print("| condition | median speedup | over quiet | worst over quiet | median by the work | "
          f"over quiet | every race within {FAIR:.0%} |")
    print("|---|---:|---:|---:|---:|---:|:---:|")
    for name, rows in results.items():
        m = "race" if name.startswith("race") else "two clocks"
        q_sp, q_work = quiet[m]
        sp, work = median(name, "speedup"), median(name, "work")
        ratios = [r["speedup"] / q_sp for r in rows]
        worst = max(ratios, key=lambda x: abs(x - 1.0))
        ok = all(abs(x - 1.0) <= FAIR for x in ratios)
        print(f"| {name} | {sp:.2f}x | {sp / q_sp:.2f} | {worst:.2f} | {_x(work)} | "
              f"{_f(work / q_work) if np.isfinite(work) else '–'} | {'yes' if ok else 'no'} |")


def _x(v) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{v:.2f}x"


def _f(v) -> str:
    return "–" if v is None or not np.isfinite(v) else f"{v:.2f}"


if __name__ == "__main__":
    sys.exit(main())

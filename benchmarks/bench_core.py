"""How fast is the core's Monte-Carlo, against the cost of its random draws?

Times four ways through the same 2000 rounds of q=0.8, k=4, c=0.1:

(a) ``sim.montecarlo.simulate``;
(b) the floor: only drawing its uniforms, ``rng.random((2000, 4))``;
(c) a plain Python loop, one ``random.random()`` per draft until the first miss,
    returning what simulate returns (per-round counts, speedup, 95% CI);
(c0) the same loop keeping only a token count, the least a loop can do;

and prints a markdown table of median microseconds per call, with two targets:
simulate within 3x of the floor, and at least 10x faster than the loop (judged
against both (c) and (c0)).

Run: ``python benchmarks/bench_core.py [--repeat 15]``. This measures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import statistics
import timeit

import numpy as np

from specdec_playable.sim.montecarlo import simulate

Q, K, C, N_ROUNDS = 0.8, 4, 0.1, 2000
SEED = 12345
Z95 = 1.959963984540054


def python_loop(rand, q: float = Q, k: int = K, c: float = C, n_rounds: int = N_ROUNDS):
    """The same rounds and the same outputs as ``simulate``, one draw at a time.

    Records the accepted drafts of every round and returns them with the
    speedup and its 95% confidence interval.
    """
    accepted = []
    total = total_sq = 0
    for _ in range(n_rounds):
        a = 0
        while a < k and rand() < q:
            a += 1
        accepted.append(a)
        total += a + 1
        total_sq += (a + 1) ** 2
    cost = 1.0 + k * c
    mean = total / n_rounds
    sd = math.sqrt(max(total_sq - total * mean, 0.0) / (n_rounds - 1))
    half = Z95 * sd / math.sqrt(n_rounds)
    return accepted, mean / cost, (mean - half) / cost, (mean + half) / cost


def bare_loop(rand, q: float = Q, k: int = K, n_rounds: int = N_ROUNDS) -> int:
    """The least a loop can do: count tokens, keep nothing per round."""
    tokens = 0
    for _ in range(n_rounds):
        a = 0
        while a < k and rand() < q:
            a += 1
        tokens += a + 1
    return tokens


def time_us(cases: dict, repeat: int) -> dict:
    """Per-call times of each case, in microseconds, one per run.

    Each case gets a call count from ``timeit.Timer.autorange`` (one run lasts
    >= 0.2 s), then the cases are timed round-robin ``repeat`` times, so load
    from other processes falls on all of them more evenly than back-to-back
    blocks would. On a busy machine, read the best times too.
    """
    timers = {name: timeit.Timer(fn) for name, fn in cases.items()}
    numbers = {name: t.autorange()[0] for name, t in timers.items()}
    runs: dict = {name: [] for name in cases}
    for _ in range(repeat):
        for name, t in timers.items():
            runs[name].append(t.timeit(numbers[name]) / numbers[name] * 1e6)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15, help="timeit runs per case (default 15)")
    args = parser.parse_args()

    rng = np.random.default_rng(SEED)
    py = random.Random(SEED)
    cases = {
        "simulate": lambda: simulate(Q, K, C, N_ROUNDS, rng=rng),
        "floor": lambda: rng.random((N_ROUNDS, K)),
        "loop": lambda: python_loop(py.random),
        "bare": lambda: bare_loop(py.random),
    }
    runs = time_us(cases, args.repeat)
    times = {name: statistics.median(r) for name, r in runs.items()}
    best = {name: min(r) for name, r in runs.items()}
    vs_floor = times["simulate"] / times["floor"]
    vs_loop = times["loop"] / times["simulate"]
    vs_bare = times["bare"] / times["simulate"]

    # Both estimate the same speedup; print them side by side as a sanity check.
    n_check = 200_000
    sim = simulate(Q, K, C, n_check, rng=SEED)
    _, loop_speedup, loop_lo, loop_hi = python_loop(random.Random(SEED).random, n_rounds=n_check)

    print(f"## sim.montecarlo.simulate, q={Q}, k={K}, c={C}, {N_ROUNDS} rounds\n")
    print(f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}; "
          f"median of {args.repeat} interleaved timeit runs; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end\n")
    rows = {
        "simulate": ("(a) simulate", f"`simulate({Q}, {K}, {C}, {N_ROUNDS}, rng=rng)`"),
        "floor": ("(b) floor", f"`rng.random(({N_ROUNDS}, {K}))`, the draws alone"),
        "loop": ("(c) loop", "Python loop, `random.random()` per draft until first miss; "
                 "same outputs as (a): per-round counts, speedup, 95% CI"),
        "bare": ("(c0) bare loop", "(c) keeping only a token count"),
    }
    print("| case | what it does | median µs/call | best µs/call |")
    print("|---|---|---:|---:|")
    for name, (label, what) in rows.items():
        print(f"| {label} | {what} | {times[name]:.1f} | {best[name]:.1f} |")
    print()
    print("| target (on medians) | measured | goal | verdict | on best times |")
    print("|---|---:|---:|---|---:|")
    print(f"| (a) / (b): simulate vs floor | {vs_floor:.2f}x | <= 3x | "
          f"{'PASS' if vs_floor <= 3 else 'MISS'} | {best['simulate'] / best['floor']:.2f}x |")
    print(f"| (c) / (a): loop vs simulate | {vs_loop:.1f}x | >= 10x | "
          f"{'PASS' if vs_loop >= 10 else 'MISS'} | {best['loop'] / best['simulate']:.1f}x |")
    print(f"| (c0) / (a): bare loop vs simulate | {vs_bare:.1f}x | >= 10x | "
          f"{'PASS' if vs_bare >= 10 else 'MISS'} | {best['bare'] / best['simulate']:.1f}x |")
    print()
    print(f"Same quantity either way ({n_check:,} rounds): simulate {sim.speedup:.4f} "
          f"[{sim.ci_low:.4f}, {sim.ci_high:.4f}], loop {loop_speedup:.4f} "
          f"[{loop_lo:.4f}, {loop_hi:.4f}], theory {sim.theory_speedup:.4f}.")


if __name__ == "__main__":
    main()

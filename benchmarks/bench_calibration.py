"""The server's calibration on this CPU, quiet and under load: does it read the same figures?

Run from a checkout after ``bash scripts/bootstrap.sh``:

    .venv/bin/python benchmarks/bench_calibration.py                  # 5 runs per condition
    .venv/bin/python benchmarks/bench_calibration.py --runs 3 --weights q4 --json out.json

Three conditions, each ``--runs`` calibrations (``lm.calibrate.calibrate_passes`` on the model's
passes, the server's default budget) in this process, one after another:

* ``quiet``: nothing started by this script (the machine may still be shared: the load average is
  printed with every run);
* ``busy``: two busy-loop processes (``while True: pass``), started before and stopped after;
* ``second``: a second model process (``runtime.model_process.ModelProcess``, told not to measure)
  starts as each calibration begins, so its import and model load run during the timing, as when a
  server's second worker starts while the first one is calibrating.

For every run it prints the calibration's figure per size, whether it had to take the running
maximum, and, for comparison, the old start-up figure (each size's median over the same first
rounds, before any extra timing) with whether that was monotone. Then per condition the median
over runs per size and its ratio to the quiet median.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

from specdec_playable.data.machine import this_machine
from specdec_playable.lm import get_model, kernel
from specdec_playable.lm.calibrate import BUDGET_S, CALIBRATION_NS, _pass_timer, calibrate_passes
from specdec_playable.runtime import calibration as records
from specdec_playable.runtime import model_process

BUSY = "while True: pass"


def one_run(model) -> dict:
    """One calibration, with every pass it timed (to take the old medians from)."""
    timer = _pass_timer(model, CALIBRATION_NS)
    seen: dict[int, list[float]] = {n: [] for n in CALIBRATION_NS}

    def time_pass(n: int) -> float:
        ms = timer(n)
        seen[n].append(ms)
        return ms

    t = calibrate_passes(time_pass, CALIBRATION_NS, budget_s=BUDGET_S, threads=kernel.prepare_threads,
                         kernel_name="numba" if kernel.HAVE_NUMBA else "numpy")
    old = [float(np.median(seen[n][:t.repeats])) for n in CALIBRATION_NS]
    return dict(ms=list(t.ms), repeats=t.repeats, retimed=t.retimed, enforced=t.enforced,
                raised=list(t.raised), seconds=round(t.seconds, 2), old_median_ms=[round(m, 2) for m in old],
                old_monotone=all(b >= a for a, b in zip(old, old[1:])), load=os.getloadavg()[0])


def condition(model, name: str, runs: int) -> list[dict]:
    busy, out = [], []
    if name == "busy":
        busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2)]
    try:
        for i in range(runs):
            second = None
            if name == "second":
                records.STORE.claim(model.format)  # as if this process's first child were measuring
                second = model_process.ModelProcess(weights=model.format)
            try:
                out.append(one_run(model))
            finally:
                if second is not None:
                    second.close()
                    records.STORE.release(model.format)
            r = out[-1]
            print(f"{name} {i + 1}: " + " ".join(f"{m:6.1f}" for m in r["ms"])
                  + f"  forced={'yes' if r['enforced'] else 'no'} retimed={r['retimed']}"
                  f"  | old medians " + " ".join(f"{m:6.1f}" for m in r["old_median_ms"])
                  + f" monotone={'yes' if r['old_monotone'] else 'NO'}  load {r['load']:.1f}",
                  flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--weights", choices=("f32", "q4"), default="f32")
    ap.add_argument("--only", default="quiet,busy,second")
    ap.add_argument("--json", default=None, metavar="PATH", help="also write every run here")
    args = ap.parse_args(argv)
    model = get_model(args.weights)
    kernel.warmup()
    print(f"{this_machine().describe()}, threads "
          f"{kernel.prepare_threads()}, weights {args.weights}, budget {BUDGET_S:g} s; sizes "
          + " ".join(f"{n:>6}" for n in CALIBRATION_NS), flush=True)
    results = {name: condition(model, name, args.runs) for name in args.only.split(",")}
    quiet = np.median([r["ms"] for r in results.get("quiet", [])], axis=0) if "quiet" in results else None
    for name, runs in results.items():
        med = np.median([r["ms"] for r in runs], axis=0)
        line = f"{name:7s} median " + " ".join(f"{m:6.1f}" for m in med)
        if quiet is not None:
            line += "  ratio " + " ".join(f"{m / q:5.2f}" for m, q in zip(med, quiet))
        print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(weights=args.weights, sizes=list(CALIBRATION_NS), results=results), fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

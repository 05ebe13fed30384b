"""Record Episode 7's task runs for pages that cannot run the model (the static export, a server
without the model) and for the episode's lesson table.

For every task of ``lm.prompts.TASKS`` and every draft, three comparisons (a speculative run and a
plain run of the same prompt, taking turns pass by pass: the fair race of ``lm.race``) at k = 4,
greedy, up to 64 new tokens, exactly as the page runs it (``lm.compare.compare``). The run kept
for the page is the one with the median speedup; every repeat's speedup, interval, work-based
figure and load average are kept beside it. Writes ``assets/lm/ep7_recorded.json.gz`` with the
machine, the load average before and after, and the date; prints a table. Greedy output is deterministic, so
a test checks that the recorded tokens are what the model writes now; the times are what this
machine measured, and change from run to run. Matrix products use the server's workers' BLAS
thread count (``runtime.jobs.BLAS_THREADS``), so the clocks are the page's.

Run: ``python scripts/record_ep7_runs.py [--out assets/lm/ep7_recorded.json.gz]``.
``--drafts head`` records only the drafts named and keeps every other run of the file as it was
(the meta block then lists the addition with its own date and load average under ``added``).
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

from specdec_playable.runtime.jobs import BLAS_ENV_NAMES, BLAS_THREADS
from specdec_playable.lm import get_model
from specdec_playable.lm.compare import compare, comparison_to_json
from specdec_playable.lm.prompts import TASKS
from specdec_playable.lm.registry import DRAFTS, draft_key

K = 4
MAX_NEW = 64
REPEATS = 3
OUT = Path(__file__).resolve().parents[1] / "assets" / "lm" / "ep7_recorded.json.gz"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--drafts", nargs="+", choices=list(DRAFTS), default=list(DRAFTS),
                    help="record only these drafts, keeping the file's other runs")
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    # As the server's model processes run (runtime.jobs.blas_env); a BLAS library reads its
    # thread count when it loads, so the script is started with it rather than told it here.
    wrong = [n for n in BLAS_ENV_NAMES if os.environ.get(n) != str(BLAS_THREADS)]
    if wrong:
        ap.error(f"run with {' '.join(f'{n}={BLAS_THREADS}' for n in BLAS_ENV_NAMES)} set, as the "
                 "server's model processes are (see runtime.jobs.blas_env)")
    model = get_model()
    runs = []
    print("| task | draft | tokens | accepted | tokens per pass | by the work | speedup, median of "
          f"{REPEATS} | the {REPEATS} repeats | load average | same text |")
    print("|---|---|---:|---:|---:|---:|---:|---|---|---|")
    for task in TASKS:
        ids = model.tokenizer.chat(TASKS[task].message)
        for draft in args.drafts:
            done = []
            for _ in range(REPEATS):
                load = os.getloadavg()[0]
                c = compare(model, ids, draft, K, max_new=MAX_NEW)
                f = c.fair
                done.append((c, dict(speedup=f.speedup, low=f.low, high=f.high,
                                     work_speedup=f.work_speedup, verdict=f.verdict,
                                     load_average=round(load, 2))))
            order = sorted(range(REPEATS), key=lambda i: done[i][1]["speedup"])
            c, _ = done[order[REPEATS // 2]]
            same = all(d[0].spec.tokens == d[0].plain.tokens == c.plain.tokens for d in done)
            reps = ", ".join(f"{d['speedup']:.2f}x [{d['low']:.2f}-{d['high']:.2f}]" for _, d in done)
            loads = "/".join(f"{d['load_average']:.1f}" for _, d in done)
            print(f"| {task} | {draft} | {len(c.spec.tokens)} | {c.spec.acceptance_rate:.2f} | "
                  f"{c.spec.tokens_per_pass:.2f} | {c.fair.work_speedup:.2f}x | {c.speedup:.2f}x | "
                  f"{reps} | {loads} | {same} |", flush=True)
            runs.append(dict(task=task, draft=draft, run=comparison_to_json(c),
                             repeats=[d for _, d in done]))
    import numpy

    meta = dict(date=datetime.date.today().isoformat(), k=K, max_new=MAX_NEW, greedy=True,
                weights=model.format,
                repeats=REPEATS, method="race: turns pass by pass (lm.race), median of the repeats",
                cpu=platform.processor() or platform.machine(), cores=os.cpu_count(),
                python=platform.python_version(), numpy=numpy.__version__,
                load_average_before=[round(x, 2) for x in load_before],
                load_average_after=[round(x, 2) for x in os.getloadavg()],
                script="scripts/record_ep7_runs.py")
    if set(args.drafts) != set(DRAFTS):
        meta, runs = merged(args.out, meta, runs, args.drafts)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wt", encoding="utf-8") as fh:
        json.dump(dict(meta=meta, runs=runs), fh, separators=(",", ":"),
                  default=lambda o: o.item() if isinstance(o, np.generic) else str(o))
    print(f"\nwrote {args.out} ({args.out.stat().st_size:,} bytes); load average "
          f"{meta['load_average_before']} before, {meta['load_average_after']} after")
    return 0


def merged(path: Path, meta: dict, runs: list, drafts) -> tuple[dict, list]:
    """The file's runs with those of ``drafts`` replaced, in task then DRAFTS order; its meta
    with this recording listed under ``added``."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        old = json.load(fh)
    for r in old["runs"]:  # recordings made before the n-gram table was called "ngram"
        r["draft"] = draft_key(r["draft"])
    keep = [r for r in old["runs"] if r["draft"] not in drafts]
    order = {(t, d): i for i, (t, d) in enumerate((t, d) for t in TASKS for d in DRAFTS)}
    out = sorted(keep + runs, key=lambda r: order[(r["task"], r["draft"])])
    added = [a for a in old["meta"].get("added", []) if not set(a["drafts"]) <= set(drafts)]
    added.append(dict(drafts=list(drafts), date=meta["date"],
                      load_average_before=meta["load_average_before"],
                      load_average_after=meta["load_average_after"]))
    return dict(old["meta"], added=added), out


if __name__ == "__main__":
    sys.exit(main())

"""Record Episode 7's task runs for pages that cannot run the model (the static export, a server
without the model) and for the episode's lesson table.

For every task of ``state.ep7.TASKS`` and every draft, one comparison (speculative run, then a
plain run of the same prompt) at k = 4, greedy, up to 64 new tokens, exactly as the page runs it
(``lm.compare.compare``). Writes ``assets/lm/ep7_recorded.json.gz`` with the machine, the
load average before and after, and the date; prints a table. Greedy output is deterministic, so
a test checks that the recorded tokens are what the model writes now; the times are what this
machine measured, and change from run to run. Matrix products use the server's workers' BLAS
thread count (``serve.jobs.BLAS_THREADS``), so the clocks are the page's.

Run: ``python scripts/record_ep7_runs.py [--out assets/lm/ep7_recorded.json.gz]``.
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

from specdec_playable.serve.jobs import BLAS_ENV_NAMES, BLAS_THREADS
from specdec_playable.lm import get_model
from specdec_playable.lm.compare import DRAFTS, compare, comparison_to_json
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.state.ep7 import TASKS

K = 4
MAX_NEW = 64
OUT = Path(__file__).resolve().parents[1] / "assets" / "lm" / "ep7_recorded.json.gz"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    load_before = os.getloadavg()
    # As the server's model processes run (serve.jobs.blas_env); a BLAS library reads its
    # thread count when it loads, so the script is started with it rather than told it here.
    wrong = [n for n in BLAS_ENV_NAMES if os.environ.get(n) != str(BLAS_THREADS)]
    if wrong:
        ap.error(f"run with {' '.join(f'{n}={BLAS_THREADS}' for n in BLAS_ENV_NAMES)} set, as the "
                 "server's model processes are (see serve.jobs.blas_env)")
    model = get_model()
    runs = []
    print("| task | draft | tokens | accepted | tokens per pass | plain tok/s | spec tok/s | speedup | same text |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for task in TASKS:
        ids = model.tokenizer.chat(PROMPTS[task][1])
        for draft in DRAFTS:
            c = compare(model, ids, draft, K, max_new=MAX_NEW)
            same = c.spec.tokens == c.plain.tokens
            print(f"| {task} | {draft} | {len(c.spec.tokens)} | {c.spec.acceptance_rate:.2f} | "
                  f"{c.spec.tokens_per_pass:.2f} | {c.plain.tokens_per_second:.1f} | "
                  f"{c.spec.tokens_per_second:.1f} | {c.speedup:.2f}x | {same} |", flush=True)
            runs.append(dict(task=task, draft=draft, run=comparison_to_json(c)))
    import numpy

    meta = dict(date=datetime.date.today().isoformat(), k=K, max_new=MAX_NEW, greedy=True,
                cpu=platform.processor() or platform.machine(), cores=os.cpu_count(),
                python=platform.python_version(), numpy=numpy.__version__,
                load_average_before=[round(x, 2) for x in load_before],
                load_average_after=[round(x, 2) for x in os.getloadavg()],
                script="scripts/record_ep7_runs.py")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(args.out, "wt", encoding="utf-8") as fh:
        json.dump(dict(meta=meta, runs=runs), fh, separators=(",", ":"),
                  default=lambda o: o.item() if isinstance(o, np.generic) else str(o))
    print(f"\nwrote {args.out} ({args.out.stat().st_size:,} bytes); load average "
          f"{meta['load_average_before']} before, {meta['load_average_after']} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())

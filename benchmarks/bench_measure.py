"""How long the real model takes to score a pasted text for Episode 4, per chunk size.

Run from a checkout after ``bash scripts/bootstrap.sh``:

    .venv/bin/python benchmarks/bench_measure.py            # a 2,000-character paste, chunks 16/32/64
    .venv/bin/python benchmarks/bench_measure.py --repeats 3

``lm.measure.measure_text`` scores a text one pass per chunk of positions and reports progress
(and checks for a cancel) between passes: smaller chunks answer a Cancel sooner and move the
progress bar more often, larger ones use the CPU better. The table gives, per chunk size, the
median wall time of the whole text, tokens per second and the longest single pass (how long a
Cancel may wait), with the load average: on a shared machine compare the rows of one run.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from specdec_playable.shipped import asset_path
from specdec_playable.lm import get_model
from specdec_playable.lm.measure import measure_text
from specdec_playable.data.texts import PASTE_MAX_CHARS


def paste_text() -> str:
    """English prose, 2,000 characters: the longest paste Episode 4 accepts."""
    prose = asset_path("lm/heldout_english.txt").read_text(encoding="utf-8")
    return (prose * (PASTE_MAX_CHARS // len(prose) + 1))[:PASTE_MAX_CHARS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--chunks", default="16,32,64")
    args = ap.parse_args()
    model = get_model()
    text = paste_text()
    print(f"load average at start: {os.getloadavg()[0]:.1f}; text: {len(text):,} characters")
    print(f"{'chunk':>5} {'tokens':>6} {'seconds':>8} {'tokens/s':>8} {'longest pass (s)':>16}")
    for chunk in (int(c) for c in args.chunks.split(",")):
        walls, longest = [], []
        for _ in range(args.repeats):
            stamps = []
            t0 = time.perf_counter()
            out = measure_text(model, text, chunk=chunk,
                               report=lambda d, n: stamps.append(time.perf_counter()))
            walls.append(time.perf_counter() - t0)
            longest.append(float(np.diff(stamps).max()) if len(stamps) > 1 else walls[-1])
        wall = float(np.median(walls))
        print(f"{chunk:>5} {len(out):>6} {wall:>8.1f} {len(out) / wall:>8.1f} "
              f"{float(np.median(longest)):>16.2f}")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

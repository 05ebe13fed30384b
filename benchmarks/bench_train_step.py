"""What cutting each batch to its longest row, and sorting rows by length, save the head's training.

A training step costs about in proportion to the positions its batch keeps. ``train.loop.make_batch``
cuts a batch to its longest row rounded up to a multiple of ``LENGTH_STEP`` (64) positions, and
``--sort-window W`` deals each run of W steps' rows out again by length, so a batch holds rows of
like length and the cut keeps less padding. Before the cut, every batch kept all 256 positions.

Two parts:

1. Seconds per step at each width the cut gives (64, 128, 192, 256): the median of ``--repeats``
   steps after one that compiles (its time is the compile's, printed beside), for the recipe's
   head (blocks 2 and 15 fed, 4 guesses unrolled, batches of 8, a readout of 8,192 tokens), on
   random inputs, since a step's cost does not depend on the values.
2. The lengths of the self-distillation corpus's first ``--sd-rows`` training rows (from the
   features stage; the rows come in a seeded order, so they sample the whole corpus), drawn for
   one epoch by the epoch sampler: the positions each scheme keeps per real token, and the
   epoch's seconds from part 1.

Run from a checkout, beside nothing else (a busy machine's step times are not its own):

    .venv/bin/python benchmarks/bench_train_step.py [--sd-rows 1024] [--repeats 3] \\
        [--features-dir DIR] [--work DIR]

Prints the Markdown tables quoted in docs/training.md.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SD = ROOT.parent / "shared" / "data" / "selfdistill" / "smollm2_replies.npz"
RECIPE = ["--layers", "2,15", "--unroll", "4", "--batch", "8", "--n-vocab", "8192"]


def step_seconds(model, widths, repeats: int) -> dict:
    """Per width: (the first step's seconds, the compile's with it; the median of the next ``repeats``)."""
    import jax

    from specdec_playable.train import cli, loop

    args = cli.parse_args(RECIPE)
    params = loop.start_params(model, args)
    opt = loop.optimizer(args)
    opt_state = opt.init(params)
    grad, update, _ = loop.step_functions(params, model.weights.embed[:args.n_vocab], opt, args)
    rng = np.random.default_rng(0)
    d, b = model.config.d_model, args.batch
    out = {}
    for w in widths:
        def vec(*shape):
            return rng.standard_normal((b, w - 1, *shape)).astype(np.float32)

        batch = (vec(d), vec(2, d), vec(d), vec(d), np.ones((b, w - 1), np.float32))
        times = []
        for _ in range(repeats + 1):
            t0 = time.perf_counter()
            (_, _), g = grad(params, batch, np.float32(1.0))
            p, s = update(params, opt_state, g)
            jax.block_until_ready(p)
            times.append(time.perf_counter() - t0)
        out[w] = (times[0], float(np.median(times[1:])))
        print(f"  width {w}: first step {times[0]:.1f} s, then {out[w][1]:.2f} s a step", flush=True)
    return out


def row_lengths(model, args) -> np.ndarray:
    """The training rows' lengths, from the features stage (collecting any shards it lacks)."""
    from specdec_playable.train import cli, pipeline

    argv = ["--selfdistill", str(args.selfdistill), "--data-scale", "0", "--no-chat", "--no-write",
            "--sd-rows", str(args.sd_rows), "--sd-held-rows", "32", "--work", str(args.work), *RECIPE]
    argv += ["--features-dir", str(args.features_dir)] if args.features_dir else []
    prep = pipeline.prepare(model, cli.parse_args(argv))
    return np.asarray(prep["train"]["lens"])


def epoch_widths(lens: np.ndarray, window: int, width: int, cut: bool) -> list[int]:
    """The width of each batch of one epoch of the epoch sampler (batches of 8)."""
    from specdec_playable.train.loop import batch_width, row_sampler

    data = {"lens": lens, "toks": np.zeros((lens.size, 1))}
    rows_of = row_sampler(data, SimpleNamespace(doc_share=0.0, sampler="epoch", genre_weights={},
                                                batch=8, seed=0, sort_window=window))
    steps = -(-lens.size // 8)
    return [batch_width(lens[rows_of(s)], width) if cut else width for s in range(steps)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--selfdistill", default=str(SD))
    ap.add_argument("--sd-rows", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--features-dir", default="")
    ap.add_argument("--work", default=str(ROOT / ".cache" / "bench_train_step"))
    args = ap.parse_args()
    from specdec_playable.lm import get_model

    model = get_model()
    lens = row_lengths(model, args)
    width = 256
    widths = sorted({min(width, w) for w in range(64, width + 64, 64)})
    secs = step_seconds(model, widths, args.repeats)
    print("\n| width (positions kept) | first step (with its compile), s | a step, s (median) |")
    print("|---:|---:|---:|")
    for w in widths:
        print(f"| {w} | {secs[w][0]:.1f} | {secs[w][1]:.2f} |")
    real = int(lens.sum())
    print(f"\n{lens.size:,} training rows, {real:,} real positions, one epoch of batches of 8:\n")
    print("| scheme | positions kept per real one | seconds an epoch | against whole rows |")
    print("|---|---:|---:|---:|")
    base = None
    for name, window, cut in (("whole rows (before)", 1, False), ("cut to the longest row", 1, True),
                              ("cut, sorted over 8 steps", 8, True), ("cut, sorted over 32 steps", 32, True)):
        ws = epoch_widths(lens, window, width, cut)
        total = sum(secs[w][1] for w in ws)
        base = base or total
        print(f"| {name} | {8 * sum(ws) / real:.2f} | {total:,.0f} | {base / total:.2f}x |")


if __name__ == "__main__":
    main()

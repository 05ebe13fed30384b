"""Where the draft head's first guess is kept: by how sure the model itself is.

At every reply position, teacher-forced (the head reads the target's real features, as guess 1
of a round does), the head's guess is kept when it is the model's greedy token; beside it stands
the model's own probability of that token (the top of its softmax, ``train.evaluate.
model_confidence``). The positions are binned by that probability (``CONFIDENCE_EDGES``) on the
held-out replies of the self-distillation corpus (the training package's split; their features
from the features stage, computed once and cached) and on the fresh prompts' pools
(``train.evaluate.fresh_replies``: each prompt's greedy reply of ``--max-new`` tokens).

A close call of the model's (its top token under 0.5) is one a small head rarely makes the same
way; the share of such positions in a kind of text bounds what a head can keep there.

Run from a checkout:

    .venv/bin/python benchmarks/bench_head_confidence.py [--head path/to/head.npz ...] \\
        [--sd-rows 768 --sd-held-rows 160] [--features-dir DIR] [--work DIR]

Prints Markdown tables (the ones quoted in docs/training.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SD = ROOT.parent / "shared" / "data" / "selfdistill" / "smollm2_replies.npz"


def _rows(model, heads: dict, texts, layers: tuple) -> dict:
    """Per text kind: the model's confidence at every reply position and, per head, whether its
    first guess was kept there."""
    from specdec_playable.train.evaluate import model_confidence, reply_first_guesses, reply_positions

    out = {}
    for kind, ids, hidden, low, start in texts:
        acc = out.setdefault(kind, {"p1": []})
        acc["p1"].append(model_confidence(model, hidden, reply_positions(ids.size, start)))
        for name, w in heads.items():
            sel = None if low is None or not w.layers else low[:, [layers.index(m) for m in w.layers]]
            acc.setdefault(name, []).append(reply_first_guesses(model, w, ids, hidden, sel, start=start))
    return out


def _held(model, args, layers: tuple):
    """The held-out replies: (kind, ids, hidden, low, start) each, from the features stage."""
    from specdec_playable.train import cli, pipeline
    from specdec_playable.train.evaluate import sequences_of

    argv = ["--selfdistill", str(args.selfdistill), "--data-scale", "0", "--no-chat", "--no-write",
            "--sd-rows", str(args.sd_rows), "--sd-held-rows", str(args.sd_held_rows),
            "--work", str(args.work)]
    argv += ["--layers", ",".join(map(str, layers))] if layers else []
    argv += ["--features-dir", str(args.features_dir)] if args.features_dir else []
    prep = pipeline.prepare(model, cli.parse_args(argv))
    for seq, start in sorted(prep["prompt_lens"].items())[:args.eval_replies or None]:
        ids, hidden, low = sequences_of(prep["held"], seq)
        yield "held-out replies", ids, hidden, low, start


def print_tables(rows: dict, heads) -> None:
    from specdec_playable.train.evaluate import CONFIDENCE_EDGES, by_confidence

    bins = [f"{a:.1f}-{b:.1f}" for a, b in zip(CONFIDENCE_EDGES, CONFIDENCE_EDGES[1:])]
    print("\n## The model's confidence at the reply positions (share of positions per bin)\n")
    print("| text | positions | mean top-1 probability | " + " | ".join(bins) + " |")
    print("|---|---:|---:|" + "---:|" * len(bins))
    for kind, acc in rows.items():
        p1 = np.concatenate(acc["p1"])
        cells = by_confidence(p1, np.zeros(p1.size, bool))
        print(f"| {kind} | {p1.size:,} | {p1.mean():.3f} | " + " | ".join(f"{c['share']:.3f}" for c in cells) + " |")
    for name in heads:
        print(f"\n## {name}: first guess kept (teacher-forced), per bin of the model's confidence\n")
        print("| text | every position | " + " | ".join(bins) + " |")
        print("|---|---:|" + "---:|" * len(bins))
        for kind, acc in rows.items():
            p1, kept = np.concatenate(acc["p1"]), np.concatenate(acc[name])
            cells = by_confidence(p1, kept)
            print(f"| {kind} | {kept.mean():.3f} | "
                  + " | ".join("" if c["kept"] is None else f"{c['kept']:.3f}" for c in cells) + " |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--head", action="append", default=[], help="a head asset (default: the shipped head)")
    ap.add_argument("--selfdistill", type=Path, default=SD)
    ap.add_argument("--sd-rows", type=int, default=768, help="training replies of the split (as the run's)")
    ap.add_argument("--sd-held-rows", type=int, default=160, help="held-out replies to measure on")
    ap.add_argument("--eval-replies", type=int, default=0, help="at most this many of them (0: all)")
    ap.add_argument("--features-dir", type=Path, default=None)
    ap.add_argument("--work", type=Path, default=ROOT / ".train-work")
    ap.add_argument("--max-new", type=int, default=64, help="tokens of each fresh prompt's reply")
    args = ap.parse_args(argv)
    if args.max_new < 1 or args.sd_held_rows < 1 or args.sd_rows < 1 or args.eval_replies < 0:
        ap.error("--max-new, --sd-rows and --sd-held-rows must be at least 1; --eval-replies at least 0")

    from specdec_playable.lm import get_model
    from specdec_playable.lm import head as lmhead
    from specdec_playable.train.evaluate import fresh_replies

    model = get_model()
    heads = ({Path(p).stem: lmhead.load_head(p) for p in args.head} if args.head
             else {"the shipped head": lmhead.load_head()})
    layers = tuple(sorted({m for w in heads.values() for m in w.layers}))
    rows = _rows(model, heads, _held(model, args, layers), layers)
    rows.update(_rows(model, heads, fresh_replies(model, layers, max_new=args.max_new), layers))
    print_tables(rows, heads)
    return 0


if __name__ == "__main__":
    sys.exit(main())

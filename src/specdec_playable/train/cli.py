"""The command line: ``python -m specdec_playable.train`` (``scripts/train_draft_head.py`` is the
same). Train the draft head (lm.head) on SmolLM2-135M's own features, on this CPU, and ship it.

Stages (each resumable from ``--work``, default ``.cache/draft_head``, git-ignored):

1. **Corpus** (:mod:`.corpus`): this machine's Python, JavaScript, JSON and READMEs, the model's
   replies to the chat prompts written on this CPU (:mod:`.replies`), and with ``--selfdistill``
   the GPU corpus of its greedy replies, split by prompt, loops cut or weighted down.
2. **Features** (:mod:`.features`): one numpy forward pass per sequence, float16 shards.
3. **Training** (:mod:`.loop`) with JAX + optax (``pip install -e '.[train]'``), seeded, checkpointed.
4. **Measure** (:mod:`.evaluate`) with the numpy serving code.
5. **Write** (:mod:`.ship`) ``assets/lm/draft_head.npz`` and its provenance.

Usage, from a checkout after ``bash scripts/bootstrap.sh train``:

    .venv/bin/python -m specdec_playable.train                 # everything (under an hour)
    .venv/bin/python -m specdec_playable.train --no-write      # measure only
    .venv/bin/python -m specdec_playable.train --tiny          # a smoke run (the CI test's)
    .venv/bin/python -m specdec_playable.train --measure-cost  # the shipped head's cost, again
    .venv/bin/python -m specdec_playable.train --corpus-stats --selfdistill PATH   # loops, coverage
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from ..lm.head import MAX_BLOCKS
from .chat_prompts import CHAT, CHAT_GREEDY
from .corpus import BUDGETS, loop_stats, read_selfdistill, readout_coverage, reply_tokens, selfdistill_rows
from .evaluate import measure_cost
from .loop import check_genre_weights
from .pipeline import run

#: The checkout this module sits in (``src/specdec_playable/train/cli.py``).
ROOT = Path(__file__).resolve().parents[3]
CHUNK = 256
DESCRIPTION = ("Train the draft head (lm.head) on SmolLM2-135M's own features, on this CPU, "
               "and ship it.")
#: Where the GPU corpus of the model's replies lies beside a checkout (``shared/data``).
SELFDISTILL = "../shared/data/selfdistill/smollm2_replies.npz"
#: The documents' genres (``--genre-weights``): this machine's files and this CPU's chat replies.
GENRES = (*BUDGETS, "chat")


def _layers(text: str) -> tuple[int, ...]:
    """``--layers``: block counts in [1, 29], ascending, no repeats (at most 3)."""
    try:
        got = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"block counts separated by commas; got {text!r}") from None
    if len(got) > 3 or list(got) != sorted(set(got)) or not all(1 <= m <= 29 for m in got):
        raise argparse.ArgumentTypeError(f"at most 3 ascending block counts in [1, 29]; got {text!r}")
    return got



def _genre_weights(text: str) -> dict[str, float]:
    """``--genre-weights``: ``genre=weight`` pairs separated by commas, each genre one of the
    documents' (the self-distillation replies are weighted by ``--doc-share``)."""
    out = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        genre, _, weight = part.partition("=")
        try:
            out[genre.strip()] = float(weight)
        except ValueError:
            raise argparse.ArgumentTypeError(f"genre=weight pairs; got {part!r}") from None
    unknown = set(out) - set(GENRES)
    if unknown:
        raise argparse.ArgumentTypeError(f"genres among {', '.join(GENRES)}; got {text!r}")
    try:
        check_genre_weights(out)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return out


def _corpus_args(a) -> None:
    a("--seed", type=int, default=0)
    a("--work", default=str(ROOT / ".cache" / "draft_head"), help="resumable work folder")
    a("--node-modules", default=str(ROOT / "tooling" / "node_modules"))
    a("--data-scale", type=float, default=1.0, help="multiplies every genre's token budget")
    a("--train-fraction", type=float, default=1.0, help="train on this share of the chunks only")
    a("--no-chat", dest="chat", action="store_false", help="no self-distillation replies")
    a("--chat-max-new", type=int, default=160)
    a("--chat-workers", type=int, default=min(2, os.cpu_count() or 1),
      help="processes writing the self-distillation replies")
    a("--chat-prompts", type=int, default=len(CHAT), help=f"how many of the {len(CHAT)} chat prompts")
    a("--chat-greedy-prompts", type=int, default=len(CHAT_GREEDY),
      help=f"how many of the {len(CHAT_GREEDY)} prompts replied to greedily only")
    a("--selfdistill", default="", metavar="NPZ", help="also train on this corpus of the "
      f"model's greedy replies (e.g. {SELFDISTILL}), split by prompt")
    a("--sd-rows", type=int, default=0, help="use the first this many of its training rows "
      "(a seeded order that a larger choice extends; 0: all)")
    a("--sd-held-share", type=float, default=0.04, help="share of its prompts held out")
    a("--sd-held-rows", type=int, default=0, help="collect and measure at most this many of its "
      "held-out rows (0: all)")
    a("--sd-loops", choices=("cut", "weight", "keep"), default="cut", help="cut each looping "
      "reply where its loop starts, weight the loop down (--sd-loop-weight), or keep it")
    a("--sd-loop-weight", type=float, default=0.1)
    a("--features-dir", default="", help="the features' shards (default: --work/features)")
    a("--max-shards", type=int, default=None, help="compute at most this many new feature "
      "shards, then stop (run again to resume)")


def _head_args(a) -> None:
    a("--chunk", type=int, default=CHUNK, help="tokens per context (and the head's window)")
    a("--block", choices=("attention", "mlp"), default="attention")
    a("--d-ff", type=int, default=1536)
    a("--n-blocks", type=int, choices=range(1, MAX_BLOCKS + 1), default=1, metavar=f"{{1..{MAX_BLOCKS}}}",
      help="pre-norm blocks the head stacks; with --init-from a head of fewer, the added blocks "
           "start as the identity (the head starts as it was)")
    a("--n-heads", type=int, default=9)
    a("--n-vocab", type=int, default=8192, help="tokens the head reads out (FR-Spec)")
    a("--vocab-from", choices=("corpus", "model"), default="model",
      help="rank the vocabulary by corpus frequency (FR-Spec) or by the model's own greedy choices")
    a("--vocab-rows", type=int, default=0, help="count the model's own choices on at most this "
      "many seeded training rows (0: all with --vocab-from model, 256 with --vocab-from corpus, "
      "where they only measure the coverage; the full head at every position takes about 2 ms)")
    a("--layers", type=_layers, default=(), metavar="M,M",
      help="also feed the head the residual stream after these blocks (EAGLE-3's low and middle "
           "layers, fused with the last one), e.g. 2,15; default: the last layer alone")
    a("--unroll", type=int, choices=range(1, 9), default=1, metavar="{1..8}",
      help="drafting steps trained per position, each fed the head's own features (EAGLE-3's "
           "training-time test)")
    a("--init-from", default="", help="continue training this head asset (same shape) in place "
      "of seeded initial weights")
    a("--revocab", action="store_true", help="with --init-from or --evaluate: pick a new vocabulary of "
      "--n-vocab tokens (the readout is the model's embedding, so the head's weights carry over)")
    a("--widen-ff", action="store_true", help="with --init-from and a larger --d-ff: keep the "
      "head's feed-forward units and add new ones whose output starts at zero (the head starts "
      "as it was)")


def _run_args(a) -> None:
    a("--steps", type=int, default=900)
    a("--batch", type=int, default=8, help="chunks per step")
    a("--lr", type=float, default=1e-3)
    a("--doc-share", type=float, default=0.0, help="draw the documents' chunks this share of the "
      "time and the self-distillation replies the rest (0: every row alike)")
    a("--genre-weights", type=_genre_weights, default={}, metavar="G=W,...",
      help=f"draw the rows of these document genres ({', '.join(GENRES)}) W times as often as "
           "the other documents', e.g. json=2")
    a("--sampler", choices=("random", "epoch"), default="random", help="draw each batch's rows at "
      "random (seeded by the step), or take every row once an epoch in a seeded order (with "
      "--doc-share, the documents and the replies each in epochs of their own, each batch "
      "holding their shares; not with --genre-weights)")
    a("--sort-window", type=int, default=1, metavar="W", help="sort each run of W steps' rows by "
      "length and deal them out again, so each batch holds rows of like length and is cut to "
      "less padding (the same rows over every W steps; 1: off)")
    a("--reg-weight", type=float, default=0.5)
    a("--old-lr-scale", type=float, default=1.0, help="with --init-from: scale the updates of "
      "the weights carried over by this (the units --widen-ff adds learn at the full rate)")
    a("--print-every", type=int, default=10)
    a("--ckpt-every", type=int, default=50)
    a("--eval-at", default="0.25,0.5", help="fractions of the steps at which to measure too")
    a("--held-every", type=int, default=0, help="also print the held-out loss and agreement per "
      "drafting step every this many steps (always at the end)")
    a("--snapshots", action="store_true", help="at each of those steps also write the head to "
      "--work as an asset (head_<run>_step<N>.npz), to measure it against the tokens trained on")
    a("--no-measure", dest="measure", action="store_false")
    a("--no-write", action="store_true")
    a("--out", default=str(ROOT / "assets" / "lm" / "draft_head.npz"))
    a("--prepare-only", action="store_true",
      help="steps 1-2 only (corpus, replies, features), cached in --work for a later run")
    a("--tiny", action="store_true", help="a smoke run: tiny corpus, tiny head, a few steps")
    a("--measure-cost", action="store_true", help="only measure the cost of a draft step of the "
      "head at --out again, as drafting keeps it now, and write it into its provenance")
    a("--stop-at", type=int, default=0, help="stop training after this step, checkpointed "
      "(run again to resume)")
    a("--eval-k", type=int, default=4, help="guesses per round for the held-out replies' tokens "
      "per pass")
    a("--fresh-max-new", type=int, default=64, help="tokens of each fresh prompt's greedy reply "
      "the head is measured on (lm.prompts.POOLS; 0: none)")
    a("--eval-replies", type=int, default=0, help="measure tokens per pass on at most this many "
      "held-out replies (0: all)")
    a("--evaluate", default="", metavar="NPZ", help="only measure this head asset (e.g. "
      "assets/lm/draft_head.npz) on the held-out split, collecting the features it lacks; no training "
      "(with --revocab and --no-measure: only read it out over the new vocabulary and write it)")
    a("--checkpoint", default="", metavar="NPZ", help="measure the head of this training "
      "checkpoint (a copy of a run's ckpt_*.npz, made with the same settings) instead of "
      "training; it is written to --out unless --no-write")
    a("--corpus-stats", action="store_true", help="only print the self-distillation corpus's "
      "statistics (loops, the split, the readout's coverage) as JSON")


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m specdec_playable.train", description=DESCRIPTION)
    for group in (_corpus_args, _head_args, _run_args):
        group(ap.add_argument)
    args = ap.parse_args(argv)
    if args.tiny:
        args.__dict__.update(data_scale=0.01, chat=False, chunk=64, d_ff=128, n_vocab=512,
                             steps=min(args.steps, 40), batch=4, print_every=10, measure=False,
                             fresh_max_new=0, eval_at="", lr=3e-3)
    if not 0.0 <= args.old_lr_scale <= 1.0:
        ap.error(f"--old-lr-scale must lie in [0, 1]; got {args.old_lr_scale}")
    if args.sampler == "epoch" and args.genre_weights:
        ap.error("--sampler epoch draws every row of a kind alike; it cannot honour --genre-weights")
    if not 1 <= args.sort_window <= 64:
        ap.error(f"--sort-window must lie in [1, 64]; got {args.sort_window}")
    if args.widen_ff and not args.init_from:
        ap.error("--widen-ff widens the head --init-from names; give one")
    args.held_at = set(range(args.held_every, args.steps + 1, args.held_every)) if args.held_every > 0 else set()
    return args


def corpus_stats(args) -> dict:
    """The self-distillation corpus's statistics: rows and loops on each side of the split by
    prompt (loops found exactly and with a tolerance of 0.2), and the share of the held-out
    replies' tokens (loops cut) inside the ``--n-vocab`` most frequent tokens of the training
    replies'."""
    sd = read_selfdistill(args.selfdistill or ROOT / SELFDISTILL)
    train_rows, held_rows = selfdistill_rows(sd, held_share=args.sd_held_share, seed=args.seed,
                                             rows=args.sd_rows)
    out = dict(path=str(args.selfdistill or ROOT / SELFDISTILL), held_share=args.sd_held_share,
               train=loop_stats(sd, train_rows), held=loop_stats(sd, held_rows),
               shared_prompts=len({sd.prompts[i] for i in train_rows}
                                  & {sd.prompts[i] for i in held_rows}))
    for side, rows in (("train", train_rows), ("held", held_rows)):
        loose = loop_stats(sd, rows, tolerance=0.2)
        out[side]["with_tolerance_0.2"] = {k: loose[k]
                                           for k in ("rows_with_loops", "tokens_kept_after_cut")}
    for cut in (True, False):
        share = readout_coverage(reply_tokens(sd, train_rows, cut=cut),
                                 reply_tokens(sd, held_rows, cut=cut), args.n_vocab)
        out[f"readout_coverage_{args.n_vocab}" + ("" if cut else "_loops_kept")] = round(share, 4)
    print(json.dumps(out, indent=1))
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.measure_cost:
        measure_cost(Path(args.out))
    elif args.corpus_stats:
        corpus_stats(args)
    else:
        run(args)
    return 0

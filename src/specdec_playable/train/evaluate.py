"""Stage 4, evaluation with the numpy serving code (``lm.head``): the head's teacher-forced first
guess (kept if it is the model's greedy token; ``sum(min(p, q))`` beside it) on the held-out split
by genre and on Episode 4's texts, its tokens per pass on the held-out self-distillation replies,
and the cost of a guess against a decode step.

Tokens per pass without running the target again: a self-distillation reply is the model's own
greedy text, so the model's greedy token at every reply position is the stored token. A round
that starts after ``ids[:t + 1]`` drafts ``k`` tokens from the head fed the target's real features
of the positions before ``t`` (from the features stage) and keeps the longest prefix equal to
``ids[t + 1:]``, plus the target's own token: :func:`greedy_rounds` walks the reply round by round
as greedy speculative decoding would (the verify passes' float rounding aside).
"""

from __future__ import annotations

import datetime
import json
import os
import time
from pathlib import Path

import numpy as np

from ..lm import get_model
from ..lm import head as lmhead
from .corpus import episode4_texts
from .ship import sha256_file


def agreement(model, w, toks: np.ndarray, feats: np.ndarray, low=None) -> tuple[int, int, float, int]:
    """Teacher-forced on one sequence: (kept first drafts, positions, sum of min(p, q), positions
    whose target token is outside the head's vocabulary); ``low`` (n, layers, d): the residual
    streams of the head's lower layers."""
    from specdec_playable.lm import sampling

    n = toks.size
    captured = None if low is None else {m: low[:, i] for i, m in enumerate(w.layers)}
    pred = lmhead.teacher_forced(model, w, toks, lmhead.head_inputs(w, feats, captured), 0, n)[1:]
    target = model.head(feats[1:])
    q = sampling.probabilities(lmhead.head_logits(model, w, pred), 1.0)
    p = sampling.probabilities(target, 1.0)
    best = target.argmax(1)
    kept = int((q.argmax(1) == best).sum())
    missing = int((~np.isin(best, w.vocab)).sum())
    return kept, n - 1, float(np.minimum(p, q).sum()), missing


def measure(model, arrays: dict, held: dict, *, tau_every: int = 0) -> dict:
    """Step 4, with the numpy serving code: the held-out split by genre and Episode 4's texts."""
    w = lmhead.weights_from_arrays(arrays)
    out = {}
    genres = held.get("genre")
    for i in range(held["toks"].shape[0]):
        L = int(held["lens"][i])
        r = agreement(model, w, held["toks"][i, :L].astype(np.int64),
                      held["feats"][i, :L].astype(np.float32),
                      held["low"][i, :L].astype(np.float32) if "low" in held else None)
        g = out.setdefault(f"held {genres[i]}" if genres is not None else "held", [0, 0, 0.0, 0])
        for j in range(4):
            g[j] += r[j]
    tok = model.tokenizer
    for name, src in episode4_texts().items():
        ids = np.array([tok.bos_id, *tok.encode(src)], np.int64)
        fw = model.forward(ids, model.new_cache(capacity=ids.size), logits="none", capture=w.layers)
        low = np.stack([fw.captured[m] for m in w.layers], axis=1) if w.layers else None
        out[f"ep4 {name}"] = list(agreement(model, w, ids, fw.hidden, low))
    res = {name: dict(first_token=round(v[0] / v[1], 4), alpha=round(v[2] / v[1], 4),
                      outside_vocab=round(v[3] / v[1], 4), positions=v[1]) for name, v in out.items()}
    return res


def print_measure(res: dict) -> None:
    print("| text | positions | first-token acceptance (greedy) | sum(min(p, q)) | target token "
          "outside the head's vocabulary |\n|---|---|---|---|---|")
    for name, v in res.items():
        print(f"| {name} | {v['positions']} | {v['first_token']:.3f} | {v['alpha']:.3f} | "
              f"{v['outside_vocab']:.3f} |")


def draft_cost(model, arrays: dict, repeats: int = 20) -> dict:
    """Median time of one head draft step (the head kept as drafting keeps it: int8) and of one
    target decode step, same process."""
    from specdec_playable.lm.decode import generate

    w = lmhead.weights_from_arrays(arrays)
    ids = model.tokenizer.chat("Write a Python function that adds two numbers.")
    run = lmhead.HeadRun(model, w)
    cache = model.new_cache(capacity=len(ids) + 64)
    run.observe(*model.forward(ids, cache, logits="none", capture=run.capture).features())
    ctx = np.array(ids + [int(model.tokenizer.encode("def")[0])], np.int64)
    steps = []
    for _ in range(repeats):
        t = time.perf_counter()
        run.propose(ctx, 8)
        steps.append((time.perf_counter() - t) / 8)
    g = generate(model, ids, max_new=repeats)
    step = g.decode_ms / g.passes / 1e3
    return dict(draft_step_ms=round(1e3 * float(np.median(steps)), 3),
                decode_step_ms=round(1e3 * step, 2), c=round(float(np.median(steps)) / step, 4),
                precision=w.precision)


def measure_cost(out: Path, repeats: int = 20, runs: int = 3) -> dict:
    """Measure the cost of a draft step of the head at ``out`` again, as drafting now keeps it:
    ``runs`` measurements of :func:`draft_cost`, the one with the median c kept, with the range
    of c over all of them. Write it into the head's provenance (``measured.cost``, with the date
    and the load); the figure of the run that trained it is kept once as
    ``measured.cost_when_trained``. The weights are not touched: their sha256 is checked against
    the provenance first."""
    meta_path = out.with_suffix(".json")
    missing = [str(f) for f in (out, meta_path) if not f.is_file()]
    if missing:
        raise SystemExit(f"--measure-cost: no head to measure: {', '.join(missing)} not found")
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    if sha256_file(out) != meta["sha256"]:
        raise SystemExit(f"{out} does not match the sha256 in {meta_path}: not the head it records")
    with np.load(out) as z:
        arrays = {name: z[name] for name in z.files}
    model = get_model()
    every = sorted((draft_cost(model, arrays, repeats) for _ in range(runs)), key=lambda c: c["c"])
    cost = dict(every[len(every) // 2])
    now = datetime.datetime.now(datetime.timezone.utc)
    cost.update(runs=runs, c_range=[every[0]["c"], every[-1]["c"]],
                date=now.isoformat(timespec="seconds"), load_average=round(os.getloadavg()[0], 2),
                threads=os.environ.get("NUMBA_NUM_THREADS", "default"))
    measured = meta["measured"]
    if "cost_when_trained" not in measured:
        was = measured["cost"]
        measured["cost_when_trained"] = dict(was, precision=was.get("precision", "half"))
    measured["cost"] = cost
    meta_path.write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    print(f"draft cost: {cost} (written to {meta_path})")
    return cost




def greedy_rounds(model, w, ids: np.ndarray, hidden: np.ndarray, low=None, *, start: int,
                  k: int) -> np.ndarray:
    """The drafts kept by each round of greedy speculative decoding along a greedy reply.

    ``ids[start:]`` must be the model's own greedy tokens (a self-distillation reply); ``hidden``
    and ``low`` (n, layers, d) the target's features of ``ids`` (the features stage's). The first
    round starts after ``ids[:start]``; a round that keeps ``a`` of its ``k`` guesses moves on by
    ``a + 1`` tokens (the target's own token after them). Tokens per pass: ``mean(rounds + 1)``.
    """
    ids = np.asarray(ids, np.int64)
    run = lmhead.HeadRun(model, w)
    streams = {m: low[:, i] for i, m in enumerate(w.layers)} if w.layers else {}
    known, t, out = 0, start - 1, []
    while t < ids.size - 1:
        if t > known:
            run.observe(hidden[known:t], {m: c[known:t] for m, c in streams.items()})
            known = t
        drafts = run.propose(ids[:t + 1], k).tokens
        truth = ids[t + 1:t + 1 + k]
        a = 0
        while a < min(len(drafts), truth.size) and drafts[a] == truth[a]:
            a += 1
        out.append(a)
        t += a + 1
    return np.array(out, np.int64)


def sequences_of(data: dict, seq: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Sequence ``seq`` of a features dict put back together from its rows: tokens, features
    (float32) and the lower layers' streams (float32, or None)."""
    rows = np.flatnonzero(np.asarray(data["seq"]) == seq)
    lens = np.asarray(data["lens"])[rows]
    ids = np.concatenate([data["toks"][r, :n] for r, n in zip(rows, lens)]).astype(np.int64)
    hidden = np.concatenate([data["feats"][r, :n] for r, n in zip(rows, lens)]).astype(np.float32)
    low = (np.concatenate([data["low"][r, :n] for r, n in zip(rows, lens)]).astype(np.float32)
           if "low" in data else None)
    return ids, hidden, low


def reply_first_guesses(model, w, ids: np.ndarray, hidden: np.ndarray, low=None, *,
                        start: int) -> np.ndarray:
    """Teacher-forced, at every reply position ``t + 1 >= start`` of a greedy reply: is the head's
    first guess (from the target's real features up to ``t - 1`` and token ``t``) the stored
    token ``ids[t + 1]``, which is the model's own greedy choice there. One bool a position."""
    n = ids.size
    captured = None if low is None else {m: low[:, i] for i, m in enumerate(w.layers)}
    pred = lmhead.teacher_forced(model, w, ids, lmhead.head_inputs(w, hidden, captured), 0, n)
    t = reply_positions(n, start)
    return lmhead.head_logits(model, w, pred[t]).argmax(axis=1) == ids[t + 1]


def reply_positions(n: int, start: int) -> np.ndarray:
    """The positions ``t`` after which :func:`reply_first_guesses` scores a guess of ``ids[t + 1]``
    in a sequence of ``n`` tokens whose reply starts at ``start``."""
    return np.arange(max(1, start - 1), n - 1)


#: Bins of the model's own top-1 probability (:func:`by_confidence`): a close call below 0.5, a
#: sure one from 0.9.
CONFIDENCE_EDGES = (0.0, 0.3, 0.5, 0.7, 0.9, 1.0)


def model_confidence(model, hidden: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The model's probability of its own greedy token after each position ``t``: the top of its
    softmax over the whole vocabulary (``lm.sampling.probabilities``), read from the final-normed
    features ``hidden[t]``. In (0, 1] without rounding past 1: the top is one over a sum of
    exponentials that holds exp(0) = 1."""
    from ..lm.sampling import probabilities

    return probabilities(model.head(np.asarray(hidden[t], np.float32)), 1.0).max(axis=1)


def by_confidence(p1: np.ndarray, kept: np.ndarray, edges=CONFIDENCE_EDGES) -> list[dict]:
    """Per bin ``[edges[i], edges[i + 1])`` of the model's confidence ``p1`` (the last bin closed):
    its share of the positions and how often the head's guess was ``kept`` there (None for an
    empty bin)."""
    p1, kept = np.asarray(p1, float).ravel(), np.asarray(kept, bool).ravel()
    if p1.shape != kept.shape:
        raise ValueError(f"p1 and kept must have the same length; got {p1.size} and {kept.size}")
    edges = np.asarray(edges, float)
    if edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges must be at least two increasing numbers")
    if p1.size and (p1.min() < edges[0] or p1.max() > edges[-1]):
        raise ValueError(f"p1 must lie in [{edges[0]}, {edges[-1]}]")
    b = np.clip(np.searchsorted(edges, p1, side="right") - 1, 0, edges.size - 2)
    out = []
    for i in range(edges.size - 1):
        m = b == i
        out.append(dict(low=float(edges[i]), high=float(edges[i + 1]),
                        share=float(m.mean()) if p1.size else 0.0,
                        kept=float(kept[m].mean()) if m.any() else None))
    return out


def replies_tokens_per_pass(model, arrays: dict, held: dict, prompt_lens: dict, *, k: int = 4,
                            most: int = 0) -> dict:
    """On the held-out self-distillation replies (``prompt_lens``: sequence -> where its reply
    starts; at most ``most`` of them, 0: all), with the head ``arrays``: the teacher-forced first
    guess at every reply position, and tokens per pass at ``k`` (the rounds of every reply
    pooled, and the mean over replies)."""
    w = lmhead.weights_from_arrays(arrays)
    rounds, per_reply, first = [], [], []
    for seq, start in sorted(prompt_lens.items())[:most or None]:
        ids, hidden, low = sequences_of(held, seq)
        first.append(reply_first_guesses(model, w, ids, hidden, low, start=start))
        r = greedy_rounds(model, w, ids, hidden, low, start=start, k=k)
        if r.size:
            rounds.append(r)
            per_reply.append(float((r + 1).mean()))
    every = np.concatenate(rounds) if rounds else np.zeros(0, np.int64)
    guesses = np.concatenate(first) if first else np.zeros(0, bool)
    return dict(k=k, replies=len(per_reply), rounds=int(every.size), positions=int(guesses.size),
                first_guess=round(float(guesses.mean()), 4) if guesses.size else None,
                tokens_per_pass=round(float((every + 1).mean()), 4) if every.size else None,
                mean_over_replies=round(float(np.mean(per_reply)), 4) if per_reply else None)


def fresh_replies(model, layers=(), *, pools=None, max_new: int = 64):
    """Each fresh prompt's greedy reply (``lm.prompts.POOLS``, or ``pools``: name -> prompt keys
    of ``lm.prompts.EVERY``; ``max_new`` tokens at most) with the target's features from one
    forward pass: ``(pool, ids, hidden, low, start)`` each, ``low`` the streams after ``layers``
    and ``start`` where the reply starts."""
    from ..lm.decode import generate
    from ..lm.prompts import EVERY, POOLS
    from .features import sequence_features

    for name, keys in (POOLS if pools is None else pools).items():
        for key in keys:
            prompt = model.tokenizer.chat(EVERY[key].message)
            ids = np.array(list(prompt) + list(generate(model, prompt, max_new=max_new).tokens), np.int64)
            hidden, low = sequence_features(model, ids, layers)
            yield name, ids, hidden, low, len(prompt)


def fresh_prompts(model, arrays: dict, *, pools=None, k: int = 4, max_new: int = 64) -> dict:
    """The head on fresh prompts no corpus holds (:func:`fresh_replies`): per pool, over its
    replies together, the teacher-forced first guess and tokens per pass at ``k`` along them
    (:func:`greedy_rounds`)."""
    from ..lm.prompts import POOLS

    pools = POOLS if pools is None else pools
    w = lmhead.weights_from_arrays(arrays)
    got = {name: ([], []) for name in pools}
    for name, ids, hidden, low, start in fresh_replies(model, w.layers, pools=pools, max_new=max_new):
        first, rounds = got[name]
        first.append(reply_first_guesses(model, w, ids, hidden, low, start=start))
        rounds.append(greedy_rounds(model, w, ids, hidden, low, start=start, k=k))
    out = {}
    for name, (first, rounds) in got.items():
        r, f = np.concatenate(rounds), np.concatenate(first)
        out[name] = dict(prompts=len(pools[name]), positions=int(f.size), rounds=int(r.size),
                         first_guess=round(float(f.mean()), 4) if f.size else None,
                         tokens_per_pass=round(float((r + 1).mean()), 4) if r.size else None)
    return out

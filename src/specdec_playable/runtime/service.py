"""The one door from state and views into serving: submit work, follow it, cancel it, and ask
whether the model is there. Nothing else of :mod:`specdec_playable.serve` is for them
(``tests/test_layers.py`` holds them to it).

* :class:`ModelService` is what a page needs from the server to run the real model: the queue,
  whether the model is installed, and the work a run or a scoring submits. :data:`SERVER` is the
  process's own; a test or a notebook passes another.
* :func:`shared_queue` is the process's one queue for real-model runs; ``queue.submit(work, ...)``
  gives a :class:`Handle` whose ``job`` (a :class:`Job`) has a ``state`` (:data:`QUEUED`,
  :data:`RUNNING`, :data:`DONE`, :data:`CANCELLED`, :data:`FAILED`), a ``place`` (a
  :class:`Place`), ``progress`` and ``result``; ``handle.cancel()`` stops it. A full line raises
  :class:`QueueFull`.
* :func:`generation_work` and :func:`scoring_work` are the work the pages submit.
* :func:`model_ready` says whether a model process of this server has loaded the model, and
  :func:`server_pass_times` what its passes measured as it loaded (None before);
  :func:`tab_abandoned` whether a visitor's tab has been gone a while.
* :func:`shared` caches a pure function's frozen results for every session of the process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..lm import is_installed
from .jobs import (CANCELLED, DONE, FAILED, QUEUED, RUNNING, Handle, Job, JobContext, JobQueue,
                   Place, QueueFull, shared_queue)
from .model_process import calibration as server_pass_times
from .model_process import model_ready
from .shared import shared
from .workers import generation_work, scoring_work

__all__ = ["CANCELLED", "DONE", "FAILED", "QUEUED", "RUNNING", "SERVER", "Handle", "Job",
           "JobContext", "JobQueue", "ModelService", "Place", "QueueFull", "generation_work",
           "model_ready", "scoring_work", "server_pass_times", "shared", "shared_queue",
           "tab_abandoned"]

#: Work for :meth:`JobQueue.submit`: called with the job's :class:`JobContext` on a worker.
Work = Callable[[JobContext], Any]


@dataclass(frozen=True)
class ModelService:
    """What a page needs from the server to run the real model.

    Attributes
    ----------
    queue : callable
        The queue runs go to (called when first needed: the process's queue starts lazily).
    installed : callable
        Whether the model is installed here (a page without it shows recorded runs).
    generation : callable
        ``generation(settings) -> work``: Episode 7's Run.
    scoring : callable
        ``scoring(text) -> work``: Episode 4's pasted text.
    """

    queue: Callable[[], JobQueue] = shared_queue
    installed: Callable[[], bool] = is_installed
    generation: Callable[[Any], Work] = generation_work
    scoring: Callable[[str], Work] = scoring_work


#: The server's own service: its shared queue, its model, its model processes.
SERVER = ModelService()


def tab_abandoned(session_context, after_ms: float) -> bool:
    """True when the page of ``session_context`` has had no open connection for ``after_ms``.

    Bokeh keeps the server session (with its connection count) on the context; this is the one
    place that reads it, so a change in Bokeh is mended here.
    """
    session = getattr(session_context, "_session", None)
    try:
        return session.connection_count == 0 and session.milliseconds_since_last_unsubscribe > after_ms
    except AttributeError:
        return False

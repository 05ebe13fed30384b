"""The one door from state and views into serving: submit work, follow it, cancel it, and ask
whether the model is there. Nothing else of :mod:`specdec_playable.serve` is for them
(``tests/test_layers.py`` holds them to it).

* :func:`shared_queue` is the process's one queue for real-model runs; ``queue.submit(work, ...)``
  gives a :class:`Handle` whose ``job`` has a ``state`` (:data:`QUEUED`, :data:`RUNNING`,
  :data:`DONE`, :data:`CANCELLED`, :data:`FAILED`), a ``position``, ``progress`` and ``result``;
  ``handle.cancel()`` stops it. A full line raises :class:`QueueFull`.
* :func:`generation_work` and :func:`scoring_work` are the work the pages submit.
* :func:`model_ready` says whether a model process of this server has loaded the model, and
  :func:`server_pass_times` what its passes measured as it loaded (None before);
  :func:`tab_abandoned` whether a visitor's tab has been gone a while.
* :func:`shared` caches a pure function's frozen results for every session of the process.
"""

from __future__ import annotations

from .jobs import (CANCELLED, DONE, FAILED, QUEUED, RUNNING, Handle, JobContext, JobQueue,
                   QueueFull, shared_queue)
from .model_process import calibration as server_pass_times
from .model_process import model_ready
from .shared import shared
from .workers import generation_work, scoring_work

__all__ = ["CANCELLED", "DONE", "FAILED", "QUEUED", "RUNNING", "Handle", "JobContext", "JobQueue",
           "QueueFull", "generation_work", "model_ready", "scoring_work", "server_pass_times", "shared",
           "shared_queue", "tab_abandoned"]


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

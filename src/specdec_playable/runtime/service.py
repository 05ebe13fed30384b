"""The door from the pages to the runtime: submit work, follow it, cancel it, ask whether the
model is there and what its passes cost. The episodes depend on :class:`Service`, a Protocol; the
app builds the real one (:class:`ModelService`, the process's queue and model processes) and hands
it to each page. A page built without one runs no model (:data:`NO_MODEL`) and shows recorded runs.

* :class:`Service` is what a page needs: ``queue()`` (the queue runs go to: ``queue.submit(work,
  ...)`` gives a :class:`Handle` whose ``job`` (a :class:`Job`) has a ``state`` (:data:`QUEUED`,
  :data:`RUNNING`, :data:`DONE`, :data:`CANCELLED`, :data:`FAILED`), a ``place`` (a :class:`Place`),
  ``progress`` and ``result``; ``handle.cancel()`` stops it; a full line raises
  :class:`QueueFull`), ``installed()``, ``generation(settings)`` and ``scoring(text)`` (the work
  Episode 7's Run and Episode 4's pasted text submit), ``model_ready()`` (whether a model process
  has loaded the model), ``load_state()`` (loading, ready or failed, and when) and
  ``pass_times()`` (the server's one calibration record, a :class:`.calibration.Calibration`
  measured by its first model process; None before).
* :func:`shared` caches a pure function's frozen results for every session of the process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..lm import is_installed
from .jobs import (CANCELLED, DONE, FAILED, QUEUED, RUNNING, Handle, Job, JobContext, JobQueue,
                   Place, QueueFull, shared_queue)
from .model_process import calibration as server_pass_times
from .model_process import LoadState, load_state, model_ready
from .shared import shared
from .workers import generation_work, scoring_work

__all__ = ["CANCELLED", "DONE", "FAILED", "NO_MODEL", "QUEUED", "RUNNING", "Handle", "Job",
           "JobContext", "JobQueue", "LoadState", "ModelService", "Place", "QueueFull", "Service", "generation_work",
           "model_ready", "scoring_work", "server_pass_times", "shared", "shared_queue"]

#: Work for :meth:`JobQueue.submit`: called with the job's :class:`JobContext` on a worker.
Work = Callable[[JobContext], Any]


class Service(Protocol):
    """What a page needs from the server to run the real model (see the module's docstring)."""

    def queue(self) -> JobQueue: ...

    def installed(self) -> bool: ...

    def generation(self, settings: Any) -> Work: ...

    def scoring(self, text: str) -> Work: ...

    def model_ready(self) -> bool: ...

    def load_state(self) -> LoadState: ...

    def pass_times(self) -> Any: ...


@dataclass(frozen=True)
class ModelService:
    """A :class:`Service` made of functions; with no arguments, the process's own: its shared
    queue, its model, its model processes (the app builds it; a test or a notebook may pass
    others).

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
    model_ready : callable
        Whether a model process has loaded the model.
    load_state : callable
        Where the model's load stands (a :class:`.model_process.LoadState`), for a status line.
    pass_times : callable
        The server's calibration record (:class:`.calibration.Calibration`: the pass times its
        first model process measured as it loaded, stamped; None before).
    """

    queue: Callable[[], JobQueue] = shared_queue
    installed: Callable[[], bool] = is_installed
    generation: Callable[[Any], Work] = generation_work
    scoring: Callable[[str], Work] = scoring_work
    model_ready: Callable[[], bool] = model_ready
    load_state: Callable[[], LoadState] = load_state
    pass_times: Callable[[], Any] = server_pass_times


def _no_queue() -> JobQueue:
    raise RuntimeError("this page was built without a service, so it runs no model; the app hands "
                       "one in (runtime.ModelService())")


#: No model: what a page built without a service runs on (it shows recorded runs).
NO_MODEL = ModelService(queue=_no_queue, installed=lambda: False, model_ready=lambda: False,
                        load_state=lambda: LoadState("waiting", 0.0), pass_times=lambda: None)

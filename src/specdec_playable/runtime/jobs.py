"""A bounded, queued, cancellable pool for slow work (real-model runs), off the server's event loop.

Pages submit a function; at most ``workers`` run at once on worker threads, the
rest wait in a bounded queue and can tell each visitor its place in line. A
visitor can cancel, and a closed tab cancels its work. Every job has a time
budget: past it, the job is asked to stop.

Work that many visitors ask for with the same inputs (a preset prompt) can be
given a ``key``: the first submission computes it, later ones share the running
job or its finished result (results are immutable). A shared job is cancelled
only when every visitor holding it has cancelled.

The submitted function is called as ``fn(ctx)`` with a :class:`JobContext`: it
should check ``ctx.stopped`` between steps (and return early when it is set)
and may call ``ctx.report(value)`` to publish progress, which pages poll with
:attr:`Job.progress`. Nothing here imports a UI library.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("specdec_playable")

QUEUED, RUNNING, DONE, FAILED, CANCELLED = "queued", "running", "done", "failed", "cancelled"
#: States a job never leaves.
FINAL = (DONE, FAILED, CANCELLED)


class PlainError(RuntimeError):
    """A failure whose message is written for a visitor (plain words, nothing internal): a job
    that raises one shows it as its error (:attr:`Job.error`); any other exception shows a
    generic line, its traceback only in the server's log."""


class QueueFull(RuntimeError):
    """Raised by :meth:`JobQueue.submit` when the waiting line is full."""


@dataclass(frozen=True)
class Place:
    """A job and its queue at one instant, read under the queue's lock, so that what a page says
    of them agrees (a place in line taken before a worker picked the job up, and the running
    count after, would say "position 1" and "all workers busy" of a run already starting).

    Attributes
    ----------
    state : str
        The job's state.
    position : int
        Its place in line (1 = next), 0 unless queued.
    running, workers : int
        Jobs running and the most that may run at once.
    running_elapsed_s : tuple of float
        Seconds each running job has run so far.
    recent_run_s : tuple of float
        How long the last finished runs took (see :meth:`JobQueue.recent_run_s`).
    crowded_run_s : tuple of float
        The same for the runs among them that shared the machine with every worker busy.
    """

    state: str
    position: int
    running: int
    workers: int
    running_elapsed_s: tuple[float, ...]
    recent_run_s: tuple[float, ...]
    crowded_run_s: tuple[float, ...] = ()


class JobContext:
    """What a running job sees: whether to stop, and where to report progress."""

    def __init__(self, job: Job):
        self._job = job

    @property
    def stopped(self) -> bool:
        """True once the job was cancelled or ran out of its time budget."""
        job = self._job
        if job._cancel.is_set():
            return True
        if job.started_at is not None and time.monotonic() - job.started_at > job.budget_s:
            job.timed_out = True
            return True
        return False

    @property
    def cancel_event(self) -> threading.Event:
        """The event set on cancellation (for code that takes a ``threading.Event``)."""
        return self._job._cancel

    @property
    def deadline(self) -> float:
        """``time.monotonic()`` value at which the time budget runs out."""
        return (self._job.started_at or time.monotonic()) + self._job.budget_s

    def report(self, value: Any) -> None:
        """Publish a progress value (the latest one wins)."""
        self._job.progress = value

    def untypical(self) -> None:
        """Say that this run's time is not typical of a run (it also waited for a model to load):
        it is left out of the run times that estimated waits come from."""
        self._job.typical = False

    def cut_short(self) -> None:
        """Say that the result is incomplete (a budget inside the function stopped it early).

        It is kept for its holders but, like a job stopped by its own time budget, never
        shared with later submissions of the same key.
        """
        self._job.timed_out = True


class Job:
    """One submitted piece of work. Poll it; do not wait on it from the event loop.

    Attributes
    ----------
    state : str
        ``"queued"``, ``"running"``, ``"done"``, ``"failed"`` or ``"cancelled"``.
    result : Any
        What the function returned (``"done"``); also set when a stopped
        function returned a partial result.
    error : str or None
        A one-line message for the visitor when the function raised (the
        traceback goes to the server log only).
    progress : Any
        The last value the function reported.
    timed_out : bool
        True when the job was stopped by its time budget.
    """

    def __init__(self, fn: Callable[[JobContext], Any], *, key, budget_s: float, label: str,
                 queue: JobQueue):
        self._fn = fn
        self.key = key
        self.label = label
        self.budget_s = float(budget_s)
        self._queue = queue
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._holders = 1
        self.state = QUEUED
        self.result: Any = None
        self.error: str | None = None
        self.progress: Any = None
        self.timed_out = False
        self.typical = True
        self.crowded = False  # every worker was busy at its start or at its end
        self.submitted_at = time.monotonic()
        self.started_at: float | None = None
        self.finished_at: float | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINAL

    @property
    def position(self) -> int:
        """Jobs waiting ahead of this one plus one (1 = next to start); 0 once it runs or ended."""
        return self._queue._position(self)

    @property
    def place(self) -> Place:
        """The job's state and place in line with the queue's running jobs and run times, all
        read at one instant."""
        return self._queue._place(self)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the job ends (for scripts and tests, never the event loop)."""
        return self._done.wait(timeout)

    def cancel(self) -> None:
        """Withdraw one holder's interest; the work stops when no holder is left."""
        self._queue._release(self)

    def _finish(self, state: str) -> None:
        self.state = state
        self.finished_at = time.monotonic()
        self._done.set()


class Handle:
    """One visitor's hold on a (possibly shared) job; cancelling it releases only that hold."""

    def __init__(self, job: Job):
        self.job = job
        self._released = False
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        self.job.cancel()


class JobQueue:
    """At most ``workers`` jobs at once; at most ``max_waiting`` in line behind them.

    Parameters
    ----------
    workers : int
        Jobs that may run at the same time (the number of cores is the sensible most).
    max_waiting : int
        Jobs that may wait; :meth:`submit` raises :class:`QueueFull` beyond it.
    keep_results : int
        Finished keyed jobs kept for reuse (oldest dropped first).
    nice : int
        Scheduling niceness of the worker threads (0: as the rest of the process; higher:
        the OS runs the server's event loop first when both want a core). Linux only;
        elsewhere ignored.
    """

    def __init__(self, workers: int = 1, max_waiting: int = 32, keep_results: int = 64,
                 nice: int = 0):
        if workers < 1 or max_waiting < 0 or keep_results < 0 or not 0 <= nice <= 19:
            raise ValueError("workers must be >= 1, max_waiting and keep_results >= 0, "
                             f"nice in 0..19; got {workers}, {max_waiting}, {keep_results}, {nice}")
        self.nice = int(nice)
        self.workers = int(workers)
        self.max_waiting = int(max_waiting)
        self.keep_results = int(keep_results)
        self._lock = threading.Condition()
        self._waiting: collections.deque[Job] = collections.deque()
        self._running: set[Job] = set()
        self._by_key: collections.OrderedDict[Any, Job] = collections.OrderedDict()
        self._threads: list[threading.Thread] = []
        self._closed = False
        # (seconds, crowded) of the last typical runs that finished
        self._durations: collections.deque[tuple[float, bool]] = collections.deque(maxlen=RECENT_RUNS)

    # -- public -----------------------------------------------------------------------------

    def submit(self, fn: Callable[[JobContext], Any], *, key=None, budget_s: float = 60.0,
               label: str = "") -> Handle:
        """Queue ``fn``; return a :class:`Handle` to poll and cancel.

        With a ``key``, a finished job with the same key is returned at once and a
        queued or running one is shared (cancelled only when all holders cancel).
        """
        if not budget_s > 0:
            raise ValueError(f"budget_s must be > 0; got {budget_s!r}")
        with self._lock:
            if self._closed:
                raise RuntimeError("the job queue is shut down")
            if key is not None and key in self._by_key:
                job = self._by_key[key]
                if job.state == DONE or (job.state in (QUEUED, RUNNING) and not job._cancel.is_set()):
                    if not job.finished:
                        job._holders += 1
                    self._by_key.move_to_end(key)
                    return Handle(job)
                del self._by_key[key]          # failed or cancelled: compute afresh
            if len(self._waiting) >= self.max_waiting and len(self._running) >= self.workers:
                raise QueueFull(f"{len(self._waiting)} runs are already waiting; try again shortly")
            job = Job(fn, key=key, budget_s=budget_s, label=label, queue=self)
            self._waiting.append(job)
            if key is not None:
                self._by_key[key] = job
                self._trim()
            self._start_threads()
            self._lock.notify()
            return Handle(job)

    def cached(self, key) -> Job | None:
        """The finished result for ``key``, if one is kept."""
        with self._lock:
            job = self._by_key.get(key)
            return job if job is not None and job.state == DONE else None

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    @property
    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def recent_run_s(self, *, crowded: bool = False) -> tuple[float, ...]:
        """How long the last runs that finished took (seconds from start to end, newest last;
        at most :data:`RECENT_RUNS`): what an estimated wait is computed from.

        Runs a worker's :meth:`JobContext.untypical` marked (their time includes a model's load)
        are left out. With ``crowded``, only the runs that had every worker busy at their start
        or their end: on a machine whose runs contend for memory, a run takes longer when the
        others run too, as every run behind a line does.
        """
        with self._lock:
            return self._recent(crowded)

    def _recent(self, crowded: bool) -> tuple[float, ...]:
        return tuple(s for s, c in self._durations if c or not crowded)

    def running_elapsed_s(self) -> tuple[float, ...]:
        """Seconds each running job has been running so far."""
        now = time.monotonic()
        with self._lock:
            return tuple(now - j.started_at for j in self._running if j.started_at is not None)

    def shutdown(self, timeout: float = 5.0) -> None:
        """Cancel everything and stop the workers (for tests and process exit)."""
        with self._lock:
            self._closed = True
            for job in list(self._waiting):
                job._cancel.set()
                job._finish(CANCELLED)
            self._waiting.clear()
            for job in self._running:
                job._cancel.set()
            self._lock.notify_all()
        for t in self._threads:
            t.join(timeout)

    # -- internals ---------------------------------------------------------------------------

    def _trim(self) -> None:
        finished = [k for k, j in self._by_key.items() if j.finished]
        for k in finished[: max(0, len(finished) - self.keep_results)]:
            del self._by_key[k]

    def _start_threads(self) -> None:
        self._threads = [t for t in self._threads if t.is_alive()]
        while len(self._threads) < self.workers:
            t = threading.Thread(target=self._work, name=f"specdec-worker-{len(self._threads)}",
                                 daemon=True)
            self._threads.append(t)
            t.start()

    def _place(self, job: Job) -> Place:
        now = time.monotonic()
        with self._lock:
            try:
                position = self._waiting.index(job) + 1 if job.state == QUEUED else 0
            except ValueError:
                position = 0
            return Place(state=job.state, position=position, running=len(self._running),
                         workers=self.workers,
                         running_elapsed_s=tuple(now - j.started_at for j in self._running
                                                 if j.started_at is not None),
                         recent_run_s=self._recent(False), crowded_run_s=self._recent(True))

    def _position(self, job: Job) -> int:
        with self._lock:
            try:
                return self._waiting.index(job) + 1
            except ValueError:
                return 0

    def _release(self, job: Job) -> None:
        with self._lock:
            if job.finished:
                return
            job._holders -= 1
            if job._holders > 0:
                return
            job._cancel.set()
            if job in self._waiting:
                self._waiting.remove(job)
                job._finish(CANCELLED)
                if job.key is not None and self._by_key.get(job.key) is job:
                    del self._by_key[job.key]

    def _work(self) -> None:
        try:
            self._serve_jobs()
        finally:  # a worker that stops takes its model processes with it (closed once each)
            from .model_process import stop_thread_process

            stop_thread_process()

    def _serve_jobs(self) -> None:
        if self.nice:
            lower_priority(self.nice)
        while True:
            with self._lock:
                while not self._waiting and not self._closed:
                    self._lock.wait()
                if self._closed and not self._waiting:
                    return
                job = self._waiting.popleft()
                self._running.add(job)
                job.state = RUNNING
                job.started_at = time.monotonic()
                job.crowded = len(self._running) >= self.workers
            state = DONE
            try:
                job.result = job._fn(JobContext(job))
                if job._cancel.is_set():
                    state = CANCELLED
            except PlainError as exc:  # a failure already in plain words: its one line is enough
                log.warning("job %s failed: %s", job.label or job._fn, exc)
                job.error = f"The run failed on the server: {exc}."
                state = FAILED
            except Exception:  # noqa: BLE001 - logged here, a one-line message for the visitor
                log.exception("job %s failed", job.label or job._fn)
                job.error = "The run failed on the server; the error was logged."
                state = FAILED
            with self._lock:
                job.crowded = job.crowded or len(self._running) >= self.workers
                self._running.discard(job)
                job._finish(state)
                if state == DONE and job.typical:
                    self._durations.append((job.finished_at - job.started_at, job.crowded))
                # Only a whole result is shared: a failed, cancelled or cut-short run is not.
                partial = state != DONE or job.timed_out
                if partial and job.key is not None and self._by_key.get(job.key) is job:
                    del self._by_key[job.key]
                self._trim()


def lower_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority (on Linux a thread has its own niceness)."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError):  # not Linux, or not allowed: run at the process's priority
        log.info("could not set a worker thread's niceness; it runs at the process's priority")


#: Finished runs whose durations a queue keeps for estimating waits.
RECENT_RUNS = 20
#: Runs that may wait in the shared queue behind the running ones.
SHARED_MAX_WAITING = 32
#: Threads of one matrix product in a model process (see :func:`shared_queue`).
BLAS_THREADS = 1
#: Niceness of the shared queue's workers: a visitor's slider before another visitor's run.
WORKER_NICE = 10

_shared: JobQueue | None = None
_shared_lock = threading.Lock()


def shared_queue() -> JobQueue:
    """The process's one queue for real-model runs, created on first use.

    One worker per core (a run keeps a core busy; more at once would only slow each
    down) and up to :data:`SHARED_MAX_WAITING` runs in line. Every page that runs the
    model submits here, so together they never run more than that at once.

    The runs themselves go on to a model process per worker (:mod:`runtime.model_process`),
    started with the same niceness and with its BLAS library held to :data:`BLAS_THREADS`
    thread per matrix product (:func:`blas_env`). With two BLAS threads per run, two runs
    at once ask four threads of two cores, and OpenBLAS's threads wait for one another by
    spinning, taking cores from the event loop and from each other
    (``benchmarks/bench_ep7_latency.py`` measures another visitor's slider while a run
    generates).

    Its workers run at niceness :data:`WORKER_NICE`: when a core is contended, the server's
    event loop (every visitor's sliders and pages) is scheduled before a generation.
    """
    global _shared
    if _shared is None:
        with _shared_lock:
            if _shared is None:
                _shared = JobQueue(workers=max(1, os.cpu_count() or 1),
                                   max_waiting=SHARED_MAX_WAITING, nice=WORKER_NICE)
    return _shared


#: The variables OpenBLAS, OpenMP and MKL read for their thread count when they load.
BLAS_ENV_NAMES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def blas_env(n: int) -> dict[str, str]:
    """Environment for a new process whose BLAS library may use at most ``n`` threads per call.

    A BLAS library reads its thread count once, when it loads (with numpy), so the limit is
    given to a process as it starts: ``subprocess.Popen(..., env={**os.environ, **blas_env(1)})``.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"BLAS threads must be at least 1; got {n}")
    return {name: str(n) for name in BLAS_ENV_NAMES}

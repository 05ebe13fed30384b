"""The model in a child process: comparisons made there, mirrored here pass by pass.

A server that runs the model on a thread of its own process shares Python's interpreter lock
with its event loop: between two matrix products the decoding loop holds the lock, and every
visitor's slider waits for it (``benchmarks/bench_ep7_latency.py``: another visitor's slider
p95 about 2x slower during a generation on a worker thread, within 1.1x with the generation
in another process). So each worker thread of the server's queue owns one
:class:`ModelProcess`: a child process that loads the model once and
runs :func:`compare` on request, streaming each pass back (:class:`compare.Mirror`), so the
parent's pollers see the run grow exactly as they would in-process. The child is a fresh
interpreter (not a fork of the threaded server, and not ``multiprocessing``'s spawn, which
would re-run the server's ``__main__``).

The child runs at a lower CPU priority and with one BLAS thread per product, like the queue's
workers. Its kernel's threads follow :func:`threads_per_run`: whenever the number of runs in this
server's children changes, every child is told how many threads its passes may use (on the pipe
that carries cancellations), so a run alone on the machine uses :data:`THREADS_ALONE` and two
runs at once use one core each. The first child of this server to load the model in a weight
format times its forward passes of 1 to 32 positions (:func:`.calibrate.measure_pass_times`, a few
seconds) and this process keeps the stamped record (:mod:`.calibration`); every later child is
told not to measure, and :func:`calibration` gives that one record, which the pages use to price a
pass on this machine. Cancelling sets an event the child's runs check at every pass; a child that
does not answer within its time budget (plus a margin) is terminated and replaced on the next run.
"""

from __future__ import annotations

import logging
import os
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import calibration as records
from .jobs import PlainError, blas_env
from ..lm.compare import Comparison, Mirror, compare

log = logging.getLogger("specdec_playable")

#: Seconds a child may take past a run's own time budget before it is terminated.
GRACE_S = 10.0
#: Seconds a fresh child may go without word while it starts: each stage of its start (import,
#: loading the weights, warming and timing its passes) reports when it begins, and each report
#: gives the next stage this long again, so a busy machine's slow load is not taken for a hang.
LOAD_S = 180.0
#: Environment variable: seconds the child's start-up calibration may take (0 skips it).
CALIBRATE_ENV = "SDP_CALIBRATE_S"

#: Threads a run's passes use when it is the only run in this server's children (measured:
#: ``benchmarks/bench_lm.py --only threads``; see :func:`threads_per_run`).
THREADS_ALONE = 2
#: On the cancel pipe, a number at or above this tells the child its threads (the rest).
_THREADS_CODE = 0xFFFF0000

class ProcessFailed(PlainError):
    """The model process died, went silent or was closed: the run cannot finish on it (the next
    run starts a fresh one). Its message is plain words for the visitor."""


@dataclass(frozen=True)
class LoadState:
    """How the model's first load on this server stands, for the pages' status line.

    Attributes
    ----------
    state : str
        ``"waiting"`` (no model process has started: the first run, or the load at start, starts
        one), ``"loading"``, ``"ready"`` (a process has loaded the model; it stays so) or
        ``"failed"`` (the last load failed before any succeeded).
    at : float
        When it came to this state (``time.time()``).
    retry_s : float or None
        For ``"failed"``: seconds from ``at`` until the load is tried again, or None when only the
        next run tries.
    reason : str
        For ``"failed"``: the one-line reason.
    """

    state: str
    at: float
    retry_s: float | None = None
    reason: str = ""


_load = [LoadState("waiting", time.time())]
_load_lock = threading.Lock()


def load_state() -> LoadState:
    """Where the model's load on this server stands (an immutable record, replaced on change)."""
    return _load[0]


def note_load(state: str, *, retry_s: float | None = None, reason: str = "") -> None:
    """Record a change of the model's load (once ``"ready"``, the state stays ready: a later
    process's load, or its failure, does not make the model unavailable to the pages)."""
    with _load_lock:
        if _load[0].state == "ready":
            return
        _load[0] = LoadState(state, time.time(), retry_s, reason)


_children: set = set()  # live ModelProcess objects of this server
_runs = [0]  # runs in them now
_runs_lock = threading.Lock()


def threads_per_run(runs: int, cores: int | None = None) -> int:
    """Threads each run's passes use with ``runs`` runs in the children at once: the cores shared
    out, at most :data:`THREADS_ALONE`, at least one.

    >>> threads_per_run(1, 2), threads_per_run(2, 2), threads_per_run(0, 1)
    (2, 1, 1)
    """
    cores = (os.cpu_count() or 1) if cores is None else int(cores)
    return max(1, min(THREADS_ALONE, cores // max(int(runs), 1)))


class Descriptor:
    """One file descriptor this process opened, owned by this object alone: written only while it
    is open, closed exactly once.

    A descriptor's number is reused by the OS as soon as it is closed, so a second ``os.close`` or
    a late ``os.write`` on a stale number hits whatever now holds it (another visitor's
    websocket, a fresh child's pipe). Here :meth:`close` is idempotent and thread-safe, and
    :meth:`write` after it (or racing it) does nothing. The descriptor is non-blocking, so a
    write never waits on a child that stopped reading (the few bytes are dropped instead).
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self._fd = fd
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def write(self, data: bytes) -> bool:
        """Write ``data`` if the descriptor is still open and takes it now; whether it was written."""
        with self._lock:
            if self._fd < 0:
                return False
            try:
                return os.write(self._fd, data) == len(data)
            except OSError:
                return False

    def close(self) -> None:
        """Close the descriptor the first time; later calls do nothing."""
        with self._lock:
            fd, self._fd = self._fd, -1
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _tell_threads() -> None:
    """Tell every child the threads a run may use now (called with ``_runs_lock`` held)."""
    code = struct.pack("I", _THREADS_CODE + threads_per_run(_runs[0]))
    for child in list(_children):
        child._cancel.write(code)


class _Running:
    """Counts one run in the children for as long as it lasts (``with _Running(): ...``)."""

    def __enter__(self):
        with _runs_lock:
            _runs[0] += 1
            _tell_threads()

    def __exit__(self, *exc):
        with _runs_lock:
            _runs[0] -= 1
            _tell_threads()


def model_ready() -> bool:
    """Whether a child process of this server has loaded the model (the first load is slow)."""
    return load_state().state == "ready"


def calibration():
    """This server's :class:`.calibration.Calibration` for its weight format, measured once by the
    first child that loaded the model, or None before (or with calibration switched off)."""
    return records.STORE.get(_WEIGHTS[0])


def _calibrate(model, cancel: threading.Event, measure: bool):  # pragma: no cover - runs in the child
    """The child's warm-up and, if it is the one to measure, its stamped pass times (else None;
    None too when switched off)."""
    from ..lm import head, kernel
    from ..lm.calibrate import BUDGET_S

    kernel.warmup()
    head.warmup(model)
    if not measure:
        return None
    try:
        budget = float(os.environ.get(CALIBRATE_ENV, BUDGET_S))
    except ValueError:
        budget = BUDGET_S
    if not budget > 0:
        return None
    return records.measure(model, budget_s=min(budget, 30.0), stopped=cancel.is_set)


def _child_main(requests_fd: int, replies_fd: int, cancel_fd: int, nice: int, blas_threads: int,
                weights: str = "f32", *, measure: str = "1") -> None:  # pragma: no cover - runs in the child
    """The child's loop: load the model, then answer one request at a time until the parent leaves."""
    from multiprocessing.connection import Connection

    from .jobs import lower_priority
    from ..lm.model import get_model

    requests = Connection(requests_fd, writable=False)
    replies = Connection(replies_fd, readable=False)
    cancel = threading.Event()
    current = [0]

    def watch_cancel() -> None:  # the parent writes the number of the run to stop, or threads
        from ..lm import kernel

        with os.fdopen(cancel_fd, "rb", buffering=0) as fh:
            while chunk := fh.read(4):
                value = struct.unpack("I", chunk)[0]
                if value >= _THREADS_CODE:
                    kernel.set_process_threads(value - _THREADS_CODE)
                elif value == current[0]:
                    cancel.set()
        cancel.set()  # the parent is gone

    threading.Thread(target=watch_cancel, daemon=True).start()
    if nice:
        lower_priority(nice)
    replies.send(("loading", "the weights"))
    model = get_model(weights)  # the BLAS thread limit came with the environment (jobs.blas_env)
    replies.send(("loading", "timing its passes"))
    replies.send(("ready", _calibrate(model, cancel, measure == "1")))
    while True:
        try:
            run, request = requests.recv()
        except (EOFError, OSError):
            return
        current[0] = run
        cancel.clear()
        try:
            if request.pop("op", "compare") == "measure":
                replies.send(("done", _measure(model, cancel, replies, **request)))
                continue
            prompt = model.tokenizer.chat(request.pop("prompt"))
            replies.send(("prompt", prompt))
            result = compare(model, prompt, cancel=cancel,
                             stream=lambda kind, value: replies.send((kind, value)), **request)
            replies.send(("done", result))
        except (BrokenPipeError, EOFError):
            return
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which logs it
            replies.send(("error", f"{type(exc).__name__}: {exc}"))


def _measure(model, cancel: threading.Event, replies, text: str,
             max_seconds: float):  # pragma: no cover - runs in the child
    """:func:`.measure.measure_text` in the child, with the memory draft's first guesses checked
    beside the head's (left out if its index cannot be loaded: the head's numbers still come):
    progress sent as ``("progress", (done, total))``; stops at the next pass when cancelled or out
    of time (the result then says it is partial)."""
    from ..lm.measure import measure_text
    from ..lm.memory import MemoryDraft, MemoryIndexError, load_index

    try:
        load_index()
        beside = {"memory": MemoryDraft()}
    except MemoryIndexError as exc:
        log.warning("the memory draft is left out of scoring a pasted text: %s", exc)
        beside = {}
    end = time.monotonic() + max_seconds
    return measure_text(model, text, stopped=lambda: cancel.is_set() or time.monotonic() > end,
                        report=lambda done, total: replies.send(("progress", (done, total))),
                        beside=beside)


_CHILD = ("import sys; from specdec_playable.runtime.model_process import _child_main; "
          "_child_main(*map(int, sys.argv[1:6]), sys.argv[6], measure=sys.argv[7])")

#: The weight format this server's model processes load (:func:`set_weights`; ``lm.model``'s
#: ``"f32"`` or ``"q4"``): one setting for the whole server, made by the app before it serves.
_WEIGHTS = ["f32"]


def set_weights(weights: str) -> str:
    """Set the weight format of the model processes started from now on (``"f32"`` or ``"q4"``;
    anything else is a ``ValueError`` naming the choices); returns it."""
    from ..lm.model import check_weights

    _WEIGHTS[0] = check_weights(weights)
    return _WEIGHTS[0]


def weights() -> str:
    """The weight format this server's model processes load."""
    return _WEIGHTS[0]


class ModelProcess:
    """One child process holding the model; :meth:`compare` runs there, one run at a time.

    The child is a fresh interpreter (``python -c``), not a fork of a threaded server, and it
    talks to this process over three pipes: requests, replies (pickled by
    :mod:`multiprocessing.connection`) and cancellations.
    """

    def __init__(self, *, nice: int = 0, blas_threads: int = 1, weights: str | None = None) -> None:
        # Imported here: a static (Pyodide) page imports this module but never starts a child.
        from multiprocessing.connection import Connection

        self._weights = weights or _WEIGHTS[0]
        self._store = records.STORE
        self._measures = self._store.claim(self._weights)  # the first child of a format measures

        self._closed = False
        self._close_lock = threading.Lock()
        req_r, req_w = os.pipe()
        rep_r, rep_w = os.pipe()
        can_r, can_w = os.pipe()
        child_fds = (req_r, rep_w, can_r)
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD, *map(str, child_fds), str(nice), str(blas_threads),
                 self._weights, "1" if self._measures else "0"],
                pass_fds=child_fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                close_fds=True, env={**os.environ, **blas_env(blas_threads)})
        except BaseException:
            for fd in (req_w, rep_r, can_w):  # this side's ends too: nothing else owns them yet
                os.close(fd)
            if self._measures:
                self._store.release(self._weights)
            raise
        finally:
            for fd in child_fds:
                os.close(fd)
        # Each end is owned by one object from here on, closed once by close() below.
        self._requests = Connection(req_w, readable=False)
        self._replies = Connection(rep_r, writable=False)
        self._cancel = Descriptor(can_w)
        self._run = 0
        self._loaded = False
        self._started = time.monotonic()
        note_load("loading")
        with _runs_lock:
            _children.add(self)
            _tell_threads()

    @property
    def loaded(self) -> bool:
        """Whether the child has loaded the model (its first run waits for the load)."""
        return self._loaded

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has been called (the pipes are then released)."""
        return self._closed

    def close(self) -> None:
        """Stop the child (it holds a copy of the model's weights) and release its pipes.

        Idempotent: the first call releases everything, later calls (the run that found the child
        silent, then its owner) do nothing, so no descriptor is closed twice.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        with _runs_lock:
            _children.discard(self)
        if self._measures and not self._loaded:  # it never measured: the next child will
            self._store.release(self._weights)
            self._measures = False
        for conn in (self._requests, self._replies):
            conn.close()
        self._cancel.close()
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def _stop_run(self) -> None:
        self._cancel.write(struct.pack("I", self._run))  # nothing once closed

    def _receive(self, deadline: float, cancel: threading.Event | None):
        asked = False
        while not self._replies.poll(0.05):
            if cancel is not None and cancel.is_set() and not asked:
                self._stop_run()
                asked = True
            if time.monotonic() > deadline or not self.alive:
                self.close()
                raise ProcessFailed("the model process stopped answering")
        try:
            return self._replies.recv()
        except (EOFError, OSError):  # it exited (a failed load): closed, so the next one starts clean
            self.close()
            raise ProcessFailed("the model process stopped answering") from None

    def _wait_loaded(self, cancel: threading.Event | None) -> None:
        if self._closed:  # every way in (load, measure, compare) passes here first
            raise ProcessFailed("the model process was closed")
        if not self._loaded:
            try:
                kind, times = self._receive(time.monotonic() + LOAD_S, cancel)
                while kind == "loading":  # a stage of its start began: it has LOAD_S again
                    kind, times = self._receive(time.monotonic() + LOAD_S, cancel)
                if kind != "ready":
                    raise ProcessFailed("the model process answered out of turn while loading")
            except RuntimeError as exc:
                if not (cancel is not None and cancel.is_set()):
                    note_load("failed", reason=str(exc))
                raise
            self._loaded = True
            if not model_ready():
                log.info("the model is ready (%s weights, model process %s, %.0f s after it started)",
                         self._weights, self._proc.pid, time.monotonic() - self._started)
            if times is not None:
                kept = self._store.settle(times)
                log.info("model process %s: passes of %s positions take %s ms (%s)", self._proc.pid,
                         kept.times.n_positions, kept.times.ms, kept.stamp())
            elif self._measures:  # calibration is switched off: nothing to keep
                self._store.release(self._weights)
            else:
                log.info("model process %s: uses the server's calibration record, not its own",
                         self._proc.pid)
            note_load("ready")  # once its record, if it measured one, is kept

    def load(self, cancel: threading.Event | None = None):
        """Wait until the child has loaded the model (and, if it is the first child of its weight
        format, timed its passes); return the server's record for its format (a
        :class:`.calibration.Calibration`, the same for every child; None if calibration is
        switched off, or while the child measuring it has not reported yet)."""
        self._wait_loaded(cancel)
        return self._store.get(self._weights)

    def measure(self, text: str, *, cancel: threading.Event | None = None, max_seconds: float,
                report: Callable[[object], None] | None = None):
        """:func:`.measure.measure_text` of ``text`` (Episode 4's pasted text), made in the child.

        ``report`` is called with ``(tokens scored, tokens in all)`` after every pass. Setting
        ``cancel``, or running out of ``max_seconds``, stops it at its next pass with the tokens
        scored so far (``complete`` False).
        """
        self._wait_loaded(cancel)
        self._run += 1
        with _Running():
            self._requests.send((self._run, dict(op="measure", text=text, max_seconds=max_seconds)))
            deadline = time.monotonic() + max_seconds + GRACE_S
            while True:
                kind, value = self._receive(deadline, cancel)
                if kind == "progress":
                    if report is not None:
                        report(value)
                elif kind == "done":
                    return value
                elif kind == "error":
                    raise RuntimeError(value)

    def compare(self, prompt: str, draft: str, k: int, *, max_new: int, temperature: float = 0.0,
                top_p: float = 1.0, seed: int | None = None, cancel: threading.Event | None = None,
                max_seconds: float, report: Callable[[object], None] | None = None) -> Comparison:
        """:func:`compare` of a chat ``prompt`` (text), made in the child.

        ``report`` is called with a :class:`compare.Live` of the runs so far after every pass
        (in this process, so a snapshot costs the child's timed runs nothing). Setting
        ``cancel`` stops the run at its next pass; the child stays, ready for the next run.
        """
        self._wait_loaded(cancel)
        self._run += 1
        with _Running():
            self._requests.send((self._run, dict(prompt=prompt, draft=draft, k=k, max_new=max_new,
                                                 temperature=temperature, top_p=top_p, seed=seed,
                                                 max_seconds=max_seconds)))
            deadline = time.monotonic() + max_seconds + GRACE_S
            mirror: Mirror | None = None
            while True:
                kind, value = self._receive(deadline, cancel)
                if kind == "prompt":
                    mirror = Mirror(value, draft, k, temperature, top_p)
                    if report is not None:
                        report(mirror.live)
                elif kind == "done":
                    return value
                elif kind == "error":
                    raise RuntimeError(value)
                else:
                    mirror.feed(kind, value)
                    if report is not None:
                        report(mirror.live)


_local = threading.local()


def thread_process(*, nice: int = 0, blas_threads: int = 1, weights: str | None = None) -> ModelProcess:
    """The calling thread's own model process for ``weights`` (the server's format by default),
    started on first use and restarted if it died. A thread keeps one process per format it has
    been asked for (Episode 7 lets a visitor pick one), so a run never reloads the model; an
    unknown format is a ``ValueError`` naming the choices."""
    from ..lm.model import check_weights

    fmt = check_weights(weights or _WEIGHTS[0])
    procs = _local.__dict__.setdefault("procs", {})
    proc = procs.get(fmt)
    if proc is None or proc.closed or not proc.alive:
        if proc is not None:
            proc.close()  # its pipes, and its claim on the calibration if it died before measuring
        proc = procs[fmt] = ModelProcess(nice=nice, blas_threads=blas_threads, weights=fmt)
        log.info("started a model process (pid %s, weights %s) for %s", proc._proc.pid,
                 fmt, threading.current_thread().name)
    return proc


def stop_thread_process() -> None:
    """Stop the calling thread's model processes, if any (one per weight format it used)."""
    for proc in _local.__dict__.pop("procs", {}).values():
        proc.close()


__all__ = ["CALIBRATE_ENV", "THREADS_ALONE", "LoadState", "ModelProcess", "ProcessFailed",
           "calibration", "load_state", "model_ready", "note_load", "set_weights",
           "thread_process", "threads_per_run", "stop_thread_process", "weights"]

"""Following one queued run of the real model: submit, place in line, progress, finish, cancel.

Episode 4's pasted text and Episode 7's Run both hand slow work to the server's queue and follow
it from a page. :class:`RunFollower` is that hold, written once: :meth:`RunFollower.submit` queues
the work (or says why the line would not take it), :meth:`RunFollower.poll` reads what the job is
doing at one instant as a :class:`Followed`, and :meth:`RunFollower.cancel` withdraws it (a job
another visitor still holds goes on for them). A page's view polls while :attr:`RunFollower.active`
and cancels when the tab is abandoned (``kit/poller.py``). :class:`FollowsRun` is the part of a
page's state that holds a follower: being active, polling, cancelling and closing, written once for
Episode 4's scoring and Episode 7's runs, which say only what a poll shows (``_show``). No Panel or
Bokeh.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..runtime import service as interface

#: What a followed run is doing, as one poll saw it.
QUEUED, RUNNING, DONE, CANCELLED, FAILED = (interface.QUEUED, interface.RUNNING, interface.DONE,
                                            interface.CANCELLED, interface.FAILED)


@dataclass(frozen=True)
class Followed:
    """One poll of a followed run.

    Attributes
    ----------
    state : str
        ``queued``, ``running``, ``done``, ``cancelled`` or ``failed``.
    place : Place
        Its place in line and the queue's figures, read at the same instant.
    progress : Any
        What the work last reported (None before its first report).
    result : Any
        What it returned (a partial result for a cancelled or stopped run, else None).
    error : str
        The one-line reason it failed (empty otherwise).
    shared : bool
        Whether the run was already finished for an earlier visitor when it was submitted.
    """

    state: str
    place: interface.Place
    progress: Any = None
    result: Any = None
    error: str = ""
    shared: bool = False

    @property
    def position(self) -> int:
        """Place in line (1 = next) while queued, else 0."""
        return self.place.position if self.state == QUEUED else 0

    @property
    def finished(self) -> bool:
        return self.state not in (QUEUED, RUNNING)


class Refused(Exception):
    """The line was full: :meth:`RunFollower.submit` did not queue the work. It keeps the queue's
    figures of that moment (runs waiting, workers, the running runs' times and the last runs'
    durations), for a page's estimate of when to try again."""

    def __init__(self, message: str, queue: interface.JobQueue) -> None:
        super().__init__(message)
        self.waiting = queue.waiting
        self.workers = queue.workers
        self.running_elapsed_s = tuple(queue.running_elapsed_s())
        self.recent_run_s = tuple(queue.recent_run_s())
        self.crowded_run_s = tuple(queue.recent_run_s(crowded=True))


class RunFollower:
    """One visitor's hold on one run at a time, through a :class:`runtime.Service` (without one,
    :data:`runtime.NO_MODEL`: nothing runs).

    Examples
    --------
    >>> f = RunFollower(interface.ModelService(installed=lambda: False))
    >>> f.installed, f.active, f.poll()
    (False, False, None)
    """

    def __init__(self, service: interface.Service | None = None) -> None:
        self.service = service if service is not None else interface.NO_MODEL
        self._handle: interface.Handle | None = None
        self._shared = False

    @property
    def installed(self) -> bool:
        """Whether the model can run here (asked of the service, every time)."""
        return bool(self.service.installed())

    @property
    def job(self) -> interface.Job | None:
        """The job held (for scripts and tests: its ``wait``), or None."""
        return self._handle.job if self._handle is not None else None

    @property
    def active(self) -> bool:
        """True while the run is held and not yet seen to end (a view polls meanwhile)."""
        return self._handle is not None

    def submit(self, work, *, key, budget_s: float, label: str) -> Followed:
        """Queue ``work`` (cancelling any run still held) and return its first poll.

        Raises
        ------
        Refused
            When the line is full; nothing is held then.
        """
        self.cancel()
        queue = self.service.queue()
        try:
            handle = queue.submit(work, key=key, budget_s=budget_s, label=label)
        except interface.QueueFull as exc:
            raise Refused(str(exc), queue) from None
        self._handle = handle
        self._shared = handle.job.state == interface.DONE
        return self.poll()

    def poll(self) -> Followed | None:
        """What the run is doing now (None when nothing is held). A poll that sees it end lets
        go of it: the next poll returns None."""
        handle = self._handle
        if handle is None:
            return None
        job = handle.job
        place = job.place  # state, place in line and the queue's figures, read at one instant
        if place.state in (QUEUED, RUNNING):
            return Followed(place.state, place, job.progress, shared=self._shared)
        self._handle = None
        return Followed(place.state, place, job.progress, job.result, job.error or "",
                        shared=self._shared)

    def cancel(self) -> Followed | None:
        """Withdraw the run held, if any; returns what it last showed (state ``cancelled``)."""
        handle, self._handle = self._handle, None
        if handle is None:
            return None
        handle.cancel()
        job = handle.job
        return Followed(CANCELLED, job.place, job.progress, job.result, shared=self._shared)


class FollowsRun:
    """The part of a page's state that follows one run at a time through ``self.follower`` (a
    :class:`RunFollower`): a view polls while :attr:`active` and calls :meth:`close` when the
    visitor leaves. A state mixes it in and says, in ``_show(seen)``, what a poll shows."""

    follower: RunFollower

    @property
    def active(self) -> bool:
        """True while a run is held and not yet seen to end (the view polls meanwhile)."""
        return self.follower.active

    def poll(self) -> bool:
        """Bring the state up to date with the run; True while it is still queued or running."""
        seen = self.follower.poll()
        if seen is not None:
            self._show(seen)
        return self.active

    def cancel(self) -> None:
        """Withdraw the run held, if any (a run nobody else holds stops at its next pass), and
        show that it was cancelled."""
        seen = self.follower.cancel()
        if seen is not None:
            self._show(seen)

    def close(self) -> None:
        """The visitor left (the tab closed): cancel the run, if any."""
        self.cancel()

    def _show(self, seen: Followed) -> None:
        raise NotImplementedError

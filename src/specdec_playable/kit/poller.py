"""The one poller of a followed run: while a page's run waits for or runs on a worker, the page
asks its state a few times a second what the run is doing, and redraws.

A page's state follows its run with a :class:`..kit.follower.RunFollower` and offers ``active``,
``poll()`` (True while still active) and ``close()``. :class:`RunPoller` polls while ``active``;
when the visitor's tab has been gone a while (:func:`tab_abandoned`), or the
session ends, it closes the state, which cancels the run: a tab closed mid-run never leaves the
server working for nobody.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import panel as pn


#: How often a session polls its running job (ms).
POLL_MS = 300
#: A page whose tab has had no connection for this long cancels its run (ms).
ABANDONED_MS = 5000


class Followed(Protocol):
    """What a page's state offers its poller."""

    @property
    def active(self) -> bool: ...

    def poll(self) -> bool: ...

    def close(self) -> None: ...


class RunPoller:
    """Polls ``state`` while it is active and calls ``redraw`` after each poll.

    Parameters
    ----------
    state : Followed
    redraw : callable
        Brings the page up to date with the state (inside ``pn.io.hold``).
    period_ms, abandoned_ms : int
    session_context : optional
        The page's Bokeh session context (default: the session being built; None outside a
        server, where no tab can be abandoned).
    """

    def __init__(self, state: Followed, redraw: Callable[[], None], *, period_ms: int = POLL_MS,
                 abandoned_ms: int = ABANDONED_MS, session_context=None) -> None:
        self.state, self.redraw = state, redraw
        self.period_ms, self.abandoned_ms = period_ms, abandoned_ms
        self._callback = None
        if session_context is None:
            doc = pn.state.curdoc
            session_context = doc.session_context if doc is not None else None
            if session_context is not None:
                pn.state.on_session_destroyed(self._closed)
        self._session = session_context

    @property
    def polling(self) -> bool:
        return self._callback is not None

    def start(self) -> None:
        """Poll from now on, if the state holds a run (and no poll is running yet)."""
        if self.state.active and self._callback is None:
            self._callback = pn.state.add_periodic_callback(self.tick, period=self.period_ms)

    def stop(self) -> None:
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def abandoned(self) -> bool:
        """True when this page's tab has been gone a while (before the session itself ends)."""
        return tab_abandoned(self._session, self.abandoned_ms)

    def tick(self) -> None:
        """One poll: cancel an abandoned tab's run, bring the state and the page up to date, and
        stop once the run has ended."""
        if self.abandoned():
            self.state.close()
        with pn.io.hold():
            active = self.state.poll()
            self.redraw()
        if not active:
            self.stop()

    def _closed(self, _session_context) -> None:
        self.stop()
        self.state.close()


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

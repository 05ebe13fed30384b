"""What happened when, on which lane: one :class:`Event` per happening, and :class:`Events`, their
columnar table, shared by the clocks, the relay and the real model's decoders.

:func:`verdict_events` is the one place a verify pass's verdict becomes events.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Every kind of event the simulations emit.
KINDS = (
    "generate",   # a sequential big-model pass that writes one token
    "verify",     # one parallel big-model pass scoring many positions
    "score",      # one position scored inside a verify pass
    "draft",      # one draft-model step proposing one token
    "accepted",   # a drafted token the big model agreed with
    "rejected",   # the first drafted token the big model disagreed with
    "discarded",  # drafted after the first miss, thrown away unjudged
    "correction", # the big model's own token at the first miss
    "bonus",      # the big model's extra token when every draft was accepted
)


@dataclass(frozen=True, slots=True)
class Event:
    """One happening on one lane, from ``start_ms`` to ``end_ms`` (see :class:`Events`)."""

    lane: str
    kind: str
    round: int
    token: int
    text: str
    start_ms: float
    end_ms: float


def verdict_events(round: int, position: int, guesses, n_accepted: int, last: str | None,
                   at_ms: float, *, lane: str = "big") -> list[Event]:
    """The verdicts of one verify pass over a chain of drafts, stamped at its end ``at_ms``.

    The drafts at output positions ``position, position + 1, ...`` had texts ``guesses``; the first
    ``n_accepted`` were accepted. If one was missed, it is ``rejected``, those after it are
    ``discarded`` and the big model's own token ``last`` is the ``correction``; if none was missed,
    ``last`` is the ``bonus`` (None: no bonus, e.g. at the end of a known text).

    Examples
    --------
    >>> [e.kind for e in verdict_events(0, 5, ["a", "b", "c"], 1, "x", 9.0)]
    ['accepted', 'rejected', 'discarded', 'correction']
    >>> [(e.kind, e.token, e.text) for e in verdict_events(0, 5, ["a"], 1, "z", 9.0)]
    [('accepted', 5, 'a'), ('bonus', 6, 'z')]
    """
    d, a = len(guesses), int(n_accepted)
    if not 0 <= a <= d:
        raise ValueError(f"n_accepted must be in [0, {d}]; got {n_accepted}")
    out = [Event(lane, "accepted", round, position + i, guesses[i], at_ms, at_ms) for i in range(a)]
    if a < d:
        out.append(Event(lane, "rejected", round, position + a, guesses[a], at_ms, at_ms))
        out += [Event(lane, "discarded", round, position + i, guesses[i], at_ms, at_ms)
                for i in range(a + 1, d)]
        out.append(Event(lane, "correction", round, position + a, last, at_ms, at_ms))
    elif last is not None:
        out.append(Event(lane, "bonus", round, position + d, last, at_ms, at_ms))
    return out


@dataclass(frozen=True, eq=False)
class Events:
    """Events as parallel numpy columns, sorted by start time.

    Attributes
    ----------
    lane : numpy.ndarray of str
        Which timeline the event belongs to (``"sequential"``, ``"parallel"``,
        ``"draft"``, ``"big"``).
    kind : numpy.ndarray of str
        One of :data:`KINDS`.
    round : numpy.ndarray of int
        Round number (0-based); for the clocks, the pass number.
    token : numpy.ndarray of int
        Position in the text the event concerns, or -1.
    text : numpy.ndarray of str
        The token's text (the draft's guess for drafts), or ``""``.
    start_ms, end_ms : numpy.ndarray of float
        When the event starts and ends on the wall clock.
    """

    lane: np.ndarray
    kind: np.ndarray
    round: np.ndarray
    token: np.ndarray
    text: np.ndarray
    start_ms: np.ndarray
    end_ms: np.ndarray

    @classmethod
    def of(cls, events) -> "Events":
        """The table of a sequence of :class:`Event`, in their order."""
        for e in events:
            if not isinstance(e, Event):
                raise TypeError(f"events must be Event records; got {type(e).__name__}")
        cols = [[getattr(e, c) for e in events] for c in cls.columns()]
        return cls(
            lane=np.array(cols[0], dtype=str),
            kind=np.array(cols[1], dtype=str),
            round=np.array(cols[2], dtype=np.int64),
            token=np.array(cols[3], dtype=np.int64),
            text=np.array(cols[4], dtype=str),
            start_ms=np.array(cols[5], dtype=float),
            end_ms=np.array(cols[6], dtype=float),
        )

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    def where(self, mask) -> "Events":
        """The events selected by a boolean mask."""
        return Events(**{name: getattr(self, name)[mask] for name in self.columns()})

    def of_kind(self, *kinds: str) -> "Events":
        return self.where(np.isin(self.kind, kinds))

    @staticmethod
    def columns() -> tuple[str, ...]:
        return ("lane", "kind", "round", "token", "text", "start_ms", "end_ms")

    def records(self) -> list[Event]:
        """The table as :class:`Event` records, in order (``Events.of(e.records())`` is ``e``)."""
        return [Event(*row) for row in zip(*(getattr(self, c).tolist() for c in self.columns()))]

    def to_dict(self) -> dict[str, list]:
        """Plain lists per column (JSON- and ColumnDataSource-friendly)."""
        return {name: getattr(self, name).tolist() for name in self.columns()}

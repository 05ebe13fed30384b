"""A small columnar event table shared by the clocks and the relay."""

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
    def from_rows(cls, rows: list[tuple]) -> "Events":
        """Build from ``(lane, kind, round, token, text, start_ms, end_ms)`` rows."""
        cols = list(zip(*rows)) if rows else [()] * 7
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

    def to_dict(self) -> dict[str, list]:
        """Plain lists per column (JSON- and ColumnDataSource-friendly)."""
        return {name: getattr(self, name).tolist() for name in self.columns()}

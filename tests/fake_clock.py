"""A clock the tests set, and the real model wrapped so that each forward pass moves it.

With ``TimedModel(model, clock)`` every target pass over ``n`` positions takes exactly
:func:`pass_ms` ``(n)`` on ``clock`` and nothing else takes any time, so a run's times are known
before it starts: what a decoder or the race reports can be compared with them.
"""

from __future__ import annotations


def pass_ms(n: int) -> float:
    """The fake cost of a target pass over ``n`` positions: 20 ms plus 3 ms a position."""
    return 20.0 + 3.0 * n


class FakeClock:
    """Seconds that move only when a test (or a :class:`TimedModel`) moves them."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def advance_ms(self, ms: float) -> None:
        self.t += ms / 1e3


class TimedModel:
    """The model, its forward pass charged to ``clock`` at :func:`pass_ms` per call."""

    def __init__(self, model, clock: FakeClock) -> None:
        self._model, self._clock = model, clock

    def forward(self, tokens, cache, **kw):
        out = self._model.forward(tokens, cache, **kw)
        self._clock.advance_ms(pass_ms(len(tokens)))
        return out

    def __getattr__(self, name):
        return getattr(self._model, name)

"""Episode 1's two clocks: writing N tokens vs checking N given tokens.

Writing is sequential: token ``i + 1`` needs token ``i``, so N tokens take N
big-model passes end to end. Checking is parallel: a transformer scores every
position of a given text in one pass, exactly as it does in training.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import validate as _v
from .events import Event, Events

N_TOKENS_MAX = 4096


@dataclass(frozen=True, eq=False)
class ClockComparison:
    """The two timelines of :func:`sequential_vs_parallel`.

    Attributes
    ----------
    n_tokens : int
    sequential : Events
        ``n_tokens`` ``generate`` events on lane ``"sequential"``, back to back.
    parallel : Events
        One ``verify`` event on lane ``"parallel"`` and ``n_tokens`` ``score``
        events inside it, all sharing its start and end.
    sequential_ms, parallel_ms : float
        When each lane finishes.
    """

    n_tokens: int
    sequential: Events
    parallel: Events
    sequential_ms: float
    parallel_ms: float

    @property
    def ratio(self) -> float:
        """How many times longer writing takes than checking."""
        return self.sequential_ms / self.parallel_ms


def sequential_vs_parallel(
    n_tokens,
    big_pass_ms=600.0,
    *,
    verify_pass_ms=None,
    tokens=None,
) -> ClockComparison:
    """Time N sequential generation passes against one verification pass.

    Parameters
    ----------
    n_tokens : int
        Tokens to write (or check), in [1, 4096].
    big_pass_ms : float
        Time of one big-model pass that writes one token, > 0.
    verify_pass_ms : float, optional
        Time of the single pass that scores all ``n_tokens`` positions. Defaults to
        ``big_pass_ms``: decoding is memory-bound, so scoring a few more positions
        costs almost nothing extra (see ``assets/pass_cost_h200.csv``).
    tokens : sequence of str, optional
        Text of the tokens, for labels; defaults to ``"t1", "t2", ...``.

    Examples
    --------
    >>> c = sequential_vs_parallel(6)
    >>> c.sequential_ms, c.parallel_ms
    (3600.0, 600.0)
    """
    n = _v.integer("n_tokens", n_tokens, 1, N_TOKENS_MAX)
    big = _v.duration_ms("big_pass_ms", big_pass_ms)
    verify = big if verify_pass_ms is None else _v.duration_ms("verify_pass_ms", verify_pass_ms)
    if tokens is None:
        tokens = [f"t{i + 1}" for i in range(n)]
    elif len(tokens) != n:
        raise ValueError(f"tokens must have n_tokens={n} entries; got {len(tokens)}")
    tokens = [str(t) for t in tokens]

    sequential = Events.of([
        Event("sequential", "generate", i, i, tokens[i], i * big, (i + 1) * big) for i in range(n)
    ])
    parallel = Events.of(
        [Event("parallel", "verify", 0, -1, "", 0.0, verify)]
        + [Event("parallel", "score", 0, i, tokens[i], 0.0, verify) for i in range(n)]
    )
    return ClockComparison(
        n_tokens=n,
        sequential=sequential,
        parallel=parallel,
        sequential_ms=float(sequential.end_ms.max()),
        parallel_ms=verify,
    )

"""A fair race: plain and speculative decoding of one prompt, interleaved pass by pass in one loop.

Two runs timed one after the other measure the machine twice: if its load changes in between
(another visitor's run, another program), the load decides the speedup, not the draft.
:func:`race_passes` runs both at once instead, in one thread: each run is a decoder that yields
one pass per ``next()`` (:func:`.decode.speculate_passes`, :func:`.decode.generate_passes`), each
with its own KV cache, and the loop advances whichever run is behind: after every pass the run
that has written fewer tokens goes next (the speculative run on a tie). So a speculative round is
followed by about as many plain steps as it wrote tokens, and a change of load hits both runs
within the same moments. Neither run is ever suspended inside a pass.

Every turn is timed where it runs: each run's own clock (:class:`.decode.RunClock`) counts only
its own passes, so the turns (:class:`Turns`) and both generations read the times the decoders
measured, untouched. The race's clock is the process's CPU time (:data:`CPU_CLOCK`): a pass that
waits for a core (another visitor's run, another program on a crowded machine) does not count
the wait, which would fall on whichever pass it happened to hit, while a pass slowed by the
machine's memory being shared (the physics of the pass changing) still counts it. A CPU clock
counts every thread of the process, so the race runs all its passes on one thread (the kernel's
:func:`.kernel.use_threads`, put back when it ends): each pass's time is then its own time on one
core, the wall time of a quiet machine. :func:`fair_speedup` groups the turns into rounds (one speculative round and
the plain steps that ran next to it), reports the speedup as plain time per token over speculative
time per token, with a bootstrap interval over rounds, and the work-based figure beside it: tokens
per pass against the measured cost of each pass size (the median turn of each size over the median
plain step, in the same run), i.e. what the speedup would be on an idle machine.

:attr:`FairSpeedup.verdict` is the one rule every page, table and the CLI use
(:func:`..sim.verdict.speedup_verdict`): "faster" where the interval, shown to two decimals, lies
above 1.00, "slower" where it lies below, and "no measurable difference" where it includes or
touches 1.00, so a verdict never disagrees with the interval printed beside it.

Greedy speculative output is plain greedy output token for token, since both runs are the
decoders themselves.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

import numpy as np

from ..sim import validate as _v
from ..sim.verdict import FASTER, NO_DIFFERENCE, SLOWER, TOO_FEW, speedup_verdict
from .decode import Clock, Generation, Update, finish, generate_passes, speculate_passes

#: The race's clock: seconds of CPU time of this process (see the module's docstring).
CPU_CLOCK: Clock = time.process_time

SPEC, PLAIN = "spec", "plain"
RUNS = (SPEC, PLAIN)
#: Resamples of the bootstrap over rounds, and the interval's coverage.
N_RESAMPLES = 2000
LEVEL = 0.95
#: Verdicts of :class:`FairSpeedup`: the one rule, :func:`..sim.verdict.speedup_verdict`.
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, TOO_FEW)


@dataclass(frozen=True, eq=False)
class Turns:
    """Every turn of a race, in the order the turns ran.

    Attributes
    ----------
    run : numpy.ndarray of str
        ``"spec"`` or ``"plain"``.
    round : numpy.ndarray of int
        The run's pass number (0 is its prompt's pass).
    ms : numpy.ndarray of float
        Wall time of the turn: the pass and its bookkeeping (for the speculative run, the
        draft's guesses too).
    tokens : numpy.ndarray of int
        Tokens the turn added to its run's output.
    positions : numpy.ndarray of int
        Positions the pass scored: 1 for a plain step, 1 + the guesses for a verify pass,
        0 for a prompt pass.

    Examples
    --------
    >>> t = Turns.from_rows([("spec", 1, 80.0, 3, 5), ("plain", 1, 40.0, 1, 1)])
    >>> t.run.tolist(), float(t.ms.sum())
    (['spec', 'plain'], 120.0)
    """

    run: np.ndarray
    round: np.ndarray
    ms: np.ndarray
    tokens: np.ndarray
    positions: np.ndarray

    @classmethod
    def from_rows(cls, rows: Sequence[tuple]) -> "Turns":
        cols = list(zip(*rows)) if rows else [(), (), (), (), ()]
        return cls(run=np.array(cols[0], dtype="<U5"), round=np.array(cols[1], np.int64),
                   ms=np.array(cols[2], float), tokens=np.array(cols[3], np.int64),
                   positions=np.array(cols[4], np.int64))

    def __len__(self) -> int:
        return int(self.run.size)

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name).tolist() for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, d: dict) -> "Turns":
        return cls.from_rows(list(zip(d["run"], d["round"], d["ms"], d["tokens"], d["positions"])))


@dataclass(frozen=True, eq=False)
class Race:
    """A finished race: both runs (each on its own clock) and every turn."""

    spec: Generation
    plain: Generation
    turns: Turns


@dataclass(frozen=True, eq=False)
class FairSpeedup:
    """The speedup of a race, with its interval, and what the work alone predicts.

    Attributes
    ----------
    speedup : float
        Plain ms per token over speculative ms per token, over all rounds (prompt passes excluded).
    low, high : float
        The bootstrap percentile interval over rounds (NaN with fewer than two rounds).
    level : float
        Its coverage (0.95).
    n_resamples : int
        Bootstrap resamples.
    n_rounds : int
        Rounds: a speculative round and the plain steps that ran after it.
    plain_ms_per_token, spec_ms_per_token : float
    tokens_per_pass : float
        Speculative tokens per pass after the prompt's (1 for plain decoding), the
        end-of-sequence token counted when the run ended on it, so at least 1.
    step_ms : float
        Median plain step of this race.
    sizes, size_ms, size_counts : numpy.ndarray
        Each pass size the speculative run used (positions scored), the median turn at that
        size, and how many turns it had.
    work_speedup : float
        What the speedup would be on an idle machine: the speculative tokens over the passes'
        cost counted in plain steps (each pass at its size's median over the median step);
        ``tokens_per_pass / round_cost`` exactly.
    round_cost : float
        What a speculative round (the draft's guesses and the verify pass) cost on average, in
        plain steps: each round priced at its size's median turn over the median step. The
        one price of a round the work-based figure divides by.

    Examples
    --------
    >>> t = Turns.from_rows([("spec", 1, 90.0, 3, 5), ("plain", 1, 40.0, 1, 1), ("plain", 2, 40.0, 1, 1),
    ...                      ("plain", 3, 40.0, 1, 1), ("spec", 2, 90.0, 3, 5), ("plain", 4, 40.0, 1, 1),
    ...                      ("plain", 5, 40.0, 1, 1), ("plain", 6, 40.0, 1, 1)])
    >>> f = fair_speedup(t, rng=0)
    >>> round(f.speedup, 3), round(f.work_speedup, 3), f.verdict
    (1.333, 1.333, 'faster')
    """

    speedup: float
    low: float
    high: float
    level: float
    n_resamples: int
    n_rounds: int
    plain_ms_per_token: float
    spec_ms_per_token: float
    tokens_per_pass: float
    step_ms: float
    sizes: np.ndarray
    size_ms: np.ndarray
    size_counts: np.ndarray
    work_speedup: float
    round_cost: float

    @property
    def verdict(self) -> str:
        """The interval's verdict, by the one rule (:func:`speedup_verdict`)."""
        return speedup_verdict(self.low, self.high)

    @property
    def plain_tokens_per_s(self) -> float:
        """Plain decoding's tokens per second in the race (prompt pass excluded)."""
        return _per_second(self.plain_ms_per_token)

    @property
    def spec_tokens_per_s(self) -> float:
        """Speculative decoding's tokens per second in the race (prompt pass excluded): over
        :attr:`plain_tokens_per_s` it is :attr:`speedup`."""
        return _per_second(self.spec_ms_per_token)

    def cost_of(self, n_positions: int) -> float:
        """Median turn over ``n_positions`` over the median plain step (NaN if never used)."""
        hit = np.flatnonzero(self.sizes == n_positions)
        return float(self.size_ms[hit[0]] / self.step_ms) if hit.size else math.nan

    @property
    def common_size(self) -> int:
        """The pass size the speculative run used most (0 if it had no pass)."""
        return int(self.sizes[np.argmax(self.size_counts)]) if self.sizes.size else 0


def _per_second(ms_per_token: float) -> float:
    return 1e3 / ms_per_token if math.isfinite(ms_per_token) and ms_per_token > 0 else math.nan


def rounds_of(turns: Turns) -> np.ndarray:
    """Per round, ``(spec ms, spec tokens, plain ms, plain tokens)``: shape (n_rounds, 4).

    A round starts at each speculative turn and takes the plain turns that follow it; plain
    turns before the first speculative turn join the first round, and turns of a run that
    went on alone after the other ended join the round they follow. Prompt passes are left out.
    """
    keep = turns.round > 0
    run, ms, tok = turns.run[keep], turns.ms[keep], turns.tokens[keep]
    is_spec = run == SPEC
    if not is_spec.any():
        return np.zeros((0, 4))
    block = np.maximum(np.cumsum(is_spec) - 1, 0)
    n = int(block.max()) + 1
    out = np.zeros((n, 4))
    np.add.at(out[:, 0], block[is_spec], ms[is_spec])
    np.add.at(out[:, 1], block[is_spec], tok[is_spec])
    np.add.at(out[:, 2], block[~is_spec], ms[~is_spec])
    np.add.at(out[:, 3], block[~is_spec], tok[~is_spec])
    return out


def _ratio(r: np.ndarray) -> np.ndarray:
    """Speedup of rounds ``r`` (..., n, 4) summed over the rounds axis."""
    s = r.sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (s[..., 2] / s[..., 3]) / (s[..., 0] / s[..., 1])


def _check_fair(n_resamples, level) -> tuple[int, float]:
    return (_v.integer("n_resamples", n_resamples, 1, 1_000_000),
            _v.real("level", level, 0.0, 1.0, lo_open=True))


def fair_speedup(turns: Turns, *, rng=None, n_resamples: int = N_RESAMPLES,
                 level: float = LEVEL, ended: bool = False) -> FairSpeedup:
    """The speedup of a race with a bootstrap interval over rounds, and the work-based figure.

    Parameters
    ----------
    turns : Turns
    ended : bool
        The speculative run's last pass wrote the end-of-sequence token. ``tokens_per_pass``
        counts it (every pass writes at least one token, as
        :attr:`.decode.Generation.tokens_per_pass`), and so does ``work_speedup`` (plain decoding
        pays a step for it too); the measured speedup counts the reply's tokens only.
    rng : numpy.random.Generator, int or None
        Draws the bootstrap's resamples (seed it for a repeatable interval).
    n_resamples : int
        In [1, 1000000].
    level : float
        Coverage of the percentile interval, in (0, 1].

    Returns
    -------
    FairSpeedup
    """
    n_resamples, level = _check_fair(n_resamples, level)
    rng = _v.generator(rng)
    r = rounds_of(turns)
    n = r.shape[0]
    point = float(_ratio(r)) if n else math.nan
    low = high = math.nan
    if n >= 2 and math.isfinite(point):
        idx = rng.integers(0, n, size=(n_resamples, n))
        boot = _ratio(r[idx])
        boot = boot[np.isfinite(boot)]
        if boot.size:
            tail = 100 * (1 - level) / 2
            low, high = (float(x) for x in np.percentile(boot, [tail, 100 - tail]))
    s = r.sum(axis=0) if n else np.zeros(4)
    decode = turns.round > 0
    plain = decode & (turns.run == PLAIN)
    spec = decode & (turns.run == SPEC)
    step = float(np.median(turns.ms[plain])) if plain.any() else math.nan
    sizes, counts = np.unique(turns.positions[spec], return_counts=True)
    size_ms = np.array([np.median(turns.ms[spec & (turns.positions == z)]) for z in sizes], float)
    spec_tokens = int(turns.tokens[spec].sum())
    if spec.any() and math.isfinite(step) and step > 0:
        cost = dict(zip(sizes.tolist(), (size_ms / step).tolist()))
        paid = sum(cost[z] for z in turns.positions[spec].tolist())
        work = (spec_tokens + bool(ended)) / paid
        round_cost = paid / int(spec.sum())
    else:
        work = round_cost = math.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        plain_mpt = float(s[2] / s[3]) if s[3] else math.nan
        spec_mpt = float(s[0] / s[1]) if s[1] else math.nan
    for a in (sizes, size_ms, counts):
        a.setflags(write=False)
    return FairSpeedup(
        speedup=point, low=low, high=high, level=level, n_resamples=n_resamples, n_rounds=n,
        plain_ms_per_token=plain_mpt, spec_ms_per_token=spec_mpt,
        tokens_per_pass=(spec_tokens + bool(ended)) / int(spec.sum()) if spec.any() else 1.0,
        step_ms=step,
        sizes=sizes.astype(np.int64), size_ms=size_ms, size_counts=counts.astype(np.int64),
        work_speedup=float(work), round_cost=float(round_cost))


#: What :func:`race_passes` returns: a generator of ``(run, update)`` per turn, returning the Race.
RacePasses = Generator[tuple[str, Update], None, Race]


def next_run(tokens: dict[str, int], done: set[str]) -> str:
    """Whose turn it is: the run with fewer tokens (the speculative run on a tie), or the one
    still going once the other has ended."""
    if SPEC in done:
        return PLAIN
    if PLAIN in done:
        return SPEC
    return PLAIN if tokens[PLAIN] < tokens[SPEC] else SPEC


def race_passes(model, prompt: Sequence[int], draft, k: int, *, max_new: int = 64,
                temperature: float = 0.0, top_p: float = 1.0, rng=None, cancel=None,
                max_seconds: float | None = None, clock: Clock = CPU_CLOCK,
                wall: Clock = time.monotonic) -> RacePasses:
    """Plain and speculative decoding of ``prompt``, taking turns pass by pass in one loop.

    Parameters are those of :func:`.decode.speculate_passes`, except:

    rng : numpy.random.Generator, int or None
        Spawns the two runs' independent streams (sampling only).
    max_seconds : float, optional
        Wall-time budget of the race (on ``wall``): both runs are created together, so they share it.
    clock : callable
        Seconds the passes are timed with (:data:`CPU_CLOCK`), read by both runs; a test passes
        its own.
    wall : callable
        Seconds the budget counts (``time.monotonic``).

    Returns
    -------
    generator
        Yields ``(run, update)`` after every pass of either run (``run`` is ``"spec"`` or
        ``"plain"``); returns the :class:`Race`. Arguments are checked at the call.

    Examples
    --------
    >>> m = get_model()                                                          # doctest: +SKIP
    >>> r = race(m, m.tokenizer.chat("Hi"), PromptLookup(), 4, max_new=16)      # doctest: +SKIP
    >>> r.spec.tokens == r.plain.tokens, fair_speedup(r.turns, rng=0).verdict    # doctest: +SKIP
    (True, 'no measurable difference')
    """
    spec_rng, plain_rng = _v.generator(rng).spawn(2)
    common = dict(max_new=max_new, temperature=temperature, top_p=top_p, cancel=cancel,
                  max_seconds=max_seconds, clock=clock, wall=wall)
    runs = {SPEC: speculate_passes(model, prompt, draft, k, rng=spec_rng, **common),
            PLAIN: generate_passes(model, prompt, rng=plain_rng, **common)}
    return _take_turns(runs)


def race_tree_passes(model, prompt: Sequence[int], draft, width: int, depth: int, *,
                     shape: str = "spine", max_new: int = 64, cancel=None,
                     max_seconds: float | None = None, clock: Clock = CPU_CLOCK,
                     wall: Clock = time.monotonic) -> RacePasses:
    """:func:`race_passes` with token-tree speculation (greedy) in place of the chain:
    :func:`.tree.speculate_tree_passes` with ``width``, ``depth`` and ``shape`` against plain
    decoding, taking turns pass by pass in one loop, one thread."""
    from .tree import speculate_tree_passes

    common = dict(max_new=max_new, cancel=cancel, max_seconds=max_seconds, clock=clock, wall=wall)
    runs = {SPEC: speculate_tree_passes(model, prompt, draft, width, depth, shape=shape, **common),
            PLAIN: generate_passes(model, prompt, **common)}
    return _take_turns(runs)


def race_tree(model, prompt: Sequence[int], draft, width: int, depth: int, *,
              progress: Callable[[str, Update], None] | None = None, **kwargs) -> Race:
    """:func:`race_tree_passes` driven to its end; ``progress(run, update)`` after every pass."""
    return finish(race_tree_passes(model, prompt, draft, width, depth, **kwargs),
                  None if progress is None else (lambda item: progress(*item)))


def _take_turns(runs: dict) -> RacePasses:
    from . import kernel

    tokens = {SPEC: 0, PLAIN: 0}
    results: dict[str, Generation] = {}
    rows: list[tuple] = []
    found = kernel.own_threads()
    try:
        kernel.use_threads(1)  # one core: the CPU clock is then each pass's own time
        while len(results) < len(runs):
            me = next_run(tokens, set(results))
            try:
                update = next(runs[me])
            except StopIteration as stop:
                results[me] = stop.value
                continue
            tokens[me] = update.total_tokens
            rows.append((me, update.round, update.turn_ms, len(update.tokens),
                         update.positions if update.round > 0 else 0))
            yield me, update
    finally:
        kernel.use_threads(found)
        for run in runs.values():
            run.close()
    return Race(spec=results[SPEC], plain=results[PLAIN], turns=Turns.from_rows(rows))


def race(model, prompt: Sequence[int], draft, k: int, *,
         progress: Callable[[str, Update], None] | None = None, **kwargs) -> Race:
    """:func:`race_passes` driven to its end; ``progress(run, update)`` after every pass.

    Returns
    -------
    Race
    """
    return finish(race_passes(model, prompt, draft, k, **kwargs),
                  None if progress is None else (lambda item: progress(*item)))

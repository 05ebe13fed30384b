"""The server's calibration record: one measurement of this machine's pass times, stamped.

A server measures its pass times once (:func:`.calibrate.measure_pass_times`), in the first model
process that loads the model in the server's weight format; the record is kept here, in the server
process, and every later model process, page and summary gets that same record: none measures over
it. So the figures a visitor reads on Episode 7 (the price of a verify pass, the break-even q), on
Episode 8 (the CPU curve) and on the summary all come from one measurement, whatever the load was
when another model process started later.

A :class:`Calibration` stamps the measurement with when (UTC), on which CPU, with how many threads,
which kernel and which weight format, so a page can say so beside the figures
(:meth:`Calibration.stamp`). ``specdec-playable calibrate`` makes one on request.

Examples
--------
>>> from specdec_playable.lm.calibrate import PassTimes
>>> t = PassTimes((1, 5), (20.0, 25.0), repeats=5, seconds=1.0, threads=1, kernel="numba")
>>> rec = Calibration(t, "q4", "AMD EPYC 9B14", 2, "2026-12-04T20:14:05Z")
>>> rec.stamp()
'measured on a 2-core AMD EPYC 9B14 at 20:14 UTC on 2026-12-04, 1 thread, 4-bit weights'
>>> store = CalibrationStore()
>>> store.claim("q4"), store.claim("q4")  # the first model process measures, a second does not
(True, False)
>>> store.settle(rec) is rec, store.settle(Calibration(t, "q4", "", 2, "")) is rec
(True, True)
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

from ..data.machine import this_machine
from ..lm.calibrate import BUDGET_S, PassTimes, measure_pass_times

#: How a page names each weight format.
WEIGHT_WORDS = {"f32": "float32 weights", "q4": "4-bit weights"}


@dataclass(frozen=True)
class Calibration:
    """One measurement of this machine's pass times and what it was measured with.

    Attributes
    ----------
    times : PassTimes
        The pass time per number of positions (``times.ms``), its threads and kernel.
    weights : str
        The weight format the model was loaded in (``"f32"`` or ``"q4"``).
    cpu : str
        The CPU's model name ("" where the OS does not say).
    cores : int
        Cores the OS reports.
    measured_utc : str
        When it finished, ISO 8601 in UTC (``"2026-12-04T20:14:05Z"``).
    """

    times: PassTimes
    weights: str
    cpu: str
    cores: int
    measured_utc: str

    @property
    def machine(self) -> str:
        """``"a 2-core AMD EPYC 9B14"`` (as :meth:`.machine.Machine.describe`)."""
        return f"a {self.cores}-core {self.cpu or 'CPU'}"

    @property
    def weight_words(self) -> str:
        """``"float32 weights"`` or ``"4-bit weights"``."""
        return WEIGHT_WORDS.get(self.weights, f"{self.weights} weights")

    def details(self) -> str:
        """``"a 2-core AMD EPYC 9B14 at 20:14 UTC on 2026-12-04, 1 thread, 4-bit weights"``
        (", levelled from the larger sizes" added when a fall of more than 2% was left after timing again)."""
        when = self.measured_utc
        at = f" at {when[11:16]} UTC on {when[:10]}" if len(when) >= 16 else ""
        n = int(self.times.threads)
        forced = ", levelled from the larger sizes" if self.times.enforced else ""
        return f"{self.machine}{at}, {n} thread{'s' if n != 1 else ''}, {self.weight_words}{forced}"

    def stamp(self) -> str:
        """``"measured on "`` and :meth:`details`."""
        return f"measured on {self.details()}"

    def to_json(self) -> dict:
        """A plain dict (what ``specdec-playable calibrate --json`` prints), with the stamp."""
        out = asdict(self)
        times = out.pop("times")
        out.update(times=dict(times, n_positions=list(times["n_positions"]), ms=list(times["ms"]),
                              lowered=list(times["lowered"]), monotone=self.times.monotone),
                   stamp=self.stamp())
        return out


def stamped(times: PassTimes, weights: str) -> Calibration:
    """``times`` measured just now in the ``weights`` format on this machine, stamped."""
    m = this_machine()
    when = datetime.fromtimestamp(times.measured_at or datetime.now(timezone.utc).timestamp(),
                                  timezone.utc)
    return Calibration(times, weights, m.cpu, m.cores, when.strftime("%Y-%m-%dT%H:%M:%SZ"))


def measure(model, *, budget_s: float = BUDGET_S, stopped=lambda: False) -> Calibration:
    """:func:`.calibrate.measure_pass_times` of ``model`` (loaded in its weight format), stamped;
    what a server's first model process and ``specdec-playable calibrate`` run."""
    from ..lm import kernel

    kernel.warmup()  # compiled (or read from the cache) before any pass is timed
    times = measure_pass_times(model, budget_s=budget_s, stopped=stopped)
    return stamped(times, model.format)


class CalibrationStore:
    """A server's records, one per weight format: the first settled is kept for good.

    :meth:`claim` says whether a model process about to start should measure (no record yet and
    none being measured); the one that should calls :meth:`settle` with its record once measured,
    or :meth:`release` if it could not (it died, or calibration is switched off), so the next
    one measures instead.
    """

    def __init__(self, *records: Calibration) -> None:
        self._lock = threading.Lock()
        self._records = {r.weights: r for r in records}
        self._claimed: set[str] = set()

    def get(self, weights: str) -> Calibration | None:
        """The record for ``weights``, or None before one is settled."""
        return self._records.get(weights)

    def claim(self, weights: str) -> bool:
        """True if the caller's model process is to measure ``weights`` (then no other will, until
        it settles or releases)."""
        with self._lock:
            if weights in self._records or weights in self._claimed:
                return False
            self._claimed.add(weights)
            return True

    def settle(self, record: Calibration) -> Calibration:
        """Keep ``record`` unless one is kept for its format already; return the one kept."""
        with self._lock:
            self._claimed.discard(record.weights)
            return self._records.setdefault(record.weights, record)

    def release(self, weights: str) -> None:
        """Give up a claim on ``weights`` without a record."""
        with self._lock:
            self._claimed.discard(weights)


#: This server's records (the app's model processes settle into it).
STORE = CalibrationStore()


__all__ = ["STORE", "WEIGHT_WORDS", "Calibration", "CalibrationStore", "measure", "stamped"]

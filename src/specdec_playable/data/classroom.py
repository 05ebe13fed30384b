"""The class benchmark's figures (``assets/class_benchmark.json``): a class pressing Run on
Episode 7 at once on one server machine (``benchmarks/bench_class.py``), read without running it.
The teacher's guide says from them how many students one model process and one machine held."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from ..shipped import asset_path

NAME = "class_benchmark.json"


@dataclass(frozen=True)
class ClassRun:
    """One run of the class benchmark.

    Attributes
    ----------
    date, command, machine : str
    cpus, visitors, workers, line, finished, refused : int
        The machine's cores; the visitors who pressed Run; the server's workers (one model
        process each); how many runs its line holds waiting; how the visitors' runs ended.
    class_s : float
        Seconds from the presses to the last run's end.
    """

    date: str
    command: str
    machine: str
    cpus: int
    visitors: int
    workers: int
    line: int
    finished: int
    refused: int
    class_s: float

    @property
    def per_process(self) -> float:
        """Students whose runs one model process took in turn."""
        return self.finished / self.workers

    @property
    def all_finished(self) -> bool:
        return self.finished == self.visitors and self.refused == 0


@lru_cache(maxsize=1)
def load_class_run() -> ClassRun:
    """The shipped run, read once."""
    rec = json.loads(asset_path(NAME).read_text(encoding="utf-8"))
    return ClassRun(date=rec["date"], command=rec["command"], machine=rec["machine"],
                    cpus=int(rec["cpus"]), visitors=int(rec["visitors"]), workers=int(rec["workers"]),
                    line=int(rec["line"]), finished=int(rec["finished"]), refused=int(rec["refused"]),
                    class_s=float(rec["class_s"]))

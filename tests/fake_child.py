"""A model process without the model, for runtime tests: started as ``runtime.model_process``
starts its children (the same pipes and arguments), it answers "ready" at once, and when told to
measure it calibrates a :class:`fake_load.LoadedMachine` instead of the model's passes.

Its environment says how: ``FAKE_LOAD`` and ``FAKE_SEED`` (the machine's load and seed),
``FAKE_LOG`` (a file it appends ``"<pid> measured"`` to when it measures) and ``FAKE_DIE``
(``"1"``: exit before answering, as a child that fails to load) and ``FAKE_HANG`` (``"load"``:
never answer "ready", as a child stuck loading; ``"run"``: take a request and never answer it),
``FAKE_DIE_ONCE`` (a path: the first child to start creates it and exits, later ones load) and
``FAKE_STAGES``, ``FAKE_STAGE_S`` (report that many stages of a slow load, each that long).
"""

from __future__ import annotations

import os
import sys
import time

CHILD = (f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
         "from fake_child import main; main(*map(int, sys.argv[1:6]), sys.argv[6], measure=sys.argv[7])")


def main(requests_fd: int, replies_fd: int, cancel_fd: int, nice: int, blas_threads: int,
         weights: str, *, measure: str) -> None:
    from multiprocessing.connection import Connection

    from fake_load import LoadedMachine
    from specdec_playable.lm.calibrate import CALIBRATION_NS, calibrate_passes
    from specdec_playable.runtime.calibration import stamped

    requests = Connection(requests_fd, writable=False)
    replies = Connection(replies_fd, readable=False)
    if os.environ.get("FAKE_DIE") == "1":
        sys.exit(3)
    once = os.environ.get("FAKE_DIE_ONCE", "")
    if once and not os.path.exists(once):  # the first child to start dies, later ones load
        open(once, "w").close()
        sys.exit(3)
    for _ in range(int(os.environ.get("FAKE_STAGES", "0"))):  # a slow load that says so
        replies.send(("loading", "a stage"))
        time.sleep(float(os.environ["FAKE_STAGE_S"]))
    hang = os.environ.get("FAKE_HANG", "")
    if hang == "load":
        time.sleep(3600)
    record = None
    if measure == "1":
        machine = LoadedMachine(float(os.environ["FAKE_LOAD"]), rng=int(os.environ["FAKE_SEED"]))
        times = calibrate_passes(machine.time_pass, CALIBRATION_NS, clock=machine.clock)
        record = stamped(times, weights)
        with open(os.environ["FAKE_LOG"], "a") as fh:
            fh.write(f"{os.getpid()} measured\n")
    replies.send(("ready", record))
    while True:
        try:
            requests.recv()
        except (EOFError, OSError):
            return
        if hang == "run":
            time.sleep(3600)

"""What the benchmarks share: a free loopback port, a server that is up, Chromium's flags,
a server process's CPU time and memory, and percentiles.

The benchmark scripts run as ``python benchmarks/<name>.py``, so this directory is on
``sys.path`` and they import this module by its bare name.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Headless Chromium flags for a machine with no GPU and no internet.
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_live(url: str, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    """Return once the server at ``url`` answers ``/liveness``; raise if it exits or never does."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"benchmark server exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/liveness", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("benchmark server did not start")


def start_server(port: int, log_path: Path, *extra: str,
                 command: list[str] | None = None) -> subprocess.Popen:
    """``specdec-playable serve`` (or ``command``) on ``port`` with ``extra`` arguments, once live."""
    log = open(log_path, "w")
    cmd = command or [sys.executable, "-m", "specdec_playable", "serve"]
    proc = subprocess.Popen([*cmd, "--port", str(port), *extra], stdout=log, stderr=subprocess.STDOUT,
                            cwd=ROOT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    wait_live(f"http://127.0.0.1:{port}", proc)
    return proc


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def pct(xs, p: float) -> float:
    """The ``p``-th percentile of ``xs`` (nearest rank; NaN for no values)."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


#: Cached positions before a timed pass (a prompt plus some output).
PASS_CONTEXT = 128


def model_pass(model, n: int, context: int = PASS_CONTEXT):
    """A cell: one forward pass over ``n`` new positions after ``context`` cached ones, then
    rolled back (so every call times the same pass)."""
    import numpy as np

    ids = np.arange(1000, 1000 + context + n) % model.config.vocab_size
    cache = model.new_cache(capacity=context + 64)
    model.forward(ids[:context], cache, logits="none")
    new = ids[context:]

    def run():
        model.forward(new, cache, logits="all")
        cache.rollback(context)
    return run


def packed_weights(model) -> list:
    """Every packed weight matrix the kernel streams in a step (the embedding as the tied head)."""
    w = model.weights
    return [w.embed] + [m for b in w.blocks for m in (b.wqkv, b.wo, b.wgu, b.wdown)]


def read_floor(model):
    """A cell: every packed weight read once by the kernel's read loop (``kernel.read_all``),
    the memory floor of a decode step."""
    from specdec_playable.lm import kernel

    mats = packed_weights(model)
    return lambda: kernel.read_all(mats)

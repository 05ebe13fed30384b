"""What the benchmarks share: a free loopback port, a server that is up, Chromium's flags.

The benchmark scripts run as ``python benchmarks/<name>.py``, so this directory is on
``sys.path`` and they import this module by its bare name.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

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

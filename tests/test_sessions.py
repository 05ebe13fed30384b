"""Sessions are freed: open and close 100 sessions, then nothing of them remains on the server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

N_SESSIONS = 100
LIFETIME_MS = 500  # how long an unused (closed) session is kept before it is discarded


def test_closed_sessions_are_discarded_with_their_callbacks():
    probe = Path(__file__).with_name("session_cleanup_probe.py")
    proc = subprocess.run([sys.executable, str(probe), str(N_SESSIONS), str(LIFETIME_MS)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["opened"] == N_SESSIONS
    assert report["empty"] == [], "some sessions had no content"
    assert report["peak"] > 0, "sessions were never seen on the server"
    assert report["live"] == 0
    assert report["periodic"] == 0

"""Run by tests/test_sessions.py in a subprocess (its own event loop, away from Playwright's).

Serves the site in this process with a short unused-session lifetime, opens and closes
N sessions over websockets, waits for the server to discard them, and prints a JSON
report of what is left.
"""

from __future__ import annotations

import gc
import json
import socket
import sys
import time

import panel as pn
from bokeh.client import pull_session

from specdec_playable.app import site
from specdec_playable.episodes import EPISODES


def main(n_sessions: int, lifetime_ms: int) -> dict:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    thread = site.serve(port=port, threaded=True, unused_session_lifetime_milliseconds=lifetime_ms,
                        check_unused_sessions_milliseconds=200)
    deadline = time.monotonic() + 30
    while thread.server_id not in pn.state._servers:
        if time.monotonic() > deadline:
            raise SystemExit("server did not start")
        time.sleep(0.1)
    server = pn.state._servers[thread.server_id][0]

    def live() -> int:
        return sum(len(ctx.sessions) for ctx in server._tornado._applications.values())

    paths = ["/", *(f"/{e.slug}" for e in EPISODES)]
    empty = []
    peak = 0
    for i in range(n_sessions):
        path = paths[i % len(paths)]
        session = pull_session(url=f"http://127.0.0.1:{port}{path}")
        if not session.document.roots:
            empty.append(path)
        session.close()
        peak = max(peak, live())
    deadline = time.monotonic() + 30
    while live() and time.monotonic() < deadline:
        time.sleep(0.2)
    gc.collect()
    report = dict(opened=n_sessions, peak=peak, empty=empty, live=live(),
                  periodic=sum(len(cbs) for cbs in pn.state._periodic.values()))
    thread.stop()
    thread.join(10)
    return report


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))

"""Sessions are freed: open and close 100 sessions, then nothing of them remains on the server."""

from __future__ import annotations

import gc
import time

import panel as pn
import pytest
from bokeh.client import pull_session
from conftest import free_port

from specdec_playable import site
from specdec_playable.episodes import available

N_SESSIONS = 100
LIFETIME_MS = 500  # how long an unused (closed) session is kept before it is discarded


@pytest.fixture
def server():
    port = free_port()
    thread = site.serve(port=port, threaded=True, unused_session_lifetime_milliseconds=LIFETIME_MS,
                        check_unused_sessions_milliseconds=200)
    deadline = time.monotonic() + 30
    while thread.server_id not in pn.state._servers:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.1)
    bk_server = pn.state._servers[thread.server_id][0]
    yield port, bk_server
    thread.stop()
    thread.join(10)


def _live_sessions(bk_server) -> int:
    return sum(len(ctx.sessions) for ctx in bk_server._tornado._applications.values())


def _periodic_callbacks() -> int:
    return sum(len(cbs) for cbs in pn.state._periodic.values())


def test_closed_sessions_are_discarded_with_their_callbacks(server):
    port, bk_server = server
    paths = ["/", *(f"/{e.slug}" for e in available())]
    for i in range(N_SESSIONS):
        path = paths[i % len(paths)]
        session = pull_session(url=f"http://127.0.0.1:{port}{path}")
        assert session.document.roots, f"session for {path} has no content"
        session.close()
    peak = _live_sessions(bk_server)
    deadline = time.monotonic() + 30
    while _live_sessions(bk_server) and time.monotonic() < deadline:
        time.sleep(0.2)
    gc.collect()
    assert peak > 0, "sessions were never seen on the server"
    assert _live_sessions(bk_server) == 0
    assert _periodic_callbacks() == 0

"""Browser tier: a server that loads the model at start prices Episode 8's CPU pass with its own
measurement and says so; a server with no model loaded says the shipped one is used.

The server's first model process times its passes as it loads (``lm.calibrate``, budget set small
here by ``SDP_CALIBRATE_S``); the server logs the measured times, which the page must show, with
the record's stamp (time, threads, weight format).
"""

from __future__ import annotations

import re
import time

import pytest
from conftest import Server, assert_clean, page_text, wait_for_bokeh

from specdec_playable.episodes import ep8
from specdec_playable.lm import is_installed
from specdec_playable.kit.cpu import HERE, SHIPPED

pytestmark = pytest.mark.browser

URL = "/" + ep8.EPISODE.slug
LOGGED = re.compile(r"passes of \(([\d, ]+)\) positions take \(([\d., ]+)\) ms")


def _cpu_sentence(page) -> str:
    wait_for_bokeh(page, "ep8-cpu")
    text = page_text(page)
    start = text.index("On this server there is one user")
    return text[start:start + 600]


def test_without_the_model_loaded_the_page_says_the_curve_is_shipped(page, console, artifacts):
    """A server of its own: the session-wide site may have loaded the model (and timed its passes)
    for an earlier test, so this one would then depend on the order tests run in."""
    server = Server(log_path=artifacts / "server-no-model.log", model_at_start=False)
    try:
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(server.url + URL)
        words = _cpu_sentence(page)
        assert SHIPPED in words and HERE not in words
        assert_clean(page, console)
    finally:
        server.stop()


@pytest.mark.skipif(not is_installed(), reason="the model is not installed")
def test_a_server_that_loads_the_model_at_start_shows_its_own_curve(page, console, artifacts,
                                                                    monkeypatch):
    monkeypatch.setenv("SDP_CALIBRATE_S", "1")
    server = Server(log_path=artifacts / "server-calibrated.log", model_at_start=True)
    try:
        deadline = time.monotonic() + 240
        while not (found := LOGGED.search(server.log())):
            assert time.monotonic() < deadline, server.log()[-2000:]
            time.sleep(0.5)
        ns = [int(n) for n in found.group(1).split(",")]
        ms = [float(m) for m in found.group(2).split(",")]
        page.set_viewport_size({"width": 1280, "height": 900})
        page.goto(server.url + URL)
        words = _cpu_sentence(page)
        assert HERE in words and SHIPPED not in words
        assert re.search(r"at \d\d:\d\d UTC on \d{4}-\d\d-\d\d, \d threads?, float32 weights", words), words
        # the default k = 4: a pass over 5 against one, each the running maximum of the medians
        one, five = ms[ns.index(1)], max(ms[:ns.index(5) + 1])
        assert f"takes {five:.1f} ms against {one:.1f} ms for one" in words
        assert_clean(page, console)
    finally:
        server.stop()

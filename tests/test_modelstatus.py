"""The model's status line: its words for each state of the load, and where the pages show it."""

from __future__ import annotations

import re
import time

import pytest

from specdec_playable.episodes import EPISODES
from specdec_playable.kit.modelstatus import clock, status_line, status_words
from specdec_playable.kit.site.summary import summary_page
from specdec_playable.runtime import service as interface

AT = time.mktime((2026, 12, 7, 9, 5, 0, 0, 0, -1))  # 09:05 local time


def _service(state: interface.LoadState, installed: bool = True) -> interface.ModelService:
    return interface.ModelService(installed=lambda: installed, load_state=lambda: state)


def test_the_clock_is_the_servers_local_time_to_the_minute():
    assert clock(AT) == "09:05"
    assert re.fullmatch(r"\d\d:\d\d", clock(time.time()))


@pytest.mark.parametrize("state, says", [
    (interface.LoadState("waiting", 0.0), "The model: not loaded yet; the first run loads it"),
    (interface.LoadState("loading", AT), "The model: loading since 09:05 (server time)"),
    (interface.LoadState("ready", AT), "The model: ready since 09:05 (server time)."),
    (interface.LoadState("failed", AT, 20.0, "the model process stopped answering"),
     "The model: failed to load at 09:05 (server time): the model process stopped answering. "
     "It is loading again in a moment."),
    (interface.LoadState("failed", AT, None, "the model process stopped answering"),
     "The model: failed to load at 09:05 (server time): the model process stopped answering. "
     "The next run loads it again."),
])
def test_each_state_of_the_load_has_its_line(state, says):
    assert status_words(state, installed=True).startswith(says)


def test_a_server_without_the_model_says_so_whatever_the_state():
    for state in ("waiting", "loading", "ready", "failed"):
        line = status_words(interface.LoadState(state, AT), installed=False)
        assert line.startswith("The model is not installed on this server")


def test_the_line_escapes_a_reason_and_marks_a_failure():
    pane = status_line(_service(interface.LoadState("failed", AT, None, "<b>x</b> & y")))
    assert "&lt;b&gt;x&lt;/b&gt; &amp; y" in pane.object and "<b>" not in pane.object
    assert 'role="status"' in pane.object and "sdp-notice" in pane.object
    ready = status_line(_service(interface.LoadState("ready", AT))).object
    assert "sdp-notice" not in ready and "ready since 09:05" in ready


def test_the_summary_shows_the_line_under_the_navigation():
    page = summary_page(EPISODES, with_score=False,
                        service=_service(interface.LoadState("loading", AT)))
    line = page.objects[1]
    assert line.name == "summary-model" and "loading since 09:05" in line.object
    assert page.objects[2].name == "summary-body"


def test_episode7_shows_the_line_only_where_the_model_is_installed():
    from specdec_playable.episodes.ep7.page import page

    def names(root) -> set[str]:
        out, todo = set(), [root]
        while todo:
            obj = todo.pop()
            out.add(obj.name)
            todo.extend(getattr(obj, "objects", ()))
        return out

    assert "ep7-model" in names(page(service=_service(interface.LoadState("ready", AT))))
    assert "ep7-model" not in names(page(service=_service(interface.LoadState("ready", AT), False)))

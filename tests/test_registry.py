"""The registry: one frozen record per episode, listed in order, and everything that lists episodes
reads the records it is handed. A toy ninth episode, one small package-like record added to the
list, appears on the index, the summary, the guide and the glossary, and serves.
"""

from __future__ import annotations

import dataclasses
import socket
import time
import urllib.request

import panel as pn
import param
import pytest

from specdec_playable.app import site
from specdec_playable.episodes import EPISODES, by_number, neighbours
from specdec_playable.kit.episode import Episode, Exercise, TryStep
from specdec_playable.kit.page import episode_shell, prose
from specdec_playable.kit.site import glossary, index, summary
from specdec_playable.kit.site.guide import guide_html

PKG_EPISODES = "specdec_playable.episodes"


class ToyState(param.Parameterized):
    """A toy episode's state: one draft length."""

    k = param.Integer(default=3, bounds=(1, 8), label="Draft length k", doc="How many tokens to guess.")


def toy_page(state: ToyState | None = None, *, service=None) -> pn.Column:
    state = state or ToyState()
    return episode_shell(number=9, title="A toy episode", objectives=("see a toy page in the site",),
                         name="ep9", lede="A toy lede.", try_this="nothing",
                         body=[prose(f'<p id="toy-k">k = {state.k}</p>')])


def _answer(state: ToyState):
    return 0, f"k is {state.k}."


TOY = Episode(
    number=9, slug="ep9_a_toy_episode", make_page=toy_page, state=ToyState,
    objectives=("see a toy page in the site",), url_params=("k",),
    exercises=(Exercise("How many tokens?", ("three", "four"), {"k": 3}, _answer),),
    misconception=("Toys are not episodes.", "A toy is one record away from being one."),
    discuss=("What would a ninth episode teach?",), title_="A toy episode",
    summary_="A toy to prove that one record adds an episode.", try_this_="Look at it.",
    steps_=(TryStep("Look at it."),), summary_sentence=lambda: "The toy's own sentence.",
    summary_link={"k": 3}, terms=("draft-length",))
WITH_TOY = (*EPISODES, TOY)


def test_the_registry_lists_every_episode_once_in_order():
    assert [e.number for e in EPISODES] == list(range(1, 9))
    assert len({e.slug for e in EPISODES}) == len(EPISODES)
    for e in EPISODES:
        assert e.make_page.__module__ == f"{PKG_EPISODES}.ep{e.number}.page"
        assert e.state.__module__ == f"{PKG_EPISODES}.ep{e.number}.state"
        assert by_number(e.number) is e
        assert set(e.url_params) <= set(e.state.param)
        assert dataclasses.is_dataclass(e)
    with pytest.raises(KeyError):
        by_number(99)
    with pytest.raises(dataclasses.FrozenInstanceError):
        EPISODES[0].slug = "elsewhere"


def test_the_navigation_follows_the_registry():
    assert neighbours(1)[0] is None and neighbours(8)[1] is None
    previous, following, _ = neighbours(4)
    assert previous is by_number(3) and following is by_number(5)


def test_a_toy_episode_appears_on_the_index_the_summary_the_guide_and_the_glossary():
    assert f'href="./{TOY.slug}"' in index.episode_list_html(WITH_TOY, ())
    assert "A toy to prove" in index.episode_list_html(WITH_TOY, ())
    body = summary.summary_html(WITH_TOY)
    assert f'href="./{TOY.slug}?k=3"' in body and "The toy's own sentence." in body
    guide = guide_html(site.teaching(WITH_TOY), ())
    assert "Episode 9: A toy episode" in guide and "Toys are not episodes." in guide
    assert "k is 3." in guide  # its question answered on a fresh state at the question's setting
    gloss = glossary.glossary_html(WITH_TOY)
    assert f'<a href="./{TOY.slug}">Episode 9</a>' in gloss
    assert f'<a href="./{TOY.slug}">Episode 9</a>' not in glossary.glossary_html(EPISODES)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_toy_episode_serves():
    port = _free_port()
    apps = site.applications(WITH_TOY)
    assert TOY.slug in apps and site.titles(WITH_TOY)[TOY.slug].startswith("Episode 9: A toy episode")
    server = pn.serve({"/": apps["/"], TOY.slug: apps[TOY.slug]}, port=port, address="127.0.0.1",
                      websocket_origin=[f"127.0.0.1:{port}"], show=False, threaded=True)
    try:
        deadline = time.monotonic() + 30
        while server.server_id not in pn.state._servers:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        for path in ("", TOY.slug):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/{path}", timeout=60) as r:
                assert r.status == 200
                assert b"Traceback" not in r.read()
    finally:
        server.stop()
        server.join(10)


def test_every_episodes_q_k_c_and_pass_time_come_from_their_symbol():
    from specdec_playable.kit.params import C, K, PASS_MS, Q, SYMBOLS, declared
    from specdec_playable.sim.validate import K_DEFAULT

    assert K.default == K_DEFAULT
    names = {s.name: s for s in SYMBOLS}
    seen = 0
    for ep in EPISODES:
        for name, p in ep.state.param.objects().items():
            if name not in names or p.constant:
                continue
            got = declared(p)
            assert got is not None, f"Episode {ep.number}'s {name} is not declared from its symbol"
            symbol, why = got
            assert symbol is names[name]
            lo, hi = p.bounds
            assert symbol.bounds[0] <= lo <= p.default <= hi <= symbol.bounds[1], (ep.number, name)
            moved = (lo, hi) != tuple(symbol.bounds) or p.default != symbol.default
            assert bool(why) == moved, (ep.number, name, why)  # a reason exactly where it moved
            seen += 1
    assert seen >= 12
    assert {Q, K, C, PASS_MS} <= set(SYMBOLS)


def test_a_control_that_moves_without_a_reason_or_outside_its_symbol_is_refused():
    from specdec_playable.kit.params import K, Q, control

    with pytest.raises(ValueError, match="says why"):
        control(K, default=6)
    with pytest.raises(ValueError, match="inside"):
        control(Q, bounds=(0.0, 2.0), why="too wide")
    assert control(K, label="Guesses k").label == "Guesses k"  # words may differ without a reason

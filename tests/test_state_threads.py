"""State tier: sessions built on different threads do not disturb each other.

Bokeh initialises documents on a thread pool, so several visitors' states are built
at once. Every episode's state must build correctly under that concurrency.
"""

from __future__ import annotations

import threading

import param
import pytest

from specdec_playable.kit.params import unlocked
from specdec_playable.episodes.ep1.state import WritingVsChecking
from specdec_playable.episodes.ep2.state import Relay
from specdec_playable.episodes.ep3.state import QualityDial
from specdec_playable.episodes.ep4.state import BoilerplateVsPoetry
from specdec_playable.episodes.ep5.state import BreakEvenMap

THREADS, ROUNDS = 6, 15


def _hammer(build) -> list[BaseException]:
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work():
        start.wait()
        try:
            for _ in range(ROUNDS):
                build()
        except BaseException as exc:  # noqa: BLE001 - collected and asserted on
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return errors


@pytest.mark.parametrize("cls", [WritingVsChecking, Relay, QualityDial, BoilerplateVsPoetry, BreakEvenMap],
                         ids=lambda c: c.__name__)
def test_states_build_concurrently(cls):
    assert _hammer(cls) == []


class _Derived(param.Parameterized):
    x = param.Number(0.0)
    y = param.Number(0.0, constant=True)

    def __init__(self, **params):
        super().__init__(**params)
        self.set_y()

    def set_y(self):
        with unlocked(self):
            self.y = self.x * 2


def test_unlocked_touches_only_the_instance():
    a, b = _Derived(x=1.0), _Derived(x=2.0)
    assert (a.y, b.y) == (2.0, 4.0)
    assert _Derived.param["y"].constant and a.param["y"].constant and b.param["y"].constant
    with pytest.raises(TypeError):
        a.y = 7.0

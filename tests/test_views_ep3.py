"""Episode 3's charts, built without a server: the axes hold what is drawn and move in steps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from specdec_playable.episodes.ep3.view import QualityDialView
from specdec_playable.episodes.ep3.state import QualityDial


@pytest.mark.parametrize("q,k,c", list(itertools.product((0.05, 0.5, 0.8, 0.99), (1, 4, 16), (0.0, 0.1, 1.0))))
def test_axes_hold_every_bar_whisker_and_star(q, k, c):
    view = QualityDialView(state=QualityDial(q=q, k=k, c=c, rng=7))
    sp, hist = view.speedup, view.histogram
    end = sp.y_range.end
    assert end == pytest.approx(round(end * 2) / 2)  # whole half-units
    assert max(sp.bars.data["theory"]) < end
    assert sp.measured.data["hi"][0] < end
    assert sp.best.data["star_y"][0] < end
    hend = hist.y_range.end
    assert hend == pytest.approx(round(hend * 10) / 10)
    assert max(max(hist.source.data["measured"]), max(hist.source.data["theory"])) < hend
    assert hist.x_range.start < 0 and hist.x_range.end > k


def test_speedup_axis_stays_put_over_most_single_steps_of_q():
    # Seed 3; from q = 0.50 to 0.90 in the slider's 0.01 steps at k = 4, c = 0.1.
    state = QualityDial(q=0.5, k=4, c=0.1, rng=3)
    view = QualityDialView(state=state)
    ends = []
    for q in np.round(np.arange(0.50, 0.905, 0.01), 2):
        state.q = float(q)
        ends.append(view.speedup.y_range.end)
    changes = sum(a != b for a, b in zip(ends, ends[1:]))
    assert changes <= 6, ends  # 40 steps; the unrounded end changed on every one

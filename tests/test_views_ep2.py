"""Episode 2's list of rounds (``episodes.ep2.view.rounds_html``): one entry per round with the lanes'
marks, checked against the relay's own rounds over seeds, draft lengths and qualities."""

from __future__ import annotations

import re

import pytest

from specdec_playable.episodes.ep2.state import Relay
from specdec_playable.episodes.ep2 import view as v


@pytest.mark.parametrize("q,k,seed", [(0.8, 4, 23), (0.3, 8, 1), (1.0, 3, 0), (0.0, 2, 5), (0.55, 6, 9)])
def test_every_round_is_listed_with_its_marks(q, k, seed):
    s = Relay(q=q, k=k, seed=seed)
    res = s.result
    html = v.rounds_html(res, "u")
    items = re.findall(r'<li class="(bad|)" data-on="([\d.e+]+)">(.*?)</li>', html)
    assert len(items) == res.n_rounds
    for r, (cls, on, body) in enumerate(items):
        d, a, made = (int(res.rounds[c][r]) for c in ("drafted", "accepted", "tokens"))
        assert float(on) == pytest.approx(float(res.rounds["end_ms"][r]))
        shown = body.split('aria-hidden="true">')[1]
        assert shown.count('class="sw acc">✓') == a
        assert shown.count('class="sw rej">✗') == (1 if a < d else 0)
        assert shown.count('class="sw dis">–') == max(d - a - 1, 0)
        assert shown.count("★") + shown.count("+</span>") == 1
        assert f'<span class="made">+{made}</span>' in shown
        assert (cls == "bad") == (a == 0 and d > 0) == ("bad</span>" in shown)
        assert f"round {r + 1}: {a} draft" in body
    # Opened at the start, nothing is shown before Play (the frame hook reveals each round).
    assert v.rounds_html(res, "u", at_start=True).count(" hidden>") == res.n_rounds

"""Episode 7's display builders on fake runs (no model, no browser): escaping, marks, clocks, lanes."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qs, urlparse

import pytest

from ep7_fakes import fake_comparison
from specdec_playable.views import ep7 as v

NASTY = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def test_token_texts_are_escaped_everywhere():
    texts = lambda pos: NASTY if pos % 3 == 1 else f" t{pos}"  # noqa: E731
    c = fake_comparison([(4, 4), (4, 1), (3, 0)], texts=texts)
    html = v.text_html(c, "u1", timed=True) + v.text_html(c, "u1")
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "onerror=&quot;" in html
    assert "<script" not in v.prompt_html(NASTY) and "&lt;img" in v.prompt_html(NASTY)


def test_the_speculative_text_carries_episode_2s_marks():
    c = fake_comparison([(4, 4), (4, 1), (0, 0), (3, 0)])
    html = v.text_html(c, "u")
    spec = html.split('class="ep2-text ep7-mono ep7-spec"')[1].split("</div>")[0]
    count = lambda cls: len(re.findall(rf'class="tk kept {cls}"', spec))  # noqa: E731
    assert count("tk-acc") == 4 + 1
    assert count("tk-bonus") == 1
    assert count("tk-fix") == 2
    assert len(re.findall(r'class="tk tk-rej"', spec)) == 2
    # Every output token is shown once, kept, in order.
    kept = re.findall(r'class="tk kept [^"]+"[^>]*>(.*?)<span class="w">(.*?)</span>', spec)
    assert "".join(a + b for a, b in kept) == c.spec.text


def test_the_clocks_show_the_runs_numbers():
    c = fake_comparison([(4, 4), (4, 2), (4, 0)], verify_ms=80.0, step_ms=40.0, guess_ms=0.2)
    html = v.clocks_html(c, "u")
    assert f"{c.spec.wall_ms:,.0f} ms" in html and f"{c.plain.wall_ms:,.0f} ms" in html
    assert f"{c.speedup:.2f}×" in html
    assert f"{c.spec.tokens_per_pass:.2f}" in html
    assert f"{c.draft_cost:.3f}" in html
    assert f"{c.spec.accepted} of {c.spec.accepted + c.spec.rejected} judged" in html


def test_clock_rows_end_at_the_measured_clocks():
    c = fake_comparison([(4, 4), (4, 2), (4, 0), (0, 0)])
    rows = v.clock_rows(c)
    n = len(rows["end_ms"])
    assert all(len(col) == n for col in rows.values())
    assert rows["end_ms"] == sorted(rows["end_ms"]) and rows["end_ms"][0] == 0.0
    assert rows["spec_clock"][-1] == f"{c.spec.wall_ms:,.0f} ms"
    assert rows["plain_clock"][-1] == f"{c.plain.wall_ms:,.0f} ms"
    assert rows["speedup"][-1] == f"{c.speedup:.2f}×" and rows["speedup"][0] == "…"
    assert rows["spec_label"][-1].startswith(f"speculative: {len(c.spec.tokens)} tokens")


def test_the_lanes_are_drawn_from_the_measured_events():
    c = fake_comparison([(4, 4), (4, 1), (0, 0)], verify_ms=90.0, step_ms=40.0)
    t = v.real_timeline(c)
    lanes = {b.lane for b in t.boxes}
    assert lanes == {"draft", "big", "plain"}
    plain = sorted((b for b in t.boxes if b.lane == "plain"), key=lambda b: b.start)
    # One box per plain pass (the prompt's included), at its measured times.
    assert len(plain) == len(c.plain.tokens)
    ev = c.plain.events.of_kind("generate")
    assert [(b.start, b.end) for b in plain] == list(zip(ev.start_ms.tolist(), ev.end_ms.tolist()))
    # The speculative lane ends where the run's last pass ended.
    big_end = max(b.end for b in t.boxes if b.lane == "big")
    assert big_end == pytest.approx(float(c.spec.events.end_ms.max()))
    assert t.stops[-1] == pytest.approx(big_end)


def test_episode_5_link_carries_this_runs_q_k_c():
    c = fake_comparison([(4, 4), (4, 2)], guess_ms=0.3)
    href = v.ep5_link(c, 4, "./ep5_the_break_even_map")
    q = parse_qs(urlparse(href).query)
    assert float(q["q"][0]) == pytest.approx(c.spec.acceptance_rate, abs=0.005)
    assert q["k"] == ["4"]
    assert float(q["c"][0]) == pytest.approx(c.draft_cost, abs=0.0005)
    no_guess = fake_comparison([(0, 0), (0, 0)])
    assert math.isnan(no_guess.spec.acceptance_rate) and v.ep5_link(no_guess, 4, "x") is None


def test_the_counter_counts_and_warns():
    assert v.counter_text("abc") == "3 of 500 characters"
    assert "too long" in v.counter_text("x" * 501)


def test_the_pass_labels_are_not_under_the_models_own_token():
    """A verify pass's "+n" label is centred in the part of the pass the gold box leaves open,
    and shown only where it fits there (real passes are short: the gold box is 20% of one)."""
    from specdec_playable.views.kit import theme
    from specdec_playable.views.kit.lanes.timeline import bar_columns, resolve_styles
    from specdec_playable.views.ep2 import STYLES

    c = fake_comparison([(4, 4), (4, 2), (4, 0), (2, 2)], verify_ms=80.0, step_ms=40.0)
    boxes = v.real_timeline(c).boxes
    verify = [b for b in boxes if b.status == "verify"]
    own = [b for b in boxes if b.status in ("correction", "bonus")]
    assert len(verify) == len(own) == 4
    for p, g in zip(verify, own):
        assert p.end == g.end and p.start < p.label_end <= g.start
        assert g.end - g.start <= 0.2 * (p.end - p.start) + 1e-9
    cols = bar_columns(v.real_timeline(c), resolve_styles({**theme.STATUS, **STYLES}), label_size="11px", min_label_px=6)
    for i, status in enumerate(cols["status"]):
        if status == "verify":
            assert cols["mid"][i] == pytest.approx((cols["start"][i] + cols["label_end"][i]) / 2)

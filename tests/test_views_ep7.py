"""Episode 7's display builders on fake runs (no model, no browser): escaping, marks, clocks, lanes."""

from __future__ import annotations

import dataclasses
import math
import re
from urllib.parse import parse_qs, urlparse

import pytest

import numpy as np
from ep7_fakes import fake_comparison
from specdec_playable.episodes.ep7 import view as v

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
    # The clocks count decoding; each prompt's pass is shown apart, beside them.
    assert f"{c.spec.decode_ms:,.0f} ms" in html and f"{c.plain.decode_ms:,.0f} ms" in html
    assert f"the prompt’s pass {c.spec.prefill_ms:,.0f} ms, apart" in html
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
    assert rows["spec_clock"][-1] == f"{c.spec.decode_ms:,.0f} ms"
    assert rows["plain_clock"][-1] == f"{c.plain.decode_ms:,.0f} ms"
    # During the prompt's pass the decoding clocks stand at zero, then they only move forward.
    assert rows["spec_clock"][0] == rows["spec_clock"][1] == "0 ms"
    for who in ("spec", "plain"):
        ms = [float(x.replace(",", "").removesuffix(" ms")) for x in rows[f"{who}_clock"]]
        assert ms == sorted(ms)
    # The sentence that explains the basis is shown only once both runs have ended.
    assert rows["basis"][0] == "" and rows["basis"][-1].startswith("Both clocks count decoding")
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
    assert v.counter_text("abc", v.PROMPT_MAX_CHARS) == "3 of 500 characters"
    assert "too long" in v.counter_text("x" * 501, v.PROMPT_MAX_CHARS)


def test_the_pass_labels_are_not_under_the_models_own_token():
    """A verify pass's "+n" label is centred in the part of the pass the gold box leaves open,
    and shown only where it fits there (real passes are short: the gold box is 20% of one)."""
    from specdec_playable.kit import theme
    from specdec_playable.kit.lanes.timeline import bar_columns, resolve_styles
    from specdec_playable.episodes.ep2.view import STYLES

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


# --- every number on the clocks agrees with the speedup shown beside them ------------------------

_NUM = r"([\d,]+(?:\.\d+)?)"


def _shown_clocks(html: str) -> dict:
    """The clocks as the page shows them: each clock, each time per token, the speedup."""
    text = re.sub(r"<[^>]+>", " ", html).replace("&#x27;", "'")
    stats = re.findall(rf"{_NUM} ms\s+(speculative|plain): (\d+) tokens?, the first from the "
                       rf"prompt’s pass {_NUM} ms, apart; (\d+) after it, (–|{_NUM} ms) each", text)
    out = {}
    for clock, who, n, prompt, after, each, each_num in stats:
        out["spec" if who == "speculative" else who] = dict(clock=float(clock.replace(",", "")), n=int(n), after=int(after),
                        prompt=float(prompt.replace(",", "")),
                        each=float(each_num.replace(",", "")) if each_num else math.nan)
    m = re.search(rf"([\d.]+)×\s+{_NUM} ms ÷ {_NUM} ms a token \(decoding\)", text)
    out["speedup"] = float(m.group(1)) if m else math.nan
    if m:
        out["plain_each"], out["spec_each"] = (float(m.group(i).replace(",", "")) for i in (2, 3))
    return out


def _assert_consistent(c):
    """The shown speedup is the ratio of the shown times per token, and, where both runs wrote the
    same number of tokens, of the two shown clocks, within the rounding of what is shown."""
    shown = _shown_clocks(v.clocks_html(c, "u", timed=True))
    spec, plain, sp = shown["spec"], shown["plain"], shown["speedup"]
    assert sp == float(f"{c.speedup:.2f}")
    # Times per token are shown to 0.01 ms, the speedup to 0.01.
    ratio = plain["each"] / spec["each"]
    slack = 0.005 + ratio * (0.005 / plain["each"] + 0.005 / spec["each"]) + 1e-9
    assert abs(ratio - sp) <= slack, shown
    assert (shown["plain_each"], shown["spec_each"]) == (plain["each"], spec["each"])
    # The clocks count decoding only; with the prompt's pass beside each, nothing is left out.
    assert spec["clock"] == float(f"{c.spec.decode_ms:.0f}")
    assert spec["n"] == len(c.spec.tokens) and spec["after"] == len(c.spec.tokens) - 1
    if spec["after"] == plain["after"]:
        clocks = plain["clock"] / spec["clock"]
        assert abs(clocks - sp) <= 0.005 + clocks * (0.5 / plain["clock"] + 0.5 / spec["clock"]) + 1e-9
    # The replay ends on the same strings.
    rows = v.clock_rows(c)
    assert rows["speedup"][-1] == f"{sp:.2f}×"
    assert rows["spec_clock"][-1] == f"{spec['clock']:,.0f} ms"
    return shown


@pytest.mark.parametrize("rounds,verify_ms,step_ms", [
    ([(4, 4)] * 6, 60.0, 40.0), ([(4, 0)] * 6, 90.0, 40.0), ([(4, 2), (0, 0), (4, 4)], 70.0, 35.0),
    ([(2, 1), (2, 2), (0, 0), (0, 0), (2, 0)] * 4, 55.0, 31.0), ([(8, 8)] * 3, 140.0, 33.0)])
def test_the_clocks_ratio_is_the_speedup_on_fake_runs(rounds, verify_ms, step_ms):
    _assert_consistent(fake_comparison(rounds, verify_ms=verify_ms, step_ms=step_ms))
    _assert_consistent(fake_comparison(rounds, verify_ms=verify_ms, step_ms=step_ms, turns=False))


def test_the_speedup_is_per_token_when_the_runs_wrote_different_lengths():
    """Sampling: the two runs are two draws and may end at different lengths. The clocks are not
    the speedup then, and the page says why; the times per token still are."""
    from ep7_fakes import fake_plain, fake_spec, fake_turns
    from specdec_playable.lm.compare import Comparison
    from specdec_playable.episodes.ep7.words import basis_line

    spec = fake_spec([(4, 4), (4, 1), (4, 3)], temperature=0.8)
    plain = fake_plain(len(spec.tokens) - 4, temperature=0.8)
    c = Comparison("done", spec, plain, fake_turns(spec, plain))
    shown = _assert_consistent(c)
    assert shown["spec"]["after"] != shown["plain"]["after"]
    assert "different numbers of tokens" in basis_line(c)


def test_the_clocks_ratio_is_the_speedup_on_every_recorded_run():
    from specdec_playable.data.recorded import recorded_runs

    runs = recorded_runs()
    assert runs
    for c in runs.values():
        _assert_consistent(c)


def test_tokens_per_pass_is_never_below_one_where_it_is_shown():
    """A pass writes at least one token: the end-of-text token a reply's last pass writes counts."""
    from ep7_fakes import fake_plain, fake_spec, fake_turns
    from specdec_playable.data.recorded import recorded_repeats, recorded_runs
    from specdec_playable.lm.compare import Comparison
    from specdec_playable.episodes.ep7.words import recorded_rows

    # Ten tokens, then an eleventh pass that wrote only the end: 1.00, not 0.91.
    spec = fake_spec([(0, 0)] * 10, stopped="eos")
    spec = dataclasses.replace(spec, passes=11)
    assert spec.tokens_per_pass == pytest.approx(1.0)
    assert dataclasses.replace(spec, stopped="budget").tokens_per_pass < 1  # what it was before
    runs = recorded_runs()
    for c in runs.values():
        assert c.spec.tokens_per_pass >= 1 and c.fair.tokens_per_pass >= 1
        html = v.clocks_html(c, "u")
        m = re.search(r'<div class="v">([\d.]+)</div><div class="l">tokens per pass', html)
        assert m and float(m.group(1)) >= 1
    for row in recorded_rows(runs, recorded_repeats()):
        assert row.tokens_per_pass >= 1
    for rounds in ([(4, 4), (4, 0)], [(0, 0)] * 5, [(3, 1), (3, 0), (0, 0)]):
        s = fake_spec(rounds, stopped="eos")
        c = Comparison("done", s, fake_plain(len(s.tokens)), fake_turns(s, fake_plain(len(s.tokens))))
        assert c.spec.tokens_per_pass >= 1 and c.fair.tokens_per_pass >= 1


def test_a_one_token_run_shows_no_nan_under_its_speedup():
    """New tokens at 1: the prompt's pass writes the only token, so there is no decoding to time."""
    from specdec_playable.episodes.ep7.view import _speedup_label, clocks_html, per_token_ms

    c = fake_comparison([])  # no round after the prompt's pass
    assert len(c.spec.tokens) == 1 and all(np.isnan(per_token_ms(c)))
    label = _speedup_label(c, "f32")
    assert label == "nothing to time: each run’s only token came from its prompt’s pass"
    assert "nan" not in clocks_html(c, "u", timed=True).lower()

"""One rule for a race's verdict (``lm.race.speedup_verdict``): the rule at its edges, and every
verdict Episode 7 and the CLI show equal to the rule applied to the interval shown beside it.

Core tier: the rule on hand-picked edges and on random intervals (hypothesis), and the race's
figures that the page derives from one another (tokens per second, the price of a round). State
tier: Episode 7's sentence, its speedup caption, its recorded table and ``generate``'s report,
read back from the text they print. No model, no browser.
"""

from __future__ import annotations

import dataclasses
import html
import math
import re
import types

import numpy as np
import pytest
from hypothesis import given, strategies as st

from ep7_fakes import fake_comparison
from specdec_playable.app import cli
from specdec_playable.data import recorded
from specdec_playable.episodes.ep7 import practice as practice7, view as view7, words as words7
from specdec_playable.lm.race import Turns, fair_speedup
from specdec_playable.sim.verdict import (FASTER, NO_DIFFERENCE, SLOWER, TOO_FEW, VERDICT_DIGITS,
                                          VERDICTS, shown, speedup_verdict)

NAN = math.nan


@pytest.mark.parametrize("low, high, expected", [
    (1.10, 1.30, FASTER),            # entirely above
    (0.60, 0.90, SLOWER),            # entirely below
    (0.90, 1.10, NO_DIFFERENCE),     # straddling
    (1.00, 1.20, NO_DIFFERENCE),     # touching 1 from above
    (0.80, 1.00, NO_DIFFERENCE),     # touching 1 from below
    (1.00, 1.00, NO_DIFFERENCE),     # exactly 1
    (1.004, 1.20, NO_DIFFERENCE),    # above 1, but it reads 1.00
    (1.006, 1.20, FASTER),           # reads 1.01
    (0.80, 0.9951, NO_DIFFERENCE),   # below 1, but it reads 1.00
    (0.80, 0.994, SLOWER),           # reads 0.99
    (0.97, 0.98, SLOWER),            # the table's "0.97-0.98x"
    (0.953, 0.991, SLOWER),
    (0.939, 1.001, NO_DIFFERENCE),   # reads 0.94-1.00
    (NAN, NAN, TOO_FEW),             # fewer than two rounds
    (NAN, 1.2, TOO_FEW),
    (0.9, math.inf, TOO_FEW),
])
def test_the_rule_at_its_edges(low, high, expected):
    assert speedup_verdict(low, high) == expected


def test_the_rule_judges_the_digits_it_is_shown_with():
    assert speedup_verdict(1.04, 1.2, digits=1) == NO_DIFFERENCE  # reads 1.0
    assert speedup_verdict(1.06, 1.2, digits=1) == FASTER        # reads 1.1
    assert speedup_verdict(1.004, 1.2, digits=3) == FASTER
    assert shown(0.995) == float(f"{0.995:.2f}") and shown(1.005) == float(f"{1.005:.2f}")


def test_the_rule_refuses_a_backwards_interval_and_bad_digits():
    with pytest.raises(ValueError, match="low=1.2"):
        speedup_verdict(1.2, 1.1)
    with pytest.raises(ValueError):
        speedup_verdict(0.9, 1.1, digits=-1)


def read_verdict(lo_text: str, hi_text: str) -> str:
    """The verdict a reader reaches from an interval as printed: above, below or around 1."""
    lo, hi = float(lo_text), float(hi_text)
    return FASTER if lo > 1 else SLOWER if hi < 1 else NO_DIFFERENCE


@given(st.floats(0.05, 5.0), st.floats(0.0, 1.0))
def test_the_verdict_is_what_the_printed_interval_says(low, width):
    high = low + width
    lo_text, hi_text = f"{low:.{VERDICT_DIGITS}f}", f"{high:.{VERDICT_DIGITS}f}"
    assert speedup_verdict(low, high) == read_verdict(lo_text, hi_text)


def interleaved(n_rounds: int, rng) -> Turns:
    """A race's turns with 1 to 5 tokens a round and a verify pass near break-even, so that
    seeds land on every verdict."""
    rng = np.random.default_rng(rng)
    verify = rng.uniform(60.0, 160.0)
    rows = [("spec", 0, 200.0, 1, 0), ("plain", 0, 200.0, 1, 0)]
    p = 0
    for i in range(n_rounds):
        tokens = int(rng.integers(1, 6))
        rows.append(("spec", i + 1, verify * rng.uniform(0.8, 1.2), tokens, 5))
        for _ in range(tokens):
            p += 1
            rows.append(("plain", p, 40.0 * rng.uniform(0.8, 1.2), 1, 1))
    return Turns.from_rows(rows)


def test_a_race_is_judged_by_the_rule_and_its_figures_derive_from_one_another():
    seen = set()
    for seed in range(60):
        f = fair_speedup(interleaved(1 + seed % 12, seed), rng=seed, n_resamples=300, ended=seed % 2 == 1)
        assert f.verdict == speedup_verdict(f.low, f.high)
        seen.add(f.verdict)
        # The speedup is the ratio of the two runs' tokens per second ...
        assert f.spec_tokens_per_s / f.plain_tokens_per_s == pytest.approx(f.speedup, rel=1e-12)
        # ... and the work-based figure is tokens per pass over the one price of a round.
        assert f.work_speedup == pytest.approx(f.tokens_per_pass / f.round_cost, rel=1e-12)
    assert seen == set(VERDICTS)


# --- Episode 7 and the CLI: every verdict shown is the rule applied to the interval shown ----------


def judged(c, low: float, high: float, speedup: float):
    """``c`` with its race's interval set to ``[low, high]`` (to reach the rule's edges)."""
    c.__dict__["fair"] = dataclasses.replace(c.fair, low=low, high=high, speedup=speedup)
    return c


INTERVAL = re.compile(r"interval (\d+\.\d+)×?(?: to |–)(\d+\.\d+)×")
EDGES = [(1.004, 1.3), (1.006, 1.3), (0.8, 0.9951), (0.8, 0.994), (0.97, 0.98), (0.939, 1.001),
         (0.95, 1.05), (2.8, 4.0), (0.36, 0.40)]


def comparisons():
    """Fake races over seeds (each verdict reached), the rule's edges, and the recorded runs."""
    out = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        rounds = [(4, int(a)) for a in rng.integers(0, 5, size=int(rng.integers(3, 10)))]
        out.append(fake_comparison(rounds, verify_ms=float(rng.uniform(50, 160)), step_ms=40.0))
    for low, high in EDGES:
        out.append(judged(fake_comparison([(4, 2)] * 4), low, high, (low + high) / 2))
    out.extend(recorded.recorded_runs().values())
    return out


def test_episode_7s_sentence_and_caption_say_the_verdict_of_the_interval_they_print():
    kinds = set()
    for c in comparisons():
        f = c.fair
        for text in (words7.verdict(c, "f32"), view7._speedup_label(c, "f32")):
            lo, hi = INTERVAL.search(text).groups()
            said = [v for v in (FASTER, SLOWER, NO_DIFFERENCE) if v in text.lower()]
            assert said == [read_verdict(lo, hi)] == [f.verdict], text
            kinds.add(f.verdict)
            # Both runs' tokens per second stand beside the ratio, with the weight format.
            assert f"{f.spec_tokens_per_s:.1f} tokens/s against plain decoding’s " \
                   f"{f.plain_tokens_per_s:.1f}, with float32 weights" in text
    assert kinds == {FASTER, SLOWER, NO_DIFFERENCE}


def test_the_recorded_table_says_the_verdict_of_the_interval_in_its_row():
    runs = recorded.recorded_runs()
    rows = words7.recorded_rows(runs, recorded.recorded_repeats())
    markup = view7.recorded_html(rows, "caption")
    cells = [[html.unescape(re.sub(r"<[^>]+>", "", td)) for td in re.findall(r"<td[^>]*>.*?</td>", tr)]
             for tr in re.findall(r"<tr><td.*?</tr>", markup)]
    assert len(cells) == len(rows) == len(runs)
    # one heading row per task, in the rows' order, and no cell repeats the task
    groups = [html.unescape(t) for t in re.findall(r'<th colspan="9" scope="rowgroup">(.*?)</th>', markup)]
    assert groups == list(dict.fromkeys(r.task for r in rows))
    for row, cell, c in zip(rows, cells, runs.values()):
        assert cell[0] == row.draft and len(cell) == 9
        lo, hi = cell[6].rstrip("×").split("–")
        assert cell[7] == row.verdict == read_verdict(lo, hi) == c.fair.verdict
        assert (float(lo), float(hi)) == (round(c.fair.low, 2), round(c.fair.high, 2))
        assert cell[5] == f"{c.fair.speedup:.2f}×"
        plain_tps, spec_tps = (float(x) for x in cell[4].split(" → "))
        assert (plain_tps, spec_tps) == (round(c.fair.plain_tokens_per_s, 1),
                                         round(c.fair.spec_tokens_per_s, 1))
    # The repeats' stored words are judged again by the rule, not read from the file.
    for reps in recorded.recorded_repeats().values():
        for r in reps:
            assert r["verdict"] == speedup_verdict(r["low"], r["high"])


def test_the_recorded_runs_were_made_with_float32_weights():
    # Recorded before the 4-bit option existed; a recording that says its format is believed.
    assert recorded.recorded_weights() == recorded.recorded_meta().get("weights", "f32") == "f32"
    meta = recorded.recorded_meta()
    assert "float32 weights" in words7.recorded_caption(meta, recorded.recorded_weights())
    # The summary's recorded ratio has both runs' tokens per second beside it.
    f = recorded.recorded_runs()[(words7.SUMMARY_LINK["task"], words7.SUMMARY_LINK["draft"])].fair
    s = words7.summary_sentence()
    assert (f"{f.speedup:.2f}× as fast as plain decoding ({f.spec_tokens_per_s:.1f} tokens/s against "
            f"plain decoding’s {f.plain_tokens_per_s:.1f}, with float32 weights)") in s


def test_the_exercise_says_the_recorded_verdict():
    from specdec_playable.episodes.ep7.state import RealText

    right, why = practice7._answer_early_exit(RealText(task="repeat", draft="early-exit"))
    f = recorded.recorded_runs()[("repeat", "early-exit")].fair
    lo, hi = INTERVAL.search(why).groups()
    assert f": {f.verdict}," in why and read_verdict(lo, hi) == f.verdict
    assert (f"{f.speedup:.2f}× as fast ({f.spec_tokens_per_s:.1f} tokens/s against plain decoding’s "
            f"{f.plain_tokens_per_s:.1f}, with float32 weights)") in why
    assert right == {FASTER: 0, SLOWER: 1, NO_DIFFERENCE: 2}[f.verdict]


class _Tok:
    def token_text(self, t: int) -> str:
        return f"t{t} "


@pytest.mark.parametrize("i", range(len(EDGES) + 12))
def test_generate_reports_the_verdict_of_the_interval_it_prints(i, capsys):
    c = comparisons()[i]
    f = c.fair
    out = dict(acceptance_rate=c.spec.acceptance_rate, draft_cost_c=0.01, weights="f32",
               speedup=f.speedup, temperature=0.0, matched_plain=True)
    args = types.SimpleNamespace(draft="lookup", k=4)
    cli._print_generation(_Tok(), c.plain, c.spec, f, args=args, out=out)
    text = capsys.readouterr().out
    line = next(s for s in text.splitlines() if s.startswith("measured speedup"))
    lo, hi = re.search(r"interval (\d+\.\d+)x-(\d+\.\d+)x", line).groups()
    assert line.endswith(f": {f.verdict}") and read_verdict(lo, hi) == f.verdict
    assert f"({f.spec_tokens_per_s:.1f} against {f.plain_tokens_per_s:.1f} tokens/s, f32 weights)" in line
    work = next(s for s in text.splitlines() if s.startswith("by the work"))
    assert f"{f.tokens_per_pass:.2f} tokens per round / {f.round_cost:.2f} steps" in work


@pytest.mark.parametrize("low, high, kind", [(1.004, 1.3, "even"), (1.006, 1.3, "faster"),
                                              (0.7, 0.9951, "even"), (0.7, 0.994, "slower"),
                                              (0.9, 1.1, "even")])
def test_episode_3s_measured_verdict_is_the_same_rule(low, high, kind):
    from specdec_playable.episodes.ep3.view import verdict as ep3_verdict

    assert ep3_verdict(low, high) == kind
    assert kind == {FASTER: "faster", SLOWER: "slower"}.get(speedup_verdict(low, high), "even")


def test_a_run_states_the_price_of_a_round_once():
    """Each recorded run's card, notes and map line give one price of a round, and the
    work-based figure is tokens per pass over it (to the rounding of the two shown)."""
    for c in recorded.recorded_runs().values():
        f = c.fair
        cost = f"{f.round_cost:.2f}"
        card = view7.clocks_html(c, "u", weights="f32")
        assert f'<div class="v">{cost}×</div><div class="l">one round' in card
        text = html.unescape(re.sub(r"<[^>]+>", " ", card + view7.notes_html(c, 4, "./ep5", "f32")))
        found = set(re.findall(r"(\d+\.\d+)× (?:a )?(?:plain )?step", text))
        assert found == {cost} if c.spec.proposed else found <= {cost}
        if c.spec.proposed:
            assert f"{f.tokens_per_pass:.2f} tokens per round ÷ {cost} steps per round" in text
        shown_work = round(f.tokens_per_pass, 2) / round(f.round_cost, 2)
        assert abs(shown_work - f.work_speedup) < 0.02

"""The lane player's timeline, built without Bokeh: boxes in, the browser's columns out."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_playable.sim import clocks
from specdec_playable.kit import theme
from specdec_playable.episodes.ep1.view import lane_timeline
from specdec_playable.kit.lanes.timeline import (ASSUMED_PLOT_PX, CHAR_EM, FLIP_AT, Box,
                                                       Lane, Timeline, bar_columns, clock_columns,
                                                       empty_bar_columns, hatch_patterns,
                                                       label_color, resolve_styles)

STYLES = resolve_styles(theme.STATUS)


def test_a_box_fills_in_its_own_defaults():
    b = Box("draft", 10.0, 70.0, 1.0, 0.5, "x", "accepted")
    assert (b.shown, b.judged, b.label_at) == (10.0, 10.0, 70.0)
    assert (b.tip, b.tip_before, b.status_before, b.label_before) == ("x", "x", "accepted", "x")
    judged_later = Box("draft", 0, 60, 1, 0.5, "✓", "accepted", status_before="draft",
                       label_before="", judged=660, tip="kept", tip_before="waiting")
    assert (judged_later.judged, judged_later.tip_before) == (660, "waiting")


def test_columns_hold_both_phases_and_draw_the_end_state():
    boxes = (Box("draft", 0, 60, 1, 0.5, "✗", "rejected", status_before="draft", label_before="",
                 judged=660, tip="miss", tip_before="waiting"),
             Box("big", 60, 660, 0, 0.5, "+1", "verify"))
    cols = bar_columns(Timeline(boxes), STYLES, label_size="12px")
    assert cols["status"] == ["rejected", "verify"] and cols["status_before"] == ["draft", "verify"]
    assert cols["label_a"] == ["✗", "+1"] and cols["label_b"] == ["", "+1"]
    assert cols["tip_a"] == ["miss", "+1"] and cols["tip_b"] == ["waiting", "+1"]
    # Drawn as at the end: judged fills and labels, full width, label colours per phase.
    assert cols["fill"] == [theme.REJECTED, theme.BIG] and cols["label"] == ["✗", "+1"]
    assert cols["right"].tolist() == [60, 660]
    assert cols["label_color_a"] == [label_color("rejected"), label_color("verify")]
    assert cols["label_color_b"] == [label_color("draft"), label_color("verify")]
    # One overlay per hatch pattern: the rejected box has height in the "x" overlay only.
    j = hatch_patterns(STYLES).index("x")
    assert cols[f"hb{j}"].tolist() == [0.75, 0.0] and cols[f"ht{j}"].tolist() == [1.25, 0.0]
    assert set(cols) == set(empty_bar_columns(STYLES))


def test_labels_too_wide_for_their_box_start_hidden():
    # Axis end 1000 ms on the assumed plot width: a 10 ms box is 7 px wide.
    wide = Box("big", 0, 600, 0, 0.5, "+3", "verify", label_size="11px")
    narrow = Box("big", 600, 610, 0, 0.5, "+3", "verify", label_size="11px")
    cols = bar_columns(Timeline((wide, narrow), x_end=1000), STYLES, label_size="12px", min_label_px=6)
    px_per_ms = ASSUMED_PLOT_PX / 1000
    need = CHAR_EM * 11 * 2
    assert 600 * px_per_ms >= need > 10 * px_per_ms
    assert cols["label_alpha"].tolist() == [1.0, 0.0]


def test_timeline_defaults_and_clocks():
    tl = Timeline((Box("a", 0, 300, 1, 0.5, "", "generate"), Box("b", 0, 900, 0, 0.5, "", "score")))
    assert tl.total == 900 and tl.stop_times == [900.0] and tl.axis_end == pytest.approx(990.0)
    assert tl.lane_end == {"a": 300.0, "b": 900.0}
    lanes = (Lane("a", "A", 1.0), Lane("b", "B", 0.0), Lane("c", "C", -1.0))
    c = clock_columns(lanes, tl.lane_end, tl.axis_end)
    assert c["lane_end"] == [300.0, 900.0, 0.0]
    assert c["align"] == ["left", "right", "left"]  # 900 > FLIP_AT * 990 > 300
    assert 300 < FLIP_AT * 990 < 900
    assert c["text"][1] == "900 ms · done"


def test_episode_1s_timeline_is_the_core_clocks():
    comp = clocks.sequential_vs_parallel(5, 600.0)
    tl = lane_timeline(comp)
    writing = [b for b in tl.boxes if b.lane == "sequential"]
    checking = [b for b in tl.boxes if b.lane == "parallel"]
    assert [b.end for b in writing] == comp.sequential.end_ms.tolist()
    assert len(checking) == 5 and {b.end for b in checking} == {comp.parallel_ms}
    assert tl.total == comp.sequential_ms
    # The checking rows stack without overlapping inside the lane.
    tops = np.array([b.y + b.height / 2 for b in checking])
    bottoms = np.array([b.y - b.height / 2 for b in checking])
    assert (bottoms[:-1] > tops[1:]).all()

"""State tier: the answers a visitor gives to the "Check yourself" questions. The first try is
kept, an answered question is locked, the score counts first tries, and what a browser sends
back is read as untrusted text (only records that fit a question of the series). No browser."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_playable.episodes import EPISODES
from specdec_playable.kit.answers import (MAX_STORED_CHARS, Answer, AnswerSheet, Score, dumps,
                                            loads, question_key, series_score)
from specdec_playable.kit.exercises import questions_of

KEYS = [question_key("How long?", ("a", "b", "c")), question_key("Faster?", ("yes", "no"))]
SIZES = [3, 2]
ASKED = {"ep1": list(zip(KEYS, SIZES))}


def sheet() -> AnswerSheet:
    return AnswerSheet(keys=KEYS, sizes=SIZES)


def test_the_first_try_is_kept_and_the_question_locks():
    s = sheet()
    assert not s.locked(1) and s.answer(1) is None and s.score == Score(0, 0, 2)
    assert s.record(1, picked=2, right=0) is True
    assert s.locked(1) and not s.locked(2)
    assert s.record(1, picked=0, right=0) is False  # a second try changes nothing
    assert s.answer(1) == Answer(2, 0) and s.score == Score(0, 1, 2)
    assert s.record(2, picked=1, right=1) is True
    assert s.score == Score(1, 2, 2)


def test_records_are_checked():
    s = sheet()
    with pytest.raises(ValueError, match="question must be 1 to 2"):
        s.record(3, picked=0, right=0)
    with pytest.raises(ValueError, match="choices of question 2 are 0 to 1"):
        s.record(2, picked=2, right=0)
    with pytest.raises(ValueError, match="keys and sizes must match"):
        AnswerSheet(keys=KEYS, sizes=[3])
    assert s.score == Score(0, 0, 2)


def test_a_key_names_the_words_of_a_question():
    assert question_key("How long?", ("a", "b", "c")) == KEYS[0]  # the same on every server
    assert question_key("How long?", ("a", "b", "d")) != KEYS[0]  # another choice: another question
    assert question_key("How long now?", ("a", "b", "c")) != KEYS[0]
    every = [k for ep in EPISODES for k, _ in questions_of(ep.questions)]
    assert len(set(every)) == len(every)  # no two questions of the series share a key


def test_what_a_browser_kept_comes_back_and_restores_open_questions_only():
    s = sheet()
    s.record(1, picked=1, right=1)
    text = dumps("ep1", s.answers)
    assert json.loads(text) == {"v": 1, "pages": {"ep1": {KEYS[0]: [1, 1]}}}
    back = loads(text, ASKED)
    assert back == {"ep1": {KEYS[0]: Answer(1, 1)}}
    fresh = sheet()
    assert fresh.restore(back["ep1"]) == [1] and fresh.score == Score(1, 1, 2)
    # A question answered in this visit keeps its own first try.
    other = sheet()
    other.record(1, picked=0, right=1)
    assert other.restore(back["ep1"]) == [] and other.answer(1) == Answer(0, 1)


@pytest.mark.parametrize("text", [
    "", "not json", "[]", "null", '{"v": 2, "pages": {}}', '{"v": 1}', '{"v": 1, "pages": []}',
    json.dumps({"v": 1, "pages": {"ep9": {KEYS[0]: [0, 0]}}}),            # no such page
    json.dumps({"v": 1, "pages": {"ep1": {"0123456789ab": [0, 0]}}}),     # no such question
    json.dumps({"v": 1, "pages": {"ep1": {KEYS[0]: [3, 0]}}}),            # no such choice
    json.dumps({"v": 1, "pages": {"ep1": {KEYS[0]: [-1, 0]}}}),
    json.dumps({"v": 1, "pages": {"ep1": {KEYS[0]: [True, 0]}}}),         # a flag, not a choice
    json.dumps({"v": 1, "pages": {"ep1": {KEYS[0]: [0.0, 0]}}}),
    json.dumps({"v": 1, "pages": {"ep1": {KEYS[0]: [0, 0, 0]}}}),
    json.dumps({"v": 1, "pages": {"ep1": {KEYS[0]: "0,0"}}}),
    json.dumps({"v": 1, "pages": {"ep1": {KEYS[0]: [0, 0]}}, "x": "y" * MAX_STORED_CHARS}),  # too long
])
def test_anything_else_a_browser_sends_is_dropped(text):
    assert loads(text, ASKED) == {}


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4),
                    max_leaves=30))
def test_loads_never_raises_and_keeps_only_fitting_records(data):
    wrapped = {"v": 1, "pages": {"ep1": data}} if isinstance(data, dict) else data
    out = loads(json.dumps(wrapped), ASKED)
    for page, records in out.items():
        assert page == "ep1"
        for key, a in records.items():
            size = dict(ASKED["ep1"])[key]
            assert 0 <= a.picked < size and 0 <= a.right < size


def test_the_series_score_adds_up_each_page():
    asked = {ep: list(zip(KEYS, SIZES)) for ep in ("ep1", "ep2")}
    records = {"ep1": {KEYS[0]: Answer(0, 0), KEYS[1]: Answer(1, 0)}, "ep2": {KEYS[1]: Answer(1, 1)}}
    per, total = series_score(records, asked)
    assert per == {"ep1": Score(1, 2, 2), "ep2": Score(1, 1, 2)}
    assert total == Score(2, 3, 4)
    assert series_score({}, asked)[1] == Score(0, 0, 4)

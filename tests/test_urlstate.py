"""State tier: reading controls from an untrusted URL query."""

from __future__ import annotations

import importlib

import math

import param
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_playable.kit.urlstate import (MAX_VALUE_CHARS, notice_html, parse_value,
                                                 read_query)
ep4_page = importlib.import_module("specdec_playable.episodes.ep4.page")


class Demo(param.Parameterized):
    q = param.Number(0.8, bounds=(0.0, 1.0))
    k = param.Integer(4, bounds=(1, 16))
    mode = param.Selector(default="a", objects=["a", "b"])
    on = param.Boolean(False)


NAMES = ["q", "k", "mode", "on"]


@pytest.mark.parametrize("key, text, value, changed", [
    ("q", "0.7", 0.7, False),
    ("q", "5", 1.0, True),
    ("q", "-0.2", 0.0, True),
    ("q", "nan", 0.8, True),
    ("q", "inf", 0.8, True),
    ("q", "-Infinity", 0.8, True),
    ("q", "abc", 0.8, True),
    ("q", "1e999", 0.8, True),
    ("k", "6", 6, False),
    ("k", "6.0", 6, False),
    ("k", "6.5", 4, True),
    ("k", "99999999999999999999999", 16, True),
    ("k", "0", 1, True),
    ("k", "17", 16, True),
    ("mode", "b", "b", False),
    ("mode", "<script>", "a", True),
    ("on", "true", True, False),
    ("on", "maybe", False, True),
    ("q", "0." + "1" * 100, 0.8, True),
])
def test_each_value_is_parsed_clamped_or_defaulted(key, text, value, changed):
    values, notices = read_query(Demo(), NAMES, {key: [text.encode()]})
    assert values[key] == value and type(values[key]) is type(value)
    assert bool(notices) is changed


def test_unknown_keys_are_ignored_and_reported_briefly():
    query = {f"x{i}": [b"1"] for i in range(10)} | {"q": [b"0.5"], "bokeh-app-path": [b"/x"]}
    values, notices = read_query(Demo(), NAMES, query)
    assert values == {"q": 0.5}
    assert len(notices) == 1 and "and 7 more" in notices[0]


def test_notice_is_escaped():
    _, notices = read_query(Demo(), NAMES, {"<img src=x onerror=alert(1)>": [b"1"]})
    html = notice_html(notices)
    assert "<img" not in html and "&lt;img" in html


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(NAMES + ["zz", "<b>"]),
                       st.lists(st.one_of(st.text(max_size=80), st.binary(max_size=80)), min_size=1,
                                max_size=3), max_size=6))
def test_any_query_yields_values_the_state_accepts(query):
    query = {k: [v if isinstance(v, bytes) else v.encode("utf-8", "surrogatepass") for v in vs]
             for k, vs in query.items()}
    state = Demo()
    values, notices = read_query(state, NAMES, query)
    state.param.update(**values)  # raises if any value were invalid
    assert 0.0 <= state.q <= 1.0 and math.isfinite(state.q)
    assert 1 <= state.k <= 16 and state.mode in ("a", "b") and isinstance(state.on, bool)
    assert all(len(n) < 200 for n in notices)


def test_long_value_limit_is_what_the_module_says():
    _, ok = read_query(Demo(), NAMES, {"q": [b"0." + b"5" * (MAX_VALUE_CHARS - 2)]})
    _, bad = read_query(Demo(), NAMES, {"q": [b"0." + b"5" * (MAX_VALUE_CHARS - 1)]})
    assert ok == [] and bad and "too long" in bad[0]
    assert parse_value(Demo.param.q, "0.25") == (0.25, None)


def test_old_keys_of_shared_links_still_set_their_control():
    aliases = {"quality": "q"}
    values, notices = read_query(Demo(), NAMES, {"quality": [b"0.7"]}, aliases)
    assert values == {"q": 0.7} and notices == []
    values, notices = read_query(Demo(), NAMES, {"quality": [b"2"]}, aliases)
    assert values == {"q": 1.0} and notices[0].startswith("quality=2 was above")
    # The current name wins over the old one, whatever their order in the link.
    for query in ({"quality": [b"0.2"], "q": [b"0.3"]}, {"q": [b"0.3"], "quality": [b"0.2"]}):
        assert read_query(Demo(), NAMES, query, aliases)[0] == {"q": 0.3}
    # Without the alias the old key is unknown.
    assert read_query(Demo(), NAMES, {"quality": [b"0.7"]})[0] == {}


class WithText(param.Parameterized):
    k = param.Integer(4, bounds=(1, 16))
    paste = param.String("")


def test_a_long_text_is_kept_up_to_its_own_bound_and_left_out_beyond_it():
    from specdec_playable.kit.urlstate import url_values

    text = "def f(x):\n    return x * 2  # <b>"
    values, notices = read_query(WithText(), ["k", "paste"], {"paste": [text.encode()]},
                                 long_text={"paste": 100})
    assert values == {"paste": text.strip()} and notices == []
    long = "x" * 101
    values, notices = read_query(WithText(), ["k", "paste"], {"paste": [long.encode()]},
                                 long_text={"paste": 100})
    assert values == {"paste": ""}
    assert notices == ["the text in the link was longer than 100 characters, so it was left out"]
    # Without its own bound a string is an ordinary value, bounded like every other.
    _, notices = read_query(WithText(), ["k", "paste"], {"paste": [b"y" * (MAX_VALUE_CHARS + 1)]})
    assert notices and "too long" in notices[0]
    # Written: an empty text or one over its bound is not in the address at all.
    assert url_values(WithText(k=3, paste=text), ["k", "paste"], {"paste": 100}) == {"k": "3", "paste": text}
    assert url_values(WithText(k=3), ["k", "paste"], {"paste": 100}) == {"k": "3"}
    assert url_values(WithText(k=3, paste=long), ["k", "paste"], {"paste": 100}) == {"k": "3"}


def test_episode4_keeps_a_pasted_text_in_its_link_bounded_like_the_box():
    from specdec_playable.data import texts
    from specdec_playable.episodes.ep4.view import PASTE_LABEL, side_header_html

    assert "paste" in ep4_page.URL_PARAMS and ep4_page.URL_TEXTS == {"paste": texts.PASTE_MAX_CHARS}
    waiting = side_header_html(None, "Your own text", waiting=True)
    empty = side_header_html(None, "Your own text")
    assert f"<strong>{PASTE_LABEL}</strong>" in waiting and f"<strong>{PASTE_LABEL}</strong>" in empty
    assert "from the link is in the box" in waiting and "Nothing pasted yet" in empty
    assert f"<strong>{PASTE_LABEL}</strong>" in ep4_page.PASTE_INTRO


def test_episode7_keeps_a_custom_prompt_in_its_link_bounded_like_the_box():
    """A visitor's own prompt is read back from a shared link as plain text (the page escapes it
    where it shows it), bounded like the box; a longer one is left out with a notice."""
    from specdec_playable.episodes.ep7.state import PROMPT_MAX_CHARS, RealText
    from specdec_playable.kit.urlstate import url_values

    ep7_page = importlib.import_module("specdec_playable.episodes.ep7.page")
    assert "prompt" in ep7_page.URL_PARAMS and ep7_page.URL_TEXTS == {"prompt": PROMPT_MAX_CHARS}
    text = "Write a haiku about <b>tea</b> & rain"
    values, notices = read_query(RealText(), ep7_page.URL_PARAMS,
                                 {"task": [b"custom"], "prompt": [text.encode()]},
                                 long_text=ep7_page.URL_TEXTS)
    assert values == {"task": "custom", "prompt": text} and not notices
    too_long = "x" * (PROMPT_MAX_CHARS + 1)
    values, notices = read_query(RealText(), ep7_page.URL_PARAMS, {"prompt": [too_long.encode()]},
                                 long_text=ep7_page.URL_TEXTS)
    assert values == {"prompt": ""}  # left out: the box stays empty
    assert notices == [f"the text in the link was longer than {PROMPT_MAX_CHARS:,} characters, so it was left out"]
    state = RealText(task="custom", prompt=text)
    assert url_values(state, ep7_page.URL_PARAMS, ep7_page.URL_TEXTS)["prompt"] == text
    assert "prompt" not in url_values(RealText(), ep7_page.URL_PARAMS, ep7_page.URL_TEXTS)

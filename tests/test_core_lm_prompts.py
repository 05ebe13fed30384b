"""Episode 7's tasks are tasks SmolLM2-135M really does: each task's greedy reply (the page's 64
tokens) passes its check, and each check fails a reply that does not do the task."""

from __future__ import annotations

import pytest

from specdec_playable import lm
from specdec_playable.lm.decode import generate
from specdec_playable.lm.prompts import PROMPTS, SENTENCE, TASK_CHECKS, does_the_task
from specdec_playable.state.ep7 import MAX_NEW_DEFAULT, TASKS


def test_the_page_offers_exactly_the_checked_tasks_with_copy_and_fresh_ones():
    assert set(TASKS) == set(TASK_CHECKS)
    kinds = {copies for _, copies in TASK_CHECKS.values()}
    assert kinds == {True, False}


@pytest.mark.parametrize("name,bad", [
    ("repeat", "Marta Ilves joined the Oslo office."),
    ("json-person", '{"name": "Ada Park", "age": 36,}'),
    ("json-person", '{"name": "Ada Park", "age": 36}'),
    ("where", "Jonas Berg works in Tartu."),
    ("sum-function", "```python\ndef total(xs):\n    return len(xs)\n```"),
    ("sum-function", "def broken(:"),
    ("sky", "The sky is blue because it is."),
])
def test_a_reply_that_does_not_do_the_task_fails_its_check(name, bad):
    assert not does_the_task(name, bad)


def test_unknown_task_is_refused():
    with pytest.raises(ValueError, match="task must be one of"):
        does_the_task("table", "")


@pytest.fixture(scope="module")
def model():
    return lm.get_model()


@pytest.mark.parametrize("name", sorted(TASK_CHECKS))
def test_each_tasks_greedy_reply_does_the_task(model, name):
    reply = generate(model, model.tokenizer.chat(PROMPTS[name][1]), max_new=MAX_NEW_DEFAULT).text
    assert does_the_task(name, reply), reply
    if name == "repeat":
        assert SENTENCE in reply

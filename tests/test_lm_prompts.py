"""Episode 7's tasks are tasks SmolLM2-135M really does: each task's greedy reply (the page's 64
tokens) passes its check, and each check fails a reply that does not do the task. One record
per task (``lm.prompts.Task``) says all the pages and benchmarks read of it."""

from __future__ import annotations

import pytest

from specdec_playable import lm
from specdec_playable.lm.decode import generate
from specdec_playable.lm.prompts import PROMPTS, SENTENCE, TASKS, task
from specdec_playable.episodes.ep7.state import MAX_NEW_DEFAULT, RealText


def test_the_page_offers_exactly_the_checked_tasks_with_copy_and_fresh_ones():
    offered = {v for v in RealText.param.task.objects.values()} - {"custom"}
    assert offered == set(TASKS)
    assert {t.copy for t in TASKS.values()} == {True, False}
    for key, t in TASKS.items():
        assert t.key == key and PROMPTS[key] is t and t.check is not None
        assert t.label == f"{t.genre}: {t.title}" and t.named and t.message
    # The benchmarks' other prompts carry no check: asking one is a clear error.
    with pytest.raises(ValueError, match="no check"):
        PROMPTS["poem"].done_by("anything")


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
    assert not task(name).done_by(bad)


def test_unknown_task_is_refused():
    with pytest.raises(ValueError, match="task must be one of"):
        task("table")


@pytest.fixture(scope="module")
def model():
    return lm.get_model()


@pytest.mark.parametrize("name", sorted(TASKS))
def test_each_tasks_greedy_reply_does_the_task(model, name):
    reply = generate(model, model.tokenizer.chat(TASKS[name].message), max_new=MAX_NEW_DEFAULT).text
    assert TASKS[name].done_by(reply), reply
    if name == "repeat":
        assert SENTENCE in reply

"""Prompts the benchmarks, tests and pages share, and the checks of what Episode 7's tasks ask.

Every text here was written for this project. The first four of :data:`PROMPTS` ask the model to
copy much of the prompt back (where prompt lookup shines); the explanation and the poem ask for
fresh text (where it cannot help). SmolLM2-135M does not really do the first four (it does not
rename, it repeats a table's rows, it changes values), so Episode 7 offers the tasks of
:data:`TASK_CHECKS`, each checked against the model's greedy reply (``tests/test_core_lm_prompts.py``).
"""

from __future__ import annotations

import ast
import json
import re

CODE = '''def total_price(items, tax_rate):
    subtotal = 0
    for item in items:
        subtotal += item.price * item.quantity
    tax = subtotal * tax_rate
    return subtotal + tax
'''

PASSAGE = ("Marta Ilves joined the Tartu office in March 2021 as a data engineer. Her manager, "
           "Jonas Berg, moved to the Oslo office a year later, and the team is now led by "
           "Priya Natarajan, who previously worked at the Lisbon branch.")

RECORD = ('{"id": 1042, "name": "Ada Park", "email": "ada.park@example.org", '
          '"address": {"city": "Leeds", "postcode": "LS1 4AP"}, "active": true}')

TABLE = ("| # | planet | moons |\n|---|--------|-------|\n| 1 | Mercury | 0 |\n| 2 | Venus | 0 |\n"
         "| 3 | Earth | 1 |\n| 4 | Mars | 2 |")

#: name -> (kind, user message)
PROMPTS = {
    "code-edit": ("code", "Rewrite this Python function, renaming total_price to order_total and "
                          "items to lines. Reply with the code only.\n\n" + CODE),
    "extraction": ("extraction", "List every person named in this passage with their city, one per "
                                 "line as 'name - city'.\n\n" + PASSAGE),
    "json-reshape": ("json", "Rewrite this JSON record with the same values but the keys in "
                             "upper case. Reply with the JSON only.\n\n" + RECORD),
    "table": ("table", "Continue this table with the next four planets, in the same format:\n\n" + TABLE),
    "poem": ("poem", "Write a short free-verse poem about an old kettle."),
    "capital": ("fact", "What is the capital of France?"),
    "sky": ("explain", "Explain in two sentences why the sky is blue."),
}

SENTENCE = ("Marta Ilves joined the Tartu office in March 2021 as a data engineer, and Priya Natarajan "
            "now leads the team.")

PROMPTS.update({
    "repeat": ("copy", "Repeat exactly: " + SENTENCE),
    "json-person": ("json", 'Reply with only a JSON object with the keys "name", "age" and "city" for '
                            "this person: Ada Park, 36, lives in Leeds."),
    "where": ("extraction", "In this passage, which city does Jonas Berg work in now? Answer in one "
                            "short sentence.\n\n" + PASSAGE),
    "sum-function": ("code", "Write a Python function that returns the sum of a list of numbers."),
})


def _repeats(text: str) -> bool:
    return SENTENCE in text


def _json_with_keys(text: str) -> bool:
    m = re.search(r"\{.*?\}", text, re.S)
    try:
        obj = json.loads(m.group(0)) if m else None
    except ValueError:
        return False
    return isinstance(obj, dict) and {"name", "age", "city"} <= set(obj)


def _names_oslo(text: str) -> bool:
    return "Oslo" in text


def _sums_a_list(text: str) -> bool:
    """The reply's first function, defined with almost no builtins, sums [1, 2, 3.5] to 6.5."""
    m = re.search(r"```(?:python)?\n(.*?)```", text, re.S)
    code = m.group(1) if m else text
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    funcs = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    if not funcs:
        return False
    space: dict = {"__builtins__": {"sum": sum, "len": len, "range": range}}
    try:
        exec(compile(tree, "<reply>", "exec"), space)  # noqa: S102 - the model's fixed greedy reply
        return space[funcs[0]]([1, 2, 3.5]) == 6.5
    except Exception:  # noqa: BLE001 - any failure means the task was not done
        return False


def _explains_scattering(text: str) -> bool:
    low = text.lower()
    return "scatter" in low and "blue" in low


#: Episode 7's tasks: name -> (does the model's reply do the task?, copy-heavy?). Copy tasks
#: repeat words of the prompt (prompt lookup's guesses come from there); fresh ones do not.
TASK_CHECKS = {
    "repeat": (_repeats, True),
    "json-person": (_json_with_keys, True),
    "where": (_names_oslo, True),
    "sum-function": (_sums_a_list, False),
    "sky": (_explains_scattering, False),
}


def does_the_task(name: str, text: str) -> bool:
    """Whether ``text`` (a reply) does what task ``name`` of :data:`TASK_CHECKS` asks."""
    if name not in TASK_CHECKS:
        raise ValueError(f"task must be one of {sorted(TASK_CHECKS)}; got {name!r}")
    return bool(TASK_CHECKS[name][0](text))

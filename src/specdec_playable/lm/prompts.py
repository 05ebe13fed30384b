"""Prompts the benchmarks, tests and pages share, one :class:`Task` record each.

Every text here was written for this project. The first four of :data:`PROMPTS` ask the model to
copy much of the prompt back (where prompt lookup shines); the explanation and the poem ask for
fresh text (where it cannot help). SmolLM2-135M does not really do the first four (it does not
rename, it repeats a table's rows, it changes values), so Episode 7 offers the tasks of
:data:`TASKS`, each with a check of its reply that the model's greedy reply passes
(``tests/test_lm_prompts.py``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

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

SENTENCE = ("Marta Ilves joined the Tartu office in March 2021 as a data engineer, and Priya Natarajan "
            "now leads the team.")


@dataclass(frozen=True)
class Task:
    """One prompt, and for Episode 7's tasks what the page says of it and how its reply is checked.

    Attributes
    ----------
    key : str
        Its name in links, results and benchmarks.
    kind : str
        What it asks for: ``copy``, ``json``, ``extraction``, ``code``, ``explain``, ...
    message : str
        The user message the model is sent.
    genre, title : str
        How a page offers it: "Copy" and "repeat a sentence exactly" (empty for prompts the
        pages do not offer).
    named : str
        Its name inside a sentence ("on the sentence to repeat").
    copy : bool
        Whether the reply repeats words of the prompt (prompt lookup's guesses come from there).
    check : callable or None
        Whether a reply does what the task asks (None for prompts without a check).

    Examples
    --------
    >>> TASKS["repeat"].label
    'Copy: repeat a sentence exactly'
    >>> TASKS["sky"].copy, PROMPTS["poem"].kind
    (False, 'poem')
    """

    key: str
    kind: str
    message: str
    genre: str = ""
    title: str = ""
    named: str = ""
    copy: bool = False
    check: Callable[[str], bool] | None = None

    @property
    def label(self) -> str:
        """As a page's menu offers it ("Copy: repeat a sentence exactly")."""
        return f"{self.genre}: {self.title}"

    def done_by(self, reply: str) -> bool:
        """Whether ``reply`` does what this task asks (``ValueError`` for a prompt without a check)."""
        if self.check is None:
            raise ValueError(f"prompt {self.key!r} has no check of its reply; the tasks with one "
                             f"are {list(TASKS)}")
        return bool(self.check(reply))


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


#: Episode 7's tasks, in the order the page offers them: each is a task SmolLM2-135M really
#: does (its greedy reply passes the check). Copy tasks repeat words of the prompt; fresh ones do not.
TASKS: dict[str, Task] = {t.key: t for t in (
    Task("repeat", "copy", "Repeat exactly: " + SENTENCE, "Copy", "repeat a sentence exactly",
         "sentence to repeat", copy=True, check=_repeats),
    Task("json-person", "json", 'Reply with only a JSON object with the keys "name", "age" and "city" '
         "for this person: Ada Park, 36, lives in Leeds.", "Copy", "a person's details as JSON", "JSON",
         copy=True, check=_json_with_keys),
    Task("where", "extraction", "In this passage, which city does Jonas Berg work in now? Answer in "
         "one short sentence.\n\n" + PASSAGE, "Extraction", "where Jonas Berg works", "extraction", copy=True,
         check=_names_oslo),
    Task("sum-function", "code", "Write a Python function that returns the sum of a list of numbers.",
         "Fresh writing", "a Python sum function", "sum function", check=_sums_a_list),
    Task("sky", "explain", "Explain in two sentences why the sky is blue.", "Fresh writing",
         "why the sky is blue", "sky explanation", check=_explains_scattering),
)}

#: Every prompt: the benchmarks' (which ask for copying the model does not really do, or for a
#: poem) and Episode 7's tasks.
PROMPTS: dict[str, Task] = {t.key: t for t in (
    Task("code-edit", "code", "Rewrite this Python function, renaming total_price to order_total and "
         "items to lines. Reply with the code only.\n\n" + CODE),
    Task("extraction", "extraction", "List every person named in this passage with their city, one "
         "per line as 'name - city'.\n\n" + PASSAGE),
    Task("json-reshape", "json", "Rewrite this JSON record with the same values but the keys in "
         "upper case. Reply with the JSON only.\n\n" + RECORD),
    Task("table", "table", "Continue this table with the next four planets, in the same format:\n\n"
         + TABLE),
    Task("poem", "poem", "Write a short free-verse poem about an old kettle."),
    Task("capital", "fact", "What is the capital of France?"),
    # Fresh code no training run has seen (the draft head's benchmark; held out of its corpus).
    Task("sql-top", "code", "Write a SQL query that returns the ten customers with the highest "
         "total order value."),
    Task("py-class", "code", "Write a Python class for a rectangle with a width, a height and "
         "methods for its area and its perimeter."),
    Task("yaml-ci", "code", "Write a YAML workflow for GitHub Actions that installs Python 3.12 "
         "and runs pytest on every push."),
    # Fresh everyday writing, also held out of every corpus (the head on the model's own chat).
    Task("letter-thanks", "letter", "Write a short, friendly letter thanking your neighbour for "
         "watering your plants while you were away for two weeks."),
    Task("email-late", "letter", "Write a short e-mail to a colleague saying that the quarterly "
         "report will be two days late, and why."),
    TASKS["sky"], TASKS["repeat"], TASKS["json-person"], TASKS["where"], TASKS["sum-function"],
)}


#: More fresh prompts of each kind the draft head is compared on (held out of every corpus like
#: the prompts above), so a comparison of heads rests on several replies of a kind, not one. Each
#: asks about a subject no prompt of ``train.chat_prompts`` names (a test checks it).
FRESH: dict[str, Task] = {t.key: t for t in (
    Task("sql-doctors", "code", "Write a SQL query that counts the patients each doctor saw last month."),
    Task("sql-flights", "code", "Write a SQL query that lists the flights that left more than an hour "
         "late yesterday."),
    Task("py-meter", "code", "Write a Python class for a parking meter that takes coins and reports "
         "the minutes left."),
    Task("py-vending", "code", "Write a Python class for a vending machine that tracks its stock and "
         "sells a snack."),
    Task("yaml-backup", "code", "Write a YAML configuration for a nightly backup job with a schedule, "
         "a source folder and a destination."),
    Task("yaml-tram", "code", "Write a YAML file listing the stops of a tram line with the minutes "
         "between them."),
    Task("json-flight", "json", 'Reply with only a JSON object with the keys "flight", "from" and "to" '
         "for this trip: flight KL1204 from Amsterdam to Oslo."),
    Task("json-plant", "json", 'Reply with only a JSON object with the keys "plant", "water" and '
         '"light" for this care note: a fern, water twice a week, shade.'),
    Task("explain-spoon", "explain", "Explain in two sentences why a metal spoon in hot tea gets warm."),
    Task("explain-dogs", "explain", "Explain in two sentences why dogs pant on hot days."),
    Task("letter-bakery", "letter", "Write a short letter to a bakery thanking them for a wedding cake."),
    Task("email-parcel", "letter", "Write a short e-mail telling a customer that their parcel went to "
         "the wrong address."),
)}
#: Every prompt a benchmark may name.
EVERY: dict[str, Task] = PROMPTS | FRESH
#: The fresh prompts by what they ask for: a draft is compared on each pool's replies together
#: (their tokens over their passes), so a comparison rests on several replies of a kind, not one.
POOLS: dict[str, tuple[str, ...]] = {
    "Python": ("sum-function", "py-class", "py-meter", "py-vending"),
    "SQL": ("sql-top", "sql-doctors", "sql-flights"),
    "YAML": ("yaml-ci", "yaml-backup", "yaml-tram"),
    "JSON": ("json-person", "json-flight", "json-plant"),
    "explanations": ("sky", "explain-spoon", "explain-dogs"),
    "letters and e-mails": ("letter-thanks", "email-late", "letter-bakery", "email-parcel"),
}


#: Six short chat prompts the two weight formats' logits are compared on (the 4-bit model's tests
#: and ``benchmarks/bench_int_accuracy.py``); no draft is scored on them.
FORMAT_CHECKS = ("Write a Python function that adds two numbers.",
                 "Write a short poem about the sea.",
                 'Give a JSON object with the keys "name" and "age" for Ada, 36.',
                 "What is the capital of France?",
                 "Write an SQL query that counts the rows of a table named users.",
                 "Explain in two sentences why the sky is blue.")

def task(key: str) -> Task:
    """Episode 7's task ``key``; ``ValueError`` names the tasks."""
    try:
        return TASKS[key]
    except (KeyError, TypeError):
        raise ValueError(f"task must be one of {list(TASKS)}; got {key!r}") from None

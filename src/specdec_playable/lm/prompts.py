"""Prompts the benchmarks, tests and pages share: a code edit, an extraction, a JSON reshape, a
table to continue, an explanation, a poem.

Every text here was written for this project. The first four ask the model to copy much of the
prompt back (where prompt lookup shines); the explanation and the poem ask for fresh text (where it
cannot help).
"""

from __future__ import annotations

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

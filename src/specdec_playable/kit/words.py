"""Words that state numbers, written one way for every page.

A sentence that counts or compares is built from the number it describes, with
these helpers, so "1 token" and "2 tokens", or "faster" next to "1.00×", cannot
disagree with the number beside them:

- :func:`plural` counts things (``plural(1, "pass")`` is "1 pass");
- :func:`times` formats a ratio ("2.40×");
- :func:`versus_one` says how a shown ratio compares with 1, judged on the digits
  the page shows (so "1.00×" is never called faster or slower);
- :func:`ms` formats a time, :func:`share` a share as a percentage.

No Panel or Bokeh here: tests call these directly.
"""

from __future__ import annotations

import math

#: Plurals that do not just add "s" or "es".
_IRREGULAR = {"is": "are", "has": "have", "it": "them", "this": "these", "was": "were"}


def noun(n: float, one: str, many: str | None = None) -> str:
    """The form of ``one`` that goes with ``n``: ``noun(1, "pass")`` is "pass", ``noun(2, "pass")``
    "passes" (``many`` overrides the plural).

    Examples
    --------
    >>> noun(1, "token"), noun(0, "token"), noun(3, "pass"), noun(2, "has")
    ('token', 'tokens', 'passes', 'have')
    """
    if n == 1:
        return one
    if many is not None:
        return many
    if one in _IRREGULAR:
        return _IRREGULAR[one]
    head, _, last = one.rpartition(" ")
    if last.endswith(("s", "sh", "ch", "x")):
        last += "es"
    elif last.endswith("y") and last[-2:-1] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return f"{head} {last}" if head else last


def plural(n: int, one: str, many: str | None = None) -> str:
    """``n`` with its noun: "1 token", "2 tokens", "1,200 passes".

    Examples
    --------
    >>> plural(1, "token"), plural(1200, "pass"), plural(1, "bad round"), plural(0, "draft step")
    ('1 token', '1,200 passes', '1 bad round', '0 draft steps')
    """
    return f"{n:,} {noun(n, one, many)}"


def times(x: float, digits: int = 2) -> str:
    """A ratio as the pages show it: ``times(2.4)`` is "2.40×"."""
    return "–" if math.isnan(x) else f"{x:.{digits}f}×"


def share(x: float, digits: int = 0) -> str:
    """``x`` as a percentage, or "–" when it is undefined (NaN: nothing was counted).

    Examples
    --------
    >>> share(0.456), share(float("nan"))
    ('46%', '–')
    """
    return "–" if math.isnan(x) else f"{x:.{digits}%}"


def ms(x: float) -> str:
    """A time in milliseconds: "1,200 ms"."""
    return f"{x:,.0f} ms"


def versus_one(x: float, digits: int = 2) -> int:
    """+1, 0 or -1: whether ratio ``x``, shown with ``digits`` decimals, is above, at or below 1.

    Judged on the shown digits, so a sentence beside "1.00×" never calls it faster or slower.

    Examples
    --------
    >>> versus_one(1.004), versus_one(1.006), versus_one(0.994)
    (0, 1, -1)
    """
    shown = round(float(x), digits)
    return (shown > 1.0) - (shown < 1.0)


def faster_or_slower(x: float, digits: int = 2) -> str:
    """"faster", "slower" or "as fast" for a speedup ``x`` shown with ``digits`` decimals."""
    return {1: "faster", 0: "as fast", -1: "slower"}[versus_one(x, digits)]


# --- the series' notation ----------------------------------------------------------------
#: The two next-token distributions, as every page writes them in HTML (plain text, where
#: no HTML can go, such as a chart's hover: ``p_big``, ``p_draft``).
P_BIG = "p<sub>big</sub>"
P_DRAFT = "p<sub>draft</sub>"


def notation(escaped: str) -> str:
    """Escaped text with the distributions' plain names (``p_big``, ``p_draft``) written as the
    pages write them, with subscripts.

    Examples
    --------
    >>> notation("min(p_big(x), p_draft(x))")
    'min(p<sub>big</sub>(x), p<sub>draft</sub>(x))'
    """
    return escaped.replace("p_big", P_BIG).replace("p_draft", P_DRAFT)


#: What each measured text kind (``data.measured``) is called in a chart or a table (short, to fit a
#: phone), on Episodes 4 and 6.
SHORT = {"code": "JavaScript", "json": "JSON", "letter": "form letter", "translation": "translation",
         "poem": "poem", "python": "Python", "pasted": "your text"}


def short_name(kind: str, title: str = "") -> str:
    return SHORT.get(kind, title or kind)


#: Words a title may open with that a sentence writes in lower case ("A free-verse poem" reads
#: "a free-verse poem" inside one); a name ("Python code", "JSON") keeps its capital.
_LOWER_IN_SENTENCE = frozenset({"a", "an", "the", "your", "our", "some"})


def in_sentence(title: str) -> str:
    """A title as it reads inside a sentence: its first word lower-cased when that word is an
    article or a possessive, so "on A free-verse poem" cannot be written.

    Examples
    --------
    >>> in_sentence("A free-verse poem"), in_sentence("Python code (held out)"), in_sentence("Your text")
    ('a free-verse poem', 'Python code (held out)', 'your text')
    """
    first, sep, rest = title.partition(" ")
    return (first.lower() + sep + rest) if first.lower() in _LOWER_IN_SENTENCE else title


def in_prose(kind: str) -> str:
    """A text's short name inside a sentence ("the poem", but "JSON")."""
    name = short_name(kind)
    return f"the {name}" if kind in ("letter", "translation", "poem", "pasted") else name

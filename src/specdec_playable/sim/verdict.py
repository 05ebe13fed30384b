"""The one rule that turns a measured speedup's interval into words.

Every page, table and the CLI that says whether speculating was faster, slower or neither says it
with :func:`speedup_verdict`: a race of the real model (:class:`..lm.race.FairSpeedup`), its
recorded repeats, Episode 3's Monte-Carlo measurement. The interval is judged as it is shown,
to :data:`VERDICT_DIGITS` decimals, so a verdict never disagrees with the interval printed beside
it: an interval that reads "0.97x to 0.98x" is slower, one that reads "0.99x to 1.00x" or
"1.00x to 1.02x" is no measurable difference, whatever digits lie beyond the shown ones.
"""

from __future__ import annotations

import math

from . import validate as _v

#: The verdicts.
FASTER, SLOWER, NO_DIFFERENCE, TOO_FEW = ("faster", "slower", "no measurable difference",
                                          "too few rounds")
VERDICTS = (FASTER, SLOWER, NO_DIFFERENCE, TOO_FEW)
#: Decimals a speedup and its interval are shown with, and judged on (:func:`speedup_verdict`).
VERDICT_DIGITS = 2


def shown(x: float, digits: int = VERDICT_DIGITS) -> float:
    """``x`` as it reads with ``digits`` decimals (the same rounding as ``f"{x:.2f}"``).

    Examples
    --------
    >>> shown(1.004), shown(0.995), shown(0.9951)
    (1.0, 0.99, 1.0)
    """
    return float(f"{float(x):.{digits}f}")


def speedup_verdict(low: float, high: float, *, digits: int = VERDICT_DIGITS) -> str:
    """The verdict on a speedup's interval ``[low, high]``: the one rule every page, table and
    the CLI use.

    The interval is judged as it reads with ``digits`` decimals (:func:`shown`): ``"faster"``
    when its shown low end is above 1, ``"slower"`` when its shown high end is below 1, else
    ``"no measurable difference"`` (the shown interval includes 1, or touches it: an end that
    reads 1.00 is not evidence either way). ``"too few rounds"`` when either end is not a
    finite number (a race of fewer than two rounds has no interval). So "0.97x to 0.99x" reads
    slower, "0.99x to 1.00x" and "1.00x to 1.02x" no measurable difference, whatever digits
    lie beyond the shown ones.

    Parameters
    ----------
    low, high : float
        The interval's ends, ``low <= high`` (a ValueError otherwise).
    digits : int
        Decimals the interval is shown with, in [0, 6].

    Examples
    --------
    >>> speedup_verdict(1.006, 1.2), speedup_verdict(1.004, 1.2), speedup_verdict(0.8, 0.994)
    ('faster', 'no measurable difference', 'slower')
    >>> speedup_verdict(float("nan"), float("nan"))
    'too few rounds'
    """
    digits = _v.integer("digits", digits, 0, 6)
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high)):
        return TOO_FEW
    if low > high:
        raise ValueError(f"an interval's low end must not exceed its high end; got low={low!r}, "
                         f"high={high!r}")
    if shown(low, digits) > 1.0:
        return FASTER
    if shown(high, digits) < 1.0:
        return SLOWER
    return NO_DIFFERENCE


__all__ = ["FASTER", "NO_DIFFERENCE", "SLOWER", "TOO_FEW", "VERDICTS", "VERDICT_DIGITS", "shown",
           "speedup_verdict"]

"""Per-episode state: one ``param.Parameterized`` class per episode, no Panel imports.

Every parameter has bounds, a label and a doc string; derived values are
recomputed from the core when a parameter changes.
"""

from collections.abc import Iterator
from contextlib import contextmanager

import param


@contextmanager
def unlocked(obj: param.Parameterized) -> Iterator[None]:
    """Let ``obj`` set its own constant (derived) parameters inside the block.

    ``param.edit_constant`` flips ``constant`` on the *class's* Parameter objects for
    any parameter the instance has not copied yet, so two sessions building pages on
    different threads (Bokeh initialises documents on a thread pool) can unlock and
    relock each other's parameters and fail with "Constant parameter cannot be
    modified". This unlocks only the instance's own copies.
    """
    names = [n for n, p in type(obj).param.objects("existing").items() if p.constant and n != "name"]
    params = [obj.param[n] for n in names]  # per-instance copies
    for p in params:
        p.constant = False
    try:
        yield
    finally:
        for p in params:
            p.constant = True

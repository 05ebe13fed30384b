"""Per-episode state: one ``param.Parameterized`` class per episode, no Panel imports.

Every parameter has bounds, a label and a doc string; derived values are
recomputed from the core when a parameter changes.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import param

from ..sim.seeds import SEED_MAX

#: The longest draft the simulated pages' k sliders offer (Episodes 3, 5 and 8; the simulation
#: itself allows sim.validate.K_MAX).
K_SLIDER_MAX = 16


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


_filled: set = set()
_fill_lock = threading.Lock()


def fill_choices(cls: type[param.Parameterized], load: Callable[[], dict | list], *names: str) -> None:
    """Give the selector parameters ``names`` of ``cls`` the choices ``load()`` returns, once.

    For choices read from data files: the class is declared with only its default as a
    choice, and the first instance (its ``__init__`` calls this before setting any value)
    reads the rest, so importing the module reads no file. The choices are the same for
    every session, so they are kept on the class.
    """
    key = (cls, names)
    if key in _filled:
        return
    with _fill_lock:
        if key not in _filled:
            objects = load()
            for name in names:
                cls.param[name].objects = objects
            _filled.add(key)


def seed_param(default: int, *, label: str = "Seed", doc: str) -> param.Integer:
    """A seed the page shows and a visitor can type back in: an integer in [0, SEED_MAX].

    The doc (the page's help for the control) ends with the range a seed may take.
    """
    return param.Integer(default=default, bounds=(0, SEED_MAX), label=label,
                         doc=f"{doc} A whole number from 0 to {SEED_MAX:,}.")

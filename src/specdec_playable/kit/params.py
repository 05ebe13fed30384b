"""What the episodes' states share: the controls of the series' symbols, declared once, and the
helpers of a ``param`` state (no Panel).

The controls. Each symbol (the acceptance rate q, the draft length k, the draft cost c, the time of
one big-model pass) has one :class:`Symbol`: its label, its bounds, its default and what it means.
A page declares its control with :func:`control`; it may narrow the bounds or move the default,
inside the symbol's bounds, and then says why (``why=``, a sentence the tests require). So the
default draft length is :data:`sim.validate.K_DEFAULT`, here, and only a page that says why opens
elsewhere.
"""

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import param

from ..sim.seeds import SEED_MAX
from ..sim.validate import K_DEFAULT

#: The longest draft the simulated pages' k sliders offer (the simulation itself allows
#: sim.validate.K_MAX).
K_SLIDER_MAX = 16


@dataclass(frozen=True)
class Symbol:
    """One symbol of the series as a control: its name, label, bounds, default, slider step and
    meaning (the control's help)."""

    name: str
    label: str
    bounds: tuple[float, float]
    default: float
    step: float | None
    doc: str

    @property
    def integer(self) -> bool:
        return isinstance(self.default, int)


Q = Symbol("q", "Draft quality q", (0.0, 1.0), 0.8, 0.01,
           "The acceptance rate: the share of drafted tokens the big model accepts (0: never, 1: always).")
K = Symbol("k", "Draft length k", (1, K_SLIDER_MAX), K_DEFAULT, None,
           "How many tokens the draft proposes each round before the big model checks them "
           "(a count of tokens).")
C = Symbol("c", "Draft cost c", (0.0, 1.0), 0.10, 0.01,
           "Time of one draft step, in big-model passes: 0.10 means a tenth of a pass.")
PASS_MS = Symbol("big_pass_ms", "One big-model pass (ms)", (100, 2000), 600, 50,
                 "Simulated time of one forward pass of the big model, in milliseconds (ms).")
SYMBOLS = (Q, K, C, PASS_MS)


def control(symbol: Symbol, *, default=None, bounds=None, step=None, label=None, doc=None,
            why: str = "", **kwargs) -> param.Parameter:
    """The ``param`` control of ``symbol`` for one page: the symbol's label, bounds, default and
    meaning, unless the page changes them. Narrower bounds or another default must lie inside the
    symbol's bounds and come with ``why``, the page's reason (kept on the control as ``why``)."""
    lo, hi = bounds if bounds is not None else symbol.bounds
    value = symbol.default if default is None else default
    moved = (lo, hi) != tuple(symbol.bounds) or value != symbol.default
    if not symbol.bounds[0] <= lo <= value <= hi <= symbol.bounds[1]:
        raise ValueError(f"{symbol.name}: bounds ({lo}, {hi}) and default {value} must lie inside "
                         f"{symbol.bounds}")
    if moved and not why:
        raise ValueError(f"{symbol.name}: a page that moves the bounds or the default says why")
    cls = param.Integer if symbol.integer else param.Number
    step = step if step is not None else symbol.step
    extra = {} if step is None else {"step": step}
    out = cls(default=value, bounds=(lo, hi), label=label or symbol.label, doc=doc or symbol.doc,
              **extra, **kwargs)
    _DECLARED[id(out)] = (symbol, why)
    return out


#: Every control :func:`control` made (the Parameter's id -> its symbol and the page's reason, if
#: it moved the bounds or the default): the tests read it to hold each page to the rule.
_DECLARED: dict[int, tuple[Symbol, str]] = {}


def declared(parameter: param.Parameter) -> tuple[Symbol, str] | None:
    """The symbol ``parameter`` was declared from, and the page's reason for moving it; None for a
    control not made by :func:`control`."""
    return _DECLARED.get(id(parameter))


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

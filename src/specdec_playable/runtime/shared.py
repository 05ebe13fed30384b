"""Results computed once per process and shared, read-only, by every session.

A class that opens a page asks the server for the same work sixty times: the same race
at the default seed, the same break-even table at the default cost. :func:`shared`
turns a pure function of plain values into one whose result is computed once per
process for each distinct set of arguments, frozen, kept in a bounded table (least
recently used out first) and handed to every session that asks for it.

The rules for a shared function:

- **Pure.** The result depends on the arguments alone: pass a seed, never a
  ``numpy.random.Generator`` (whose state changes), nor anything read from a session.
- **Keyed by its inputs.** Arguments are bound to the signature with its defaults, so
  ``f(1)``, ``f(x=1)`` and ``f(1, y=<default>)`` are one key. They must be hashable:
  numbers, strings, tuples of them, frozen dataclasses. ``True`` and ``1`` (or ``1``
  and ``1.0``) are told apart by their type.
- **Immutable results.** ``None``, numbers, strings, bytes, numpy scalars, numpy arrays
  (made read-only here, so a session that tries to write one gets a ``ValueError``),
  and tuples, frozensets and frozen dataclasses of these. Anything else (a list, a
  dict, a mutable object) raises ``TypeError`` on the first call, before it is shared.
- **Bounded.** ``maxsize`` entries at most; it bounds memory whatever visitors ask for.

Sessions are built on several threads at once (Bokeh initialises documents on a thread
pool): callers asking for a key that is being computed wait for that computation instead
of repeating it.

:meth:`SharedFunction.prime` records arguments to compute before the first visitor
arrives (a page's defaults); :func:`warm` computes every primed entry, and the server
calls it once at start-up, so the first students of the day wait no longer than the
last. A notebook or a test needs no warming: the first call computes.

Examples
--------
>>> import numpy as np
>>> @shared(maxsize=4)
... def squares(n: int) -> np.ndarray:
...     return np.arange(n) ** 2
>>> a = squares(4)
>>> a is squares(n=4), a.flags.writeable
(True, False)
>>> squares.info().hits, squares.info().misses, squares.info().size
(1, 1, 1)
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

_ATOMS = (type(None), bool, int, float, complex, str, bytes, np.generic)
_REGISTRY: list[SharedFunction] = []
_REGISTRY_LOCK = threading.Lock()


def freeze(value: Any, *, _path: str = "result") -> Any:
    """``value`` with every numpy array in it made read-only; ``TypeError`` if any part is mutable.

    Arrays are frozen in place (the result is fresh and owned by the cache). A view is
    copied first if its base could still be written through.

    Examples
    --------
    >>> freeze((1, "a", np.zeros(2)))[2].flags.writeable
    False
    >>> freeze([1, 2])
    Traceback (most recent call last):
    ...
    TypeError: result is a list, which sessions could change; return a tuple, a frozen dataclass or a read-only array
    """
    if isinstance(value, _ATOMS):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"{_path} is an object array, whose items sessions could change")
        base = value.base
        if isinstance(base, np.ndarray) and base.flags.writeable:
            value = value.copy()
        value.setflags(write=False)
        return value
    if isinstance(value, (tuple, frozenset)):
        items = [freeze(item, _path=f"{_path}[{i}]") for i, item in enumerate(value)]
        if all(a is b for a, b in zip(items, value)):
            return value
        # An array view was copied: rebuild the container around the copies.
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if not value.__dataclass_params__.frozen:
            raise TypeError(f"{_path} is a {type(value).__name__}, a dataclass that is not frozen")
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            frozen = freeze(item, _path=f"{_path}.{f.name}")
            if frozen is not item:
                object.__setattr__(value, f.name, frozen)
        return value
    raise TypeError(f"{_path} is a {type(value).__name__}, which sessions could change; return a "
                    "tuple, a frozen dataclass or a read-only array")


class CacheInfo(NamedTuple):
    """What a shared function holds: its name, hits, misses, entries now and the bound."""

    name: str
    hits: int
    misses: int
    size: int
    maxsize: int


class SharedFunction:
    """A pure function whose frozen results are shared by every caller in the process."""

    def __init__(self, fn: Callable, maxsize: int):
        if not isinstance(maxsize, int) or isinstance(maxsize, bool) or maxsize < 1:
            raise ValueError(f"maxsize must be a positive integer; got {maxsize!r}")
        self.fn, self.maxsize = fn, maxsize
        self._signature = inspect.signature(fn)
        self._lock = threading.Lock()
        self._results: OrderedDict = OrderedDict()
        self._pending: dict[tuple, threading.Event] = {}
        self._primes: list[tuple[tuple, dict]] = []
        self._hits = self._misses = 0
        functools.update_wrapper(self, fn)

    def key(self, *args, **kwargs) -> tuple:
        """The cache key of a call: each argument's name, type and value, defaults filled in."""
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        key = tuple((name, type(v), v) for name, v in bound.arguments.items())
        hash(key)  # TypeError now for an unhashable argument
        return key

    def __call__(self, *args, **kwargs):
        key = self.key(*args, **kwargs)
        while True:
            with self._lock:
                if key in self._results:
                    self._hits += 1
                    self._results.move_to_end(key)
                    return self._results[key]
                waiting = self._pending.get(key)
                if waiting is None:
                    done = self._pending[key] = threading.Event()
                    break
            waiting.wait()  # another thread computes this key; then look again
        try:
            result = freeze(self.fn(*args, **kwargs), _path=f"{self.__name__}()")
            with self._lock:
                self._misses += 1
                self._results[key] = result
                while len(self._results) > self.maxsize:
                    self._results.popitem(last=False)
            return result
        finally:
            with self._lock:
                del self._pending[key]
            done.set()

    def prime(self, *args, **kwargs) -> None:
        """Compute this call in :func:`warm`, before the first visitor asks for it."""
        self.key(*args, **kwargs)  # a bad warm-up call fails where it is written
        self._primes.append((args, kwargs))

    def info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self.__name__, self._hits, self._misses, len(self._results),
                             self.maxsize)

    def clear(self) -> None:
        """Forget every result (tests; the results themselves stay valid where they are held)."""
        with self._lock:
            self._results.clear()
            self._hits = self._misses = 0


def shared(*, maxsize: int) -> Callable[[Callable], SharedFunction]:
    """Decorator: share a pure function's frozen results across sessions (see the module doc)."""
    def wrap(fn: Callable) -> SharedFunction:
        sf = SharedFunction(fn, maxsize)
        with _REGISTRY_LOCK:
            _REGISTRY.append(sf)
        return sf
    return wrap


def registry() -> tuple[SharedFunction, ...]:
    """Every shared function defined so far (in the modules imported so far)."""
    with _REGISTRY_LOCK:
        return tuple(_REGISTRY)


def warm() -> int:
    """Compute every primed call of every shared function; returns how many were primed."""
    n = 0
    for sf in registry():
        for args, kwargs in sf._primes:
            sf(*args, **kwargs)
            n += 1
    return n

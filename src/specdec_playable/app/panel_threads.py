"""Panel's read-only editing, made safe for pages built on several threads at once.

Bokeh (3.10 on) builds each new session's document on a worker thread, and runs document
callbacks there too, so two visitors' pages can be built at the same moment. Panel sets a
widget's read-only and constant parameters inside ``panel.util.edit_readonly``, which lifts both
flags on the Parameter objects ``param.objects("existing")`` returns and puts back what it saw on
the way out. For every parameter the instance has not copied yet those are the *class's*
Parameter objects, shared by every instance in the process. Two blocks on two threads interleave:
the second saves the flags the first has lifted, the first puts them back while the second is
still setting, and the second fails, e.g. ``Read-only parameter 'hostname' cannot be modified``
from ``Location.from_request`` (with four pages loading at a time on the 2-core machine, each
episode's hundred loads in the bad-link test met it at least once); when the second block ends
it "restores" the lifted flags, so the class stays unlocked for good.

:func:`install` puts a counted version in Panel's place: the first block to lift a Parameter saves
its flags, later blocks only count, and the flags come back when the last block holding them
ends. Nothing waits while a block runs (the lock is held only while counting), and a block on one
thread can no longer relock a Parameter another thread is setting. The project's own states do
the same job with per-instance copies (``state.unlocked``); Panel's widgets are not ours to change,
so their helper is replaced where Panel's modules look it up.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import param
import panel.util
import panel.util.parameters

#: Panel's own helper, as imported before :func:`install` replaced it.
ORIGINAL = panel.util.parameters.edit_readonly

_lock = threading.Lock()
#: id(Parameter) -> [the Parameter, its readonly flag, its constant flag, blocks holding it lifted]
_lifted: dict[int, list] = {}


def _lift(params: list[param.Parameter]) -> None:
    with _lock:
        for p in params:
            held = _lifted.get(id(p))
            if held is None:
                _lifted[id(p)] = [p, p.readonly, p.constant, 1]
                p.readonly = False
                p.constant = False
            else:
                held[3] += 1


def _drop(params: list[param.Parameter]) -> None:
    with _lock:
        for p in params:
            held = _lifted[id(p)]
            held[3] -= 1
            if held[3] == 0:
                p.readonly, p.constant = held[1], held[2]
                del _lifted[id(p)]


@contextmanager
def edit_readonly(parameterized: param.Parameterized) -> Iterator[None]:
    """Let the block set ``parameterized``'s read-only and constant parameters, as Panel's helper
    does, without relocking them under another thread's block (see the module's docstring)."""
    params = list(parameterized.param.objects("existing").values())
    _lift(params)
    try:
        yield
    finally:
        _drop(params)


def install() -> int:
    """Put :func:`edit_readonly` wherever Panel's modules (loaded now, or later through
    ``panel.util``) look up Panel's own; returns how many modules now see it. Idempotent."""
    for module in (panel.util.parameters, panel.util):
        module.edit_readonly = edit_readonly
    n = 0
    for name, module in list(sys.modules.items()):
        if name != "panel" and not name.startswith("panel."):
            continue
        found = vars(module).get("edit_readonly")
        if found is ORIGINAL:
            module.edit_readonly = edit_readonly
        if found is ORIGINAL or found is edit_readonly:
            n += 1
    return n

"""app.panel_threads: Panel's read-only editing, safe when two sessions' pages are built at once.

Bokeh builds each session's page on a worker thread; two page builds interleave their
``edit_readonly`` blocks. The interleaving that failed the server (the first block ends while the
second is still setting) is replayed here on one thread, step by step, so the test is
deterministic; a threaded test then builds Panel locations from many threads at once.
"""

from __future__ import annotations

import sys
import threading

import panel as pn
import pytest
from panel.io.location import Location

from specdec_playable.app import panel_threads

FLAGS = ("readonly", "constant")


def _class_flags() -> dict[str, tuple[bool, bool]]:
    return {n: (p.readonly, p.constant) for n, p in Location.param.objects(instance=False).items()}


def _interleave(edit) -> None:
    """Two sessions' blocks, interleaved as two threads did: a enters, b enters, a leaves,
    b sets a read-only parameter, b leaves."""
    a, b = Location(), Location()
    block_a, block_b = edit(a), edit(b)
    block_a.__enter__()
    block_b.__enter__()
    block_a.__exit__(None, None, None)
    try:
        b.param.update(hostname="example.org", port="8080")
    finally:
        block_b.__exit__(None, None, None)
    assert (b.hostname, b.port) == ("example.org", "8080")


def test_interleaved_blocks_set_and_leave_the_class_locked():
    before = _class_flags()
    assert before["hostname"][0]  # what the test relies on: a read-only parameter
    _interleave(panel_threads.edit_readonly)
    assert _class_flags() == before
    with pytest.raises(TypeError, match="Read-only"):
        Location().param.update(hostname="example.org")  # outside any block: still refused


def test_panels_own_helper_fails_the_same_interleaving():
    """Why the replacement exists. If a Panel release makes this pass, install() can go."""
    before = _class_flags()
    try:
        try:
            _interleave(panel_threads.ORIGINAL)
        except TypeError as exc:
            assert "Read-only parameter 'hostname'" in str(exc)
        else:
            pytest.skip("this Panel's edit_readonly no longer fails the interleaving")
        # and the class was left unlocked: the second block "restored" the lifted flags
        assert _class_flags()["hostname"] == (False, False) != before["hostname"]
    finally:
        for name, (readonly, constant) in before.items():
            Location.param[name].readonly, Location.param[name].constant = readonly, constant


def test_nested_blocks_on_one_object_keep_it_unlocked_until_the_outer_ends():
    loc = Location()
    with panel_threads.edit_readonly(loc):
        with panel_threads.edit_readonly(loc):
            loc.hostname = "a.example"
        loc.hostname = "b.example"  # the inner block's end must not relock it
    assert loc.hostname == "b.example"
    with pytest.raises(TypeError):
        Location().param.update(hostname="c.example")


def test_an_error_in_the_block_still_relocks():
    before = _class_flags()
    with pytest.raises(ValueError, match="boom"):
        with panel_threads.edit_readonly(Location()):
            raise ValueError("boom")
    assert _class_flags() == before
    assert panel_threads._lifted == {}


def test_install_reaches_panels_modules():
    n = panel_threads.install()
    import panel.io.location as location_module
    import panel.widgets.base as widgets_base

    assert location_module.edit_readonly is panel_threads.edit_readonly
    assert widgets_base.edit_readonly is panel_threads.edit_readonly
    assert pn.util.edit_readonly is panel_threads.edit_readonly
    assert n >= 5
    assert panel_threads.install() == n  # idempotent


THREADS, ROUNDS = 8, 150


def test_locations_built_on_many_threads_at_once():
    """Location.from_request's block, from 8 threads at once (150 each, started together, the
    interpreter switching threads every 10 us). Panel's own helper fails this on 3 runs of 3 here
    (2-4 threads refused, the class left unlocked)."""
    panel_threads.install()
    before = _class_flags()
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(i: int) -> None:
        start.wait()
        try:
            for j in range(ROUNDS):
                loc = Location()
                with pn.util.edit_readonly(loc):
                    loc.param.update(hostname=f"h{i}.example", port=str(j))
                assert (loc.hostname, loc.port) == (f"h{i}.example", str(j))
        except BaseException as exc:  # noqa: BLE001 - collected and asserted on
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(switch)
    assert errors == []
    assert _class_flags() == before
    assert panel_threads._lifted == {}

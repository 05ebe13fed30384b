"""How many threads the kernel's products use: the process's setting, a calling thread's own, and
one thread for passes too small to gain from more (:data:`.tuning.PARALLEL_FROM`).

A server's model processes are given one each, like their BLAS (see ``runtime.jobs.blas_env``), and
:func:`use_threads` changes it for the calling thread.
"""

from __future__ import annotations

import os
import threading

from .backend import HAVE_NUMBA, numba
from .tuning import PARALLEL_FROM


def threads() -> int:
    """Threads the kernel uses: the first of ``NUMBA_NUM_THREADS``, ``OMP_NUM_THREADS``,
    ``OPENBLAS_NUM_THREADS`` that is set, else the CPUs this process may run on."""
    for var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        v = os.environ.get(var, "").strip()
        if v.isdigit() and int(v) > 0:
            return int(v)
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


_THREADS = 1
if HAVE_NUMBA:
    _THREADS = max(1, min(threads(), numba.config.NUMBA_NUM_THREADS))
_LOCAL = threading.local()
_PROCESS = [None]  # the process-wide setting (set_process_threads), None: the default


def prepare_threads(n: int | None = None) -> int:
    """Make the calling thread's next products use the threads in force, and return how many:
    this thread's :func:`use_threads`; else one for a pass over fewer than :data:`PARALLEL_FROM`
    positions ``n``, and otherwise the process's :func:`set_process_threads` or :func:`threads`.
    :meth:`.model.Model.forward` calls it before every pass."""
    if not HAVE_NUMBA:
        return 1
    t = getattr(_LOCAL, "threads", None)
    if not t:
        t = 1 if n is not None and n < PARALLEL_FROM else (_PROCESS[0] or _THREADS)
    if getattr(_LOCAL, "set", None) != t:  # numba's setting is per calling thread; asking it costs
        numba.set_num_threads(t)            # tens of microseconds, a draft guess's small products
        _LOCAL.set = t                      # several times, so this thread remembers what it set
    return t



def _pool(n: int | None) -> int | None:
    if n is not None and int(n) < 1:
        raise ValueError(f"threads must be at least 1; got {n}")
    return None if n is None or not HAVE_NUMBA else min(int(n), numba.config.NUMBA_NUM_THREADS)


def use_threads(n: int | None) -> int:
    """Set the threads the calling thread's products use (``None``: back to the process's
    setting); return the number now in force. At most numba's pool size."""
    _LOCAL.threads = _pool(n)
    return prepare_threads()


def own_threads() -> int | None:
    """The calling thread's own setting (:func:`use_threads`), or ``None`` where it follows the
    process's; ``use_threads(own_threads())`` puts back what a caller found."""
    return getattr(_LOCAL, "threads", None)


def set_process_threads(n: int | None) -> int:
    """Set the threads every thread of this process uses from its next pass on, unless it chose
    its own with :func:`use_threads` (``None``: back to :func:`threads`); return the new setting.
    A server's model process sets it from the number of runs sharing the machine
    (``runtime.model_process``). At most numba's pool size."""
    _PROCESS[0] = _pool(n)
    return _PROCESS[0] or _THREADS

"""Whether the compiled kernel is available: numba imported with the settings the kernel needs, or
not at all (absent, or ``SPECDEC_NO_NUMBA=1`` in the environment: every product then runs in
numpy, :mod:`.reference`).

If numba's OpenMP layer is used, idle threads sleep rather than spin (``OMP_WAIT_POLICY=PASSIVE``
unless the environment says otherwise): a spinning pool on a shared 2-core machine takes the cores
from the other process and both slow down.

The compiled code is cached on disk (``cache=True``) in a folder named by :func:`source_stamp`, a
hash of every source the package's compiled functions are built from, under ``NUMBA_CACHE_DIR``
where it is set, else the user's cache folder: numba keys each cached function by its own file
only, and a compiled pass holds the kernel's tiles, generated in other files, so a change to a
tile must not meet code compiled before it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: The sources of the package's compiled code: the kernel, and the modules that compile with it.
SOURCES = (*sorted(Path(__file__).parent.glob("*.py")),
           *(Path(__file__).parents[1] / name for name in ("fused.py", "head.py", "memory.py")))


def source_stamp(paths=SOURCES) -> str:
    """A short hash of the bytes of ``paths`` (missing files count as empty)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(Path(p).name.encode())
        try:
            h.update(Path(p).read_bytes())
        except OSError:
            pass
    return h.hexdigest()[:16]


def user_cache(*parts: str) -> Path:
    """A folder of this package's in the user's cache (``XDG_CACHE_HOME`` or ``~/.cache``) /
    ``specdec_playable`` / ``parts``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(base, "specdec_playable", *parts)


def cache_dir() -> Path:
    """Where the compiled code is cached: ``NUMBA_CACHE_DIR`` (or the user's cache folder) /
    ``specdec-kernel-<stamp>``."""
    base = os.environ.get("NUMBA_CACHE_DIR", "").strip()
    return (Path(base) if base else user_cache("numba")) / f"specdec-kernel-{source_stamp()}"

try:
    if os.environ.get("SPECDEC_NO_NUMBA"):
        raise ImportError("numba disabled by SPECDEC_NO_NUMBA")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # a layer that may be entered from two Python threads at once (numba's workqueue may not)
    os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
    import numba
    numba.config.CACHE_DIR = str(cache_dir())
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised when numba is absent
    numba = None
    HAVE_NUMBA = False

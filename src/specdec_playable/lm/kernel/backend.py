"""Whether the compiled kernel is available: numba imported with the settings the kernel needs, or
not at all (absent, or ``SPECDEC_NO_NUMBA=1`` in the environment: every product then runs in
numpy, :mod:`.reference`).

If numba's OpenMP layer is used, idle threads sleep rather than spin (``OMP_WAIT_POLICY=PASSIVE``
unless the environment says otherwise): a spinning pool on a shared 2-core machine takes the cores
from the other process and both slow down.
"""

from __future__ import annotations

import os

try:
    if os.environ.get("SPECDEC_NO_NUMBA"):
        raise ImportError("numba disabled by SPECDEC_NO_NUMBA")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    # a layer that may be entered from two Python threads at once (numba's workqueue may not)
    os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
    import numba
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised when numba is absent
    numba = None
    HAVE_NUMBA = False

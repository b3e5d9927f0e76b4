"""Emission: assemble generated kernels and launchers into one Python module."""

"""Lowering: Croqtile AST to Triton kernels and torch launchers."""

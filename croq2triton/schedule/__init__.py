"""Schedule rewrites of tile-IR kernels: each changes how a kernel runs, never what it computes,
and states what it must prove about the IR (DESIGN.md)."""

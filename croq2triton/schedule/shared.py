"""Shared memory a tiled contraction takes, estimated from its schedule before compiling: the tuner
prunes points over the device's limit with it (tune/prune.py), and the auto policy takes the deeper
pipeline only where it fits (schedule/policy.py)."""

from __future__ import annotations

from ..tir.contract import Contraction
from .schedule import Schedule

SHARED_LIMIT = 232_448  # bytes of shared memory a block may use on H100 / H200 (227 KB)
_BYTES = {"f8_e4m3": 1, "f8_e5m2": 1, "s8": 1, "u8": 1, "f32": 4, "tf32": 4, "s32": 4, "u32": 4, "i32": 4, "f64": 8}


def _width(elem: str) -> int:
    return _BYTES.get(elem, 2)


def contraction_shared(s: Schedule, c: Contraction) -> int:
    """Shared memory a tiled contraction needs: its pipeline's ring of A and B tiles and, with a TMA
    store, the epilogue's buffer of half an output tile (schedule/gemm.py stores half-width boxes);
    a persistent kernel's ring stays live across the epilogue (the sum), another's is dead by then
    (the larger of the two).  Checked against ``croq2triton compile`` for sm_90a (tutorial v4, auto
    schedule, f16): 128 x 256 x 64, 3 stages, persistent, TMA store: 147,456 + 32,768 (+ 24 B of
    barriers); 128 x 192 x 64, 4 stages, persistent: 163,840 + 24,576; without the TMA store the ring
    alone; v4's own 128 x 192 x 64, 2 stages, not persistent: the ring alone (81,920)."""
    ring = max(1, s.num_stages) * (s.block_m * _width(c.a.elem) + s.block_n * _width(c.b.elem)) * s.block_k
    if not s.tma_store or s.split_k != 1:  # split-K stores its partial sums with masked stores
        return ring
    half = sum(w // 2 if w >= 32 else w for _, w in s.pieces_n)
    epilogue = s.block_m * half * _width(c.out.elem)
    return ring + epilogue if s.persistent else max(ring, epilogue)

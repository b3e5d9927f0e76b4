"""GEMMs whose output tile is written by several stores, each a piece of it (lift/proof.py
``_pieces``, ``_pinned``): consumer warp roles written out one by one (``inthreads.async (p == 1)``,
``(p == 2)``), each with its own accumulator and output buffer and its rows of the block's tile;
one consumer role over two units whose stores are picked per unit (``inthreads (p == 1)`` inside
``inthreads.async (p > 0)``), copied out there or by the block after the roles.  Under ``--schedule auto`` each is proved a contraction (and re-tiled);
pieces that do not tile the output (a consumer writing the other's rows) are not, and run as
written.  Both schedules, in the interpreter against float64 torch on ragged sizes with
NaN-poisoned outputs."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from kernel_util import assert_near_max, gemm_tol, poisoned, randn

from croq2triton.api import load_source, translate_full

PRODUCER = """
      inthreads.async (p == 0 && t == 0) {
        foreach {kb} in [cdiv(K, 32)] {
          stage = kb % 2;
          wait empty[stage];
          tma.copy.async<full[stage]> a.subspan(64, 32).at(bm, kb) => as.subspan(64, 32).at(stage, 0);
          tma.copy.async<full[stage]> b.subspan(32, 32).at(bn, kb) => bs.subspan(32, 32).at(stage, 0);
          trigger full[stage];
        }
      }
"""


def consumer(cond: str, rows: str, body_end: str) -> str:
    return f"""
      inthreads.async ({cond}) {{
        acc = mma.fill.f32 0.0f;
        foreach {{s}} in [2] {{ trigger empty[s]; }}
        foreach {{kb}} in [cdiv(K, 32)] {{
          stage = kb % 2;
          wait full[stage];
          mma.row.row acc, as.subspan(64, 32).at(stage, 0).subspan(32, 32).at({rows}, 0),
                      bs.subspan(32, 32).at(stage, 0);
          trigger empty[stage];
        }}
{body_end}
      }}
"""


def kernel(name: str, roles: str, after: str = "") -> str:
    return f"""
__co__ void {name}(global f16 [M, K] a, global f16 [N, K] b, global f32 [M, N] out) {{
  parallel {{bm, bn}} by [cdiv(M, 64), cdiv(N, 32)] : block {{
    shared event full[2], empty[2];
    shared f16 [2 * 64, 32] as;
    shared f16 [2 * 32, 32] bs;
    shared f32 [32, 32] o1, o2;
    parallel p by 3 : group-4, t by 128 : thread {{
{PRODUCER}{roles}
    }}
{after}
  }}
}}
"""


WRITTEN_OUT = kernel(
    "written_out",
    consumer("p == 1", "0", "        mma.store acc, o1;\n        tma.copy o1 => out.subspan(32, 32).at(bm * 2, bn);")
    + consumer(
        "p == 2", "1", "        mma.store acc, o2;\n        tma.copy o2 => out.subspan(32, 32).at(bm * 2 + 1, bn);"
    ),
)

PICKED = kernel(
    "picked",
    consumer(
        "p > 0",
        "p - 1",
        """        inthreads (p == 1) {
          mma.store acc, o1;
          tma.copy o1 => out.subspan(32, 32).at(bm * 2 + (p - 1), bn);
        }
        inthreads (p == 2) {
          mma.store acc, o2;
          dma.copy o2 => out.subspan(32, 32).at(bm * 2 + (p - 1), bn);
        }""",
    ),
)

# each unit stores into its buffer under inthreads (p == 1) / (p == 2); the block copies both out after
PICKED_LATE = kernel(
    "picked_late",
    consumer(
        "p > 0",
        "p - 1",
        """        inthreads (p == 1) { mma.store acc, o1; }
        inthreads (p == 2) { mma.store acc, o2; }""",
    ),
    """    tma.copy o1 => out.subspan(32, 32).at(bm * 2, bn);
    tma.copy o2 => out.subspan(32, 32).at(bm * 2 + 1, bn);""",
)

# both consumers compute rows 0..31 of the block and store them in the two halves: not the product
OVERLAP = kernel(
    "overlap",
    consumer("p == 1", "0", "        mma.store acc, o1;\n        tma.copy o1 => out.subspan(32, 32).at(bm * 2, bn);")
    + consumer(
        "p == 2", "0", "        mma.store acc, o2;\n        tma.copy o2 => out.subspan(32, 32).at(bm * 2 + 1, bn);"
    ),
)

M, N, K = 77, 90, 150


def _run(src: str, fn: str, schedule: str) -> tuple[torch.Tensor, Any, torch.Tensor, torch.Tensor]:
    out = translate_full(src, filename=f"{fn}.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"pieces_{fn}_{schedule}")
    a, b = randn(M, K, seed=7).half(), randn(N, K, seed=8).half()
    c = poisoned(M, N)
    getattr(mod, fn)(a, b, c)
    return c, out, a, b


@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize(
    ("src", "fn"), [(WRITTEN_OUT, "written_out"), (PICKED, "picked"), (PICKED_LATE, "picked_late")]
)
def test_pieces_of_one_store_are_a_contraction(src: str, fn: str, schedule: str) -> None:
    c, out, a, b = _run(src, fn, schedule)
    assert_near_max(c, a.double() @ b.double().T, gemm_tol(K), f"{fn} under {schedule}")
    if schedule == "auto":
        assert out.contractions[fn], f"{fn}: the pieces were not proved one contraction"


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_pieces_that_do_not_tile_the_output_run_as_written(schedule: str) -> None:
    c, out, a, b = _run(OVERLAP, "overlap", schedule)
    assert not out.contractions["overlap"]
    ref = a.double() @ b.double().T
    # block rows 0..31 of every 64 are the product; rows 32..63 repeat rows 0..31
    expect = ref.clone()
    for m0 in range(0, M, 64):
        rows = range(m0 + 32, min(m0 + 64, M))
        for r in rows:
            expect[r] = ref[r - 32]
    assert_near_max(c, expect, gemm_tol(K), f"overlap under {schedule}")

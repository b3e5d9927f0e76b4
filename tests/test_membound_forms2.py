"""More memory-bound kernels in natural forms (tests/programs/membound_forms2.co, issue 27): several
passes over a thread's row (log-sum-exp, LayerNorm on f16 data, L2 normalisation), a residual add
written out and read back by the RMSNorm after it, warp shuffles inside helper functions, a column
maximum, 2-D broadcasts, the classic CUDA transpose through a padded shared tile and a shared tree
over two rows a block.  Each runs under both schedules in the interpreter against float64 torch on
ragged sizes, outputs poisoned with NaN; what ``--schedule auto`` makes of the row passes is checked
on the generated code."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import check_forms, form_sizes, load_once, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms2.co"
H = torch.float16
F32 = torch.float32


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _rms(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return h * torch.rsqrt((h**2).mean(1, keepdim=True) + 1e-5) * _d(w)


# function -> (inputs of (m, n), output shapes and types of (m, n), reference, tolerance relative to
# the reference's largest element)
Inputs = Callable[[int, int], list[torch.Tensor]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "lse_rows": (
        lambda m, n: [randn(m, n, seed=m + n)],
        lambda m, n: [((m,), F32)],
        lambda x: [torch.logsumexp(_d(x), 1)],
        1e-5,
    ),
    "row_max_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 2 * n)],
        lambda m, n: [((m,), H)],
        lambda x: [_d(x).amax(1)],
        0.0,
    ),
    "add_rmsnorm": (
        lambda m, n: [randn(m, n, seed=m), randn(m, n, seed=n), randn(n, seed=m * n)],
        lambda m, n: [((m, n), F32), ((m, n), F32)],
        lambda x, r, w: [_d(x) + _d(r), _rms(_d(x) + _d(r), w)],
        1e-5,
    ),
    "layernorm_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 3), randn(n, dtype=H, seed=n), randn(n, dtype=H, seed=n + 5)],
        lambda m, n: [((m, n), H)],
        lambda x, g, b: [F.layer_norm(_d(x), (x.shape[1],), _d(g), _d(b), 1e-5)],
        2e-3,
    ),
    "scale_shift_f16": (
        lambda m, n: [
            randn(m, n, dtype=H, seed=m),
            randn(m, seed=n),
            randn(n, dtype=H, seed=m + n),
            randn(n, dtype=H, seed=7),
        ],
        lambda m, n: [((m, n), H)],
        lambda x, mu, w, c: [(_d(x) - _d(mu)[:, None]) * _d(w) + _d(c)],
        2e-3,
    ),
    "transpose32": (
        lambda m, n: [randn(m, n, seed=m * n + 1)],
        lambda m, n: [((n, m), F32)],
        lambda x: [_d(x).t()],
        0.0,
    ),
    "transpose_pad": (
        lambda m, n: [randn(m, n, seed=m * n + 3)],
        lambda m, n: [((n, m), F32)],
        lambda x: [_d(x).t()],
        0.0,
    ),
    "col_max": (
        lambda m, n: [randn(m, n, seed=m + 11)],
        lambda m, n: [((n,), F32)],
        lambda x: [_d(x).amax(0)],
        0.0,
    ),
    "softmax_warp_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 13)],
        lambda m, n: [((m, n), H)],
        lambda x: [torch.softmax(_d(x), 1)],
        2e-3,
    ),
    "l2norm_rows": (
        lambda m, n: [randn(m, n, seed=m + 17)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_d(x) / torch.sqrt((_d(x) ** 2).sum(1, keepdim=True) + 1e-6)],
        1e-5,
    ),
    "row_sums_2rows": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 19)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).sum(1)],
        1e-5,
    ),
}
SIZES = [(5, 77), (37, 300)]


def _module(schedule: str) -> object:
    return load_once(PROGRAM, schedule)


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n, many={})


def test_a_row_written_and_read_back_by_its_lane_folds() -> None:
    """The residual add stores each lane's row and the norm's second pass reads it back at the same
    elements: the lane that wrote an element reads it (lift/hazards.py), so no barrier fences the
    loops and both fold into row tiles under auto (schedule/foldloops.py)."""
    code = translate_full(PROGRAM.read_text(), filename="membound_forms2.co", schedule="auto").source
    body = code.split("def add_rmsnorm_k0(")[1].split("@triton.jit")[0]
    assert "tl.debug_barrier()" not in body
    assert "for j in range" not in body and "tl.sum(" in body
    source = translate_full(PROGRAM.read_text(), filename="membound_forms2.co", schedule="source").source
    as_written = source.split("def add_rmsnorm_k0(")[1].split("@_rt.launcher")[0]
    assert "tl.debug_barrier()" not in as_written


def test_a_tree_over_rows_folds_row_by_row() -> None:
    """Two rows a block with a shared [2, 128] tree, each row of threads its own tree: the final read
    (lane ``(q, ..)`` row ``q``'s element 0) is each row's reduction of the stored [2, 128] tile
    (schedule/treefold.py, rows), although its mask holds a term of the program's row (``t == 0 &&
    r # q < M``) that the proof cannot know.  The partials are read only as those totals, so they are
    kept as totals, each ``[BLOCK_J, 2, 128]`` tile folded over the lanes' axis first (schedule/totals.py;
    the leading axis first crosses the warps).  (Before the rows' trees folded, the block was narrowed to
    one row a program for long rows, lift/narrow.py, and kept the tree as written for short ones.)"""
    code = translate_full(PROGRAM.read_text(), filename="membound_forms2.co", schedule="auto").source
    two_rows = code.split("def row_sums_2rows_k0(")[1].split("@triton.jit")[0]
    assert "part_scratch" not in two_rows and "tl.debug_barrier()" not in two_rows
    assert "tl.reshape" not in two_rows and "part_sum_rows = acc_sum" in two_rows
    assert "axis=2,\n        ),\n        axis=0," in two_rows  # the lanes (axis 2) before the blocks (axis 0)


def test_a_padded_tile_written_and_read_under_bounds_is_a_register_transpose() -> None:
    """The [32, 33] tile (a padded column no access reaches) written under ``r < M && c < N`` and
    read at the transposed element under the same bounds: every element read was written, so the
    read is the stored tile transposed in registers (schedule/forward.py), and the kernel widens."""
    code = translate_full(PROGRAM.read_text(), filename="membound_forms2.co", schedule="auto").source
    body = code.split("def transpose_pad_k0(")[1].split("@triton.jit")[0]
    assert "tile_scratch" not in body and "tl.debug_barrier()" not in body
    assert body.count("tl.trans(x_val)") == 2  # the interior and the edge programs
    source = translate_full(PROGRAM.read_text(), filename="membound_forms2.co", schedule="source").source
    assert "tile_scratch" in source.split("def transpose_pad_k0(")[1].split("@triton.jit")[0]

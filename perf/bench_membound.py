"""Memory-bound kernels written the natural Croqtile way, next to the torch op doing the same work and
to a device-to-device copy of the same bytes (the bandwidth roofline), in both schedules.

    python3 perf/bench_membound.py [--sizes 4096x4096,16384x4096] [--rounds 3] [--only softmax,...]
                                   [--no-inductor] [--json OUT.json] [--md OUT.md]
                                   [--points 'split8:loop_split=8,fold=32;whole:fold=-1']

``--points`` times tuning points of each case's kernel (TileSchedule fields) beside the schedules,
to sweep a policy's choice (the loop splits of column sums, the fold block) in one run.

Each kernel is checked against float64 torch on random data first (outputs poisoned with NaN),
then timed in rounds with ``triton.testing.do_bench`` (L2 flushed before every repetition, 25 ms
warm-up, 200 ms of repetitions, median): the kernel right after its torch op and right after a
device copy of the bytes the kernel must move (inputs read once, outputs written once).  The table
gives the median over rounds of each time and of each paired ratio: torch time / kernel time, and
the roofline fraction copy time / kernel time.  The torch op is timed eager and compiled by
``torch.compile`` (Inductor's generated Triton kernel, ``dynamic=False``, compiled before the rounds);
"vs best torch" is the ratio to the faster of the two in the same round (issue 27's bar).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "perf"))

from bench import median_of_rounds, run_info, smi  # noqa: E402


@dataclass(frozen=True)
class Case:
    """``func`` of ``program``: ``make(m, n)`` gives (inputs, outputs) tensors in the launcher's
    order, ``ref(*inputs)`` the float64 result(s) in the outputs' order, ``op(*inputs)`` the torch op."""

    label: str
    program: str
    func: str
    make: Callable[[int, int], tuple[list[Any], list[Any]]]
    ref: Callable[..., list[Any]]
    op: Callable[..., Any]
    tol: float
    zero_outputs: bool = False  # the kernel adds into its outputs (atomics): zeroed before every call
    name: str = ""  # what --only calls it, where a function runs in more than one case (else ``func``)


def seg_ref(vals: Any, ptr: Any) -> list[Any]:
    """Sums of the CSR segments ``vals[ptr[r] .. ptr[r + 1])`` in float64."""
    import torch

    p = ptr.long()
    c = torch.cat([torch.zeros(1, dtype=torch.float64, device=vals.device), vals.double().cumsum(0)])
    return [c[p[1:]] - c[p[:-1]]]


def seg_op(vals: Any, ptr: Any) -> Any:
    """torch's op for the same sums."""
    import torch

    return torch.segment_reduce(vals, "sum", offsets=ptr.long())


def _cases() -> list[Case]:
    import torch
    import torch.nn.functional as F

    def rand(*shape: int, dtype: Any = torch.float32) -> Any:
        return torch.randn(*shape, device="cuda").to(dtype)

    def nan(*shape: int, dtype: Any = torch.float32) -> Any:
        return torch.full(shape, float("nan"), device="cuda", dtype=dtype)

    rows = "tests/programs/rows.co"
    forms = "tests/programs/membound_forms.co"
    return [
        Case(
            "softmax f32 (thread per row)",
            rows,
            "softmax",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-5,
        ),
        Case(
            "rmsnorm f16 (thread per row)",
            rows,
            "rmsnorm",
            lambda m, n: (
                [rand(m, n, dtype=torch.float16), rand(n, dtype=torch.float16)],
                [nan(m, n, dtype=torch.float16)],
            ),
            lambda x, w: [x.double() * torch.rsqrt((x.double() ** 2).mean(1, keepdim=True) + 1e-6) * w.double()],
            lambda x, w: F.rms_norm(x, (x.shape[1],), w, 1e-6),
            1e-2,
        ),
        Case(
            "row sums f32 (thread per row)",
            rows,
            "row_sums",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "layernorm f16 (thread per row)",
            rows,
            "layernorm",
            lambda m, n: (
                [rand(m, n, dtype=torch.float16), rand(n, dtype=torch.float16), rand(n, dtype=torch.float16)],
                [nan(m, n, dtype=torch.float16)],
            ),
            lambda x, w, b: [F.layer_norm(x.double(), (x.shape[1],), w.double(), b.double(), 1e-5)],
            lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, 1e-5),
            1e-2,
        ),
        Case(
            "column sums f32 (atomic partial sums)",
            "tests/programs/cols.co",
            "col_sums",
            lambda m, n: ([rand(m, n)], [torch.zeros(n, device="cuda")]),
            lambda x: [x.double().sum(0)],
            lambda x: x.sum(0),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "transpose f32 (staged through shared)",
            "tests/programs/transpose.co",
            "transpose",
            lambda m, n: ([rand(m, n)], [nan(n, m)]),
            lambda x: [x.double().T],
            lambda x: x.t().contiguous(),
            0.0,
        ),
        # the same kernels on the other element type (f16 data with f32 math; f32 data)
        Case(
            "softmax f16 (thread per row)",
            rows,
            "softmax_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(m, n, dtype=torch.float16)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-2,
        ),
        Case(
            "rmsnorm f32 (thread per row)",
            rows,
            "rmsnorm_f32",
            lambda m, n: ([rand(m, n), rand(n)], [nan(m, n)]),
            lambda x, w: [x.double() * torch.rsqrt((x.double() ** 2).mean(1, keepdim=True) + 1e-6) * w.double()],
            lambda x, w: F.rms_norm(x, (x.shape[1],), w, 1e-6),
            1e-5,
        ),
        Case(
            "row sums f16 (thread per row)",
            rows,
            "row_sums_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1, dtype=torch.float32),
            1e-4,
        ),
        Case(
            "layernorm f32 (thread per row)",
            rows,
            "layernorm_f32",
            lambda m, n: ([rand(m, n), rand(n), rand(n)], [nan(m, n)]),
            lambda x, w, b: [F.layer_norm(x.double(), (x.shape[1],), w.double(), b.double(), 1e-5)],
            lambda x, w, b: F.layer_norm(x, (x.shape[1],), w, b, 1e-5),
            1e-5,
        ),
        Case(
            "column sums f16 (atomic partial sums)",
            "tests/programs/cols.co",
            "col_sums_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [torch.zeros(n, device="cuda")]),
            lambda x: [x.double().sum(0)],
            lambda x: x.sum(0, dtype=torch.float32),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "transpose f16 (staged through shared)",
            "tests/programs/transpose.co",
            "transpose_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(n, m, dtype=torch.float16)]),
            lambda x: [x.double().T],
            lambda x: x.t().contiguous(),
            0.0,
        ),
        # other natural forms (tests/programs/membound_forms.co, issue 27)
        Case(
            "row sums f32 (block per row, shared partials)",
            forms,
            "row_sums_block",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "softmax f16 (block per row, shared partials)",
            forms,
            "softmax_block",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(m, n, dtype=torch.float16)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-2,
        ),
        Case(
            "rmsnorm f32 (4 rows a block, shared partials)",
            forms,
            "rmsnorm_rows4",
            lambda m, n: ([rand(m, n), rand(n)], [nan(m, n)]),
            lambda x, w: [x.double() * torch.rsqrt((x.double() ** 2).mean(1, keepdim=True) + 1e-6) * w.double()],
            lambda x, w: F.rms_norm(x, (x.shape[1],), w, 1e-6),
            1e-5,
        ),
        Case(
            "column sums f32 (thread per column, no atomics)",
            forms,
            "col_sums_walk",
            lambda m, n: ([rand(m, n)], [nan(n)]),
            lambda x: [x.double().sum(0)],
            lambda x: x.sum(0),
            1e-4,
        ),
        Case(
            "column means f16 (thread per column, no atomics)",
            forms,
            "col_means_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(n, dtype=torch.float16)]),
            lambda x: [x.double().mean(0)],
            lambda x: x.mean(0),
            1e-2,
        ),
        Case(
            "row sums f32 (thread per element, atomics)",
            forms,
            "row_sums_atomic",
            lambda m, n: ([rand(m, n)], [torch.zeros(m, device="cuda")]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "row sums f16 (thread per element, atomics)",
            forms,
            "row_sums_atomic_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [torch.zeros(m, device="cuda")]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1, dtype=torch.float32),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "silu(a) * b f16 (thread per element, 1-D)",
            forms,
            "silu_mul_f16",
            lambda m, n: (
                [rand(m * n, dtype=torch.float16), rand(m * n, dtype=torch.float16)],
                [nan(m * n, dtype=torch.float16)],
            ),
            lambda a, b: [F.silu(a.double()) * b.double()],
            lambda a, b: F.silu(a) * b,
            1e-2,
        ),
        Case(
            "silu(a) * b f32 (thread per element, 1-D)",
            forms,
            "silu_mul_f32",
            lambda m, n: ([rand(m * n), rand(m * n)], [nan(m * n)]),
            lambda a, b: [F.silu(a.double()) * b.double()],
            lambda a, b: F.silu(a) * b,
            1e-5,
        ),
        Case(
            "gelu f32 (thread per element, 2-D)",
            forms,
            "gelu_2d",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [F.gelu(x.double(), approximate="tanh")],
            lambda x: F.gelu(x, approximate="tanh"),
            1e-5,
        ),
        Case(
            "gelu f16 (thread per element, 2-D, tanh by exp)",
            forms,
            "gelu_2d_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(m, n, dtype=torch.float16)]),
            lambda x: [F.gelu(x.double(), approximate="tanh")],
            lambda x: F.gelu(x, approximate="tanh"),
            1e-2,
        ),
        Case(
            "row sums f32 (rows staged through shared)",
            forms,
            "row_sums_staged",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "row mean of squares f16 (rows staged through shared)",
            forms,
            "row_meansq_staged_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(m)]),
            lambda x: [(x.double() ** 2).mean(1)],
            lambda x: x.float().square().mean(1),
            1e-4,
        ),
        Case(
            "softmax f32 (thread per row, online max and rescaled sum)",
            "tests/programs/online_softmax.co",
            "softmax_online",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-5,
        ),
        Case(
            "row sums f32 (warp per row, shuffles)",
            forms,
            "row_sums_warp",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "rmsnorm f16 (warp per row, shuffles)",
            forms,
            "rmsnorm_warp_f16",
            lambda m, n: (
                [rand(m, n, dtype=torch.float16), rand(n, dtype=torch.float16)],
                [nan(m, n, dtype=torch.float16)],
            ),
            lambda x, w: [x.double() * torch.rsqrt((x.double() ** 2).mean(1, keepdim=True) + 1e-6) * w.double()],
            lambda x, w: F.rms_norm(x, (x.shape[1],), w, 1e-6),
            1e-2,
        ),
        Case(
            "row sums f32 (block per row, tree in shared)",
            forms,
            "row_sums_tree",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "row mean of squares f16 (block per row, tree loop)",
            forms,
            "row_meansq_tree_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(m)]),
            lambda x: [(x.double() ** 2).mean(1)],
            lambda x: x.float().square().mean(1),
            1e-4,
        ),
        Case(
            "rmsnorm f16 (block per row, tree while loop)",
            forms,
            "rmsnorm_tree_f16",
            lambda m, n: (
                [rand(m, n, dtype=torch.float16), rand(n, dtype=torch.float16)],
                [nan(m, n, dtype=torch.float16)],
            ),
            lambda x, w: [x.double() * torch.rsqrt((x.double() ** 2).mean(1, keepdim=True) + 1e-6) * w.double()],
            lambda x, w: F.rms_norm(x, (x.shape[1],), w, 1e-6),
            1e-2,
        ),
        *_cases2(rand, nan),
        *_cases3(rand, nan),
        *_cases4(rand, nan),
        *_cases5(rand, nan),
        *_cases6(rand, nan),
        *_cases7(rand, nan),
        *_cases8(rand, nan),
        *_cases9(rand, nan),
        *_cases10(rand, nan),
        *_cases11(rand, nan),
        *_cases12(rand, nan),
        *_cases13(rand, nan),
        *_cases14(rand, nan),
        *_cases15(rand, nan),
        *_cases16(rand, nan),
    ]


def _cases16(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The irregular forms of tests/programs/irregular_forms4.co (tests/test_irregular_forms4.py), with the
    torch ops of the same work; ``m x n`` as the tensor each reads (or writes, where it reads less)."""
    import torch
    import torch.nn.functional as F

    forms4 = "tests/programs/irregular_forms4.co"
    h = torch.float16

    def ints(hi: int, *shape: int) -> Any:
        return torch.randint(0, hi, shape, device="cuda", dtype=torch.int32)

    def zeros(*shape: int) -> Any:
        return torch.zeros(shape, device="cuda")

    def cols(x: Any, idx: Any) -> Any:  # x [B, M, N], idx [B, K]: x[b, :, idx[b]]
        return torch.gather(x, 2, idx.long()[:, None, :].expand(x.shape[0], x.shape[1], idx.shape[1]))

    def lerp(lo: Any, w: Any, x: Any) -> Any:
        return torch.lerp(x[:, lo.long()], x[:, lo.long() + 1], w[None, :, None])

    def masked_make(m: int, n: int) -> tuple[list[Any], list[Any]]:
        mask = torch.randint(0, 2, (m * n,), device="cuda", dtype=torch.uint8)
        pre = (mask.int().cumsum(0) - mask.int()).int()
        return [mask, pre, rand(m * n)], [nan(int(mask.sum()))]

    def im2col(x: Any) -> Any:  # x [C, H, W] -> [C * 9, H * W]
        c, hh, w = x.shape
        return F.unfold(x[:, None], 3, padding=1).reshape(c * 9, hh * w)

    return [
        Case(
            "embedding lookup f16 (a thread per (token, feature) from one flat index, 8192 rows)",
            forms4,
            "embed_flat_f16",
            lambda m, n: ([ints(8192, m), rand(8192, n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda i, t: [F.embedding(i.long(), t.double())],
            lambda i, t: F.embedding(i.long(), t),
            0.0,
        ),
        Case(
            "index_select of rows f32 (a thread a selected row walking it)",
            forms4,
            "index_select_rows",
            lambda m, n: ([ints(m, m), rand(m, n)], [nan(m, n)]),
            lambda i, x: [x.double().index_select(0, i.long())],
            lambda i, x: x.index_select(0, i.long()),
            0.0,
        ),
        Case(
            "index_select of columns f16 (half the columns, a thread an element)",
            forms4,
            "index_select_cols_f16",
            lambda m, n: ([ints(n, n // 2), rand(m, n, dtype=h)], [nan(m, n // 2, dtype=h)]),
            lambda i, x: [x.double().index_select(1, i.long())],
            lambda i, x: x.index_select(1, i.long()),
            0.0,
        ),
        Case(
            "rows gathered by a permutation f32 (a block a row, a block-stride loop)",
            forms4,
            "permute_rows",
            lambda m, n: ([torch.randperm(m, device="cuda").int(), rand(m, n)], [nan(m, n)]),
            lambda p, x: [x.double()[p.long()]],
            lambda p, x: x[p.long()],
            0.0,
        ),
        Case(
            "batched column gather f16 ([8, m / 8, n], half the columns a batch)",
            forms4,
            "batched_gather_cols_f16",
            lambda m, n: ([ints(n, 8, n // 2), rand(8, m // 8, n, dtype=h)], [nan(8, m // 8, n // 2, dtype=h)]),
            lambda i, x: [cols(x.double(), i)],
            lambda i, x: cols(x, i),
            0.0,
        ),
        Case(
            "linear interpolation of two neighbouring rows f32 ([8, m / 8, n])",
            forms4,
            "lerp_rows",
            lambda m, n: (
                [ints(m // 8 - 1, m // 8), torch.rand(m // 8, device="cuda"), rand(8, m // 8, n)],
                [nan(8, m // 8, n)],
            ),
            lambda lo, w, x: [lerp(lo, w.double(), x.double())],
            lerp,
            1e-5,
        ),
        Case(
            "index_add_ with alpha f32 (atomics into 1024 rows, a block a row)",
            forms4,
            "index_add_scaled",
            lambda m, n: ([0.75, ints(1024, m), rand(m, n)], [zeros(1024, n)]),
            lambda a, i, x: [
                torch.zeros(1024, x.shape[1], dtype=torch.float64, device="cuda").index_add_(
                    0, i.long(), x.double(), alpha=a
                )
            ],
            lambda a, i, x: zeros(1024, x.shape[1]).index_add_(0, i.long(), x, alpha=a),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "scatter_add along the rows f32 (atomics into n / 4 columns)",
            forms4,
            "scatter_add_last",
            lambda m, n: ([ints(n // 4, m, n), rand(m, n)], [zeros(m, n // 4)]),
            lambda i, x: [
                torch.zeros(x.shape[0], x.shape[1] // 4, dtype=torch.float64, device="cuda").scatter_add_(
                    1, i.long(), x.double()
                )
            ],
            lambda i, x: zeros(x.shape[0], x.shape[1] // 4).scatter_add_(1, i.long(), x),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "flip of the columns f32 (a thread an element)",
            forms4,
            "flip_cols",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [x.double().flip(1)],
            lambda x: x.flip(1),
            0.0,
        ),
        Case(
            "flip of the columns f16 (staged through a shared tile written by threads)",
            forms4,
            "flip_cols_smem_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x: [x.double().flip(1)],
            lambda x: x.flip(1),
            0.0,
        ),
        Case(
            "flip of the columns f16 (written by the store index, doubled)",
            forms4,
            "flip_store_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x: [x.double().flip(1) * 2],
            lambda x: x.flip(1) * 2,
            0.0,
        ),
        Case(
            "roll of the rows by n / 4 f32 (the store index computed)",
            forms4,
            "roll_store",
            lambda m, n: ([n // 4, rand(m, n)], [nan(m, n)]),
            lambda s, x: [x.double().roll(s, 1)],
            lambda s, x: x.roll(s, 1),
            0.0,
        ),
        Case(
            "strided slice x[:, ::2] f16 (the step at run time)",
            forms4,
            "strided_cols_f16",
            lambda m, n: ([2, rand(m, n, dtype=h)], [nan(m, n // 2, dtype=h)]),
            lambda s, x: [x.double()[:, ::s]],
            lambda s, x: x[:, ::s].contiguous(),
            0.0,
        ),
        Case(
            "transpose f32 (a thread an element from one flat index over x)",
            forms4,
            "transpose_flat",
            lambda m, n: ([rand(m, n)], [nan(n, m)]),
            lambda x: [x.double().T],
            lambda x: x.t().contiguous(),
            0.0,
        ),
        Case(
            "im2col of a 3 x 3 convolution f32 ([8, m / 64, n] -> [72, m * n / 8])",
            forms4,
            "im2col3x3",
            lambda m, n: ([rand(8, m // 64, n)], [nan(72, m * n // 64)]),
            lambda x: [im2col(x.double())],
            im2col,
            0.0,
        ),
        Case(
            "pad f16 (8 rows and 16 columns of zeros around, F.pad)",
            forms4,
            "pad2d_f16",
            lambda m, n: ([3, 5, rand(m, n, dtype=h)], [nan(m + 8, n + 16, dtype=h)]),
            lambda t, le, x: [F.pad(x.double(), (le, 16 - le, t, 8 - t))],
            lambda t, le, x: F.pad(x, (le, 16 - le, t, 8 - t)),
            0.0,
        ),
        Case(
            "concatenation of columns f32 (a block a row, a block-stride loop a part)",
            forms4,
            "concat_cols_loops",
            lambda m, n: ([rand(m, n // 2), rand(m, n // 2 - 16)], [nan(m, n - 16)]),
            lambda a, b: [torch.cat([a.double(), b.double()], 1)],
            lambda a, b: torch.cat([a, b], 1),
            0.0,
        ),
        Case(
            "masked select f32 (compacted by a prefix count, half the elements kept)",
            forms4,
            "masked_select_flat",
            masked_make,
            lambda k, p, x: [torch.masked_select(x.double(), k != 0)],
            lambda k, p, x: torch.masked_select(x, k.view(torch.bool)),
            0.0,
        ),
        Case(
            "one-hot f16 (a thread an element from one flat index, n classes)",
            forms4,
            "one_hot_flat_f16",
            lambda m, n: (
                [torch.cat([ints(n, m - 1), torch.full((1,), n - 1, device="cuda").int()])],
                [nan(m, n, dtype=h)],
            ),
            lambda i: [F.one_hot(i.long()).double()],
            lambda i: F.one_hot(i.long()).half(),
            0.0,
        ),
        Case(
            "repeat_interleave of the rows f32 (each row 4 times)",
            forms4,
            "repeat_rows",
            lambda m, n: ([4, rand(m // 4, n)], [nan(m, n)]),
            lambda r, x: [x.double().repeat_interleave(r, 0)],
            lambda r, x: x.repeat_interleave(r, 0),
            0.0,
        ),
    ]


def _cases14(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The forms of tests/programs/membound_forms9.co, with the torch ops of the same work: a softmax by a
    block per row and shared trees, an RMSNorm by a grid-stride loop over rows, a LayerNorm over a flat
    view, column sums by blocks walking down with an atomic a column, a scaled masked softmax of f16 scores
    by while loops, int8 quantisation through chunks staged in local memory, a residual add + LayerNorm of
    f16 rows by a warp per row (both outputs), bias + GELU four elements a thread, an f16 column maximum by
    a while loop, a transpose through a staged tile, row L2 norms by a warp and shuffles down, an RMSNorm
    from partial sums of squares added by atomics, row sums through a shared atomic accumulator, L2 norms
    of two f16 rows a thread, column means over a flat view."""
    import torch
    import torch.nn.functional as F

    forms9 = "tests/programs/membound_forms9.co"
    h = torch.float16
    cols = [0]  # the row length of the last case made (a flat tensor's reference cannot see it)

    def flat(m: int, n: int, *more: Any) -> tuple[list[Any], list[Any]]:
        cols[0] = n
        return [rand(m * n), *more], [nan(m * n)] if more else [nan(n)]

    def d(*xs: Any) -> list[Any]:
        return [x.double() for x in xs]

    def rms(x: Any, w: Any) -> Any:
        return F.rms_norm(x, (x.shape[1],), w, 1e-6)

    def ln(x: Any, g: Any, b: Any) -> Any:
        return F.layer_norm(x, (x.shape[-1],), g, b, 1e-5)

    def masked(x: Any, mask: Any, scale: float) -> Any:
        return torch.softmax((x.float() * scale).masked_fill(mask.bool(), -10000.0), 1)

    def quant(x: Any) -> list[Any]:
        a = x.float().abs().amax(1, keepdim=True)
        return [torch.round(x.float() * (torch.full_like(a, 127.0) / a)).to(torch.int8), a[:, 0] / 127]

    def add_ln(x: Any, res: Any, g: Any, b: Any) -> list[Any]:
        hh = (x.float() + res.float()).half()
        return [hh, ln(hh, g, b)]

    return [
        Case(
            "softmax f32 (block per row, named columns, shared trees)",
            forms9,
            "softmax_tree256",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-5,
        ),
        Case(
            "RMSNorm f32 (grid-stride loop over rows, 132 blocks of 32 threads)",
            forms9,
            "rmsnorm_gridstride_rows",
            lambda m, n: ([rand(m, n), rand(n), 132], [nan(m, n)]),
            lambda x, w, g: [rms(*d(x, w))],
            lambda x, w, g: rms(x, w),
            1e-5,
        ),
        Case(
            "LayerNorm f32 over a flat view (x.at(r * N + j), thread per row)",
            forms9,
            "layernorm_flat",
            lambda m, n: flat(m, n, rand(n), rand(n)),
            lambda x, g, b: [ln(x.double().view(-1, g.shape[0]), *d(g, b)).reshape(-1)],
            lambda x, g, b: ln(x.view(-1, g.shape[0]), g, b).view(-1),
            1e-5,
        ),
        Case(
            "column sums f32 ([4, 64] threads walking 256 rows, an atomic a column)",
            forms9,
            "col_sums_atomic_strip",
            lambda m, n: ([rand(m, n)], [torch.zeros(n, device="cuda")]),
            lambda x: [x.double().sum(0)],
            lambda x: x.sum(0),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "scaled masked softmax f16 (thread per row, while loops)",
            forms9,
            "scaled_masked_softmax_while",
            lambda m, n: (
                [rand(m, n, dtype=h), torch.randint(0, 2, (m, n), device="cuda", dtype=torch.uint8), 0.75],
                [nan(m, n, dtype=h)],
            ),
            lambda x, mask, s: [masked(x.double(), mask, s)],
            lambda x, mask, s: masked(x, mask, s).half(),
            1e-2,
        ),
        Case(
            "int8 row quantisation f32 (thread per row, chunks staged in local memory)",
            forms9,
            "quant_s8_local_chunks",
            lambda m, n: ([rand(m, n)], [torch.full((m, n), -128, dtype=torch.int8, device="cuda"), nan(m)]),
            lambda x: [t.double() for t in quant(x)],
            quant,
            1e-2,
        ),
        Case(
            "residual add + LayerNorm f16, two outputs (warp per row, butterflies written out)",
            forms9,
            "add_layernorm_warp_f16",
            lambda m, n: (
                [rand(m, n, dtype=h), rand(m, n, dtype=h), rand(n, dtype=h), rand(n, dtype=h)],
                [nan(m, n, dtype=h), nan(m, n, dtype=h)],
            ),
            lambda x, res, g, b: [add_ln(x, res, g, b)[0].double(), ln(add_ln(x, res, g, b)[0].double(), *d(g, b))],
            add_ln,
            1e-2,
        ),
        Case(
            "bias + GELU f16 (four consecutive elements a thread)",
            forms9,
            "bias_gelu_vec4_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x, b: [F.gelu(x.double() + b.double())],
            lambda x, b: F.gelu(x + b),
            1e-2,
        ),
        Case(
            "column max f16 (thread per column, while loop down the rows)",
            forms9,
            "col_max_while_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(n, dtype=h)]),
            lambda x: [x.double().amax(0)],
            lambda x: x.amax(0),
            1e-3,
        ),
        Case(
            "transpose f32 (a 32 x 32 tile staged by dma.copy)",
            forms9,
            "transpose_dma_tile",
            lambda m, n: ([rand(m, n)], [nan(n, m)]),
            lambda x: [x.double().t()],
            lambda x: x.t().contiguous(),
            0.0,
        ),
        Case(
            "row L2 norms f32 (warp per row, while loop, shuffles down)",
            forms9,
            "row_l2_warp_while",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [torch.linalg.vector_norm(x.double(), dim=1)],
            lambda x: torch.linalg.vector_norm(x, dim=1),
            1e-5,
        ),
        Case(
            "RMSNorm f32 (partial sums of squares added by atomics, then a thread per element)",
            forms9,
            "rmsnorm_atomic_partials",
            lambda m, n: ([rand(m, n), rand(n)], [torch.zeros(m, device="cuda"), nan(m, n)]),
            lambda x, w: [(x.double() ** 2).sum(1), rms(*d(x, w))],
            rms,
            1e-5,
            zero_outputs=True,
        ),
        Case(
            "row sums f32 (block per row, a shared accumulator added to by atomics)",
            forms9,
            "row_sums_shared_atomic",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "row L2 norms f16 (two rows a thread in one loop)",
            forms9,
            "l2_two_rows_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m)]),
            lambda x: [torch.linalg.vector_norm(x.double(), dim=1)],
            lambda x: torch.linalg.vector_norm(x, dim=1, dtype=torch.float32),
            1e-4,
        ),
        Case(
            "column means f32 over a flat view (x.at(i * N + c), thread per column)",
            forms9,
            "col_mean_flat",
            flat,
            lambda x: [x.double().view(-1, cols[0]).mean(0)],
            lambda x: x.view(-1, cols[0]).mean(0),
            1e-4,
        ),
    ]


def _cases15(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The forms of tests/programs/membound_forms10.co, with the torch ops of the same work: a softmax by a
    block per row striding with while loops and shared trees halved by a shift, an online softmax of f16
    rows by a warp merging (maximum, sum) pairs by shuffles, a Welford per thread merged by thread 0, an
    argmax of f16 rows by a warp merging (value, index) pairs, running sums along rows (a scan), sums over
    the middle axis of a 3-D tensor with an atomic a column, an RMSNorm over the last axis of a 3-D f16
    tensor by a warp, a mean squared error over a whole tensor in two kernels (per-block partials, then
    their fold), a scale + bias + leaky clamp from f16 to f32, dot products of f16 rows through chunkat
    quarters, count of positives and maximum of s32 rows, MSE and L1 of f16 rows by a [2, 64] block and
    shared trees, the last argmax of s32 columns, a logsumexp down f16 columns, the range of each row by a
    [4, 32] block, the maximum over the middle axis of a 3-D f16 tensor, s8 dequantisation, column sums by
    a [16, 32] block and a shared tree down the columns, row sums by a block of 8 warps in two levels."""
    import torch
    import torch.nn.functional as F

    forms10 = "tests/programs/membound_forms10.co"
    h = torch.float16
    dev = rand(1).device
    parts = 528  # the partials of mse_total_two_pass: four blocks an SM of an H100 / H200 (132 SMs)

    def ints(*shape: int, lo: int, hi: int, dtype: Any = torch.int32) -> Any:
        return torch.randint(lo, hi, shape, device=dev).to(dtype)

    def mse_parts(a: Any, c: Any) -> list[Any]:
        d = ((a.double() - c.double()) ** 2).reshape(-1)
        blocks = (torch.arange(d.numel(), device=dev) // 256) % parts
        return [torch.zeros(parts, dtype=torch.float64, device=dev).index_add_(0, blocks, d), d.mean().reshape(1)]

    def clamp(x: Any, rs: Any, b: Any, lo: float, hi: float) -> Any:
        return F.leaky_relu(x.float() * rs[:, None] + b.float(), 0.01).clamp(lo, hi)

    def mse_l1(a: Any, c: Any) -> list[Any]:
        d = a.float() - c.float()
        return [(d * d).mean(1), d.abs().mean(1)]

    def last_argmax(x: Any) -> Any:
        return x.shape[0] - 1 - x.flip(0).argmax(0)

    def row_range(x: Any) -> Any:
        lo, hi = torch.aminmax(x, dim=1)
        return hi - lo

    return [
        Case(
            "softmax f32 (block per row, while loops by 128, shared trees halved by a shift)",
            forms10,
            "softmax_stride_while",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-5,
        ),
        Case(
            "online softmax f16 (warp per row, lanes' (max, sum) pairs merged by shuffles)",
            forms10,
            "online_softmax_warp_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-2,
        ),
        Case(
            "row mean and variance f32 (block per row, Welford a thread, Chan's merge by thread 0)",
            forms10,
            "welford_block_merge",
            lambda m, n: ([rand(m, n)], [nan(m), nan(m)]),
            lambda x: [x.double().mean(1), x.double().var(1, unbiased=False)],
            lambda x: torch.var_mean(x, 1, correction=0),
            1e-4,
        ),
        Case(
            "row argmax and max f16 (warp per row, (value, index) pairs merged by shuffles)",
            forms10,
            "argmax_warp_pairs_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [ints(m, lo=-1, hi=0), nan(m)]),
            lambda x: [x.double().argmax(1).double(), x.double().amax(1)],
            lambda x: torch.max(x, 1),
            0.0,
        ),
        Case(
            "running row sums f32 (thread per row, a scan)",
            forms10,
            "cumsum_rows",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [x.double().cumsum(1)],
            lambda x: torch.cumsum(x, 1),
            1e-4,
        ),
        Case(
            "sums over the middle axis f32 ([8, M / 8, N], 64 rows a thread, an atomic a column)",
            forms10,
            "mid_axis_sum_atomic",
            lambda m, n: ([rand(8, m // 8, n)], [nan(8, n)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "RMSNorm f16 over the last axis of [8, M / 8, N] (warp per row, while loops)",
            forms10,
            "rmsnorm_3d_warp_f16",
            lambda m, n: ([rand(8, m // 8, n, dtype=h), rand(n, dtype=h)], [nan(8, m // 8, n, dtype=h)]),
            lambda x, w: [F.rms_norm(x.double(), (x.shape[2],), w.double(), 1e-6)],
            lambda x, w: F.rms_norm(x, (x.shape[2],), w, 1e-6),
            1e-2,
        ),
        Case(
            "mean squared error f32 of a whole tensor (528 block partials, then their fold: two kernels)",
            forms10,
            "mse_total_two_pass",
            lambda m, n: ([rand(m, n), rand(m, n)], [nan(parts), nan(1)]),
            mse_parts,
            lambda a, c: F.mse_loss(a, c),
            1e-4,
        ),
        Case(
            "scale a row + bias a column + leaky clamp, f16 to f32 ([8, 32] threads, four rows each)",
            forms10,
            "scale_bias_clamp_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(m), rand(n, dtype=h), -0.5, 1.5], [nan(m, n)]),
            lambda x, rs, b, lo, hi: [clamp(x.double(), rs.double(), b.double(), lo, hi)],
            clamp,
            1e-6,
        ),
        Case(
            "row dot products f16 (block per row, four threads a chunkat quarter each)",
            forms10,
            "dot_chunkat_quarters_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(m, n, dtype=h)], [nan(m)]),
            lambda a, c: [(a.double() * c.double())[:, : a.shape[1] // 4 * 4].sum(1)],
            lambda a, c: (a.float() * c.float()).sum(1),
            1e-4,
        ),
        Case(
            "count of positives and maximum of s32 rows (thread per row, one loop)",
            forms10,
            "count_pos_max_s32",
            lambda m, n: ([ints(m, n, lo=-1000, hi=1000)], [ints(m, lo=-1, hi=0), ints(m, lo=-1, hi=0)]),
            lambda x: [(x > 0).sum(1).double(), x.double().amax(1)],
            lambda x: ((x > 0).sum(1, dtype=torch.int32), x.amax(1)),
            0.0,
        ),
        Case(
            "MSE and L1 of f16 rows ([2, 64] block, two rows, shared trees halved by a shift)",
            forms10,
            "mse_l1_rows_block2_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(m, n, dtype=h)], [nan(m), nan(m)]),
            lambda a, c: [t.double() for t in mse_l1(a.double(), c.double())],
            mse_l1,
            1e-4,
        ),
        Case(
            "last argmax of s32 columns (thread per column, ties to the later row)",
            forms10,
            "col_argmax_last_s32",
            lambda m, n: ([ints(m, n, lo=-1000, hi=1000)], [ints(n, lo=-1, hi=0)]),
            lambda x: [last_argmax(x).double()],
            last_argmax,
            0.0,
        ),
        Case(
            "column logsumexp f16 (thread per column, running max and rescaled sum)",
            forms10,
            "col_lse_online_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(n)]),
            lambda x: [torch.logsumexp(x.double(), 0)],
            lambda x: torch.logsumexp(x.float(), 0),
            1e-4,
        ),
        Case(
            "row range (max - min) f32 ([4, 32] block, four rows, two shared trees)",
            forms10,
            "row_range_block4",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [row_range(x.double())],
            row_range,
            1e-6,
        ),
        Case(
            "maximum over the middle axis f16 ([8, M / 8, N], thread per column, while loop)",
            forms10,
            "mid_axis_max_while_f16",
            lambda m, n: ([rand(8, m // 8, n, dtype=h)], [nan(8, n, dtype=h)]),
            lambda x: [x.double().amax(1)],
            lambda x: x.amax(1),
            0.0,
        ),
        Case(
            "s8 dequantisation to f16 (a scale a row, an offset a column, thread per element)",
            forms10,
            "dequant_s8_rows",
            lambda m, n: ([ints(m, n, lo=-128, hi=128, dtype=torch.int8), rand(m), rand(n)], [nan(m, n, dtype=h)]),
            lambda q, s, z: [(q.double() - z.double()) * s.double()[:, None]],
            lambda q, s, z: ((q.float() - z) * s[:, None]).half(),
            1e-3,
        ),
        Case(
            "column sums f32 ([16, 32] block walking down by while loops, a shared tree down the columns)",
            forms10,
            "col_sums_tree_ty",
            lambda m, n: ([rand(m, n)], [nan(n)]),
            lambda x: [x.double().sum(0)],
            lambda x: x.sum(0),
            1e-4,
        ),
        Case(
            "row sums f32 (block of 8 warps per row: shuffles, the warps' partials in shared, shuffles)",
            forms10,
            "row_sums_two_level",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
    ]


def _cases13(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """Folds whose grid is short for the SMs (issue 27, programs sized for the device): under auto a fold
    of a long axis split across programs where the grid has fewer programs than the SMs (schedule/splitloop.py,
    policy.ROW_SPLIT_BELOW): group statistics a thread per group at B = 8 and B = 128 (the same bytes),
    segment sums of few long segments (split: S from the grid and the SMs, each program's chunk of its
    segment computed in the kernel, policy.SEGMENT_SPLIT_LEAST_BYTES), of 8 (S at its cap, SPLIT_MOST), of
    64 with one holding half the values (the chunks per segment: skewed work), and of many short ones
    (not split), each next to torch's op of the same work."""
    import torch

    forms4 = "tests/programs/membound_forms4.co"
    forms7 = "tests/programs/membound_forms7.co"

    def group_stats(x: Any) -> list[Any]:
        var, mu = torch.var_mean(x.reshape(x.shape[0], 32, -1), 2, correction=0)
        return [mu, torch.rsqrt(var + 1e-5)]

    def groups(b: int) -> Callable[[int, int], tuple[list[Any], list[Any]]]:
        def make(m: int, n: int) -> tuple[list[Any], list[Any]]:
            c = 512
            hw = m * n // (b * c)
            h = 1 << ((hw.bit_length() - 1) // 2)
            return [rand(b, c, h, hw // h), 32], [nan(b, 32), nan(b, 32)]

        return make

    def csr(count: int, total: int) -> list[Any]:
        cuts = torch.sort(torch.randint(0, total, (count - 1,), device="cuda")).values
        ptr = torch.cat(
            [torch.zeros(1, dtype=torch.int64, device="cuda"), cuts, torch.full((1,), total, device="cuda")]
        )
        return [rand(total), ptr.to(torch.int32)]

    def skewed(count: int, total: int) -> list[Any]:
        # the first segment holds half the values, the others share the rest at random cuts
        half = total // 2
        cuts = torch.sort(torch.randint(half, total, (count - 2,), device="cuda")).values
        ptr = torch.cat(
            [
                torch.zeros(1, dtype=torch.int64, device="cuda"),
                torch.full((1,), half, device="cuda"),
                cuts,
                torch.full((1,), total, device="cuda"),
            ]
        )
        return [rand(total), ptr.to(torch.int32)]

    return [
        *(
            Case(
                f"group norm statistics f32, B = {b}, 32 groups of 16 channels (a thread per group; split below a wave)",
                forms7,
                "group_stats4",
                groups(b),
                lambda x, g: group_stats(x.double()),
                lambda x, g: group_stats(x),
                1e-4,
                name=f"group_stats4_b{b}",
            )
            for b in (8, 128)
        ),
        Case(
            "segment sums f32, 64 long segments (a thread per CSR row: a short grid, split under auto)",
            forms4,
            "segment_sums",
            lambda m, n: (csr(64, m * n), [nan(64)]),
            seg_ref,
            seg_op,
            1e-4,
            name="segment_sums_few_long",
        ),
        Case(
            "segment sums f32, 8 long segments (split under auto, 64 programs a segment at most)",
            forms4,
            "segment_sums",
            lambda m, n: (csr(8, m * n), [nan(8)]),
            seg_ref,
            seg_op,
            1e-4,
            name="segment_sums_8_long",
        ),
        Case(
            "segment sums f32, 64 segments, the first half the values (split under auto: skewed chunks)",
            forms4,
            "segment_sums",
            lambda m, n: (skewed(64, m * n), [nan(64)]),
            seg_ref,
            seg_op,
            1e-4,
            name="segment_sums_skewed",
        ),
        Case(
            "segment sums f32, m * n / 256 short segments (a thread per CSR row: a long grid, 8 a program under auto)",
            forms4,
            "segment_sums",
            lambda m, n: (csr(m * n // 256, m * n), [nan(m * n // 256)]),
            seg_ref,
            seg_op,
            1e-4,
            name="segment_sums_many_short",
        ),
    ]


def _cases11(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The irregular forms of tests/programs/irregular_forms3.co whose accesses auto compiles to whole lines
    (tests/test_irregular_forms3.py), and the two of irregular_forms2.co that now do (stepped windows, a
    depthwise convolution over a staged halo), with the torch ops of the same work; ``m x n`` as the
    tensor each reads."""
    import torch

    forms3 = "tests/programs/irregular_forms3.co"
    forms2 = "tests/programs/irregular_forms2.co"

    def ints(hi: int, *shape: int) -> Any:
        return torch.randint(0, hi, shape, device="cuda", dtype=torch.int32)

    def blocks(m: int, n: int) -> Any:  # a quarter of the 32 x 32 blocks
        picked = torch.randperm((m // 32) * (n // 32), device="cuda")[: (m // 32) * (n // 32) // 4]
        return torch.stack([picked // (n // 32), picked % (n // 32)], 1).int()

    def block_copy(blk: Any, x: Any) -> Any:
        out = torch.zeros_like(x)
        v = out.view(x.shape[0] // 32, 32, x.shape[1] // 32, 32)
        xs = x.view(x.shape[0] // 32, 32, x.shape[1] // 32, 32)
        r, c = blk[:, 0].long(), blk[:, 1].long()
        v[r, :, c] = xs[r, :, c] * 2
        return out

    def masked_make(m: int, n: int) -> tuple[list[Any], list[Any]]:
        mask = torch.randint(0, 2, (m,), device="cuda", dtype=torch.uint8)
        pre = (mask.int().cumsum(0) - mask.int()).int()
        return [mask, pre, rand(m, n), rand(m, n)], [nan(m, n)]

    def masked_op(mask: Any, pre: Any, src: Any, x: Any) -> Any:
        return x.masked_scatter((mask != 0)[:, None].expand_as(x), src)

    def dwconv(x: Any, w: Any) -> Any:  # x [C, N], w [C, 5]: zero-padded depthwise convolution
        return torch.nn.functional.conv1d(x[None], w[:, None, :], padding=2, groups=x.shape[0])[0]

    return [
        Case(
            "gather along the first axis f32 (thread per element, torch.gather dim 0)",
            forms3,
            "gather_first",
            lambda m, n: ([rand(m, n), ints(m, m, n)], [nan(m, n)]),
            lambda x, i: [torch.gather(x.double(), 0, i.long())],
            lambda x, i: torch.gather(x, 0, i.long()),
            0.0,
        ),
        Case(
            "columns selected into rows f32 (x.index_select(1, cols).T)",
            forms3,
            "select_cols_t",
            lambda m, n: ([ints(n, n // 4), rand(m, n)], [nan(n // 4, m)]),
            lambda c, x: [x.double().index_select(1, c.long()).T],
            lambda c, x: x.index_select(1, c.long()).T.contiguous(),
            0.0,
        ),
        Case(
            "transpose f16 (a [64, 64] shared tile written by threads)",
            forms3,
            "transpose_smem_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(n, m, dtype=torch.float16)]),
            lambda x: [x.double().T],
            lambda x: x.t().contiguous(),
            0.0,
        ),
        Case(
            "permute [B, N, D] -> [B, D, N] f32 (thread per element)",
            forms3,
            "permute_bdn",
            lambda m, n: ([rand(8, m // 8, n)], [nan(8, n, m // 8)]),
            lambda x: [x.double().permute(0, 2, 1)],
            lambda x: x.permute(0, 2, 1).contiguous(),
            0.0,
        ),
        Case(
            "NCHW -> NHWC f32 (thread per element)",
            forms3,
            "nchw_to_nhwc",
            lambda m, n: ([rand(16, m // 16, 32, n // 32)], [nan(16, 32, n // 32, m // 16)]),
            lambda x: [x.double().permute(0, 2, 3, 1)],
            lambda x: x.permute(0, 2, 3, 1).contiguous(),
            0.0,
        ),
        Case(
            "flip of the rows f16 (thread per element)",
            forms3,
            "flip_rows",
            lambda m, n: ([rand(m, n, dtype=torch.float16)], [nan(m, n, dtype=torch.float16)]),
            lambda x: [x.double().flip(0)],
            lambda x: x.flip(0),
            0.0,
        ),
        Case(
            "block-sparse copy f32 (a quarter of the 32 x 32 blocks, listed)",
            forms3,
            "block_sparse_copy",
            lambda m, n: ([blocks(m, n), rand(m, n)], [torch.zeros(m, n, device="cuda")]),
            lambda b, x: [block_copy(b, x.double())],
            lambda b, x: block_copy(b, x),
            0.0,
            zero_outputs=True,
        ),
        Case(
            "masked scatter of rows f32 (a prefix count, Tensor.masked_scatter)",
            forms3,
            "masked_scatter_rows",
            masked_make,
            lambda k, p, s, x: [masked_op(k, p, s.double(), x.double())],
            masked_op,
            0.0,
        ),
        Case(
            "stepped windows f32 (windows of 32 every 16, staged by a .zfill copy)",
            forms2,
            "windows_step",
            lambda m, n: ([rand(m * n)], [nan((m * n - 32) // 16 + 1, 32)]),
            lambda x: [x.double().unfold(0, 32, 16) * 0.5],
            lambda x: x.unfold(0, 32, 16) * 0.5,
            0.0,
        ),
        Case(
            "depthwise convolution f32 (5 taps over a staged halo)",
            forms2,
            "dwconv_halo",
            lambda m, n: ([rand(m, n), rand(m, 5)], [nan(m, n)]),
            lambda x, w: [dwconv(x.double(), w.double())],
            dwconv,
            1e-4,
        ),
    ]


def _cases3(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The forms of tests/programs/membound_forms3.co that have a torch op of the same work."""
    import torch
    import torch.nn.functional as F

    forms3 = "tests/programs/membound_forms3.co"
    h = torch.float16

    def ids(m: int, n: int) -> Any:
        return torch.randint(0, n, (m,), device="cuda", dtype=torch.int32)

    def causal(x: Any) -> Any:
        m, n = x.shape
        hidden = torch.arange(n, device=x.device)[None, :] > torch.arange(m, device=x.device)[:, None]
        return torch.softmax(x.masked_fill(hidden, float("-inf")), 1)

    def groups(x: Any) -> Any:
        v, mu = torch.var_mean(x.reshape(x.shape[0], 8, -1), 2, unbiased=False)
        return [mu, torch.rsqrt(v + 1e-5)]

    return [
        Case(
            "cross entropy f32 (thread per row, two passes and a gather)",
            forms3,
            "xent",
            lambda m, n: ([rand(m, n), ids(m, n)], [nan(m)]),
            lambda x, t: [F.cross_entropy(x.double(), t.long(), reduction="none")],
            lambda x, t: F.cross_entropy(x, t.long(), reduction="none"),
            1e-5,
        ),
        Case(
            "sum of squares f32 (thread per element, one atomic each)",
            forms3,
            "sum_sq_all",
            lambda m, n: ([rand(m, n)], [torch.zeros(1, device="cuda")]),
            lambda x: [(x.double() ** 2).sum().reshape(1)],
            lambda x: (x * x).sum(),
            1e-4,
            zero_outputs=True,
        ),
        Case(
            "softmax over columns f32 (thread per column)",
            forms3,
            "col_softmax",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 0)],
            lambda x: torch.softmax(x, 0),
            1e-5,
        ),
        Case(
            "row dot products f16 (thread per row)",
            forms3,
            "rows_dot_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(m, n, dtype=h)], [nan(m)]),
            lambda a, c: [(a * c).double().sum(1)],
            lambda a, c: (a * c).sum(1, dtype=torch.float32),
            1e-4,
        ),
        Case(
            "row absmax as fp8 scale f16 (thread per row)",
            forms3,
            "row_absmax_scale",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m)]),
            lambda x: [x.double().abs().amax(1) / 448],
            lambda x: x.abs().amax(1).float() / 448,
            1e-6,
        ),
        Case(
            "mean and variance f32 (thread per row, one pass)",
            forms3,
            "mean_var_rows",
            lambda m, n: ([rand(m, n)], [nan(m), nan(m)]),
            lambda x: [x.double().mean(1), x.double().var(1, unbiased=False)],
            lambda x: torch.var_mean(x, 1, unbiased=False),
            1e-4,
        ),
        Case(
            "row sums f32 (thread per row, unrolled by four by hand)",
            forms3,
            "row_sums_unroll4",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "causal softmax f32 (thread per row)",
            forms3,
            "causal_softmax",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [causal(x.double())],
            causal,
            1e-5,
        ),
        Case(
            "group statistics f32 (thread per group, loop nest)",
            forms3,
            "group_stats",
            lambda m, n: ([rand(m // 64, 64, n)], [nan(m // 64, 8), nan(m // 64, 8)]),
            lambda x: groups(x.double()),
            groups,
            1e-4,
        ),
        Case(
            "row sums f32 (thread per row, blocks of 64 by hand)",
            forms3,
            "row_sums_nested",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
        ),
        Case(
            "slice sums f32 ([M/16, 16, N], a program a slice, loop nest)",
            forms3,
            "slice_sums",
            lambda m, n: ([rand(m // 16, 16, n)], [nan(m // 16)]),
            lambda x: [x.double().sum((1, 2))],
            lambda x: x.sum((1, 2)),
            1e-4,
        ),
        Case(
            "row argmax f32 (thread per row, best value and its index)",
            forms3,
            "row_argmax",
            lambda m, n: ([rand(m, n)], [torch.full((m,), -1, device="cuda", dtype=torch.int32)]),
            lambda x: [x.double().argmax(1).double()],
            lambda x: x.argmax(1),
            0.0,
        ),
    ]


def _cases6(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The forms of tests/programs/membound_forms6.co with a torch op of the same work (a thread per row:
    a softmax's backward pass, a tolerance check's largest difference, a LayerNorm written as f16)."""
    import torch
    import torch.nn.functional as F

    forms6 = "tests/programs/membound_forms6.co"

    def softmax_bwd(y: Any, dy: Any) -> Any:
        return y * (dy - (dy * y).sum(1, keepdim=True))

    def layernorm16(x: Any, g: Any, bb: Any) -> Any:
        return F.layer_norm(x, (x.shape[1],), g, bb, eps=1e-5).half()

    return [
        Case(
            "softmax backward f32 (thread per row, a row dot then the gradient)",
            forms6,
            "softmax_bwd",
            lambda m, n: ([torch.softmax(rand(m, n), 1), rand(m, n)], [nan(m, n)]),
            lambda y, dy: [softmax_bwd(y.double(), dy.double())],
            softmax_bwd,
            1e-5,
        ),
        Case(
            "largest absolute difference of rows f32 (thread per row)",
            forms6,
            "max_abs_diff",
            lambda m, n: ([rand(m, n), rand(m, n)], [nan(m)]),
            lambda a, c: [(a.double() - c.double()).abs().amax(1)],
            lambda a, c: (a - c).abs().amax(1),
            1e-6,
        ),
        Case(
            "LayerNorm f32 written as f16 (thread per row, two passes for the statistics)",
            forms6,
            "layernorm_to_f16",
            lambda m, n: ([rand(m, n), rand(n), rand(n)], [nan(m, n).half()]),
            lambda x, g, bb: [F.layer_norm(x.double(), (x.shape[1],), g.double(), bb.double(), eps=1e-5)],
            layernorm16,
            2e-3,
        ),
    ]


def _cases7(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The column variances of tests/programs/moments.co (Welford's update written by hand; f16 data, two
    columns' statistics at once) with torch's ``var`` / ``std`` (the textbook form is ``bn_stats``)."""
    import torch

    moments = "tests/programs/moments.co"
    return [
        Case(
            "column variance f32 (thread per column, Welford's update)",
            moments,
            "col_welford",
            lambda m, n: ([rand(m, n)], [nan(n)]),
            lambda x: [x.double().var(0)],
            lambda x: torch.var(x, 0),
            1e-4,
        ),
        Case(
            "column std f16 and variance of a second f16 tensor (thread per column, two passes)",
            moments,
            "col_std_f16",
            lambda m, n: ([rand(m, n, dtype=torch.float16), rand(m, n, dtype=torch.float16)], [nan(n).half(), nan(n)]),
            lambda x, y: [x.double().std(0, correction=0), y.double().var(0, correction=0)],
            lambda x, y: (torch.std(x, 0, correction=0), torch.var(y, 0, correction=0)),
            2e-3,
        ),
    ]


def _cases8(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """Irregular accesses of tests/programs/irregular_forms2.co that schedule/interleave.py reads in whole
    lines: interleaved pairs (RoPE at each token's position), a nearest upsampling by 2, a pixel shuffle;
    with the torch ops of the same work.  ``m x n`` elements of the output: RoPE over ``m`` tokens of
    ``n / 64`` heads of 64, upsampling to ``m x n``, shuffling 16 channels of ``m / 16 x n``."""
    import torch
    import torch.nn.functional as F

    forms = "tests/programs/irregular_forms2.co"

    def rope(pos: Any, cs: Any, sn: Any, x: Any) -> Any:
        c, s = cs[pos.long()][:, None, :], sn[pos.long()][:, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2)

    def positions(m: int) -> Any:
        return torch.randint(0, m, (m,), device="cuda", dtype=torch.int32)

    return [
        Case(
            "RoPE f32, interleaved pairs (thread per pair, a token's position read from a tensor)",
            forms,
            "rope_pairs",
            lambda m, n: ([positions(m), rand(m, 32), rand(m, 32), rand(m, n // 64, 64)], [nan(m, n // 64, 64)]),
            lambda pos, cs, sn, x: [rope(pos, cs.double(), sn.double(), x.double())],
            rope,
            1e-6,
        ),
        Case(
            "nearest upsampling by 2 f32 (thread per output element)",
            forms,
            "upsample2",
            lambda m, n: ([rand(m // 2, n // 2)], [nan(m, n)]),
            lambda x: [F.interpolate(x.double()[None, None], scale_factor=2, mode="nearest")[0, 0]],
            lambda x: F.interpolate(x[None, None], scale_factor=2, mode="nearest")[0, 0],
            0.0,
        ),
        Case(
            "pixel shuffle by 2 f32 (thread per output element)",
            forms,
            "pixel_shuffle",
            lambda m, n: ([rand(64, m // 32, n // 2)], [nan(16, m // 16, n)]),
            lambda x: [F.pixel_shuffle(x.double()[None], 2)[0]],
            lambda x: F.pixel_shuffle(x[None], 2)[0],
            0.0,
        ),
    ]


def _cases9(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """Forms of tests/programs/membound_forms7.co with the torch ops of the same work: a global average
    pool written as one loop over two names (``m x n`` as 16 x m/16 channels of 64 x n/64: auto folds
    only ``w``, each ``h`` a step), a KL divergence of two rows, a softmax with an additive mask holding
    ``-inf``, a softmax with a temperature read from a tensor in base 2."""
    import torch

    forms7 = "tests/programs/membound_forms7.co"

    def probs(m: int, n: int) -> Any:
        return torch.softmax(rand(m, n), 1)

    def mask(m: int, n: int) -> Any:
        return torch.where(rand(m, n) > 1.5, float("-inf"), 0.0)

    def kl(p: Any, q: Any) -> Any:
        return (p * (p.log() - q.log())).sum(1)

    return [
        Case(
            "global average pool f32 (thread per channel, one loop over h and w)",
            forms7,
            "spatial_mean4",
            lambda m, n: ([rand(16, m // 16, 64, n // 64)], [nan(16, m // 16)]),
            lambda x: [x.double().mean((2, 3))],
            lambda x: x.mean((2, 3)),
            1e-5,
        ),
        Case(
            "KL divergence of two rows f32 (thread per row, two tensors walked together)",
            forms7,
            "kl_div_rows",
            lambda m, n: ([probs(m, n), probs(m, n)], [nan(m)]),
            lambda p, q: [kl(p.double(), q.double())],
            kl,
            1e-4,
        ),
        Case(
            "softmax with an additive mask f32 (thread per row, -inf in the mask)",
            forms7,
            "masked_softmax_add",
            lambda m, n: ([rand(m, n), mask(m, n)], [nan(m, n)]),
            lambda x, k: [torch.softmax(x.double() + k.double(), 1)],
            lambda x, k: torch.softmax(x + k, 1),
            1e-5,
        ),
        Case(
            "softmax with a temperature f32 (thread per row, base 2, the temperature read from a tensor)",
            forms7,
            "softmax_temp_exp2",
            lambda m, n: ([rand(m, n), torch.full((1,), 0.7, device="cuda")], [nan(m, n)]),
            lambda x, t: [torch.softmax(x.double() / t.double(), 1)],
            lambda x, t: torch.softmax(x / t, 1),
            1e-5,
        ),
    ]


def _cases10(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """Reductions over the planes of NCHW tensors written as loop nests (tests/programs/membound_forms7.co,
    tests/programs/planes.co): one loop over the run memory holds each plane as (schedule/planes.py). The
    ``m x n`` elements as ResNet-head 7 x 7 planes of 2048 channels, 64 x 64 planes, and groups of 32."""
    import torch

    forms7 = "tests/programs/membound_forms7.co"
    planes = "tests/programs/planes.co"

    def head(m: int, n: int) -> Any:
        return rand(m * n // (2048 * 49), 2048, 7, 7)

    def big(m: int, n: int) -> Any:
        return rand(16, m // 16, 64, n // 64)

    def grouped(m: int, n: int) -> Any:
        return rand(m * n // (512 * 32 * 32), 512, 32, 32)

    def group_stats(x: Any) -> list[Any]:
        var, mu = torch.var_mean(x.reshape(x.shape[0], 32, -1), 2, correction=0)
        return [mu, torch.rsqrt(var + 1e-5)]

    return [
        Case(
            "global average pool f32, 7 x 7 planes of 2048 channels (one loop over h and w)",
            forms7,
            "spatial_mean4",
            lambda m, n: ([head(m, n)], [nan(m * n // (2048 * 49), 2048)]),
            lambda x: [x.double().mean((2, 3))],
            lambda x: x.mean((2, 3)),
            1e-5,
            name="spatial_mean4_head",
        ),
        Case(
            "global max pool f32, 64 x 64 planes (two nested loops)",
            forms7,
            "spatial_max4",
            lambda m, n: ([big(m, n)], [nan(16, m // 16)]),
            lambda x: [x.double().amax((2, 3))],
            lambda x: x.amax((2, 3)),
            0.0,
        ),
        Case(
            "|x| max of f16 planes, 64 x 64 (two nested loops)",
            planes,
            "plane_absmax_f16",
            lambda m, n: ([big(m, n).half()], [nan(16, m // 16)]),
            lambda x: [x.double().abs().amax((2, 3))],
            lambda x: x.abs().amax((2, 3)).float(),
            0.0,
        ),
        Case(
            "group norm statistics f32, 32 groups of 16 channels of 32 x 32 (one loop over three names)",
            forms7,
            "group_stats4",
            lambda m, n: ([grouped(m, n), 32], [nan(m * n // (512 * 32 * 32), 32), nan(m * n // (512 * 32 * 32), 32)]),
            lambda x, g: group_stats(x.double()),
            lambda x, g: group_stats(x),
            1e-4,
        ),
        Case(
            "a channel's scale of 64 x 64 planes f32 (a thread per channel writing its plane)",
            planes,
            "plane_scale",
            lambda m, n: ([big(m, n), rand(m // 16)], [nan(16, m // 16, 64, n // 64)]),
            lambda x, f: [x.double() * f.double()[:, None, None]],
            lambda x, f: x * f[:, None, None],
            1e-6,
        ),
    ]


def _cases12(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """Forms of tests/programs/membound_forms8.co that fold, with the torch ops of the same work: LayerNorm's
    backward for the input and for the weight and bias (the statistics the forward pass saved; dw, db a
    thread per column), an RMSNorm whose weight is applied by a second loop over the output, an f16
    LayerNorm with f64 statistics, cross entropy with ignored labels, a multi-class hinge, a softmax's
    entropy, a softmax over the last axis of ``[8, m / 8, n]``, an online softmax read through subspan
    chunks, max - logsumexp with the maximum kept by a ternary, fp8 scaling of f16 rows, a batched gemv
    (``[8, m / 8, n] x [8, n]``), a warp-per-row LayerNorm by ``__shfl_xor_sync``, a row's absolute maximum
    walked by a while loop stepping by 4, an argmax walked from the row's end."""
    import torch
    import torch.nn.functional as F

    forms8 = "tests/programs/membound_forms8.co"
    h = torch.float16

    def stats(x: Any) -> list[Any]:
        var, mu = torch.var_mean(x, 1, unbiased=False)
        return [mu, torch.rsqrt(var + 1e-5)]

    def ln_bwd(dy: Any, x: Any, mu: Any, rs: Any, w: Any, mask: list[bool]) -> Any:
        shape = [x.shape[1]]
        return torch.ops.aten.native_layer_norm_backward(dy, x, shape, mu[:, None], rs[:, None], w, w, mask)

    def labels(m: int, n: int) -> Any:
        t = torch.randint(0, n, (m,), device="cuda", dtype=torch.int32)
        t[::3] = -1
        return t

    def entropy(x: Any) -> Any:
        return -(torch.softmax(x, 1) * torch.log_softmax(x, 1)).sum(1)

    def fp8(x: Any) -> list[Any]:
        a = x.float().abs().amax(1, keepdim=True)
        return [(x.float() * (torch.full_like(a, 448.0) / a)).to(torch.float8_e4m3fn), a[:, 0] / 448]

    def ln(x: Any, g: Any, b: Any) -> Any:
        return F.layer_norm(x, (x.shape[1],), g, b, 1e-5)

    def rms(x: Any, w: Any) -> Any:
        return F.rms_norm(x, (x.shape[1],), w, 1e-6)

    def ln_dx_case(m: int, n: int) -> tuple[list[Any], list[Any]]:
        x = rand(m, n)
        return [x, rand(n), *stats(x), rand(m, n)], [nan(m, n)]

    def ln_dwdb_case(m: int, n: int) -> tuple[list[Any], list[Any]]:
        x = rand(m, n)
        return [x, *stats(x), rand(m, n)], [nan(n), nan(n)]

    def d(*xs: Any) -> list[Any]:
        return [x.double() for x in xs]

    return [
        Case(
            "LayerNorm backward dx f32 (thread per row, mean and rstd saved)",
            forms8,
            "layernorm_bwd_dx",
            ln_dx_case,
            lambda x, w, mu, rs, dy: [ln_bwd(*d(dy, x, mu, rs, w), [True, False, False])[0]],
            lambda x, w, mu, rs, dy: ln_bwd(dy, x, mu, rs, w, [True, False, False])[0],
            1e-4,
        ),
        Case(
            "LayerNorm backward dw, db f32 (thread per column walking the rows)",
            forms8,
            "layernorm_bwd_dwdb",
            ln_dwdb_case,
            lambda x, mu, rs, dy: [
                (dy.double() * (x.double() - mu.double()[:, None]) * rs.double()[:, None]).sum(0),
                dy.double().sum(0),
            ],
            lambda x, mu, rs, dy: ln_bwd(dy, x, mu, rs, torch.ones(x.shape[1], device="cuda"), [False, True, True])[1:],
            1e-4,
        ),
        Case(
            "RMSNorm f32, the weight applied by a second loop over the output (thread per row)",
            forms8,
            "rmsnorm_weight_pass",
            lambda m, n: ([rand(m, n), rand(n)], [nan(m, n)]),
            lambda x, w: [rms(*d(x, w))],
            rms,
            1e-5,
        ),
        Case(
            "LayerNorm f16, statistics in f64 (thread per row)",
            forms8,
            "layernorm_f16_f64",
            lambda m, n: ([rand(m, n, dtype=h), rand(n, dtype=h), rand(n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x, g, b: [ln(*d(x, g, b))],
            ln,
            1e-2,
        ),
        Case(
            "cross entropy f32 with ignored labels (thread per row)",
            forms8,
            "xent_ignore",
            lambda m, n: ([rand(m, n), labels(m, n)], [nan(m)]),
            lambda x, t: [F.cross_entropy(x.double(), t.long(), ignore_index=-1, reduction="none")],
            lambda x, t: F.cross_entropy(x, t.long(), ignore_index=-1, reduction="none"),
            1e-4,
        ),
        Case(
            "multi-class hinge loss f32 (thread per row)",
            forms8,
            "multi_margin",
            lambda m, n: ([rand(m, n), torch.randint(0, n, (m,), device="cuda", dtype=torch.int32)], [nan(m)]),
            lambda x, t: [F.multi_margin_loss(x.double(), t.long(), reduction="none")],
            lambda x, t: F.multi_margin_loss(x, t.long(), reduction="none"),
            1e-4,
        ),
        Case(
            "entropy of each row's softmax f32 (thread per row)",
            forms8,
            "softmax_entropy",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [entropy(x.double())],
            entropy,
            1e-4,
        ),
        Case(
            "softmax over the last axis of [8, m/8, n] f32 (thread per (b, h))",
            forms8,
            "softmax_bhn",
            lambda m, n: ([rand(8, m // 8, n)], [nan(8, m // 8, n)]),
            lambda x: [torch.softmax(x.double(), 2)],
            lambda x: torch.softmax(x, 2),
            1e-5,
        ),
        Case(
            "online softmax f32, the row read through subspan chunks of 64 (thread per row)",
            forms8,
            "online_softmax_chunks",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-5,
        ),
        Case(
            "max - logsumexp f32, the maximum by a ternary (thread per row)",
            forms8,
            "top_minus_lse",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().amax(1) - torch.logsumexp(x.double(), 1)],
            lambda x: x.amax(1) - torch.logsumexp(x, 1),
            1e-5,
        ),
        Case(
            "fp8 e4m3 scaling of f16 rows by their absolute maximum (thread per row)",
            forms8,
            "amax_fp8_rows",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m, n, dtype=torch.float8_e4m3fn), nan(m)]),
            lambda x: [y.double() for y in fp8(x)],
            fp8,
            1e-6,
        ),
        Case(
            "batched gemv [8, m/8, n] x [8, n] f32 (thread per output)",
            forms8,
            "gemv_batched",
            lambda m, n: ([rand(8, m // 8, n), rand(8, n)], [nan(8, m // 8)]),
            lambda a, v: [torch.bmm(a.double(), v.double()[:, :, None])[:, :, 0]],
            lambda a, v: torch.bmm(a, v[:, :, None])[:, :, 0],
            1e-4,
        ),
        Case(
            "LayerNorm f32 with a warp per row (butterflies of __shfl_xor_sync)",
            forms8,
            "layernorm_warp_xor",
            lambda m, n: ([rand(m, n), rand(n), rand(n)], [nan(m, n)]),
            lambda x, g, b: [ln(*d(x, g, b))],
            ln,
            1e-5,
        ),
        Case(
            "row absolute maximum f32, a while loop stepping by 4 (thread per row)",
            forms8,
            "absmax_step4",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [x.double().abs().amax(1)],
            lambda x: x.abs().amax(1),
            0.0,
        ),
        Case(
            "row argmax f32, the row walked from its end (thread per row)",
            forms8,
            "argmax_reversed",
            lambda m, n: ([rand(m, n)], [torch.full((m,), -1, device="cuda", dtype=torch.int32)]),
            lambda x: [x.argmax(1).double()],
            lambda x: x.argmax(1),
            0.0,
        ),
    ]


def _cases5(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The forms of tests/programs/membound_forms5.co with a torch op of the same work (a thread per row
    or column; sums kept by subtraction or ``__fmaf``, a softmax scaled in place, column statistics)."""
    import torch
    import torch.nn.functional as F

    forms5 = "tests/programs/membound_forms5.co"

    def probs(m: int, n: int) -> Any:
        return torch.rand(m, n, device="cuda") * 0.9 + 0.05

    def cosine(a: Any, c: Any) -> Any:
        return F.cosine_similarity(a, c, dim=1, eps=0.0)

    def rms_scale(x: Any) -> Any:
        return x * torch.rsqrt((x * x).mean(1, keepdim=True) + 1e-5)

    def minmax(x: Any) -> Any:
        lo, hi = x.aminmax(dim=1, keepdim=True)
        return (x - lo) / (hi - lo)

    return [
        Case(
            "negative mean log f32 (thread per row, s -= log)",
            forms5,
            "nll_rows",
            lambda m, n: ([probs(m, n)], [nan(m)]),
            lambda p: [-(p.double().log().mean(1))],
            lambda p: -(p.log().mean(1)),
            1e-4,
        ),
        Case(
            "cosine similarity of rows f32 (thread per row, three __fmaf sums)",
            forms5,
            "cosine_rows",
            lambda m, n: ([rand(m, n), rand(m, n)], [nan(m)]),
            lambda a, c: [cosine(a.double(), c.double())],
            cosine,
            1e-4,
        ),
        Case(
            "log-softmax f32 (thread per row)",
            forms5,
            "log_softmax",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.log_softmax(x.double(), 1)],
            lambda x: torch.log_softmax(x, 1),
            1e-5,
        ),
        Case(
            "softmax f32 scaled in place (thread per row, exponentials stored then divided)",
            forms5,
            "softmax_in_place",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-5,
        ),
        Case(
            "column mean and variance f32 (thread per column, two passes)",
            forms5,
            "bn_stats",
            lambda m, n: ([rand(m, n)], [nan(n), nan(n)]),
            lambda x: [x.double().mean(0), x.double().var(0, unbiased=False)],
            lambda x: torch.var_mean(x, 0, unbiased=False),
            1e-4,
        ),
        Case(
            "RMS scaling f32 (thread per row, the write in chunks of 128)",
            forms5,
            "rms_scale_chunks",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [rms_scale(x.double())],
            rms_scale,
            1e-4,
        ),
        Case(
            "min-max scaling f32 (thread per row, extremes found with branches)",
            forms5,
            "minmax_scale",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [minmax(x.double())],
            minmax,
            1e-4,
        ),
        Case(
            "row sums f32 into the output (thread per row, y.at(r) += x: held in a register)",
            forms5,
            "row_sums_into_out",
            lambda m, n: ([rand(m, n)], [torch.zeros(m, device="cuda")]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1),
            1e-4,
            zero_outputs=True,
        ),
    ]


def _cases4(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The forms of tests/programs/membound_forms4.co that have a torch op of the same work (those with
    a scalar after their outputs are left to the tests)."""
    import torch
    import torch.nn.functional as F

    forms4 = "tests/programs/membound_forms4.co"
    h = torch.float16

    def segments(m: int, n: int) -> list[Any]:
        # m segments of about n values each (0 to 2n), CSR offsets
        return csr(m, n)

    def csr(m: int, n: int) -> list[Any]:
        counts = torch.randint(0, 2 * n, (m,), device="cuda")
        ptr = torch.zeros(m + 1, dtype=torch.int64, device="cuda")
        ptr[1:] = counts.cumsum(0)
        return [rand(int(ptr[-1])), ptr.to(torch.int32)]

    def avg3(x: Any) -> Any:
        s = F.avg_pool1d(x[:, None], 3, 1, 1, count_include_pad=False)
        return s[:, 0]

    def swiglu(x: Any) -> Any:
        g, u = x.chunk(2, 1)
        return F.silu(g.float()) * u

    return [
        Case(
            "mean and variance f32 (thread per row, Welford's update)",
            forms4,
            "welford_rows",
            lambda m, n: ([rand(m, n)], [nan(m), nan(m)]),
            lambda x: [x.double().mean(1), x.double().var(1, unbiased=False)],
            lambda x: torch.var_mean(x, 1, unbiased=False),
            1e-4,
        ),
        Case(
            "bias over a flat index f16 (thread per element, i / N and i % N)",
            forms4,
            "bias_flat_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x, b: [x.double() + b.double()],
            lambda x, b: x + b,
            1e-3,
        ),
        Case(
            "moving average of three f32 (thread per element, neighbours)",
            forms4,
            "moving_avg3",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [avg3(x.double())],
            avg3,
            1e-5,
        ),
        Case(
            "2 x 2 max pooling f32 (thread per output)",
            forms4,
            "maxpool2",
            lambda m, n: ([rand(m, n)], [nan(m // 2, n // 2)]),
            lambda x: [F.max_pool2d(x.double()[None], 2)[0]],
            lambda x: F.max_pool2d(x[None], 2)[0],
            0.0,
        ),
        Case(
            "segment sums f32 (thread per CSR row, a loop of its own extent)",
            forms4,
            "segment_sums",
            lambda m, n: (segments(m, n), [nan(m)]),
            seg_ref,
            seg_op,
            1e-4,
        ),
        Case(
            "segment sums f32, short segments (m * n / 32 of 0 to 63 values: 32 a program under auto)",
            forms4,
            "segment_sums",
            lambda m, n: (csr(m * n // 32, 32), [nan(m * n // 32)]),
            seg_ref,
            seg_op,
            1e-4,
            name="segment_sums_short",
        ),
        Case(
            "softmax f32 (thread per row, running max and sum rescaled in a branch)",
            forms4,
            "softmax_rescale_branch",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-5,
        ),
        Case(
            "logsumexp f32 (thread per row, rescale in a branch, term after it)",
            forms4,
            "lse_rescale_then_add",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [torch.logsumexp(x.double(), 1)],
            lambda x: torch.logsumexp(x, 1),
            1e-5,
        ),
        Case(
            "swiglu over two halves f16 (thread per element)",
            forms4,
            "swiglu_halves_f16",
            lambda m, n: ([rand(m, 2 * n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x: [swiglu(x.double())],
            swiglu,
            1e-2,
        ),
    ]


def _cases2(rand: Callable[..., Any], nan: Callable[..., Any]) -> list[Case]:
    """The forms of tests/programs/membound_forms2.co."""
    import torch
    import torch.nn.functional as F

    forms2 = "tests/programs/membound_forms2.co"
    h = torch.float16

    def rms(t: Any, w: Any) -> Any:
        return t * torch.rsqrt((t**2).mean(1, keepdim=True) + 1e-5) * w

    return [
        Case(
            "logsumexp f32 (thread per row, two passes)",
            forms2,
            "lse_rows",
            lambda m, n: ([rand(m, n)], [nan(m)]),
            lambda x: [torch.logsumexp(x.double(), 1)],
            lambda x: torch.logsumexp(x, 1),
            1e-5,
        ),
        Case(
            "row max f16 (thread per row)",
            forms2,
            "row_max_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m, dtype=h)]),
            lambda x: [x.double().amax(1)],
            lambda x: x.amax(1),
            1e-3,
        ),
        Case(
            "residual add + rmsnorm f32 (thread per row, h read back)",
            forms2,
            "add_rmsnorm",
            lambda m, n: ([rand(m, n), rand(m, n), rand(n)], [nan(m, n), nan(m, n)]),
            lambda x, r, w: [x.double() + r.double(), rms(x.double() + r.double(), w.double())],
            lambda x, r, w: (lambda t: (t, F.rms_norm(t, (t.shape[1],), w, 1e-5)))(x + r),
            1e-4,
        ),
        Case(
            "layernorm f16 (thread per row, three passes)",
            forms2,
            "layernorm_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(n, dtype=h), rand(n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x, g, b: [F.layer_norm(x.double(), (x.shape[1],), g.double(), b.double(), 1e-5)],
            lambda x, g, b: F.layer_norm(x, (x.shape[1],), g, b, 1e-5),
            1e-2,
        ),
        Case(
            "scale and shift f16 (thread per element, 2-D broadcasts)",
            forms2,
            "scale_shift_f16",
            lambda m, n: ([rand(m, n, dtype=h), rand(m), rand(n, dtype=h), rand(n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x, mu, w, c: [(x.double() - mu.double()[:, None]) * w.double() + c.double()],
            lambda x, mu, w, c: ((x - mu[:, None]) * w + c).to(h),
            1e-2,
        ),
        Case(
            "transpose f32 (32 x 33 shared tile, 4 rows a thread)",
            forms2,
            "transpose32",
            lambda m, n: ([rand(m, n)], [nan(n, m)]),
            lambda x: [x.double().t()],
            lambda x: x.t().contiguous(),
            0.0,
        ),
        Case(
            "transpose f32 (a thread per element, 32 x 33 shared tile)",
            forms2,
            "transpose_pad",
            lambda m, n: ([rand(m, n)], [nan(n, m)]),
            lambda x: [x.double().t()],
            lambda x: x.t().contiguous(),
            0.0,
        ),
        Case(
            "column max f32 (thread per column)",
            forms2,
            "col_max",
            lambda m, n: ([rand(m, n)], [nan(n)]),
            lambda x: [x.double().amax(0)],
            lambda x: x.amax(0),
            0.0,
        ),
        Case(
            "softmax f16 (warp per row, shuffles in helpers)",
            forms2,
            "softmax_warp_f16",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m, n, dtype=h)]),
            lambda x: [torch.softmax(x.double(), 1)],
            lambda x: torch.softmax(x, 1),
            1e-2,
        ),
        Case(
            "l2 normalise rows f32 (thread per row)",
            forms2,
            "l2norm_rows",
            lambda m, n: ([rand(m, n)], [nan(m, n)]),
            lambda x: [x.double() / torch.sqrt((x.double() ** 2).sum(1, keepdim=True) + 1e-6)],
            lambda x: x / torch.sqrt((x * x).sum(1, keepdim=True) + 1e-6),
            1e-4,
        ),
        Case(
            "row sums f16 (two rows a block, shared tree loop)",
            forms2,
            "row_sums_2rows",
            lambda m, n: ([rand(m, n, dtype=h)], [nan(m)]),
            lambda x: [x.double().sum(1)],
            lambda x: x.sum(1, dtype=torch.float32),
            1e-4,
        ),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="16384x4096,4096x16384")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--schedules", default="source,auto")
    ap.add_argument("--only", help="comma-separated function names (or case names: segment_sums_short)")
    ap.add_argument("--no-inductor", action="store_true", help="time the torch op eager only")
    ap.add_argument(
        "--points",
        default="",
        help="tuning points timed beside the schedules, each under --schedule auto with fields of the case's"
        " kernel: 'split4:loop_split=4,fold=16;whole:fold=-1;st3:policy.LOAD_STAGES=3' (a point the kernel cannot take is reported)",
    )
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args()

    import torch
    import triton

    from croq2triton.api import load
    from croq2triton.errors import CroqError

    info = run_info()
    torch._dynamo.config.cache_size_limit = 64
    cases = [c for c in _cases() if not args.only or (c.name or c.func) in args.only.split(",")]
    mods = {(p, s): load(REPO / p, schedule=s) for p in {c.program for c in cases} for s in args.schedules.split(",")}
    points = _points(args.points)
    rows: list[dict[str, object]] = []
    for size in args.sizes.split(","):
        m, n = (int(x) for x in size.split("x"))
        for case in cases:
            torch.manual_seed(m + n)
            ins, outs = case.make(m, n)
            # (a scalar argument, a group count, moves no bytes)
            moved = sum(t.numel() * t.element_size() for t in (*ins, *outs) if isinstance(t, torch.Tensor))
            src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            refs = case.ref(*ins)
            compiled = None
            if not args.no_inductor:
                try:
                    compiled = torch.compile(case.op, dynamic=False)
                    compiled(*ins)
                    torch.cuda.synchronize()
                except Exception as exc:  # noqa: BLE001 - recorded, the eager op still times
                    print(f"inductor failed for {case.label}: {exc}", flush=True)
                    compiled = None
            live = {}
            for s in [*args.schedules.split(","), *points]:
                if s in points:
                    try:
                        f = _at_point(case, s, points[s])
                    except Exception as exc:  # noqa: BLE001 - a point this kernel cannot take: reported
                        rows.append({"case": case.label, "size": size, "schedule": s, "note": f"NOT RUN ({exc})"})
                        continue
                else:
                    f = getattr(mods[(case.program, s)], case.func)
                got = [o.clone() for o in outs]
                if case.zero_outputs:
                    for g in got:
                        g.zero_()
                try:
                    f(*ins, *got)
                    torch.cuda.synchronize()
                except CroqError as exc:  # a point refused at launch (a block past Triton's largest): reported
                    rows.append({"case": case.label, "size": size, "schedule": s, "note": f"NOT RUN ({exc})"})
                    continue
                errs = [float((g.double() - r).abs().max() / r.abs().max().clamp(min=1e-30)) for g, r in zip(got, refs)]
                ok = all(not torch.isnan(g).any() for g in got) and max(errs) <= case.tol
                if not ok:
                    rows.append({"case": case.label, "size": size, "schedule": s, "note": f"WRONG (err {errs})"})
                    continue
                if case.zero_outputs:
                    live[s] = (lambda f=f, got=got, ins=ins: (got[0].zero_(), f(*ins, *got)), max(errs))
                else:
                    live[s] = (lambda f=f, got=got, ins=ins: f(*ins, *got), max(errs))
            copy_t: list[float] = []
            op_t: list[float] = []
            ind_t: list[float] = []
            kt: dict[str, list[float]] = {s: [] for s in live}
            vs_best: dict[str, list[float]] = {s: [] for s in live}
            vs_op: dict[str, list[float]] = {s: [] for s in live}
            vs_copy: dict[str, list[float]] = {s: [] for s in live}
            for _ in range(args.rounds):
                for s, (call, _err) in live.items():
                    o = triton.testing.do_bench(lambda op=case.op, ins=ins: op(*ins), warmup=25, rep=200)
                    t1 = triton.testing.do_bench(call, warmup=25, rep=200)
                    best = o
                    if compiled is not None:
                        oi = triton.testing.do_bench(lambda op=compiled, ins=ins: op(*ins), warmup=25, rep=200)
                        ind_t.append(oi)
                        best = min(o, oi)
                    vs_best[s].append(best / t1)
                    c = triton.testing.do_bench(lambda d=dst, x=src: d.copy_(x), warmup=25, rep=200)
                    t2 = triton.testing.do_bench(call, warmup=25, rep=200)
                    op_t.append(o)
                    copy_t.append(c)
                    kt[s] += [t1, t2]
                    vs_op[s].append(o / t1)
                    vs_copy[s].append(c / t2)
            gb = moved / 1e9
            rows.append(
                {
                    "case": case.label,
                    "size": size,
                    "schedule": "torch op",
                    "ms": median_of_rounds(op_t),
                    "tbps": gb / median_of_rounds(op_t),
                }
            )
            if ind_t:
                rows.append(
                    {
                        "case": case.label,
                        "size": size,
                        "schedule": "torch.compile",
                        "ms": median_of_rounds(ind_t),
                        "tbps": gb / median_of_rounds(ind_t),
                    }
                )
            rows.append(
                {
                    "case": case.label,
                    "size": size,
                    "schedule": "device copy",
                    "ms": median_of_rounds(copy_t),
                    "tbps": gb / median_of_rounds(copy_t),
                }
            )
            for s, (_call, err) in live.items():
                ms = median_of_rounds(kt[s])
                rows.append(
                    {
                        "case": case.label,
                        "size": size,
                        "schedule": s,
                        "ms": ms,
                        "tbps": gb / ms,
                        "vs_torch": median_of_rounds(vs_op[s]),
                        "vs_best_torch": median_of_rounds(vs_best[s]),
                        "roofline": median_of_rounds(vs_copy[s]),
                        "rel_err": err,
                        "raw_ms": kt[s],
                    }
                )
            for r in rows[-(2 + bool(ind_t) + len(live)) :]:
                print(json.dumps({k: v for k, v in r.items() if k != "raw_ms"}), flush=True)
            _write(args, info, rows, final=False)
    _write(args, info, rows, final=True)
    return 0


def _points(text: str) -> dict[str, dict[str, object]]:
    """``label:field=value,field=value;...`` -> label -> fields (values as ints, ``1x2`` as tuples)."""
    out: dict[str, dict[str, object]] = {}
    for item in filter(None, (t.strip() for t in text.split(";"))):
        label, _, fields = item.partition(":")
        values: dict[str, object] = {}
        for f in filter(None, fields.split(",")):
            k, _, v = f.partition("=")
            v = v.strip()
            if v in ("true", "false"):
                values[k.strip()] = v == "true"
            else:
                values[k.strip()] = tuple(int(x) for x in v.split("x")) if "x" in v else int(v)
        out[f"auto[{label.strip()}]"] = values
    return out


def _at_point(case: Case, label: str, fields: dict[str, object]) -> Callable[..., Any]:
    """``case.func`` translated under ``--schedule auto`` with ``fields`` set on its kernel; a field
    ``policy.NAME`` sets the auto policy's constant NAME instead (schedule/policy.py) for this
    translation, the policy's own choices kept (``st3:policy.LOAD_STAGES=3``)."""
    from croq2triton.api import load_source, translate_full
    from croq2triton.options import Point
    from croq2triton.schedule import policy

    consts = {k.removeprefix("policy."): v for k, v in fields.items() if k.startswith("policy.")}
    fields = {k: v for k, v in fields.items() if not k.startswith("policy.")}
    # (the kernel as lifted, and its form over merged axes where it has one: schedule/planes.py)
    text = (REPO / case.program).read_text()
    plain = translate_full(text, filename=case.program, schedule="auto").source
    names = [f"{case.func}_k0{x}" for x in ("", "_planes") if f"def {case.func}_k0{x}(" in plain]
    point = Point.of({}, {k: fields for k in names} if fields else {})
    before = {k: getattr(policy, k) for k in consts}
    try:
        for k, v in consts.items():
            setattr(policy, k, v)
        out = translate_full(text, filename=case.program, schedule="auto", point=point)
    finally:
        for k, v in before.items():
            setattr(policy, k, v)
    if case.func in out.failed:
        raise RuntimeError(str(out.failed[case.func]).splitlines()[0])
    mod = load_source(out.source, f"point_{case.func}_{abs(hash(label))}")
    return getattr(mod, case.func)


def _write(args: argparse.Namespace, info: dict[str, object], rows: list[dict[str, object]], final: bool) -> None:
    """The JSON and the markdown block so far: written after every case, so that a run cut by a time
    limit keeps what it measured (the clocks after are read at the end only)."""
    if final:
        info["clocks_after"] = smi()
    cmd = "python3 perf/bench_membound.py " + " ".join(sys.argv[1:])
    if args.json:
        Path(args.json).write_text(json.dumps({"info": info, "cmd": cmd, "rows": rows, "complete": final}, indent=1))
    lines = [
        f"{info['date']}, {info['gpu']}, torch {info['torch']}, Triton {info['triton']}; clocks before "
        f"{info['clocks_before']}, after {info.get('clocks_after', '(cut before the end)')}; `{cmd}`",
        "",
        "| kernel | size | schedule | ms | TB/s | vs torch op | vs best torch | of the roofline |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "note" in r:
            lines.append(f"| {r['case']} | {r['size']} | {r['schedule']} | {r['note']} | | | | |")
            continue
        vt = f"{r['vs_torch']:.3f}" if "vs_torch" in r else ""
        vb = f"{r['vs_best_torch']:.3f}" if "vs_best_torch" in r else ""
        rf = f"{r['roofline']:.3f}" if "roofline" in r else ""
        lines.append(
            f"| {r['case']} | {r['size']} | {r['schedule']} | {r['ms']:.3f} | {r['tbps']:.2f} | {vt} | {vb} | {rf} |"
        )
    text = "\n".join(lines) + "\n"
    if final:
        print(text)
    if args.md:
        Path(args.md).write_text(text)


if __name__ == "__main__":
    sys.exit(main())

"""Memory-bound kernels in an eighth set of natural forms (tests/programs/membound_forms8.co, issue 27):
norms' backward passes with saved statistics (LayerNorm's dx; dw and db down the columns), a residual
updated in place, a weight applied by a second loop, f64 statistics of f16 rows, an rstd stored and read
back, losses (cross entropy with ignored labels, a multi-class hinge, a softmax's entropy), a softmax over
the last axis of [B, H, N], an online softmax through subspan views, a causal softmax whose loops end at
the diagonal, a maximum kept by a ternary, fp8 scaling, an L2 normalisation in place, a batched gemv, a
row staged by one dma.copy and folded by the block, a warp-per-row LayerNorm by ``__shfl_xor_sync``, a
while loop stepping by 4, an argmax walked from the row's end, a sum from a column read from a tensor
and a minimum started from the first element. Each runs under both schedules in the interpreter against
float64 torch on ragged sizes, outputs poisoned with NaN; what ``--schedule auto`` makes of each loop is
checked on the generated code."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kernel_util import DEVICE, assert_folded, assert_near_max, check_forms, form_sizes, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms8.co"
H = torch.float16
F32 = torch.float32
F64 = torch.float64
I32 = torch.int32
E4M3 = torch.float8_e4m3fn


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _ints(shape: tuple[int, ...], lo: int, hi: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(I32).to(DEVICE)


def _stats(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and rstd a LayerNorm's forward pass saves (f32)."""
    mu = _d(x).mean(1)
    return mu.float(), (1 / torch.sqrt(_d(x).var(1, unbiased=False) + 1e-5)).float()


def _ln_bwd_dx(x, w, mu, rs, dy):  # noqa: ANN001, ANN202
    xh = (_d(x) - _d(mu)[:, None]) * _d(rs)[:, None]
    g = _d(dy) * _d(w)
    return [_d(rs)[:, None] * (g - g.mean(1, keepdim=True) - xh * (g * xh).mean(1, keepdim=True))]


def _ln_bwd_dwdb(x, mu, rs, dy):  # noqa: ANN001, ANN202
    xh = (_d(x) - _d(mu)[:, None]) * _d(rs)[:, None]
    return [(_d(dy) * xh).sum(0), _d(dy).sum(0)]


def _rms(h: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return h * torch.rsqrt((h * h).mean(1, keepdim=True) + 1e-6) * _d(w)


# inputs a kernel updates in place: a copy of each as made, for the reference
_SAVED: dict[str, torch.Tensor] = {}


def _keep(name: str, t: torch.Tensor) -> torch.Tensor:
    _SAVED[name] = t.clone()
    return t


def _add_rmsnorm(x, res, w):  # noqa: ANN001, ANN202
    h = _d(_SAVED["res"]) + _d(x)
    assert_near_max(res, h, 1e-6, "add_rmsnorm_inplace's residual")
    return [_rms(h, w)]


def _l2_inplace(x: torch.Tensor) -> list[torch.Tensor]:
    x0 = _d(_SAVED["l2"])
    assert_near_max(x, x0 / x0.norm(dim=1, keepdim=True), 1e-6, "l2norm_inplace")
    return []


def _xent_ignore(x: torch.Tensor, t: torch.Tensor) -> list[torch.Tensor]:
    lse = torch.logsumexp(_d(x), 1)
    xt = _d(x).gather(1, t.long().clamp(min=0)[:, None])[:, 0]
    return [torch.where(t >= 0, lse - xt, 0.0)]


def _labels(m: int, n: int, seed: int) -> torch.Tensor:
    t = _ints((m,), 0, n, seed)
    t[::3] = -1  # (every third row ignored)
    return t


def _entropy(x: torch.Tensor) -> torch.Tensor:
    p = torch.softmax(_d(x), 1)
    return -(p * torch.log_softmax(_d(x), 1)).sum(1)


def _causal(x: torch.Tensor, off: int) -> torch.Tensor:
    m, n = x.shape
    keep = torch.arange(n, device=x.device)[None, :] <= torch.arange(m, device=x.device)[:, None] + off
    return torch.softmax(torch.where(keep, _d(x), float("-inf")), 1)


def _fp8(x: torch.Tensor) -> list[torch.Tensor]:
    a = x.float().abs().amax(1, keepdim=True)
    k = torch.full_like(a, 448.0) / a  # (not 448.0 / a: torch takes the reciprocal, then multiplies)
    return [(x.float() * k).to(E4M3).double(), _d(a)[:, 0] / 448]


def _ties(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, 40, (m, n), generator=g).float().to(DEVICE)


def _from_start(x: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    keep = torch.arange(x.shape[1])[None, :] >= s[:, None]
    return torch.where(keep, _d(x), 0.0).sum(1)


Inputs = Callable[[int, int], list[object]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "layernorm_bwd_dx": (
        lambda m, n: [x := randn(m, n, seed=m + 1) + 0.3, randn(n, seed=n + 2), *_stats(x), randn(m, n, seed=3)],
        lambda m, n: [((m, n), F32)],
        _ln_bwd_dx,
        1e-5,
    ),
    "layernorm_bwd_dwdb": (
        lambda m, n: [x := randn(m, n, seed=n + 4) - 0.2, *_stats(x), randn(m, n, seed=m + 5)],
        lambda m, n: [((n,), F32), ((n,), F32)],
        _ln_bwd_dwdb,
        1e-5,
    ),
    "add_rmsnorm_inplace": (
        lambda m, n: [randn(m, n, seed=m + 6), _keep("res", randn(m, n, seed=n + 7)), randn(n, seed=8)],
        lambda m, n: [((m, n), F32)],
        _add_rmsnorm,
        1e-5,
    ),
    "rmsnorm_weight_pass": (
        lambda m, n: [randn(m, n, seed=n + 9), randn(n, seed=m + 10)],
        lambda m, n: [((m, n), F32)],
        lambda x, w: [_rms(_d(x), w)],
        1e-5,
    ),
    "layernorm_f16_f64": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 11) + 4, randn(n, dtype=H, seed=12), randn(n, dtype=H, seed=13)],
        lambda m, n: [((m, n), H)],
        lambda x, g, bb: [F.layer_norm(_d(x), (x.shape[1],), _d(g), _d(bb), 1e-5)],
        5e-3,
    ),
    "rmsnorm_rstd_out": (
        lambda m, n: [randn(m, n, seed=n + 14), randn(n, seed=m + 15)],
        lambda m, n: [((m, n), F32), ((m,), F32)],
        lambda x, w: [_rms(_d(x), w), torch.rsqrt((_d(x) ** 2).mean(1) + 1e-6)],
        1e-5,
    ),
    "xent_ignore": (
        lambda m, n: [randn(m, n, seed=m + 16) * 3, _labels(m, n, n + 17)],
        lambda m, n: [((m,), F32)],
        _xent_ignore,
        1e-5,
    ),
    "multi_margin": (
        lambda m, n: [randn(m, n, seed=n + 18) * 0.5, _ints((m,), 0, n, m + 19)],
        lambda m, n: [((m,), F32)],
        lambda x, t: [F.multi_margin_loss(_d(x), t.long(), reduction="none")],
        1e-5,
    ),
    "softmax_entropy": (
        lambda m, n: [randn(m, n, seed=m + 20) * 2],
        lambda m, n: [((m,), F32)],
        lambda x: [_entropy(x)],
        1e-5,
    ),
    "softmax_bhn": (
        lambda m, n: [randn(2, m, n, seed=n + 21) * 2],
        lambda m, n: [((2, m, n), F32)],
        lambda x: [torch.softmax(_d(x), 2)],
        1e-5,
    ),
    "online_softmax_chunks": (
        lambda m, n: [randn(m, n, seed=m + 22) * 3],
        lambda m, n: [((m, n), F32)],
        lambda x: [torch.softmax(_d(x), 1)],
        1e-5,
    ),
    "causal_softmax_extent": (
        lambda m, n: [randn(m, n, seed=n + 23) * 2, n - m],
        lambda m, n: [((m, n), F32)],
        lambda x, off: [_causal(x, off)],
        1e-5,
    ),
    "top_minus_lse": (
        lambda m, n: [randn(m, n, seed=m + 24) * 3],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).amax(1) - torch.logsumexp(_d(x), 1)],
        1e-5,
    ),
    "amax_fp8_rows": (
        lambda m, n: [randn(m, n, dtype=H, seed=n + 25)],
        lambda m, n: [((m, n), E4M3), ((m,), F32)],
        _fp8,
        1e-6,
    ),
    "l2norm_inplace": (
        lambda m, n: [_keep("l2", randn(m, n, seed=m + 26))],
        lambda m, n: [],
        _l2_inplace,
        0.0,
    ),
    "gemv_batched": (
        lambda m, n: [randn(2, m, n, seed=n + 27), randn(2, n, seed=m + 28)],
        lambda m, n: [((2, m), F32)],
        lambda a, v: [torch.einsum("bik,bk->bi", _d(a), _d(v))],
        1e-5,
    ),
    # (4 rows of at most 131: as written, each of the three loops sums the whole staged tile per element, a
    # program a row in the source schedule; the interpreter took a minute at 5 x 2101)
    "softmax_staged_row": (
        lambda m, n: [randn(min(m, 4), min(n, 131), seed=m + 29) * 2],
        lambda m, n: [((min(m, 4), min(n, 131)), F32)],
        lambda x: [torch.softmax(_d(x), 1)],
        1e-5,
    ),
    "layernorm_warp_xor": (
        lambda m, n: [randn(m, n, seed=n + 30) + 1, randn(n, seed=31), randn(n, seed=32)],
        lambda m, n: [((m, n), F32)],
        lambda x, g, bb: [F.layer_norm(_d(x), (x.shape[1],), _d(g), _d(bb), 1e-5)],
        1e-5,
    ),
    "absmax_step4": (
        lambda m, n: [randn(m, n, seed=m + 33)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).abs().amax(1)],
        0.0,
    ),
    "argmax_reversed": (
        lambda m, n: [_ties(m, n, n + 34)],
        lambda m, n: [((m,), I32)],
        lambda x: [_d(x.cpu()).argmax(1).double()],
        0.0,
    ),
    "sum_from_start": (
        lambda m, n: [randn(m, n, seed=n + 35), _ints((m,), 0, n + 1, m + 36)],
        lambda m, n: [((m,), F32)],
        lambda x, s: [_from_start(x.cpu(), s.cpu())],
        1e-5,
    ),
    "min_from_first": (
        lambda m, n: [randn(m, n, seed=m + 37)],
        lambda m, n: [((m,), F32)],
        lambda x: [_d(x).amin(1)],
        0.0,
    ),
}
SIZES = [(37, 300), (5, 2101)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n)


@cache
def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="membound_forms8.co", schedule=schedule).source


def _code(schedule: str, kernel: str) -> str:
    return _source(schedule).split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


# kernel -> (the counters of its loops along the long axis as written, the reductions auto makes of them)
FOLDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "layernorm_bwd_dx": (("j", "j_2"), ("tl.sum(",)),
    # (the column walk: the counter's axis leads the tile, each row's mean and rstd a column of it)
    "layernorm_bwd_dwdb": (("i",), ("tl.sum(",)),
    # (the residual stored and read back in the next loop: each lane reads only the row it stored)
    "add_rmsnorm_inplace": (("j", "j_2"), ("tl.sum(",)),
    "rmsnorm_weight_pass": (("j", "j_2", "j_3"), ("tl.sum(",)),
    "layernorm_f16_f64": (("j", "j_2"), ("tl.sum(",)),
    "rmsnorm_rstd_out": (("j", "j_2"), ("tl.sum(",)),
    # (the loops inside the branch of the labels that are not ignored)
    "xent_ignore": (("j", "j_2"), ("tl.max(", "tl.sum(")),
    "multi_margin": (("j",), ("tl.sum(",)),
    "softmax_entropy": (("j", "j_2"), ("tl.max(", "tl.sum(")),
    "softmax_bhn": (("j", "j_2", "j_3"), ("tl.max(", "tl.sum(")),
    # (the chunks of 64 and the loop over each are one loop over the row, schedule/flatnest.py; the
    # running maximum and rescaled sum one fold of the pair, schedule/rescaled.py)
    "online_softmax_chunks": (("c", "k", "c_2", "k_2"), ("tl.max(", "tl.sum(")),
    # (each lane's extent its own: blocks up to the program's largest, each lane masked at its own)
    "causal_softmax_extent": (("j", "j_2", "j_3", "j_4"), ("tl.max(", "tl.sum(")),
    # (``m = v > m ? v : m``: a maximum)
    "top_minus_lse": (("j", "j_2"), ("tl.max(", "tl.sum(")),
    "amax_fp8_rows": (("j", "j_2"), ("tl.max(",)),
    # (x read by the first loop and written by the second: lift/hazards.py fences x, whose stored value reads
    # an accumulator, so the loops fold in blocks of 64 columns for 64 rows a program, barriers kept)
    "l2norm_inplace": (("j", "j_2"), ("tl.sum(",)),
    "gemv_batched": (("k",), ("tl.sum(",)),
    # (``while (j < N) { foreach v in [4] { .. j + v .. } j += 4; }`` from j = 0: a foreach over the steps
    # reading j as (j_step * 4), lift/whileloops.py, then one loop over the row, schedule/flatnest.py)
    "absmax_step4": (("j_step",), ("tl.max(",)),
    # (each lane's strided columns and the warp's butterflies: one row a program, schedule/shuffles.py)
    "layernorm_warp_xor": (("j", "j_2", "j_3"), ("tl.sum(",)),
    # (``>=`` walking from the end: the last best position in the loop's order, the first in the row's)
    "argmax_reversed": (("j",), ("tl.max(",)),
    # (a start read from a tensor: blocks from the program's least start, each lane masked at its own)
    "sum_from_start": (("c",), ("tl.sum(",)),
    "min_from_first": (("j",), ("tl.min(",)),
    # the staged [1, N] row's loops: the max and the sum of exponentials reductions, the stores one tile store
    "softmax_staged_row": (("j", "j_2", "j_3"), ("tl.max(", "tl.sum(")),
}
NOT_YET: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {}
# loops that are not along a long axis: kept as written, correct (checked with the other forms)
KEPT: dict[str, str] = {}


def _assert_folded(kernel: str, counters: tuple[str, ...], reductions: tuple[str, ...]) -> None:
    assert_folded(_code, kernel, counters, reductions)


@pytest.mark.parametrize("kernel", sorted(FOLDS))
def test_auto_folds_each_loop_along_the_row(kernel: str) -> None:
    """Under auto no loop walks the long axis one element a lane a step; a tile reduction does."""
    _assert_folded(kernel, *FOLDS[kernel])


@pytest.mark.parametrize(
    "kernel",
    [pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=v[2])) for k, v in sorted(NOT_YET.items())],
)
def test_auto_does_not_fold_yet(kernel: str) -> None:
    _assert_folded(kernel, *NOT_YET[kernel][:2])


@pytest.mark.parametrize("kernel", sorted(KEPT))
def test_short_windows_stay_loops(kernel: str) -> None:
    assert re.search(rf"\bfor {KEPT[kernel]} in\b", _code("auto", f"{kernel}_k0"))


# near misses of a while loop stepping by a block (lift/whileloops.py): windows of 4 that overlap (j by 3:
# elements counted twice), a start of each lane's own (j = t: the guard j < N kept), a condition j <= N - 1
WHILES = """
__co__ void overlap3(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 8) : block, t by 8 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = 0;
      while (j < N) {
        foreach v in [4] { if (j + v < N) s += x.at(r, j + v); }
        j += 3;
      }
      y.at(r) = s;
    }
  }
}
__co__ void lane_start(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 8) : block, t by 8 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = t;
      while (j < N) {
        foreach v in [4] { if (j + v < N) s += x.at(r, j + v); }
        j += 4;
      }
      y.at(r) = s;
    }
  }
}
__co__ void up_to_last(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 8) : block, t by 8 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 s = 0.0f;
      mutable int j = 0;
      while (j <= N - 1) {
        foreach v in [4] { if (j + v < N) s += x.at(r, j + v) * x.at(r, j + v); }
        j += 4;
      }
      y.at(r) = s;
    }
  }
}
"""


def _windows(x: torch.Tensor, start: int, step: int) -> torch.Tensor:
    m, n = x.shape
    out = torch.zeros(m, dtype=F64)
    for j in range(start, n, step):
        out += _d(x[:, j : j + 4].cpu()).sum(1)
    return out


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_while_loops_stepping_by_a_block(schedule: str, tmp_path: Path) -> None:
    """A while from 0 by 4 over a loop of 4 is one loop along the row under auto; near misses run as
    written and right."""
    path = tmp_path / "whiles.co"
    path.write_text(WHILES)
    mod = load_once(path, schedule)
    m, n = 11, 150
    x = randn(m, n, seed=m + n)
    refs = {
        "overlap3": _windows(x, 0, 3),
        # (each lane from its thread index t = r % 8)
        "lane_start": torch.cat([_windows(x[r : r + 1], r % 8, 4) for r in range(m)]),
        "up_to_last": (_d(x.cpu()) ** 2).sum(1),
    }
    for fn, ref in refs.items():
        y = poisoned(m)
        getattr(mod, fn)(x, y)
        assert_near_max(y, ref, 1e-5, f"{fn} ({schedule})")
    if schedule == "auto":
        source = translate_full(WHILES, filename="whiles.co", schedule="auto").source
        assert not re.search(r"\bfor j_step in\b", _kernel(source, "up_to_last_k0"))
        assert re.search(r"\bfor j_step in\b", _kernel(source, "overlap3_k0"))


def _kernel(source: str, name: str) -> str:
    return source.split(f"def {name}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


def test_every_kernel_is_checked() -> None:
    functions = set(re.findall(r"__co__ void (\w+)\(", PROGRAM.read_text()))
    assert functions == set(CASES)
    assert functions == set(FOLDS) | set(NOT_YET) | set(KEPT)
    assert DEVICE is not None


def test_a_skipped_column_leaves_the_loads_whole() -> None:
    """The hinge loss skips the target's column (``j != k``): its loads leave that term out and mask the
    value again (schedule/vecmasks.py), so Triton can read 16 bytes a thread."""
    body = _code("auto", "multi_margin_k0_blocked")
    vec = re.search(r"(\w+_vec) = \(r\[:, None\] < M\) & \(j < N\)\n", body)
    assert vec is not None and f"mask={vec.group(1)}" in body, body

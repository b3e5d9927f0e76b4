"""Memory-bound kernels in a sixth set of natural forms (tests/programs/membound_forms6.co, issue 27):
backward passes (softmax's, RMSNorm's, a bias gradient with a 2-D block of threads), cross entropy
with label smoothing and the target picked in the loop, per-row int8 quantisation, group norm with a
block per (n, group), whole-tensor totals added by one atomic a block, an embedding bag, a mean over
each row's own length, a largest difference, rows of a flat tensor (an index, a bumped view), a
LayerNorm writing f16, sums in f64, and sums over a prefix or a window whose extent is a parameter.
Each runs under both schedules in the interpreter against float64 torch on ragged sizes, outputs
poisoned with NaN (zeroed where the kernel adds into them by atomics); what ``--schedule auto``
makes of each loop is checked on the generated code."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, assert_folded, assert_near_max, check_forms, form_sizes, load_once, poisoned, randn

from croq2triton.api import translate_full

PROGRAM = Path(__file__).parent / "programs" / "membound_forms6.co"
H = torch.float16
F32 = torch.float32
F64 = torch.float64
I32 = torch.int32
S8 = torch.int8


def _d(x: torch.Tensor) -> torch.Tensor:
    return x.double()


def _ints(shape: tuple[int, ...], lo: int, hi: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(lo, hi, shape, generator=g).to(I32).to(DEVICE)


def _softmax_bwd(y: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    y, dy = _d(y), _d(dy)
    return y * (dy - (dy * y).sum(1, keepdim=True))


def _rmsnorm_bwd(x: torch.Tensor, w: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    x, w, dy = _d(x), _d(w), _d(dy)
    rstd = 1 / torch.sqrt((x * x).mean(1, keepdim=True) + 1e-5)
    c = (dy * w * x).mean(1, keepdim=True) * rstd * rstd
    return rstd * (dy * w - x * c)


def _xent_smooth(x: torch.Tensor, t: torch.Tensor, eps: float) -> torch.Tensor:
    xd = _d(x)
    picked = xd.gather(1, t.long()[:, None])[:, 0]
    return torch.logsumexp(xd, 1) - (1 - eps) * picked - eps * xd.mean(1)


def _quant(x: torch.Tensor) -> list[torch.Tensor]:
    a = x.abs().amax(1, keepdim=True)
    v = _d(x * (torch.tensor(127.0, dtype=F32) / a))  # the kernel's f32 product, rounded half away from 0
    return [torch.sign(v) * torch.floor(v.abs() + 0.5), _d(a[:, 0]) / 127]


def _group_norm(x: torch.Tensor, groups: int) -> torch.Tensor:
    b, c, n = x.shape
    xg = _d(x).reshape(b, groups, -1)
    y = (xg - xg.mean(2, keepdim=True)) / torch.sqrt(xg.var(2, unbiased=False, keepdim=True) + 1e-5)
    return y.reshape(b, c, n)


def _bag(w: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    return _d(w)[idx.long()].sum(1)


def _masked_mean(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
    keep = torch.arange(x.shape[1], device=x.device)[None, :] < n[:, None]
    return torch.where(keep, _d(x), 0.0).sum(1) / n.clamp(min=1)


def _layernorm(x: torch.Tensor, g: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    xd = _d(x)
    mu = xd.mean(1, keepdim=True)
    return (xd - mu) / torch.sqrt(xd.var(1, unbiased=False, keepdim=True) + 1e-5) * _d(g) + _d(b)


def _probs(m: int, n: int, seed: int) -> torch.Tensor:
    return torch.softmax(randn(m, n, seed=seed) * 2, 1)


Inputs = Callable[[int, int], list[object]]
Outputs = Callable[[int, int], list[tuple[tuple[int, ...], torch.dtype]]]
CASES: dict[str, tuple[Inputs, Outputs, Callable[..., list[torch.Tensor]], float]] = {
    "softmax_bwd": (
        lambda m, n: [_probs(m, n, m + 1), randn(m, n, seed=n + 2)],
        lambda m, n: [((m, n), F32)],
        lambda y, dy: [_softmax_bwd(y, dy)],
        1e-5,
    ),
    "rmsnorm_bwd": (
        lambda m, n: [randn(m, n, seed=m + 3), randn(n, seed=n + 4), randn(m, n, seed=m + 5)],
        lambda m, n: [((m, n), F32)],
        lambda x, w, dy: [_rmsnorm_bwd(x, w, dy)],
        1e-5,
    ),
    "bias_grad_2d": (
        lambda m, n: [randn(m, n, seed=n + 6)],
        lambda m, n: [((n,), F32)],
        lambda dy: [_d(dy).sum(0)],
        1e-5,
    ),
    "xent_smooth": (
        lambda m, n: [randn(m, n, seed=m + 7) * 3, _ints((m,), 0, n, n + 8), 0.1],
        lambda m, n: [((m,), F32)],
        lambda x, t, eps: [_xent_smooth(x, t, eps)],
        1e-5,
    ),
    "quant_rows_s8": (
        lambda m, n: [randn(m, n, seed=n + 9)],
        lambda m, n: [((m, n), S8), ((m,), F32)],
        lambda x: _quant(x),
        1e-6,
    ),
    "group_norm": (
        lambda m, n: [randn(m % 3 + 2, 8, n, seed=m + 10) * 2 + 0.5, 4],
        lambda m, n: [((m % 3 + 2, 8, n), F32)],
        lambda x, g: [_group_norm(x, g)],
        1e-4,
    ),
    "embedding_bag": (
        lambda m, n: [randn(50, n, seed=n + 11), _ints((m, 7), 0, 50, m + 12)],
        lambda m, n: [((m, n), F32)],
        lambda w, idx: [_bag(w, idx)],
        1e-5,
    ),
    "masked_mean_len": (
        lambda m, n: [randn(m, n, seed=m + 13), _ints((m,), 0, n + 1, n + 14)],
        lambda m, n: [((m,), F32)],
        lambda x, n_: [_masked_mean(x, n_)],
        1e-5,
    ),
    "max_abs_diff": (
        lambda m, n: [randn(m, n, seed=m + 15), randn(m, n, seed=n + 16)],
        lambda m, n: [((m,), F32)],
        lambda a, c: [(_d(a) - _d(c)).abs().amax(1)],
        1e-7,  # (the difference rounded to f32)
    ),
    "row_sums_flat": (
        lambda m, n: [randn(m * n, seed=m + 17), n],
        lambda m, n: [((m,), F32)],
        lambda x, n: [_d(x).reshape(-1, n).sum(1)],
        1e-5,
    ),
    "row_rms_bump": (
        lambda m, n: [randn(m * n, seed=n + 18), n],
        lambda m, n: [((m,), F32)],
        lambda x, n: [torch.sqrt((_d(x).reshape(-1, n) ** 2).mean(1))],
        1e-5,
    ),
    "layernorm_to_f16": (
        lambda m, n: [randn(m, n, seed=m + 19) * 2 + 1, randn(n, seed=n + 20), randn(n, seed=n + 21)],
        lambda m, n: [((m, n), H)],
        lambda x, g, b: [_layernorm(x, g, b)],
        1e-3,
    ),
    "row_sums_f64": (
        lambda m, n: [randn(m, n, seed=n + 22)],
        lambda m, n: [((m,), F64)],
        lambda x: [_d(x).sum(1)],
        1e-12,
    ),
    "prefix_sums_k": (
        lambda m, n: [randn(m, n, seed=m + 23), n - 13],
        lambda m, n: [((m,), F32)],
        lambda x, k: [_d(x)[:, :k].sum(1)],
        1e-5,
    ),
    "window_max": (
        lambda m, n: [randn(m, n, seed=n + 24), 5, n // 2],
        lambda m, n: [((m,), F32)],
        lambda x, off, w: [_d(x)[:, off : off + w].amax(1)],
        0.0,
    ),
    "mse_rows_f16": (
        lambda m, n: [randn(m, n, dtype=H, seed=m + 25), randn(m, n, dtype=H, seed=n + 26)],
        lambda m, n: [((m,), H)],
        lambda a, c: [((_d(a) - _d(c)) ** 2).mean(1)],
        1e-3,
    ),
    "rms_local_cache": (
        lambda m, n: [randn(m, n, seed=m + 34)],
        lambda m, n: [((m, n), F32)],
        lambda x: [_d(x) / torch.sqrt((_d(x) ** 2).mean(1, keepdim=True) + 1e-5)],
        1e-5,
    ),
}
# kernels that add into their output by atomics: the output zeroed, not poisoned (the caller's part)
ATOMIC_CASES: dict[str, tuple[Inputs, Callable[..., torch.Tensor], float]] = {
    "total_sum": (lambda m, n: [randn(m * n, seed=m + 27)], lambda x: _d(x).sum(), 1e-5),
    "dot_grid": (
        lambda m, n: [randn(m * n, seed=m + 28), randn(m * n, seed=n + 29)],
        lambda a, c: (_d(a) * _d(c)).sum(),
        1e-5,
    ),
    "absmax_all": (lambda m, n: [randn(m, n, seed=n + 30)], lambda x: _d(x).abs().amax(), 0.0),
}
SIZES = [(37, 300), (5, 2100)]


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_each_form_in_both_schedules(schedule: str, m: int, n: int) -> None:
    check_forms(PROGRAM, schedule, CASES, m, n)


@pytest.mark.parametrize(("schedule", "m", "n"), form_sizes(SIZES))
def test_whole_tensor_totals_by_atomics(schedule: str, m: int, n: int) -> None:
    mod = load_once(PROGRAM, schedule)
    for fn, (make, ref, tol) in ATOMIC_CASES.items():
        ins = make(m, n)
        out = torch.zeros(1, device=DEVICE)
        getattr(mod, fn)(*ins, out)
        assert_near_max(out, ref(*ins).reshape(1), tol, f"{fn} at {m} x {n} ({schedule})")


def test_a_prefix_longer_than_the_row_reads_zeros() -> None:
    """``foreach j in [K]`` with ``K`` past the row's end: the reads past it are zero (LANGUAGE.md 14.3),
    in both schedules."""
    x = randn(9, 70, seed=31)
    for s in ("source", "auto"):
        y = poisoned(9)
        load_once(PROGRAM, s).prefix_sums_k(x, 100, y)
        assert_near_max(y, _d(x).sum(1), 1e-5, f"a prefix past the row ({s})")


@cache
def _source(schedule: str) -> str:
    return translate_full(PROGRAM.read_text(), filename="membound_forms6.co", schedule=schedule).source


def _code(schedule: str, kernel: str) -> str:
    return _source(schedule).split(f"def {kernel}(")[1].split("@triton.jit")[0].split("@_rt.launcher")[0]


# kernel -> (the counters of its loops along the long axis as written, the reductions auto makes of them)
FOLDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "softmax_bwd": (("j", "j_2"), ("tl.sum(",)),
    "rmsnorm_bwd": (("j", "j_2", "j_3"), ("tl.sum(",)),
    "quant_rows_s8": (("j", "j_2"), ("tl.max(",)),
    # (the target's logit picked in the loop, ``if (j == k) xt = v;``: the value the last position where the
    # condition holds assigns, schedule/foldloops.py)
    "xent_smooth": (("j", "j_2"), ("tl.max(", "tl.sum(")),
    # (each thread striding over its group's elements, the partials through two shared trees)
    "group_norm": (("i",), ("tl.sum(",)),
    # (16 elements a thread, a shared tree, one atomic a block)
    "total_sum": (("k",), ("tl.sum(", "tl.atomic_add(")),
    # (a grid-stride loop, then the warp's shuffles: one atomic a warp)
    "dot_grid": (("k", "s"), ("tl.sum(", "tl.atomic_add(")),
    # (the [8, 32] partials read back along the first axis by the threads of ty == 0: part.at(k, tx) is an
    # element of the stored tile broadcast over ty, schedule/forward.py; the loop over k one reduction,
    # schedule/selectfold.py; the partials kept as totals, schedule/totals.py)
    "bias_grad_2d": (("i", "k"), ("tl.sum(",)),
    # (each thread's run of 8 elements, t * 8 + k through a flat index split by division: one contiguous
    # tile, the counter's axis the fast one, schedule/policy.py lane_runs; then thread 0's fold of the
    # partials, a reduction of the tile, schedule/selectfold.py)
    "absmax_all": (("k", "u"), ("tl.max(", "tl.atomic_max(")),
    # (each thread's 16 values in a local array: both loops runs of each lane, one tile each, schedule/policy.py
    # lane_runs; the tile stored into the array's scratch area and read back forwarded in registers after the
    # folding, schedule/forward.py: no scratch, the row read once)
    "rms_local_cache": (("k", "k_2"), ("tl.sum(",)),
    # (the rows of the bag gathered by index, a thread per column)
    "embedding_bag": (("k",), ("tl.sum(",)),
    "masked_mean_len": (("j",), ("tl.sum(",)),
    "max_abs_diff": (("j",), ("tl.max(",)),
    "row_sums_flat": (("j",), ("tl.sum(",)),
    "row_rms_bump": (("j",), ("tl.sum(",)),
    "layernorm_to_f16": (("j", "j_2", "j_3"), ("tl.sum(",)),
    "row_sums_f64": (("j",), ("tl.sum(",)),
    "prefix_sums_k": (("j",), ("tl.sum(",)),
    "window_max": (("j",), ("tl.max(",)),
    "mse_rows_f16": (("j",), ("tl.sum(",)),
}
NOT_YET: dict[str, tuple[tuple[str, ...], tuple[str, ...], str]] = {}


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


def test_every_kernel_is_checked() -> None:
    functions = set(re.findall(r"__co__ void (\w+)\(", PROGRAM.read_text()))
    assert functions == set(CASES) | set(ATOMIC_CASES)
    assert functions == set(FOLDS) | set(NOT_YET)
    assert DEVICE is not None


PICKS = """
__co__ void pick_at(global f32 [M, N] x, global s32 [M] k, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 p = 7.0f;
      foreach j in [N] { if (j == k.at(r)) p = x.at(r, j); }
      y.at(r) = p;
    }
  }
}
__co__ void last_above(global f32 [M, N] x, f32 thr, global s32 [M] at, global f32 [M] val) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable s32 a = -1;
      mutable f32 v = 0.0f;
      foreach j in [N] { f32 u = x.at(r, j); if (u > thr) { a = j; v = u * 2.0f; } }
      at.at(r) = a;
      val.at(r) = v;
    }
  }
}
__co__ void pick_reads_itself(global f32 [M, N] x, f32 thr, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 p = 0.0f;
      foreach j in [N] { f32 u = x.at(r, j); if (u > thr) p = u - p; }
      y.at(r) = p;
    }
  }
}
__co__ void pick_when_above_it(global f32 [M, N] x, global f32 [M] y) {
  parallel b by cdiv(M, 64) : block, t by 64 : thread {
    int r = b # t;
    if (r < M) {
      mutable f32 p = 0.0f;
      foreach j in [N] { f32 u = x.at(r, j); if (u > p + 1.0f) p = u; }
      y.at(r) = p;
    }
  }
}
"""


def _picks_code() -> str:
    return translate_full(PICKS, filename="picks.co", schedule="auto").source


@pytest.mark.parametrize("n", [70, 20000])
def test_values_picked_under_a_condition(n: int, tmp_path: Path) -> None:
    """``if (j == k) p = x.at(r, j);`` and ``if (u > thr) { a = j; v = u * 2; }``: the value the last
    iteration where the condition holds assigns, else the start: folded under auto (a row in registers,
    and in blocks past 16384 elements, in order), exact (a picked ``-0.0`` keeps its sign, a NaN stays),
    the same as the loop in both schedules; rows where no position holds keep the start."""
    from croq2triton.api import load

    code = _picks_code()
    for fn in ("pick_at", "last_above"):
        body = code.split(f"def {fn}_k0(")[1].split("@_rt.launcher")[0]
        assert not re.search(r"\bfor j in\b", body.split(f"def {fn}_k0_blocked(")[0]), fn
    m = 9 if n < 1000 else 3
    x = randn(m, n, seed=n + 40)
    k = _ints((m,), 0, n, 41)
    k[1] = n + 3  # past the row: no position holds, the start stays
    x[0, int(k[0])] = -0.0
    x[2, int(k[2])] = float("nan")
    thr = 2.5
    x[m - 1, :] = -1.0  # no element above the threshold
    path = tmp_path / "picks.co"
    path.write_text(PICKS)
    xd = _d(x).cpu()
    want_p = torch.tensor([xd[i, int(k[i])] if int(k[i]) < n else 7.0 for i in range(m)], dtype=F64)
    above = xd > thr
    pos = torch.where(above, torch.arange(n)[None, :], -1).amax(1)
    want_v = torch.where(pos >= 0, xd.gather(1, pos.clamp(min=0)[:, None])[:, 0] * 2, 0.0)
    for s in ("source", "auto"):
        if s == "source" and n > 1000:
            continue  # (the loop as written, element by element: the short row covers it)
        mod = load(path, schedule=s)
        y = poisoned(m)
        mod.pick_at(x, k, y)
        got = y.cpu().double()
        assert torch.equal(torch.isnan(got), torch.isnan(want_p)), s
        same = torch.isnan(got) | (got == want_p)
        assert same.all(), (s, got, want_p)
        assert torch.signbit(got[0]) and got[0] == 0, s  # the picked -0.0
        a, v = poisoned(m, dtype=I32), poisoned(m)
        mod.last_above(x, thr, a, v)
        assert torch.equal(a.cpu().long(), pos), s
        assert torch.equal(v.cpu().double(), want_v), s


def test_picks_that_read_their_own_value_stay(tmp_path: Path) -> None:
    """``if (u > thr) p = u - p;`` (the value reads what it replaces) and ``if (u > p + 1) p = u;`` (the
    condition does): no value picked last, each a loop per lane under auto; both schedules agree with
    the loop run in Python."""
    from croq2triton.api import load

    code = _picks_code()
    for fn in ("pick_reads_itself", "pick_when_above_it"):
        assert re.search(r"\bfor j in\b", code.split(f"def {fn}_k0(")[1].split("@_rt.launcher")[0]), fn
    x = randn(9, 70, seed=42)
    xd = _d(x).cpu()
    want_a = torch.zeros(9, dtype=F64)
    want_b = torch.zeros(9, dtype=F64)
    for j in range(70):
        u = xd[:, j]
        want_a = torch.where(u > 0.5, u - want_a, want_a)
        want_b = torch.where(u > want_b + 1, u, want_b)
    path = tmp_path / "picks.co"
    path.write_text(PICKS)
    for s in ("source", "auto"):
        mod = load(path, schedule=s)
        y, z = poisoned(9), poisoned(9)
        mod.pick_reads_itself(x, 0.5, y)
        mod.pick_when_above_it(x, z)
        assert_near_max(y, want_a, 1e-6, f"a pick reading itself ({s})")
        assert_near_max(z, want_b, 0.0, f"a pick above itself ({s})")


RUNS = """
__co__ void runs_of_8(global f32 [L] x, global f32 [Q] y) {
  parallel b by cdiv(Q, 128) : block, t by 128 : thread {
    int q = b # t;
    mutable f32 s = 0.0f;
    foreach k in [8] { s += x.at(q * 8 + k); }
    if (q < Q) y.at(q) = s;
  }
}
__co__ void lanes_adjacent(global f32 [L] x, global f32 [Q] y) {
  parallel b by cdiv(Q, 128) : block, t by 128 : thread {
    mutable f32 s = 0.0f;
    foreach k in [8] { s += x.at(b * 1024 + k * 128 + t); }
    if (b # t < Q) y.at(b # t) = s;
  }
}
__co__ void runs_overlapping(global f32 [L] x, global f32 [Q] y) {
  parallel b by cdiv(Q, 128) : block, t by 128 : thread {
    int q = b # t;
    mutable f32 s = 0.0f;
    foreach k in [8] { s += x.at(q * 4 + k); }
    if (q < Q) y.at(q) = s;
  }
}
"""


def test_short_runs_of_each_lane_fold_into_one_tile(tmp_path: Path) -> None:
    """``x.at(q * 8 + k)``, ``k`` in ``[8]``: each lane's run of 8 elements, one contiguous tile with the
    counter's axis trailing (fast) under auto; lanes 1 apart (``k * 128 + t``: the lanes read along the
    line already) and runs of 8 that overlap (``q * 4 + k``) stay loops.  All agree with float64."""
    from croq2triton.api import load

    code = translate_full(RUNS, filename="runs.co", schedule="auto").source

    def body(fn: str) -> str:
        return code.split(f"def {fn}_k0(")[1].split("@_rt.launcher")[0].split("@triton.jit")[0]

    assert not re.search(r"\bfor k in\b", body("runs_of_8")) and "tl.sum(" in body("runs_of_8")
    assert re.search(r"k = tl\.arange\(0, \w+\)\[None, :\]", body("runs_of_8")), "the counter's axis not trailing"
    assert re.search(r"\bfor k in\b", body("lanes_adjacent"))
    assert re.search(r"\bfor k in\b", body("runs_overlapping"))
    q = 300
    x = randn(3 * 1024 + 5, seed=50)  # (past the last run: lanes_adjacent reads to 3 * 1024)
    xd = _d(x).cpu()
    path = tmp_path / "runs.co"
    path.write_text(RUNS)
    for s in ("source", "auto"):
        mod = load(path, schedule=s)
        y = poisoned(q)
        mod.runs_of_8(x, y)
        assert_near_max(y, xd[: 8 * q].reshape(q, 8).sum(1), 1e-6, f"runs of 8 ({s})")
        y = poisoned(q)
        mod.lanes_adjacent(x, y)
        idx = torch.arange(q)
        want = torch.stack([xd[(idx // 128) * 1024 + k * 128 + idx % 128] for k in range(8)]).sum(0)
        assert_near_max(y, want, 1e-6, f"lanes adjacent ({s})")
        y = poisoned(q)
        mod.runs_overlapping(x, y)
        want = torch.stack([xd[idx * 4 + k] for k in range(8)]).sum(0)
        assert_near_max(y, want, 1e-6, f"overlapping runs ({s})")


COLUMN_PARTS = """
__co__ void col_max_2d(global f32 [M, N] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block {
    shared f32 [8, 32] part;
    parallel {ty, tx} by [8, 32] : thread {
      int c = b # tx;
      mutable f32 m = -inf;
      foreach i in [cdiv(M, 8)] {
        if (i * 8 + ty < M && c < N) m = __max(m, x.at(i * 8 + ty, c));
      }
      part.at(ty, tx) = m;
      sync.shared;
      if (ty == 0 && c < N) {
        mutable f32 tot = -inf;
        foreach k in [8] { tot = __max(tot, part.at(k, tx)); }
        y.at(c) = tot;
      }
    }
  }
}
__co__ void col_sums_neighbour(global f32 [M, N] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block {
    shared f32 [8, 32] part;
    parallel {ty, tx} by [8, 32] : thread {
      int c = b # tx;
      mutable f32 acc = 0.0f;
      foreach i in [cdiv(M, 8)] {
        if (i * 8 + ty < M && c < N) acc += x.at(i * 8 + ty, c);
      }
      part.at(ty, tx) = acc;
      sync.shared;
      if (ty == 0 && c < N) {
        mutable f32 tot = 0.0f;
        foreach k in [8] { tot += part.at(k, (tx + 1) % 32); }
        y.at(c) = tot;
      }
    }
  }
}
"""


def test_partials_of_a_2d_block_read_back_along_its_first_axis(tmp_path: Path) -> None:
    """``part.at(k, tx)`` for ``k`` in ``[8]`` after each thread stored ``part.at(ty, tx)``: the element of
    the stored tile at ``(k, tx)``, the same for every ``ty`` (forwarded in registers, then one ``tl.max``
    of the tile over its first axis); a thread reading its neighbour column's partials (``(tx + 1) %
    32``) is not one element of the tile per lane: read back from scratch as lifted.  Both agree with
    float64 in both schedules."""
    from croq2triton.api import load

    code = translate_full(COLUMN_PARTS, filename="parts.co", schedule="auto").source

    def body(fn: str) -> str:
        return code.split(f"def {fn}_k0(")[1].split("@_rt.launcher")[0].split("@triton.jit")[0]

    assert "_scratch" not in body("col_max_2d") and "tl.max(" in body("col_max_2d")
    assert not re.search(r"\bfor k in\b", body("col_max_2d"))
    assert "part_scratch" in body("col_sums_neighbour")
    m, n = 45, 70
    x = randn(m, n, seed=60)
    xd = _d(x).cpu()
    sums = xd.sum(0)
    shifted = torch.tensor(
        [sums[(c // 32) * 32 + (c % 32 + 1) % 32] if (c // 32) * 32 + (c % 32 + 1) % 32 < n else 0.0 for c in range(n)],
        dtype=F64,
    )
    path = tmp_path / "parts.co"
    path.write_text(COLUMN_PARTS)
    for s in ("source", "auto"):
        mod = load(path, schedule=s)
        y = poisoned(n)
        mod.col_max_2d(x, y)
        assert_near_max(y, xd.amax(0), 0.0, f"column maxima ({s})")
        y = poisoned(n)
        mod.col_sums_neighbour(x, y)
        assert_near_max(y, shifted, 1e-6, f"the neighbour column's sums ({s})")


def test_an_embedding_bag_reads_each_gathered_row_along_the_lanes() -> None:
    """``w.at(idx.at(p, k), d)`` with the lanes along ``d``: the rows the counter picks through a loaded
    index are read along the lanes, so the counter's axis leads the folded tile and the lanes' stays
    the fast one (schedule/foldloops.py ``_lanes_contiguous``: the index load is the same for every lane,
    the gather's row steps with the counter through it); the numbers are checked with the other forms."""
    body = _code("auto", "embedding_bag_k0")
    assert re.search(r"k = tl\.arange\(0, BLOCK_J\)\[:, None\]", body), "the counter's axis not leading"
    assert "d[None, :] * w_stride_1" in body


@pytest.mark.parametrize("kernel", ["row_sums_flat", "row_rms_bump"])
def test_rows_of_a_flat_tensor_are_read_along_each_row(kernel: str) -> None:
    """``x.at(r * N + j)`` / ``x.view(N).from(r * N)``, ``j`` in ``[N]``: each lane's row of a flat tensor,
    a run of ``N`` elements (schedule/foldloops.py ``lane_run``, a lane's coefficient the loop's extent):
    a row a program under auto, the counter's axis the tile's fast one."""
    body = _code("auto", f"{kernel}_k0")
    assert re.search(r"j = tl\.arange\(0, BLOCK_J\)\[None, :\]", body), "the counter's axis not trailing"
    assert "t = tl.arange(0, 1)" in body, "the rows not one a program"

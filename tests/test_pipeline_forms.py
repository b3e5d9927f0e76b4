"""Issues 25/28: software pipelines and attention in other forms (tests/programs/pipeline_forms/*.co).

Warp-specialised producer/consumer pipelines, written the ways a kernel engineer writes them: rings of
shared buffers with a full and an empty event a slot, filled by one elected thread, a warp or a
warpgroup with ``tma.copy.async`` or ``dma.copy.async``; futures ``wait``ed instead of events,
``rotate``d or ``swap``ped; persistent tile loops whose ring position runs on across tiles; a producer
that also stages a bias once a tile, consumers that finish the tile through shared memory and a TMA
store; split-K with a pipeline in each split; a batched pipeline on a 3-D grid; FlashAttention-2 with
a K/V ring and an online softmax (and a causal one); memory-bound kernels staged through a ring; and
near misses (a slot read before its event, a ring of one slot, a producer that does not wait for the
slot to be free). Each case:

* computes its function in both schedules in Triton's interpreter: random inputs on ragged sizes,
  outputs poisoned with NaN, against a float64 reference (or, for a near miss the translator refuses,
  is refused with a diagnostic naming the line);
* if GEMM-shaped, under ``--schedule auto`` is proved a contraction (lift/contraction.py), and (slow)
  compiles for sm_90a to ``wgmma`` with a block tile of at least 128 x 128 (the compile script and
  sizes of tests/test_gemm_forms.py).

A case marked xfail(strict=True) is a form the translator does not handle yet, with the reason.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import flat, poisoned, randn
from test_gemm_forms import _COMPILE_SCRIPT, SIZES

from croq2triton.api import load, translate_full
from croq2triton.errors import CroqError

FORMS = Path(__file__).resolve().parent / "programs" / "pipeline_forms"
MARK = "a contraction: croq2triton/lift/contraction.py proves it"
F16, F32 = torch.float16, torch.float32
D = torch.float64

Args = list[object]


@dataclass(frozen=True)
class Case:
    name: str  # tests/programs/pipeline_forms/NAME.co
    sizes: tuple[int, ...]
    args: Callable[..., Args]  # sizes -> every argument (the output among them)
    ref: Callable[..., torch.Tensor]  # (the arguments as float64 on the CPU, before the call) -> the output
    fn: str = "gemm"  # the function's name
    out: int = -1  # which argument is the output
    tol: float = 1e-3  # of max |ref|
    gemm: bool = True  # auto proves it a contraction
    why: str = ""  # xfail(strict) reason of the contraction / sm_90a checks
    wide_why: str | None = None  # ... of the sm_90a check where it differs
    run_why: str = ""  # xfail(strict) reason of the run in both schedules
    kernels: int = 1  # kernels the sm_90a check expects
    compile_sizes: tuple[tuple[str, int], ...] = ()  # the sm_90a check's sizes besides M, N, K, BS
    refused: str = ""  # a near miss the translator must refuse: a phrase of its diagnostic


def _r(*shape: int, dtype: torch.dtype = F16, seed: int) -> torch.Tensor:
    return randn(*shape, seed=seed).to(dtype)


def _ab(m: int, n: int, k: int, out: torch.dtype = F32) -> Args:
    return [_r(m, k, seed=1), _r(n, k, seed=2), poisoned(m, n, dtype=out)]


def _abt(a: torch.Tensor, b: torch.Tensor, o: torch.Tensor) -> torch.Tensor:
    return a @ b.T


RAGGED = (197, 301, 91)


def _attn(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False) -> torch.Tensor:
    s = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def _qkv(h: int, sq: int, sk: int) -> Args:
    return [_r(h, sq, 64, seed=1), _r(h, sk, 64, seed=2), _r(h, sk, 64, seed=3), poisoned(h, sq, 64, dtype=F16)]


CASES: list[Case] = [
    Case("ring3_ncols_2c", RAGGED, _ab, _abt),
    Case("rotate3_dma", RAGGED, _ab, _abt),
    Case("persistent_ring", (300, 301, 150), _ab, _abt),
    Case("persistent_typed", (300, 301, 150), _ab, _abt),
    Case("near_typed_half_tile", RAGGED, _ab, _abt,
         refused="a copy out of a buffer into a larger view"),
    Case("bias_relu_f16_tma", RAGGED,
         lambda m, n, k: [_r(m, k, seed=1), _r(n, k, seed=2), randn(n, seed=3), poisoned(m, n, dtype=F16)],
         lambda a, b, bias, o: torch.relu(a @ b.T + bias), tol=1e-2),
    Case("splitk_pipe", (197, 301, 300), _ab, _abt, kernels=2,
         why="split-K through a workspace: each split's launch stores a partial tile (its K tiles ks * per + k: 'an"
             " operand indexed by an expression of the group index'), a second launch adds the planes; the"
             " analysis proves one launch's stores, not a sum across launches", wide_why=""),
    Case("batched_pipe", (97, 70, 45, 3),
         lambda m, n, k, bs: [_r(bs, m, k, seed=1), _r(bs, n, k, seed=2), poisoned(bs, m, n)],
         lambda a, b, o: a @ b.transpose(1, 2)),
    Case("dma_ring3_futures", RAGGED, _ab, _abt),
    Case("warp_producer", RAGGED, lambda m, n, k: _ab(m, n, k, out=F16), _abt, tol=1e-2),
    Case("kn_tma_load", RAGGED, lambda m, n, k: [_r(m, k, seed=1), _r(k, n, seed=2), poisoned(m, n)],
         lambda a, b, o: a @ b),
    Case("consumers_alt_k", RAGGED, _ab, _abt,
         run_why="refused: 'warp roles that wait on or trigger events in a loop inside their main loop' (the"
                 " producer's loop over the two consumers' tiles; lift/collapse.py merges one loop a role)",
         why="refused as above (lowered as written by no schedule)"),
    # near misses: a race or a degenerate ring, run in the order the events state (or refused)
    Case("near_read_before_wait", RAGGED, _ab, _abt),
    Case("near_ring_of_one", RAGGED, _ab, _abt),
    Case("near_producer_ahead", (197, 301, 200), _ab, _abt),
    Case("attn_kv_ring", (2, 150, 133), _qkv, lambda q, k, v, o: _attn(q, k, v), fn="attn", tol=1e-2, gemm=False),
    Case("attn_causal_ring", (2, 150, 150), _qkv, lambda q, k, v, o: _attn(q, k, v, causal=True), fn="attn",
         tol=1e-2, gemm=False),
    Case("rowsum_ring", (150, 333), lambda m, n: [randn(m, n, seed=1), poisoned(m)], lambda x, o: x.sum(1),
         fn="rowsum", gemm=False),
    Case("rowsum_ring_typed", (150, 333), lambda m, n: [randn(m, n, seed=1), poisoned(m)], lambda x, o: x.sum(1),
         fn="rowsum", gemm=False),
    Case("copy_ring_scale", (70, 333), lambda m, n: [_r(m, n, seed=1), poisoned(m, n)], lambda x, o: 2 * x + 1,
         fn="affine", gemm=False),
]  # fmt: skip


def test_every_program_has_a_case() -> None:
    assert sorted(p.stem for p in FORMS.glob("*.co")) == sorted(c.name for c in CASES)
    for p in FORMS.glob("*.co"):
        assert p.read_text().startswith("// "), p.name


def _source(case: Case, schedule: str) -> str:
    path = FORMS / f"{case.name}.co"
    return translate_full(path.read_text(), filename=path.name, schedule=schedule).source


def _xf(why: str) -> list[pytest.MarkDecorator]:
    return [pytest.mark.xfail(strict=True, reason=why)] if why else []


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_xf(c.why)) for c in CASES if not c.refused])
def test_auto_proves_the_gemm(case: Case) -> None:
    assert (MARK in flat(_source(case, "auto"))) == case.gemm


def _check(got: torch.Tensor, ref: torch.Tensor, tol: float) -> None:
    got = got.double().cpu()
    assert got.shape == ref.shape
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    scale = float(ref.abs().max())
    err = float((got - ref).abs().max())
    assert err <= tol * scale, f"max |out - ref| = {err:.3g} > {tol} * max|ref| = {tol * scale:.3g}"


@pytest.mark.filterwarnings("ignore:croq2triton.*not 16-byte aligned:RuntimeWarning")
@pytest.mark.parametrize("schedule", ["source", "auto"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=_xf(c.run_why)) for c in CASES])
def test_it_computes_its_function(case: Case, schedule: str) -> None:
    path = FORMS / f"{case.name}.co"
    if case.refused:  # refused as a whole (an error) or the function left out with its diagnostic
        try:
            done = translate_full(path.read_text(), filename=path.name, schedule=schedule)
            msg = " ".join(d.message for d in done.diagnostics if d.severity == "error")
        except CroqError as e:
            msg = str(e)
            assert f"{path.name}:" in msg, msg
        assert case.refused in flat(msg), msg
        return
    mod = load(path, schedule=schedule)
    args = case.args(*case.sizes)
    before = [x.double().cpu() if isinstance(x, torch.Tensor) else x for x in args]
    getattr(mod, case.fn)(*args)
    out = args[case.out]
    assert isinstance(out, torch.Tensor)
    _check(out, case.ref(*before), case.tol)


@pytest.mark.slow
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=c.name, marks=_xf(c.why if c.wide_why is None else c.wide_why))
        for c in CASES
        if c.gemm and not c.refused
    ],
)
def test_auto_schedule_compiles_to_a_large_wgmma_tile(case: Case) -> None:
    sizes = {**SIZES, **dict(case.compile_sizes)}
    r = sm90.code(_COMPILE_SCRIPT, str(FORMS / f"{case.name}.co"), json.dumps(sizes), "{}")
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert "error" not in res, res.get("error")
    lines = res["lines"]
    assert isinstance(lines, list) and len(lines) == case.kernels, lines
    line = next(x for x in lines if ": dot " in x)
    tile = re.search(r": dot (\d+)x(\d+)x(\d+),", line)
    assert tile and "wgmma yes" in line, line
    assert int(tile.group(1)) >= 128 and int(tile.group(2)) >= 128, line


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_a_thread_role_beside_a_role_that_updates_memory_is_refused(schedule: str, tmp_path: Path) -> None:
    """copy_ring_scale with the producer also counting its chunks by ``__atomic_add``: the roles'
    program would run on the consumer's threads, each repeating the producer's atomic; refused with
    the role's line, never run with the count multiplied."""
    text = (FORMS / "copy_ring_scale.co").read_text()
    text = text.replace("global f32 [M, N] y)", "global f32 [M, N] y, global f32 [1] cnt)").replace(
        "          trigger full.at(c);\n",
        "          trigger full.at(c);\n          __atomic_add(cnt.at(0), 1.0f);\n",
        1,
    )
    assert "__atomic_add" in text
    path = tmp_path / "counted.co"
    path.write_text(text)
    with pytest.raises(CroqError, match="uses its thread index beside one that updates memory") as e:
        mod = load(path, schedule=schedule)
        mod.affine(_r(70, 333, seed=1), poisoned(70, 333), poisoned(1))
    assert "counted.co:" in str(e.value)

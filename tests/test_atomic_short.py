"""Atomics on 16-bit elements (LANGUAGE.md: ``__atomic_*`` on an element returns its old value).

Triton's atomics take 16-bit floats for ``add`` only and 16-bit integers for nothing (``atomic_max does
not support fp16``, ``atomic_add does not support int16``, and the interpreter adds no bf16): such a
kernel failed at launch with an internal error.  They are now a compare-and-swap loop over the
element's 16 bits (runtime/atomics.py ``rmw16``); 8-bit elements have no atomics in Triton at all and
are refused with the construct named.  Numerics in both schedules on ragged sizes, outputs poisoned:
lanes on distinct elements (each old value, each new one exact) and lanes colliding on a few
elements (sums of integers and maxima exact); the loop compiled for sm_90a."""

from __future__ import annotations

from pathlib import Path

import pytest
import sm90
import torch
from kernel_util import DEVICE, poisoned

from croq2triton.api import load_source, translate_full
from croq2triton.errors import CroqError

SCHEDULES = ("source", "auto")

KERNELS = """
__co__ void own_{op}_{t}(global {t} [N] a, global {t} [N] b, global {t} [N] old) {{
  parallel p by cdiv(N, 32) : block, q by 32 : thread {{
    if (p # q < N) old.at(p # q) = __atomic_{op}(a.at(p # q), b.at(p # q));
  }}
}}

__co__ void few_{op}_{t}(global {t} [N] b, global {t} [5] a) {{
  parallel p by cdiv(N, 32) : block, q by 32 : thread {{
    if (p # q < N) __atomic_{op}(a.at((p # q) % 5), b.at(p # q));
  }}
}}
"""

CASES = [(op, t) for t in ("f16", "bf16", "s16") for op in ("add", "min", "max", "exch")]
CASES = [c for c in CASES if c != ("add", "f16")]  # (Triton's own: tests/test_breadth_b.py)
CASES += [(op, "s16") for op in ("and", "or", "xor")]
SOURCE = (
    "".join(KERNELS.format(op=op, t=t) for op, t in CASES)
    + """
__co__ void block_max(global f16 [N] x, global f16 [1] m) {
  parallel p by N : block {
    __atomic_max(m.at(0), x.at(p));
  }
}
"""
)
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "s16": torch.int16}


@pytest.fixture(scope="module", params=SCHEDULES)
def mod(request: pytest.FixtureRequest) -> object:
    out = translate_full(SOURCE, filename="short.co", schedule=request.param)
    assert not out.failed, out.failed
    return load_source(out.source, f"atomic_short_{request.param}", translation=out)


def _values(n: int, t: str, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if t == "s16":
        return torch.randint(-3000, 3000, (n,), generator=g).to(torch.int16).to(DEVICE)
    return (torch.randn(n, generator=g) * 8).to(DT[t]).to(DEVICE)


def _applied(op: str, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if op == "add":
        return (a.float() + b.float()).to(a.dtype) if a.dtype.is_floating_point else a + b
    bitwise = {"and": torch.bitwise_and, "or": torch.bitwise_or, "xor": torch.bitwise_xor}
    return {"min": torch.minimum, "max": torch.maximum, "exch": lambda _, y: y, **bitwise}[op](a, b)


@pytest.mark.parametrize(("op", "t"), CASES)
def test_lanes_on_their_own_elements(mod: object, op: str, t: str) -> None:
    n = 77
    a, b = _values(n, t, 1), _values(n, t, 2)
    a0 = a.clone()
    old = poisoned(n, dtype=DT[t])
    getattr(mod, f"own_{op}_{t}")(a, b, old)
    assert torch.equal(old, a0)
    assert torch.equal(a, _applied(op, a0, b))


@pytest.mark.parametrize(("op", "t"), [c for c in CASES if c[0] in ("min", "max") or c[1] == "s16"])
def test_lanes_colliding_on_a_few_elements(mod: object, op: str, t: str) -> None:
    n = 203
    b, a = _values(n, t, 3), _values(5, t, 4)
    want = a.clone()
    for i in range(n):
        want[i % 5] = _applied(op, want[i % 5 : i % 5 + 1], b[i : i + 1])[0]
    if op == "exch":  # the last writer is any lane of the element's
        getattr(mod, f"few_{op}_{t}")(b, a)
        for k in range(5):
            assert bool((b[k::5] == a[k]).any())
        return
    getattr(mod, f"few_{op}_{t}")(b, a)
    assert torch.equal(a, want)


def test_one_lane_a_program(mod: object) -> None:
    x = _values(40, "f16", 5)
    m = torch.full((1,), -1000.0, dtype=torch.float16, device=DEVICE)
    mod.block_max(x, m)  # type: ignore[attr-defined]
    assert m.item() == x.max().item()


@pytest.mark.parametrize("t", ["s8", "u8", "f8_e4m3"])
def test_8_bit_atomics_are_refused_with_the_construct_named(t: str) -> None:
    out = translate_full(KERNELS.format(op="add", t=t), filename="eight.co", schedule="auto")
    err = out.failed[f"own_add_{t}"]
    assert isinstance(err, CroqError)
    assert f"'__atomic_add' on {t} elements" in str(err) and "8-bit" in str(err)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_loop_compiles_for_sm90(schedule: str, tmp_path: Path) -> None:
    src = tmp_path / "short.co"
    src.write_text(SOURCE)
    argv = ["compile", str(src), "--size", "N=100", "--schedule", schedule, "--emit", "ptx"]
    for f in ("own_max_f16", "few_add_s16", "own_exch_bf16", "own_add_bf16", "block_max"):
        argv += ["--func", f]
    r = sm90.croq(*argv)
    assert r.returncode == 0, r.stderr[-2000:]
    assert ".b16" in r.stdout and "atom.global" in r.stdout

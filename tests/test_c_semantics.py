"""C's arithmetic where it differs from Python's or Triton's defaults (tests/programs/c_semantics.co,
LANGUAGE.md 4.4), each found by a probe of 44 programs on 2026-12-06 and wrong before:

* a division of two f16 values is rounded to f16 (Triton divides 16-bit floats in f32 and kept the
  f32 quotient: 1/3 was 0.3333333432, the f16 quotient is 0.333251953125);
* ``~`` of a u8 / u16 value is an ``int`` after C's integer promotions (``~5`` is -6; was 250);
* host scalars wrap or round to their types: ``u8 z = 250; z = z + 10;`` is 4 (was 260), ``s8``
  120 + 10 is -126 (was 130), an ``s32`` past its range wraps (was a torch RuntimeError from the
  launcher), an ``f16`` constant product is an f16 value.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, load_once, poisoned

PROGRAM = Path(__file__).parent / "programs" / "c_semantics.co"
SCHEDULES = ["source", "auto"]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_an_f16_quotient_is_rounded_to_f16(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    g = torch.Generator().manual_seed(1)
    a = (torch.rand(37, generator=g) * 8 + 0.5).half()
    b = (torch.rand(37, generator=g) * 8 + 0.5).half()
    a[0], b[0] = 1.0, 3.0
    q = poisoned(37)
    mod.f16_quotient(a.to(DEVICE), b.to(DEVICE), q)
    want = (a.float() / b.float()).half().float()  # the f32 quotient rounded once to f16
    assert torch.equal(q.cpu(), want), (q.cpu() - want).abs().max()
    assert q[0].item() == 0.333251953125


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_bitwise_not_promotes_narrow_integers_to_int(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    g = torch.Generator().manual_seed(2)
    b = torch.randint(0, 256, (45,), generator=g, dtype=torch.uint8)
    h = torch.randint(0, 65536, (45,), generator=g, dtype=torch.int32).to(torch.uint16)
    o = torch.full((45,), -777777, dtype=torch.int32, device=DEVICE)
    o16 = o.clone()
    mod.inverted(b.to(DEVICE), h.to(DEVICE), o, o16)
    assert torch.equal(o.cpu(), -(b.to(torch.int32)) - 1)
    assert torch.equal(o16.cpu(), -(h.to(torch.int32)) - 1)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_host_scalars_wrap_and_round_to_their_types(schedule: str) -> None:
    mod = load_once(PROGRAM, schedule)
    x = torch.zeros(4, dtype=torch.int32, device=DEVICE)
    o = mod.host_wraps(x, 2147483647)
    h = torch.tensor(0.1, dtype=torch.float16)
    h = (h.float() * 3.0).half()  # f16 h = 0.1f; h = h * 3.0f (rounded to f16 at each store)
    want = [4, -126, -(2**31), -(2**31), int(h.float().item() * 10000.0)]
    assert o.cpu().tolist() == want

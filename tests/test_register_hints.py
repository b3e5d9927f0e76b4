"""``call croq::cuda::setreg_inc(n)`` / ``setreg_dec(n)`` (LANGUAGE.md 7.7: compiler builtins that
move registers between warpgroups): Triton allocates a program's registers itself, so they lift to
no statement and change no result; a count the register file cannot take (not a constant multiple
of 8 from 24 to 256) is an error at the call."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import DEVICE, poisoned

from croq2triton.api import load_source, translate_full
from croq2triton.errors import CroqError

PIPELINE = (Path(__file__).parent / "programs" / "pipeline_1p2c.co").read_text()
# the producer gives registers away, the consumers take them (as warp-specialized GEMMs do)
HINTED = PIPELINE.replace(
    "inthreads.async (role == 2) {", "inthreads.async (role == 2) {\n        call croq::cuda::setreg_dec(40);", 1
).replace("inthreads.async (role < 2) {", "inthreads.async (role < 2) {\n        call croq::cuda::setreg_inc(232);", 1)

COPY = """
__co__ void hinted_copy(global f32 [N] x, global f32 [N] y) {
  parallel p by cdiv(N, 128) : block, t by 128 : thread {
    call croq::cuda::setreg_inc(COUNT);
    if (p # t < N) y.at(p # t) = x.at(p # t);
  }
}
"""


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_register_hints_change_no_result(schedule: str) -> None:
    out = translate_full(COPY.replace("COUNT", "240"), filename="hints.co", schedule=schedule)
    assert not out.failed, out.failed
    plain = translate_full(
        COPY.replace("    call croq::cuda::setreg_inc(COUNT);\n", ""), filename="hints.co", schedule=schedule
    )
    # no statement of their own: the same kernels (but for the source lines they name)
    assert [len(k.body) for k in out.ir["hinted_copy"]] == [len(k.body) for k in plain.ir["hinted_copy"]]
    mod = load_source(out.source, f"setreg_{schedule}")
    x = torch.randn(300, device=DEVICE)
    y = poisoned(300)
    mod.hinted_copy(x, y)  # type: ignore[attr-defined]
    assert torch.equal(y, x)


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_register_hints_at_the_start_of_warp_roles(schedule: str) -> None:
    assert HINTED.count("croq::cuda::setreg_") == 2
    out = translate_full(HINTED, filename="pipeline_1p2c.co", schedule=schedule)
    assert not out.failed, out.failed
    mod = load_source(out.source, f"setreg_roles_{schedule}")
    m, n, k = 200, 100, 72
    a = torch.randn(m, k, device=DEVICE).half()
    b = torch.randn(n, k, device=DEVICE).half()
    res = poisoned(m, n)
    mod.gemm_1p2c(a, b, res)  # type: ignore[attr-defined]
    ref = a.double().cpu() @ b.double().cpu().T
    assert (res.double().cpu() - ref).abs().max().item() <= 1e-3 * ref.abs().max().item()


@pytest.mark.parametrize("count", ["100", "16", "264", "N"])
def test_a_count_the_register_file_cannot_take_is_an_error(count: str) -> None:
    out = translate_full(COPY.replace("COUNT", count), filename="hints.co")
    err = out.failed["hinted_copy"]
    assert isinstance(err, CroqError) and err.diagnostics[0].severity == "error"
    text = str(err)
    assert "hints.co:4:5" in text and "setreg_inc' of this count: it takes one constant" in text, text

"""The OOB sanitizer (``--oob-fill nan``) on kernels tiled as contractions (schedule/gemm.py).

A contraction is tiled with the schedule's tiles, not the source's, so what those tiles read past a
tensor is the translation's own padding (zero).  What the sanitizer must show is the source's own
reliance on the fill: a kernel whose K steps overshoot K without ``.zfill`` sums the fill into every
output element, so under the sanitizer the result is NaN exactly at the sizes where the source's K
steps overshoot, and exact where they do not, in both schedules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import assert_close, poisoned, randn

from croq2triton.api import load

PROGRAM = Path(__file__).parent / "programs" / "oob_gemms.co"


@pytest.fixture(scope="module", params=["source", "auto"])
def sanitized(request: pytest.FixtureRequest) -> object:
    return load(PROGRAM, oob_fill="nan", schedule=request.param)


def _run(mod: object, fn: str, m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    lhs, rhs = randn(m, k, dtype=torch.float16, seed=1), randn(n, k, dtype=torch.float16, seed=2)
    out = poisoned(m, n)
    getattr(mod, fn)(lhs, rhs, out)
    return out, lhs.double() @ rhs.double().T


def test_the_kernels_are_tiled_as_contractions(sanitized: object) -> None:
    text = sanitized.__croq_source__  # type: ignore[attr-defined]
    tr = sanitized.__croq_translation__  # type: ignore[attr-defined]
    assert sum(len(kernels) for kernels in tr.contractions.values()) == 3
    # under auto each is emitted as the 5 tiles the launcher picks from (schedule/occupancy.py)
    auto = {s.origin for kernels in tr.schedules.values() for s in kernels.values()} == {"auto"}
    per = 5 if auto else 1
    assert text.count("(a contraction: croq2triton/lift/contraction.py proves it)") == 3 * per


@pytest.mark.parametrize("k", [70, 100])
def test_k_steps_past_k_without_zfill_read_nan(sanitized: object, k: int) -> None:
    out, _ = _run(sanitized, "staged", 77, 45, k)  # K steps of 32 overshoot 70 and 100
    assert out.isnan().all()


def test_exact_k_steps_read_nothing_outside(sanitized: object) -> None:
    out, ref = _run(sanitized, "staged", 77, 45, 96)
    assert_close(out, ref, atol=1e-2, rtol=1e-3)


@pytest.mark.parametrize("fn", ["staged_zfill", "per_element"])
def test_zfill_and_per_element_reads_are_exact_at_ragged_k(sanitized: object, fn: str) -> None:
    out, ref = _run(sanitized, fn, 77, 45, 100)  # .zfill states the zeros; a K loop reads only K
    assert_close(out, ref, atol=1e-2, rtol=1e-3)


def test_without_the_sanitizer_the_fill_is_zero() -> None:
    out, ref = _run(load(PROGRAM), "staged", 77, 45, 100)
    assert_close(out, ref, atol=1e-2, rtol=1e-3)


# ------------------------------------------------------------------ croq2triton run --oob-fill nan


def _run_cli(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> tuple[int, str]:
    from croq2triton.cli import main

    rc = main(["run", str(path), "--oob-fill", "nan", *argv])
    return rc, capsys.readouterr().err


@pytest.mark.parametrize("schedule", ["source", "auto"])
def test_run_reports_outputs_computed_from_out_of_bounds_reads(
    capsys: pytest.CaptureFixture[str], schedule: str
) -> None:
    # K = 100: 'staged' steps K by 32 without .zfill, so every output sums the sanitizer's NaN
    funcs = ["--func", "staged", "--func", "staged_zfill", "--schedule", schedule]
    rc, err = _run_cli(capsys, PROGRAM, "--size", "M=70,N=50,K=100", *funcs)
    assert rc == 1, err
    assert (
        "error: staged: out: 3500 of 3500 elements computed from out-of-bounds reads (the sanitizer's NaN; "
        "first: [0, 0], [0, 1], [0, 2], [0, 3], ...)" in " ".join(err.split())
    )
    assert "staged_zfill: out" not in err  # it states the zeros: nothing to report
    rc, err = _run_cli(capsys, PROGRAM, "--size", "M=70,N=50,K=128", *funcs)  # K steps that do not overshoot
    assert rc == 0 and "out-of-bounds" not in err, err


def test_run_does_not_count_the_nans_a_kernel_computes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "shifted.co"
    path.write_text(
        "__co__ void shifted(global f32 [N] x, global f32 [N] y) {\n"
        "  parallel p by cdiv(N, 16) : block, t by 16 : thread\n"
        "    if (p # t < N) y.at(p # t) = (p # t == 3 ? __sqrt(-1.0f) : 0.0f) + x.at(p # t + 1);\n"
        "}\n"
    )
    rc, err = _run_cli(capsys, path, "--size", "N=37")
    # y[3] is NaN with either fill (the kernel's own); y[36] reads x[37], which only the sanitizer makes NaN
    assert rc == 1, err
    assert (
        "error: shifted: y: 1 of 37 elements computed from out-of-bounds reads (the sanitizer's NaN; first: [36])"
        in (" ".join(err.split()))
    )

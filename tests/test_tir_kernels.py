"""Tile-IR kernels built by hand: the verifier's rules, the text dump, and the Triton emitter,
whose output runs in the interpreter and matches torch (no lifting involved)."""

from __future__ import annotations

import re

import pytest
import torch

from croq2triton.emit.triton import emit_kernel
from croq2triton.tir import expr as E
from croq2triton.tir import nodes as N
from croq2triton.tir.dump import dump
from croq2triton.tir.verify import VerifyError, verify

M, N_ = E.Var("M", lo=1), E.Var("N", lo=1)
BM, BN = 16, 32


def tiled_add(mask_cols: bool = True, width: int = BN) -> N.Kernel:
    """out = a + b over [M, N] in BM x BN tiles, as the lifting of tiled_add.co would build it."""
    pm = E.Var("pid_m", lo=0)
    pn = E.Var("pid_n", lo=0)
    offs_m = E.Var("offs_m", dims=(BM,))
    offs_n = E.Var("offs_n", dims=(width,))
    mask = E.Var("mask", "i1", dims=(BM, width))
    rows, cols = E.Lift(offs_m, 2, (0,)), E.Lift(offs_n, 2, (1,))
    terms = [rows.lt(M)] + ([cols.lt(N_)] if mask_cols else [])
    va, vb = E.Var("a", "f32", dims=(BM, width)), E.Var("b", "f32", dims=(BM, width))

    def ptr(t: str) -> N.Pointer:
        return N.Pointer(f"{t}_ptr", t, "f32", (M, N_), (f"{t}_stride_m", f"{t}_stride_n"))

    args: list[N.Arg] = []
    for t in ("a", "b", "out"):
        args += [ptr(t), N.Stride(f"{t}_stride_m", t, 0), N.Stride(f"{t}_stride_n", t, 1)]
    args += [N.Scalar("M", "i32", M), N.Scalar("N", "i32", N_)]
    body: list[N.Stmt] = [
        N.Let(offs_m, pm * BM + E.Arange(BM), line=11),
        N.Let(offs_n, pn * width + E.Arange(width)),
        N.Let(mask, E.conj(terms)),
        N.Load(va, "a_ptr", (rows, cols), mask, 0.0, line=13),
        N.Load(vb, "b_ptr", (rows, cols), mask, 0.0, line=14),
        N.Store("out_ptr", (rows, cols), E.Bin("+", va, vb), mask, line=16),
    ]
    grid = (E.CDiv(M, E.Const(BM)), E.CDiv(N_, E.Const(width)))
    return N.Kernel("tiled_add_k0", grid, (pm, pn), args, body, num_warps=4, line=10)


def run(kernel: N.Kernel, m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    import triton
    import triton.language as tl

    source = emit_kernel(kernel, "tiled_add.co")
    scope: dict[str, object] = {"triton": triton, "tl": tl}
    path = f"<tir-test-{kernel.name}-{abs(hash(source))}>"
    import linecache

    linecache.cache[path] = (len(source), None, source.splitlines(True), path)
    a, b = torch.randn(m, n), torch.randn(m, n)
    out = torch.full((m, n), float("nan"))
    grid = (triton.cdiv(m, BM), triton.cdiv(n, kernel.program_ids and BN))
    # no GPU needed: the kernels are tiny and run in the interpreter on CPU tensors.  Triton reads
    # TRITON_INTERPRET when it decorates and runs the kernel; it is set for that alone, so the tests
    # that run after this one in the process (on a GPU host: compiled) do not inherit it
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRITON_INTERPRET", "1")
        exec(compile(source, path, "exec"), scope)
        fn = scope[kernel.name]
        fn[grid](a, a.stride(0), a.stride(1), b, b.stride(0), b.stride(1), out, out.stride(0), out.stride(1), m, n)  # type: ignore[index]
    return out, a + b


def test_emitted_kernel_runs_and_matches_torch_on_ragged_sizes() -> None:
    out, ref = run(tiled_add(), 37, 70)
    torch.testing.assert_close(out, ref)


def test_emitted_kernel_reads_like_a_tutorial_kernel() -> None:
    text = emit_kernel(tiled_add(), "tiled_add.co")
    assert "offs_m = pid_m * 16 + tl.arange(0, 16)  # tiled_add.co:11" in text
    assert "mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)" in text
    assert (
        "    a = tl.load(\n        a_ptr + offs_m[:, None] * a_stride_m + offs_n[None, :] * a_stride_n, mask=mask, other=0.0\n"
        "    )  # tiled_add.co:13"
    ) in text
    assert max(len(x) for x in text.splitlines()) <= 120
    assert not re.search(r"(?<![\w.])0 \*|\+ 0(?![\w.])|\* 1(?![\w.])", text)


def test_dump_shows_the_kernel() -> None:
    text = dump(tiled_add())
    assert text.splitlines()[0] == "kernel tiled_add_k0 grid (_rt.cdiv(M, 16), _rt.cdiv(N, 32)) num_warps 4  @10"
    assert "  arg a_ptr: ptr<f32> to a [M, N] strides (a_stride_m, a_stride_n)" in text
    assert "  store out_ptr[offs_m[:, None], offs_n[None, :]] mask mask = a + b  @16" in text


def test_verifier_finds_an_access_no_mask_keeps_inside() -> None:
    with pytest.raises(VerifyError, match=r"index 1 of 'a' may reach its extent"):
        verify(tiled_add(mask_cols=False))


def test_verifier_finds_a_block_that_is_not_a_power_of_two() -> None:
    with pytest.raises(VerifyError, match=r"block shape \[48\] is not a power of two"):
        verify(tiled_add(width=48))


def test_verifier_finds_a_name_read_before_it_is_defined() -> None:
    k = tiled_add()
    k.body.insert(0, k.body.pop(2))  # the mask before the offsets it reads
    with pytest.raises(VerifyError, match=r"'offs_m' is read before it is defined"):
        verify(k)


def test_verifier_scopes_loop_bodies_and_branches() -> None:
    i = E.Var("i", lo=0, hi=3)
    t = E.Var("t")
    k = N.Kernel(
        "k",
        (E.Const(1),),
        (),
        [],
        [N.For(i, E.Const(0), E.Const(4), E.Const(1), [N.Let(t, i * 2)]), N.Let(E.Var("u"), t)],
    )
    with pytest.raises(VerifyError, match="'t' is read before it is defined"):
        verify(k)
    both = N.If(E.Var("c", "i1"), [N.Let(t, E.Const(1))], [N.Let(t, E.Const(2))])
    k = N.Kernel("k", (E.Const(1),), (), [N.Scalar("c", "i1", E.Const(True, "i1"))], [both, N.Let(E.Var("u"), t)])
    verify(k)


def test_verifier_does_not_bound_a_name_a_loop_advances_by_its_first_value() -> None:
    """``o = 3`` then ``o = o + 1`` on every trip: ``x[o]`` is inside an [8] tensor on the first trip
    only, so it needs a mask; the mask ``o < 8`` (the name itself, not its first value) is enough."""
    o, r, v, m = E.Var("o"), E.Var("r", lo=0, hi=9), E.Var("v", "f32"), E.Var("m", "i1")
    x = N.Pointer("x_ptr", "x", "f32", (E.Const(8),), ("x_stride",))

    def kernel(masked: bool) -> N.Kernel:
        body: list[N.Stmt] = []
        if masked:
            body.append(N.Let(m, E.Bin("&", E.Bin(">=", o, E.Const(0)), E.Bin("<", o, E.Const(8)))))
        body += [N.Load(v, "x_ptr", (o,), m if masked else None, 0.0 if masked else None), N.Assign(o, o + 1)]
        loop = N.For(r, E.Const(0), E.Const(10), E.Const(1), body, carried=(o,))
        return N.Kernel("k", (E.Const(1),), (), [x, N.Stride("x_stride", "x", 0)], [N.Let(o, E.Const(3)), loop])

    with pytest.raises(VerifyError, match=r"index 0 of 'x' may reach its extent"):
        verify(kernel(masked=False))
    verify(kernel(masked=True))

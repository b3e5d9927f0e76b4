"""2:4 sparse MMAs (``mma.row.L2.sp acc, a, b, meta``, docs/mma.md): kernels of tests/programs/sparse_mma.co
and upstream's gemm_sp.co against float64 products of the DENSE A, built from random 2:4 patterns and
compressed here as upstream's host policy (``Sparse2to4HostPolicyWGMMA::encode``, ``Sparse2to4HostPolicy``)
lays the data out; outputs poisoned with NaN; both schedules."""

from __future__ import annotations

import json
from typing import Any

import pytest
import sm90
import torch
from conftest import CORPUS, REPO, needs_corpus
from kernel_util import DEVICE, assert_close, check_errors, kernel_code, load_once, poisoned

from croq2triton.api import translate_full

PROGRAM = REPO / "tests" / "programs" / "sparse_mma.co"
GEMM_SP = CORPUS / "upstream" / "tests" / "gpu" / "end2end" / "gemm_sp.co"
SCHEDULES = ("source", "auto")


def sparse_dense(m: int, k: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    """A random [m, k] matrix with exactly two nonzero values in each group of four along k (values
    away from zero, as upstream's init_structured_sparse_A keeps them)."""
    g = torch.Generator().manual_seed(seed)
    groups = k // 4
    keys = torch.rand(m, groups, 4, generator=g)
    pos = keys.topk(2, dim=2).indices.sort(dim=2).values  # two distinct positions a group
    vals = torch.rand(m, groups, 2, generator=g) * 1.8 + 0.2
    vals = torch.where(torch.rand(m, groups, 2, generator=g) < 0.5, -vals, vals)
    dense = torch.zeros(m, groups, 4).scatter_(2, pos, vals)
    return dense.view(m, k).to(dtype)


def encode(dense: torch.Tensor, k_per_word: int, word: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """``dense`` [m, k] (2:4) as upstream's host encoders give it to a kernel: the kept values
    [m, k / 2] in position order, and the metadata [m, k / k_per_word] of ``word`` whose element
    holds, for its groups g = 0, 1 .. of four positions, the nibble ``first | second << 2`` at bits
    4g (a u8: the even group in the low nibble; a u32 of 16 positions: only its low 16 bits)."""
    m, k = dense.shape
    groups = dense.view(m, k // 4, 4)
    nz = groups.float() != 0
    assert bool((nz.sum(dim=2) == 2).all()), "not 2:4"
    pos = nz.nonzero()[:, 2].view(m, k // 4, 2)  # (row-major: each group's positions ascending)
    packed = torch.gather(groups.float(), 2, pos).reshape(m, k // 2).to(dense.dtype)  # (exact: values of dense)
    nibble = pos[..., 0] | (pos[..., 1] << 2)
    per = k_per_word // 4
    shifts = torch.arange(per) * 4
    words = (nibble.view(m, k // k_per_word, per).long() << shifts).sum(dim=2)
    return packed.contiguous(), words.to(word)


def test_encoder_is_upstreams_layout() -> None:
    """The layout pinned by hand: group positions (0, 1) are nibble 0b0100, (2, 3) 0b1110, (0, 3)
    0b1100, (1, 2) 0b1001; a byte holds group 0 in its low nibble, group 1 in its high one."""
    row = torch.tensor([[1.0, 2, 0, 0, 0, 0, 3, 4, 5, 0, 0, 6, 0, 7, 8, 0]])
    packed, meta = encode(row, 8, torch.uint8)
    assert packed.tolist() == [[1, 2, 3, 4, 5, 6, 7, 8]]
    assert meta.tolist() == [[0xE4, 0x9C]]
    _, word = encode(row, 16, torch.uint32)
    assert word.tolist() == [[0x9CE4]]


def _run(fn: str, schedule: str, m: int, n: int, k: int, dtype: torch.dtype, k_per_word: int,
         word: torch.dtype, b_kn: bool = False, out: torch.dtype = torch.float32, seed: int = 0) -> None:  # fmt: skip
    mod = load_once(PROGRAM, schedule)
    dense = sparse_dense(m, k, dtype, seed)
    packed, meta = encode(dense, k_per_word, word)
    g = torch.Generator().manual_seed(seed + 1)
    b = (torch.rand(n, k, generator=g) * 2 - 1).to(dtype)
    c = poisoned(m, n, dtype=out)
    getattr(mod, fn)(packed.to(DEVICE), meta.to(DEVICE), (b.T.contiguous() if b_kn else b).to(DEVICE), c)
    want = dense.double() @ b.double().T
    tol = 2e-2 if dtype in (torch.bfloat16, torch.float8_e4m3fn) or out != torch.float32 else 1e-3
    assert_close(c, want, atol=tol, rtol=tol)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_k_loop_ragged_rows_and_columns(schedule: str) -> None:
    # K = 200: the last K tile holds 36 of 64 positions (packed 18 of 32, metadata 5 of 8 bytes)
    _run("sp_rr", schedule, 100, 45, 200, torch.float16, 8, torch.uint8)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_row_col_with_the_metadata_given_directly(schedule: str) -> None:
    _run("sp_rc", schedule, 70, 80, 104, torch.float16, 8, torch.uint8, b_kn=True)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_bf16_chunks_of_one_tile(schedule: str) -> None:
    _run("sp_bf16_chunks", schedule, 64, 32, 128, torch.bfloat16, 8, torch.uint8)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_fp8_e4m3(schedule: str) -> None:
    _run("sp_e4m3", schedule, 69, 40, 128, torch.float8_e4m3fn, 8, torch.uint8, out=torch.float16)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_u32_metadata_whole_words(schedule: str) -> None:
    _run("sp_u32", schedule, 65, 33, 160, torch.float16, 32, torch.uint32)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_u32_metadata_half_words(schedule: str) -> None:
    _run("sp_u32_half", schedule, 65, 33, 96, torch.float16, 16, torch.uint32)


# (function, element type, N, K) of upstream's gemm_sp.co: M = 64, u8 metadata of 8 positions a byte
GEMM_SP_CASES = [
    ("matmul_f16_n32_k64", torch.float16, 32, 64),
    ("matmul_f16_n32_k32", torch.float16, 32, 32),
    ("matmul_fp8_n32", torch.float8_e4m3fn, 32, 64),
    ("matmul_fp8_n64", torch.float8_e4m3fn, 64, 64),
    ("matmul_fp8_n8", torch.float8_e4m3fn, 8, 64),
    ("matmul_f16_n8k64", torch.float16, 8, 64),
    ("matmul_bf16_n8k64", torch.bfloat16, 8, 64),
    ("matmul_f16_n16_k64", torch.float16, 16, 64),
]


@needs_corpus
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_upstream_gemm_sp(schedule: str) -> None:
    mod = load_once(GEMM_SP, schedule)
    for i, (fn, dtype, n, k) in enumerate(GEMM_SP_CASES):
        dense = sparse_dense(64, k, dtype, i)
        packed, meta = encode(dense, 8, torch.uint8)
        b = (torch.rand(n, k, generator=torch.Generator().manual_seed(i + 100)) * 2 - 1).to(dtype)
        got = getattr(mod, fn)(packed, meta, b)
        assert_close(got, dense.double() @ b.double().T, atol=1e-2, rtol=1e-2)


SM90 = [
    (str(PROGRAM), "sp_rr", "source", [[[128, 96], "float16"], [[128, 24], "uint8"], [[96, 192], "float16"],
                                       [[128, 96], "float32"]]),
    (str(PROGRAM), "sp_e4m3", "auto", [[[128, 64], "float8_e4m3fn"], [[128, 16], "uint8"],
                                       [[96, 128], "float8_e4m3fn"], [[128, 96], "float16"]]),
]  # fmt: skip


SM90_CORPUS = [
    ("matmul_fp8_n64", "auto", [[[64, 32], "float8_e4m3fn"], [[64, 8], "uint8"], [[64, 64], "float8_e4m3fn"]]),
    ("matmul_bf16_n8k64", "source", [[[64, 32], "bfloat16"], [[64, 8], "uint8"], [[8, 64], "bfloat16"]]),
]


@pytest.mark.parametrize(("path", "fn", "schedule", "shapes"), SM90, ids=[f"{c[1]}@{c[2]}" for c in SM90])
def test_compiles_for_sm90a(path: str, fn: str, schedule: str, shapes: list[object]) -> None:
    assert any(rec["found"]["wgmma.mma_async"] for rec in _compiled(path, fn, schedule, shapes))


@needs_corpus
@pytest.mark.parametrize(("fn", "schedule", "shapes"), SM90_CORPUS, ids=[f"{c[0]}@{c[1]}" for c in SM90_CORPUS])
def test_upstream_gemm_sp_compiles_for_sm90a(fn: str, schedule: str, shapes: list[object]) -> None:
    _compiled(str(GEMM_SP), fn, schedule, shapes)


def _compiled(path: str, fn: str, schedule: str, shapes: list[object]) -> list[dict[str, Any]]:
    """The records of tests/aot_check.py for ``fn``'s kernels compiled for sm_90a (each one compiled)."""
    r = sm90.script(REPO / "tests" / "aot_check.py", path, fn, json.dumps(shapes), "{}", "{}", schedule)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert lines and all(rec.get("target") and "error" not in rec for rec in lines), r.stdout + r.stderr[-2000:]
    return lines


# ---------------------------------------------------------------------------------------------- mistakes
HEAD = "__co__ void f(global f16 [64, 32] a, global {meta} e, global f16 [32, 64] b, global f32 [64, 32] c) {{\n"
BODY = (
    "  parallel p by 1 : block, by 1 : group-4 {{\n"
    "    acc = mma.fill.f32 0.0f;\n"
    "    sa = dma.copy a => shared;\n"
    "    se = dma.copy e => shared;\n"
    "    sb = dma.copy b => shared;\n"
    "    {mma};\n"
    "    mma.store acc, c;\n  }}\n}}\n"
)


def _errors(meta: str, mma: str) -> list[Any]:
    """The errors of translating the kernel (its static checks, then its lowering)."""
    source = (HEAD + BODY).format(meta=meta, mma=mma)
    return check_errors(source) or [
        d for d in translate_full(source, filename="t.co").diagnostics if d.severity == "error"
    ]


@pytest.mark.parametrize(
    ("meta", "mma", "says"),
    [
        ("f16 [64, 8]", "mma.row.row.sp acc, sa, sb, se", "holds 2-bit indices"),
        ("u8 [64, 4]", "mma.row.row.sp acc, sa, sb, se", "does not index them"),
        ("u8 [32, 8]", "mma.row.row.sp acc, sa, sb, se", "does not index them"),
        ("u8 [64, 8]", "mma.row.row.sp acc, sa, sb", "without its metadata operand"),
    ],
)
def test_mistakes_are_located(meta: str, mma: str, says: str) -> None:
    errs = _errors(meta, mma)
    assert errs, "no error"
    d = errs[0]
    assert says in d.message and d.span is not None and d.span.line == 7, d.message


@needs_corpus
def test_other_patterns_than_2_4_stay_rejected() -> None:
    path = CORPUS / "upstream" / "tests" / "parse" / "error_sparse_pattern.co"
    errs = check_errors(path.read_text(), str(path))
    assert errs and "only 2:4 structured sparsity" in errs[0].message


def test_a_loop_over_k_chunks_is_one_dot() -> None:
    """sp_bf16_chunks' ``foreach kk in [4]`` over chunks of A, B and the metadata: one dot of the tiles."""
    code = kernel_code(translate_full(PROGRAM.read_text(), filename=str(PROGRAM)).source, "sp_bf16_chunks_k0")
    assert code.count("tl.dot(") == 1 and "forkkin" not in code, code  # (canonical: no spaces)

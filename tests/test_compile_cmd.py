"""``croq2triton compile``: the translation built for sm_90a on the CPU, one summary line per kernel.

Each call runs in a fresh process: Triton's interpreter mode is process-wide and the rest of the
suite runs with TRITON_INTERPRET=1.
"""

from __future__ import annotations

import subprocess

import pytest
import sm90
from conftest import EXAMPLES, REPO

from croq2triton.compiler import block_tile


def _compile(*args: str) -> subprocess.CompletedProcess[str]:
    return sm90.croq("compile", *args)


@pytest.mark.slow
def test_auto_schedule_summary_of_gemm_v3() -> None:
    r = _compile(str(EXAMPLES / "gemm_v3.co"), "--size", "M=8192,N=8192,K=8192", "--schedule", "auto")
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    assert line.startswith("matmul: matmul_k0: dot 128x256x64, num_warps 8, ")
    assert "wgmma yes, TMA yes" in line and "registers" in line and "grid [132]" in line  # persistent on 132 SMs
    assert "matmul: compiling matmul_k0 for sm_90a" in r.stderr  # progress: a kernel can take seconds


@pytest.mark.slow
def test_source_schedule_and_an_elementwise_kernel() -> None:
    r = _compile(str(EXAMPLES / "gemm_v3.co"), "--size", "M=512,N=512,K=256")
    assert r.returncode == 0, r.stderr
    assert "dot 64x128x64" in r.stdout and "wgmma yes" in r.stdout  # the tile v3 states
    assert "num_stages 2" in r.stdout  # its pipelined loop's depth (a ring of 1, freed after mma.commit)
    r = _compile(str(EXAMPLES / "gemm_v4.co"), "--size", "M=512,N=512,K=256")
    assert r.returncode == 0, r.stderr
    assert "dot 128x(128+64)x64, num_warps 4, num_stages 2" in r.stdout  # v4's 128 x 192 tile as pieces
    r = _compile(str(EXAMPLES / "vadd.co"), "--size", "N=5000", "--emit", "ptx")
    assert r.returncode == 0, r.stderr
    assert ".target sm_90a" in r.stdout and "wgmma no, TMA no" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "sm_70"], "unknown target 'sm_70'"),
        (["--func", "nope"], "no __co__ function named nope"),
    ],
)
def test_compile_errors(args: list[str], message: str) -> None:
    r = _compile(str(EXAMPLES / "vadd.co"), *args)
    assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr


def test_block_tile_reads_the_largest_dot_or_tile() -> None:
    ttgir = (
        "%1 = ttng.warp_group_dot %a, %b, %c {isAsync = true} : !ttg.memdesc<128x64xf16, #s> * "
        "!ttg.memdesc<64x256xf16, #s2> -> tensor<128x256xf32, #m>\n"
        "%2 = tt.dot %x, %y, %z : tensor<64x32xf16, #d> * tensor<32x64xf16, #e> -> tensor<64x64xf32, #f>\n"
    )
    assert block_tile(ttgir) == "dot 128x256x64"
    pieces = (
        "%1 = tt.dot %a, %b, %c : tensor<128x64xf16, #d> * tensor<64x128xf16, #e> -> tensor<128x128xf32, #f>\n"
        "%2 = tt.dot %a, %g, %h : tensor<128x64xf16, #d> * tensor<64x64xf16, #e> -> tensor<128x64xf32, #f>\n"
    )
    assert block_tile(pieces) == "dot 128x(128+64)x64"
    assert block_tile("%3 = tt.load %p : tensor<1024x!tt.ptr<f32>>\n%4 = arith.addf : tensor<16x32xf32>") == "tile 1024"


def _tf32_mmas(func: str, *flags: str) -> int:
    """Tensor-core instructions on TF32 operands in the PTX of ``func`` of tests/programs/f32_gemms.co."""
    src = REPO / "tests" / "programs" / "f32_gemms.co"
    sizes = "Z=2,M=128,N=128,K=96" if func.startswith("bmm") else "M=128,N=128,K=96"
    r = _compile(str(src), "--func", func, "--size", sizes, "--emit", "ptx", *flags)
    assert r.returncode == 0, r.stderr
    return sum(1 for line in r.stdout.splitlines() if "mma" in line and ".tf32" in line)


@pytest.mark.slow
@pytest.mark.parametrize("func", ["bmm_thread", "mma_f32"])
def test_f32_products_are_f32_accurate_unless_tf32_is_asked_for(func: str) -> None:
    """A per-thread f32 loop and an MMA on f32 operands: tf32x3 by default (three TF32 products per
    f32 product), IEEE f32 FMAs (no tensor-core TF32 at all) with --f32-precision ieee, one TF32
    product with --allow-tf32."""
    tf32 = _tf32_mmas(func, "--allow-tf32")
    assert tf32 > 0
    assert _tf32_mmas(func) >= 3 * tf32  # at least three products for each TF32 one
    assert _tf32_mmas(func, "--f32-precision", "ieee") == 0


@pytest.mark.slow
def test_operands_declared_tf32_use_tf32() -> None:
    assert _tf32_mmas("mma_tf32") == _tf32_mmas("mma_tf32", "--allow-tf32") > 0


SMS = 132  # an H100 / H200: what 'compile' assumes for sm_90a without a GPU


@pytest.mark.slow
@pytest.mark.parametrize(
    ("program", "func", "sizes", "narrow"),
    [
        ("rows.co", "softmax", "M=4096,N=4096", False),  # one row a program, the row in registers
        ("rows.co", "rmsnorm", "M=4096,N=16384", False),
        ("transpose.co", "transpose", "M=4096,N=4096", False),  # widened
        ("transpose.co", "transpose", "M=256,N=256", True),  # widened it would leave SMs idle
    ],
)
def test_auto_kernels_keep_the_gpu_busy(program: str, func: str, sizes: str, narrow: bool) -> None:
    """Under auto a widened kernel runs where it keeps a program per SM, else the kernel as written
    (the source's programs); a folded row kernel runs a program per row; each stays within its
    registers (no spills: at most 128 a thread)."""
    r = _compile(str(REPO / "tests" / "programs" / program), "--func", func, "--size", sizes, "--schedule", "auto")
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip()
    grid = [int(x) for x in line.split("grid [")[1].rstrip("]").split(",")]
    registers = int(line.split(" registers")[0].rsplit(" ", 1)[1])
    assert registers <= 128, line
    programs = grid[0] * (grid[1] if len(grid) > 1 else 1)
    if narrow:
        assert f"{func}_k0_narrow:" in line and programs == 16 * 8, line  # the source's 16 x 32 blocks
    else:
        assert "_narrow" not in line and programs >= SMS, line


@pytest.mark.slow
def test_the_summary_reports_the_pipeline_the_compiled_kernel_has() -> None:
    """The stages come from the TTGIR, and the kernel is compiled with the arguments specialized as
    Triton's JIT specializes them at a launch (a unit stride is a constant): a dma.copy-staged GEMM
    under the source schedule is pipelined (asynchronous copies into 3 buffers), as on the GPU."""
    r = _compile(str(EXAMPLES / "gemm_v1.co"), "--size", "M=1024,N=1024,K=1024", "--emit", "ttgir")
    assert r.returncode == 0, r.stderr
    assert "ttg.async_copy_global_to_local" in r.stdout and "!ttg.memdesc<3x64x128xf16" in r.stdout
    assert "num_stages 3, " in r.stderr
    # a loop the compiler did not pipeline says so (a softmax's per-row loops over columns)
    r = _compile(str(REPO / "tests" / "programs" / "rows.co"), "--func", "softmax", "--size", "M=4096,N=4096")
    assert r.returncode == 0, r.stderr
    assert "num_stages 1 (3 asked), " in r.stdout
    r = _compile(str(EXAMPLES / "vadd.co"), "--size", "N=5000")  # no loop: nothing to pipeline
    assert "num_stages 1, " in r.stdout

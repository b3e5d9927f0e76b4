"""A tuned module: ``translate --config best.json``, ``load(config=...)`` and ``--emit-autotune K``.

The best.json files are written here by hand in the tuner's format (croq2triton/config.py) for
examples/gemm_v3.co under ``--schedule auto``: two tuned sizes whose winners differ in tile shape,
stages and warps.  The module's launcher must dispatch by size (the tuned size, else the nearest),
compute what torch computes at each, and stay a torch op.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from conftest import EXAMPLES, REPO
from kernel_util import assert_close, flat, gemm_tol, poisoned, randn

import croq2triton
from croq2triton.api import load_source
from croq2triton.cli import main
from croq2triton.errors import CroqError, CroqWarning
from croq2triton.options import Point
from croq2triton.runtime.launch import Recorder, nearest_tuned

GEMM = EXAMPLES / "gemm_v3.co"
SMALL, LARGE, OTHER = (72, 88, 40), (300, 260, 136), (250, 200, 120)  # ragged: no size a multiple of a tile
P0 = {"defines": {}, "kernels": {"matmul_k0": {"block_n": 64, "num_stages": 2}}}
P1 = {"defines": {}, "kernels": {"matmul_k0": {"block_m": 64, "block_n": 128, "num_warps": 4}}}


def entry(sizes: tuple[int, int, int], point: dict[str, Any], ms: float = 1.0) -> dict[str, Any]:
    m, n, k = sizes
    dtypes = {"lhs": "float16", "rhs": "float16", "output": "float16"}
    return {"sizes": {"M": m, "N": n, "K": k}, "dtypes": dtypes, "point": point, "ms": ms, "ratio": 1.0, "tie": False}


def best(winners: list[dict[str, Any]], top: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    data = {
        "format": "croq2triton-tune/1",
        "source": "examples/gemm_v3.co",
        "source_sha256": hashlib.sha256(GEMM.read_text().encode()).hexdigest(),
        "func": "matmul",
        "schedule": "auto",
        "f32_precision": "ieee",
        "device": {"name": "NVIDIA H200", "driver": "580.159.04"},
        "versions": {"croq2triton": "0.1.0", "triton": "3.6.0", "torch": "2.11.0"},
        "winners": winners,
        "top": top if top is not None else winners,
    }
    data.update(fields)
    return data


TWO_SIZES = best([entry(SMALL, P0), entry(LARGE, P1, 2.0)])


def write(tmp_path: Path, data: dict[str, Any], name: str = "best.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue(), err.getvalue()
    return rc, out.getvalue(), err.getvalue()


def run_gemm(mod: Any, sizes: tuple[int, int, int], seed: int = 0) -> list[str]:
    """The kernels ``mod.matmul`` launches at ``sizes``, after checking its result against float64 torch."""
    m, n, k = sizes
    a, b = randn(m, k, dtype=torch.float16, seed=seed), randn(n, k, dtype=torch.float16, seed=seed + 1)
    c = poisoned(m, n, dtype=torch.float16)
    rec = Recorder()
    mod.matmul(a, b, c, _launch=rec)  # the launches only
    mod.matmul(a, b, c)
    tol = gemm_tol(k)
    assert_close(c, a.double() @ b.double().T, atol=tol, rtol=tol)
    # a kernel under triton.autotune is an Autotuner, which names its function base_fn
    return [getattr(launch.kernel, "__name__", None) or launch.kernel.base_fn.__name__ for launch in rec.launches]


@pytest.fixture(scope="module")
def tuned_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    tmp = tmp_path_factory.mktemp("tuned")
    config = write(tmp, TWO_SIZES)
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "-o", str(tmp / "gemm_tuned.py"))
    assert rc == 0, err
    return (tmp / "gemm_tuned.py").read_text()


def test_translate_config_writes_a_dispatcher_over_the_winners(tuned_text: str) -> None:
    text = tuned_text
    for name in ("def matmul_k0__t0(", "def matmul__t0(", "def matmul_k0__t1(", "def matmul__t1(", "def matmul("):
        assert text.count(name) == 1, name
    assert "def matmul_k0(" not in text  # every kernel belongs to a point
    dispatcher = text[text.index("def matmul(") :]
    assert "Tuned at several sizes" in flat(dispatcher) and "The point tuned" not in flat(dispatcher)  # docstring
    assert "_tuned = {(72, 88, 40): matmul__t0, (300, 260, 136): matmul__t1}" in dispatcher
    assert "return _rt.nearest_tuned(_tuned, (M, N, K))(lhs, rhs, output, _launch=_launch)" in dispatcher
    # each point named where it is chosen, the caller's tensors kept (only checked and measured)
    assert "#   matmul__t0: matmul_k0.block_n=64 matmul_k0.num_stages=2" in dispatcher
    assert "#   matmul__t1: matmul_k0.block_m=64 matmul_k0.block_n=128 matmul_k0.num_warps=4" in dispatcher
    assert '_rt.tensor_arg(_F, "lhs", lhs, torch.float16, 2, _dev, is_global=True, move=False)' in dispatcher
    assert "--config /" in text and "best.json gemm_v3.co" in text  # how to regenerate it (the config elsewhere)
    # the points' kernels are the points' schedules
    t0 = text[text.index("def matmul_k0__t0(") : text.index("def matmul__t0(")]
    t1 = text[text.index("def matmul_k0__t1(") : text.index("def matmul__t1(")]
    assert "tl.zeros([128, 64], tl.float32)" in t0 and "tl.zeros([64, 128], tl.float32)" in t1
    launcher0 = text[text.index("def matmul__t0(") : text.index("def matmul_k0__t1(")]
    launcher1 = text[text.index("def matmul__t1(") : text.index("def matmul(")]
    assert "NUM_STAGES=2" in launcher0 and "num_warps=8" in launcher0
    assert "NUM_STAGES=4" in launcher1 and "num_warps=4" in launcher1  # the auto point's stages (not tuned)
    # the op table describes the function itself
    table = text[text.index("__croq_ops__") :]
    assert '"matmul"' in table and "__t0" not in table


def test_the_written_module_runs_each_size_on_its_winner(tuned_text: str) -> None:
    mod = load_source(tuned_text, "croq2triton_test_gemm_tuned_written", origin=str(GEMM))
    assert run_gemm(mod, SMALL) == ["matmul_k0__t0"]
    assert run_gemm(mod, LARGE, seed=2) == ["matmul_k0__t1"]
    assert run_gemm(mod, OTHER, seed=4) == ["matmul_k0__t1"]  # nearest to the large tuned size


def test_load_with_a_config_and_register_ops(tmp_path: Path) -> None:
    mod = croq2triton.load(GEMM, config=write(tmp_path, TWO_SIZES))
    tr = mod.__croq_translation__
    assert tr.tuned == {"matmul": ["matmul__t0", "matmul__t1"]}
    schedules = {k: (s.block_m, s.block_n, s.num_stages, s.num_warps) for k, s in tr.schedules["matmul"].items()}
    assert schedules == {"matmul_k0__t0": (128, 64, 2, 8), "matmul_k0__t1": (64, 128, 4, 4)}
    assert run_gemm(mod, (60, 70, 30), seed=6) == ["matmul_k0__t0"]  # nearest to the small one
    # a dict of the same form is the same module (but for what its comments call the config)
    again = croq2triton.load(GEMM, config=TWO_SIZES)
    kernels = [
        src[src.index("def matmul_k0__t0(") : src.index("def matmul(")]
        for src in (mod.__croq_source__, again.__croq_source__)
    ]
    assert kernels[0] == kernels[1]
    ops = croq2triton.register_ops(mod, "tune_config")
    assert str(torch.ops.tune_config.matmul.default._schema) == (
        "tune_config::matmul(Tensor lhs, Tensor rhs, Tensor(a2!) output) -> ()"
    )
    m, n, k = SMALL
    a, b = randn(m, k, dtype=torch.float16, seed=8), randn(n, k, dtype=torch.float16, seed=9)
    c = poisoned(m, n, dtype=torch.float16)
    compiled = torch.compile(lambda a, b, c: ops.matmul(a, b, c), backend="aot_eager", fullgraph=True)
    compiled(a, b, c)  # traced with fake tensors: the dispatcher binds sizes from them too
    tol = gemm_tol(k)
    assert_close(c, a.double() @ b.double().T, atol=tol, rtol=tol)


def test_one_point_for_every_size_needs_no_dispatcher(tmp_path: Path) -> None:
    same = best([entry(SMALL, P0), entry(LARGE, P0)])
    text = croq2triton.translate(GEMM.read_text(), filename=str(GEMM), config=same)
    assert "def matmul(lhs, rhs, output" in text and "__t0" not in text and "_tuned" not in text
    assert "tl.zeros([128, 64], tl.float32)" in text and "NUM_STAGES=2" in text
    # a bare Point is a config too (every function, every size): the same module
    bare = croq2triton.translate(GEMM.read_text(), filename=str(GEMM), schedule="auto", config=Point.from_json(P0))
    assert bare == text.replace("--config <the tuning config>", "--schedule auto")


def test_nearest_tuned_size() -> None:
    table = {(100, 100): "a", (400, 400): "b", (100, 1600): "c"}
    assert nearest_tuned(table, (100, 100)) == "a"
    assert nearest_tuned(table, (150, 150)) == "a"
    assert nearest_tuned(table, (300, 300)) == "b"
    assert nearest_tuned(table, (200, 200)) == "b"  # as far from a as from b in log space: the larger
    assert nearest_tuned(table, (90, 2000)) == "c"
    assert nearest_tuned({(64,): "x"}, (1,)) == "x"


def test_functions_the_config_does_not_name_translate_as_without_it(tmp_path: Path) -> None:
    co = tmp_path / "two.co"
    co.write_text(
        GEMM.read_text()
        + "\n__co__ void twice(global f32 [N] x, global f32 [N] y) {\n"
        + "  parallel p by cdiv(N, 128) : block, t by 128 : thread\n"
        + "    y.at(p # t) = 2.0f * x.at(p # t);\n}\n"
    )
    config = write(tmp_path, TWO_SIZES)
    with pytest.warns(CroqWarning, match=r"was tuned on examples/gemm_v3.co with sha256 \w+\.\.\., but .*two.co has"):
        mod = croq2triton.load(co, config=config)
    plain = croq2triton.translate(co.read_text(), filename=str(co), schedule="auto")
    twice = plain[plain.index("def twice_k0(") : plain.index("# launcher signatures")]
    assert twice in mod.__croq_source__  # as translated without the config, under its schedule mode
    x, y = randn(300), poisoned(300)
    mod.twice(x, y)
    assert_close(y, 2 * x)
    rc, _, err = cli("check", str(co), "--config", str(config))
    assert rc == 0 and "warning: " in err and "sha256" in err, err


def test_a_changed_source_warns_naming_both(tmp_path: Path) -> None:
    config = write(tmp_path, best([entry(SMALL, P0)], source_sha256="0" * 64))
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "-o", str(tmp_path / "out.py"))
    assert rc == 0, err
    mine = hashlib.sha256(GEMM.read_text().encode()).hexdigest()
    assert f"{config}:" in err and "warning: " in err and "examples/gemm_v3.co with sha256 000000000000" in err
    assert f"{GEMM} has sha256 {mine[:12]}" in err


@pytest.mark.parametrize(
    ("point", "line_has", "message"),
    [
        (
            {"kernels": {"matmul_k7": {"block_n": 64}}},
            '"matmul_k7"',
            "names kernel 'matmul_k7', which 'matmul' does not have (its kernels: 'matmul_k0')",
        ),
        (
            {"kernels": {"matmul_k0": {"block_q": 64}}},
            "parallel {block_m, block_n}",  # at the kernel in the .co, with a note at the point
            "block_q: not a field of a Schedule",
        ),
        ({"kernels": {"matmul_k0": {"block_n": 24}}}, "parallel {block_m, block_n}", "block_n = 24"),
    ],
)
def test_a_bad_point_is_a_located_error(tmp_path: Path, point: dict[str, Any], line_has: str, message: str) -> None:
    config = write(tmp_path, best([entry(SMALL, P0), entry(LARGE, point)]))
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "-o", str(tmp_path / "out.py"))
    assert rc == 1 and message in err, err
    first = err.splitlines()
    assert first[0].split(": error: ")[0].count(":") == 2 and line_has in first[1], err  # file:line:col, caret
    assert not (tmp_path / "out.py").exists()
    if "block_q" in message:
        assert f"{config}:" in err and "note: the tuning point" in err
    with pytest.raises(CroqError, match=re.escape(message)):
        croq2triton.load(GEMM, config=config)


@pytest.mark.parametrize(
    ("change", "message", "line_has"),
    [
        ({"func": "nope"}, "tunes 'nope', which this file does not define (its functions: matmul)", '"func"'),
        ({"format": "other/2"}, "format 'other/2' is not 'croq2triton-tune/1'", '"format"'),
        ({"winners": []}, "'winners' is empty", '"winners"'),
        ({"schedule": "fast"}, "schedule 'fast': one of source, auto", '"schedule"'),
    ],
)
def test_a_bad_config_is_a_located_error(tmp_path: Path, change: dict[str, Any], message: str, line_has: str) -> None:
    config = write(tmp_path, {**TWO_SIZES, **change})
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "-o", "-")
    assert rc == 1 and message in err, err
    assert err.startswith(f"{config}:") and line_has in err.splitlines()[1], err


def test_sizes_that_are_not_the_functions_and_broken_json(tmp_path: Path) -> None:
    odd = best([entry(SMALL, P0), {"sizes": {"M": 1, "N": 2, "Q": 3}, "point": P1}])
    rc, _, err = cli("translate", str(GEMM), "--config", str(write(tmp_path, odd)), "-o", "-")
    assert rc == 1 and "every tuned size must name the same sizes (M, N, K), not M=1, N=2, Q=3" in err, err
    odd = best([{"sizes": {"M": 1, "Q": 3}, "point": P0}, {"sizes": {"M": 2, "Q": 3}, "point": P1}])
    rc, _, err = cli("translate", str(GEMM), "--config", str(write(tmp_path, odd)), "-o", "-")
    assert rc == 1 and "at sizes of 'Q', which is not a size of 'matmul' (its sizes: M, K, N)" in err, err
    broken = tmp_path / "broken.json"
    broken.write_text('{"func": "matmul",\n "winners": [}\n')
    rc, _, err = cli("translate", str(GEMM), "--config", str(broken), "-o", "-")
    assert rc == 1 and err.startswith(f"{broken}:2:14: error: the tuning config is not JSON: Expecting value"), err
    rc, _, err = cli("translate", str(GEMM), "--config", str(tmp_path / "missing.json"), "-o", "-")
    assert rc == 1 and "no tuning config" in err


def test_a_schedule_that_contradicts_the_config_is_an_error(tmp_path: Path) -> None:
    config = write(tmp_path, TWO_SIZES)
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "--schedule", "source", "-o", "-")
    assert rc == 1 and "--schedule source contradicts" in err and "tuned under --schedule auto" in err, err
    assert err.startswith(f"{config}:") and '"schedule"' in err.splitlines()[1]
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "--allow-tf32", "-o", "-")
    assert rc == 1 and "--f32-precision tf32 contradicts" in err, err
    rc, out, err = cli("translate", str(GEMM), "--config", str(config), "--schedule", "auto", "-o", "-")
    assert rc == 0 and "def matmul__t1(" in out  # saying what the config says is fine
    with pytest.raises(CroqError, match="--schedule source contradicts"):
        croq2triton.load(GEMM, config=config, schedule="source")


def test_dump_ir_shows_the_dispatch(tmp_path: Path) -> None:
    rc, _, err = cli("translate", str(GEMM), "--config", str(write(tmp_path, TWO_SIZES)), "--dump-ir", "-o", "-")
    assert rc == 0, err
    assert "launcher matmul__t0(lhs: tensor" in err and "launcher matmul(lhs: tensor" in err
    assert "return the launcher tuned nearest (M, N, K) of" in err
    assert "matmul__t1 at (300, 260, 136): matmul_k0.block_m=64" in err
    assert "tensor lhs: f16 [M, K] global (checked, not moved)" in err


# ------------------------------------------------------------------ --emit-autotune
LAUNCH_ONLY = best(
    [entry(SMALL, P0), entry(LARGE, {"kernels": {"matmul_k0": {"block_n": 64, "num_stages": 3, "group_m": 4}}})],
    top=[
        entry(SMALL, P0),
        entry(SMALL, {"kernels": {"matmul_k0": {"block_n": 64, "num_stages": 4, "num_warps": 4}}}, 1.1),
        entry(SMALL, {"kernels": {"matmul_k0": {"block_n": 64, "num_stages": 1}}}, 1.2),
        entry(LARGE, {"kernels": {"matmul_k0": {"block_n": 64, "num_stages": 3, "group_m": 4}}}, 2.0),
        entry(LARGE, P0, 2.1),
    ],
)
CONFIGS = [
    'triton.Config({"GROUP_M": 8, "NUM_STAGES": 2}, num_warps=8)',
    'triton.Config({"GROUP_M": 8, "NUM_STAGES": 4}, num_warps=4)',
    'triton.Config({"GROUP_M": 4, "NUM_STAGES": 3}, num_warps=8)',
]


def test_emit_autotune_writes_the_top_configs(tmp_path: Path) -> None:
    config = write(tmp_path, LAUNCH_ONLY)
    rc, out, err = cli("translate", str(GEMM), "--config", str(config), "--emit-autotune", "2", "-o", "-")
    assert rc == 0, err
    decorator = out[out.index("@triton.autotune(") : out.index("def matmul_k0(")]
    # the best 2 of each size, each config once, in order; keyed on the sizes; the output restored between timings
    assert [line.strip().rstrip(",") for line in decorator.splitlines() if "triton.Config" in line] == CONFIGS
    assert 'key=["M", "K", "N"]' in decorator and 'restore_value=["output_ptr"]' in decorator
    assert "do_bench=_rt.autotune_bench" in decorator and "@triton.jit" in decorator
    launch = out[out.index("def matmul(") :]
    assert "GROUP_M=" not in launch and "NUM_STAGES=" not in launch and "num_warps=" not in launch
    assert "_tuned" not in launch  # one kernel, one launcher
    assert f"croq2triton translate --config {config} --emit-autotune 2 gemm_v3.co" in out  # to regenerate it
    # it runs (in the interpreter the autotuner times each config with a CPU timer) and computes the product
    mod = croq2triton.load(GEMM, config=config, emit_autotune=2)
    assert run_gemm(mod, SMALL, seed=10) == ["matmul_k0"]
    assert mod.matmul_k0.best_config.kwargs["GROUP_M"] in (4, 8)


def test_emit_autotune_over_tile_shapes_says_why_not(tmp_path: Path) -> None:
    config = write(tmp_path, TWO_SIZES)
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "--emit-autotune", "1", "-o", "-")
    assert rc == 1, err
    assert "are not one kernel: kernel 'matmul_k0' differs between" in err
    assert "in block_m (128 vs 64), block_n (64 vs 128)" in err
    assert "Triton's autotune chooses among the launch parameters of one kernel" in err
    assert f"hint: translate with --config {config} alone: the module then dispatches" in err
    line = int(err.split(":")[1])
    assert err.startswith(f"{config}:") and '"point"' in err.splitlines()[1]  # the point that differs
    assert "block_m" in "".join(config.read_text().splitlines()[line - 1 : line + 4])
    rc, _, err = cli("translate", str(GEMM), "--emit-autotune", "2", "-o", "-")
    assert rc == 1 and "--emit-autotune needs --config" in err
    rc, _, err = cli("translate", str(GEMM), "--config", str(config), "--emit-autotune", "0", "-o", "-")
    assert rc == 1 and "--emit-autotune 0: the number of configs must be at least 1" in err
    with pytest.raises(CroqError, match="--emit-autotune needs the best points of a tuned function"):
        croq2triton.translate_full(GEMM.read_text(), config=Point.from_json(P0), emit_autotune=2)


@pytest.mark.slow
def test_emit_autotune_compiles_each_config_for_sm90(tmp_path: Path) -> None:
    config = write(tmp_path, LAUNCH_ONLY)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "CROQ2TRITON_NUM_SMS")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    args = [str(GEMM), "--config", str(config), "--emit-autotune", "2", "--size", "M=512,N=512,K=256"]
    r = subprocess.run(
        [sys.executable, "-m", "croq2triton", "compile", *args], capture_output=True, text=True, env=env, timeout=600
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3, r.stdout
    for i, (line, (stages, warps)) in enumerate(zip(lines, [(2, 8), (4, 4), (3, 8)], strict=True)):
        assert line.startswith(f"matmul: matmul_k0 [config {i + 1}/3: ")
        assert f"dot 128x64x64, num_warps {warps}, num_stages {stages}, " in line, line
        assert "wgmma yes, TMA yes" in line


def test_a_point_naming_no_kernel_of_the_file_is_an_error() -> None:
    point = Point.of(kernels={"matmul_k9": {"block_n": 64}})
    with pytest.raises(
        CroqError, match=r"names kernel 'matmul_k9', which the file does not have \(its kernels: 'matmul_k0'\)"
    ):
        croq2triton.translate_full(GEMM.read_text(), filename=str(GEMM), schedule="auto", point=point)

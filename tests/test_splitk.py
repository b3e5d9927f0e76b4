"""Split-K and the tile ``--schedule auto`` picks at launch (issue 25: skinny and small GEMMs).

* Numerics in Triton's interpreter (tests/programs/splitk.co, written for this test): ragged sizes, outputs
  and the partial-sum workspace poisoned with NaN (the runtime's poison), against float64 torch.  Split-K as
  a tuning point sets it (``split_k``, under both schedules, persistent or not) and as the auto policy picks
  it at launch, in f16 and f32 (f32 products at the project's default precision), with an epilogue that is
  not linear (it must follow the whole sum) and with integer operands (exact: the same bits as unsplit);
* the policy's choice for the issue's shapes on 132 SMs, printed without a GPU (schedule/occupancy.py), and
  the launcher taking the same kernel and grid at those sizes (recorded, not run);
* tune: ``--list`` shows ``split_k``, ``--dry-run`` prunes a split count past the K steps with its reason, a
  split of a batched contraction is refused with a located error;
* a split-K kernel and its sum kernel compile for sm_90a (wgmma and TMA loads in the split kernel).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sm90
import torch
from conftest import EXAMPLES, REPO
from kernel_util import DEVICE, functions_of, poisoned, randn
from test_gemm_epilogues import CASES as EPILOGUES

from croq2triton.api import load_source, translate_full
from croq2triton.cli import main as cli_main
from croq2triton.options import Point
from croq2triton.runtime import launch as rt
from croq2triton.runtime.aot import record
from croq2triton.schedule import occupancy, policy

PROG = REPO / "tests" / "programs" / "splitk.co"
PROGRAMS_EPI = REPO / "tests" / "programs" / "gemm_epilogues"
F16, F32 = torch.float16, torch.float32
_MODULES: dict[str, Any] = {}


def module(schedule: str = "auto", **fields: dict[str, object]) -> Any:
    """splitk.co translated under ``schedule`` with the tuning point that sets ``fields`` of kernels
    (then only the functions of those kernels: kernel_util.functions_of)."""
    key = json.dumps([schedule, fields], sort_keys=True)
    if key not in _MODULES:
        point = Point.of(None, fields) if fields else None
        text = functions_of(PROG, *{k.removesuffix("_k0") for k in fields}) if fields else PROG.read_text()
        tr = translate_full(text, filename=str(PROG), schedule=schedule, point=point)
        _MODULES[key] = load_source(tr.source, f"splitk_{len(_MODULES)}", origin=str(PROG))
    return _MODULES[key]


class Launches:
    """A ``_launch`` that runs each kernel and keeps its name and grid."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[int, ...]]] = []

    def __call__(self, kernel: Any, grid: tuple[int, ...], args: list[Any], kwargs: dict[str, Any]) -> None:
        self.seen.append((getattr(kernel, "__name__", None) or kernel.fn.__name__, tuple(grid)))
        rt.launch(kernel, grid, args, kwargs)

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.seen]


def run(mod: Any, fn: str, m: int, n: int, k: int) -> tuple[torch.Tensor, torch.Tensor, Launches]:
    """``fn`` on fresh random inputs (never zero) into a poisoned output: (output, float64 reference, launches)."""
    if fn == "gemm_s8":
        a, b = randn(m, k, dtype=torch.int8, seed=1), randn(n, k, dtype=torch.int8, seed=2)
        out = poisoned(m, n, dtype=torch.int32)
    else:
        dt = F32 if fn == "gemm_f32" else F16
        a, b = randn(m, k, seed=1).to(dt), randn(n, k, seed=2).to(dt)
        out = poisoned(m, n, dtype=dt)
    args: list[torch.Tensor] = [a, b]
    ref = a.double() @ b.double().T
    if fn == "gemm_gate":
        bias = randn(n, seed=3)
        args.append(bias)
        g = ref + bias.double()
        ref = g * (1 + torch.tanh(g))
    rec = Launches()
    getattr(mod, fn)(*args, out, _launch=rec)
    return out, ref, rec


def check(fn: str, out: torch.Tensor, ref: torch.Tensor) -> None:
    got = out.double().cpu()
    if fn == "gemm_s8":  # integer sums: exact
        assert (got == ref.cpu()).all(), "an integer split-K sum differs"
        return
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    tol = 1e-4 if fn == "gemm_f32" else 1e-2  # f32 products and output / an f16 output's rounding
    scale = float(ref.abs().max())
    err = float((got - ref.cpu()).abs().max())
    assert err <= tol * scale, f"max |out - ref| = {err:.3g} > {tol} * max|ref| = {tol * scale:.3g}"


# (function, schedule, the point's fields of its kernel, M, N, K, the kernels launched)
TUNED = [
    ("gemm_f16", "auto", {"split_k": 3}, 97, 301, 333, ["gemm_f16_k0", "gemm_f16_k0_sum"]),
    ("gemm_f16", "auto", {"split_k": 4, "persistent": False, "block_m": 64, "block_n": 64}, 150, 70, 500,
     ["gemm_f16_k0", "gemm_f16_k0_sum"]),
    ("gemm_f16", "source", {"split_k": 2}, 97, 75, 300, ["gemm_f16_k0", "gemm_f16_k0_sum"]),
    ("gemm_f32", "auto", {"split_k": 3, "block_n": 128}, 97, 130, 333, ["gemm_f32_k0", "gemm_f32_k0_sum"]),
    ("gemm_gate", "auto", {"split_k": 4, "block_m": 64, "block_n": 64}, 97, 75, 700,
     ["gemm_gate_k0", "gemm_gate_k0_sum"]),
    ("gemm_s8", "auto", {"split_k": 3, "block_n": 128}, 70, 75, 600, ["gemm_s8_k0", "gemm_s8_k0_sum"]),
    # more splits than K steps (K = 40: one step of 64): the launcher takes one split, still right
    ("gemm_f16", "auto", {"split_k": 3}, 50, 70, 40, ["gemm_f16_k0", "gemm_f16_k0_sum"]),
]  # fmt: skip


@pytest.mark.parametrize(("fn", "schedule", "fields", "m", "n", "k", "kernels"), TUNED)
def test_a_tuned_split_k_computes_the_gemm(
    fn: str, schedule: str, fields: dict[str, object], m: int, n: int, k: int, kernels: list[str]
) -> None:
    mod = module(schedule, **{f"{fn}_k0": fields})
    out, ref, rec = run(mod, fn, m, n, k)
    assert rec.names == kernels
    programs = rec.seen[0][1][0]
    if fields.get("persistent") is False or schedule == "source":  # a program per (tile, split)
        bm, bn = int(fields.get("block_m", 64)), int(fields.get("block_n", 64))
        steps = -(-k // 64)
        assert programs == -(-m // bm) * -(-n // bn) * min(int(fields["split_k"]), steps)  # type: ignore[call-overload]
    check(fn, out, ref)


@pytest.mark.parametrize(("k", "nan"), [(1000, True), (1024, False)])
def test_split_k_keeps_the_oob_sanitizers_nan(monkeypatch: pytest.MonkeyPatch, k: int, nan: bool) -> None:
    """A source whose K steps of 32 overshoot K without .zfill sums the fill: NaN under the sanitizer, in
    every split's partial sum and so in their total (K = 1000); exact where they do not (K = 1024)."""
    from croq2triton.api import load

    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "8")  # 2 tiles of 64 x 64 for 77 x 45: K split 4 ways
    mod = load(REPO / "tests" / "programs" / "oob_gemms.co", oob_fill="nan", schedule="auto")
    a, b = randn(77, k, seed=1).to(F16), randn(45, k, seed=2).to(F16)
    out, rec = poisoned(77, 45), Launches()
    mod.staged(a, b, out, _launch=rec)
    assert rec.names == ["staged_k0_splitk", "staged_k0_splitk_sum"] and rec.seen[0][1] == (8,)
    if nan:
        assert out.isnan().all()
    else:
        check("gemm_f32", out, a.double() @ b.double().T)


@pytest.mark.filterwarnings("ignore:croq2triton.*not 16-byte aligned:RuntimeWarning")
@pytest.mark.parametrize("case", EPILOGUES, ids=lambda c: c.name)
def test_every_epilogue_follows_the_whole_split_sum(case: Any) -> None:
    """tests/programs/gemm_epilogues (scales, biases, beta * c, a start value c, ReLU, a transposed store,
    s8 with float scales) split 2 or 3 ways: each epilogue applied once, to the full sum (test_gemm_epilogues'
    references)."""
    src = PROGRAMS_EPI / f"{case.name}.co"
    point = Point.of(None, {"gemm_k0": {"split_k": 3, "block_m": 64, "block_n": 64, "persistent": False}})
    tr = translate_full(src.read_text(), filename=str(src), schedule="auto", point=point)
    mod = load_source(tr.source, f"splitk_epi_{case.name}", origin=str(src))
    m, n, k = 37, 45, 300  # 5 K steps of 64 (3 of 128 for s8): 3 non-empty splits
    a, b = randn(m, k, seed=1, dtype=case.inp), randn(n, k, seed=2, dtype=case.inp)
    rest = case.args(m, n, k)
    rec = Launches()
    mod.gemm(a, b, *rest, _launch=rec)
    assert rec.names == ["gemm_k0", "gemm_k0_sum"] and rec.seen[0][1] == (3,)
    out = rest[-1]
    ref = case.ref((a.double() @ b.double().T).cpu(), [x.cpu() if isinstance(x, torch.Tensor) else x for x in rest])
    if case.out == torch.int32:
        assert torch.equal(out.cpu().long(), ref.long())
        return
    got = out.double().cpu()
    assert not torch.isnan(got).any(), f"{int(torch.isnan(got).sum())} output elements never written"
    tol = 1e-2 if case.out == F16 else 1e-3
    err = float((got - ref).abs().max())
    assert err <= tol * float(ref.abs().max()), err


def test_split_k_moves_results_within_the_rounding_of_the_f32_sum() -> None:
    out1, ref, _ = run(module("auto", gemm_f32_k0={"block_n": 128}), "gemm_f32", 97, 130, 333)
    out3, _, rec = run(module("auto", gemm_f32_k0={"split_k": 3, "block_n": 128}), "gemm_f32", 97, 130, 333)
    assert rec.names == ["gemm_f32_k0", "gemm_f32_k0_sum"]
    diff = float((out1.double() - out3.double()).abs().max())
    assert diff <= 333 * 2**-23 * float(ref.abs().max()), diff  # K additions' worth of f32 rounding at most
    i1, _, _ = run(module("auto", gemm_s8_k0={"block_n": 128}), "gemm_s8", 70, 75, 600)
    i3, _, _ = run(module("auto", gemm_s8_k0={"split_k": 3, "block_n": 128}), "gemm_s8", 70, 75, 600)
    assert torch.equal(i1, i3)


# --schedule auto at launch: the interpreter's SM count set so that each row of the table is taken at
# small ragged sizes (SMS, M, N, K, the kernel suffixes launched)
AT_LAUNCH = [
    (4, 197, 301, 91, [""]),  # 2 x 2 tiles of 128 x 256 on 4 SMs: the default kernel
    (6, 197, 301, 91, ["_t128x128"]),  # 4 tiles of 128 x 256 < 0.9 * 6; 2 x 3 = 6 of 128 x 128
    (8, 197, 301, 91, ["_t64x128"]),  # 6 of 128 x 128 < 8; 4 x 3 = 12 of 64 x 128
    (12, 97, 75, 90, ["_t64x64"]),  # 64 x 64: 2 x 2 = 4 tiles, K = 90: 2 steps, too short to split
    (16, 97, 75, 1500, ["_splitk", "_splitk_sum"]),  # 4 tiles, 24 K steps: split 4 ways (16 programs)
]


@pytest.mark.parametrize("fn", ["gemm_f16", "gemm_f32", "gemm_gate", "gemm_s8"])
@pytest.mark.parametrize(("sms", "m", "n", "k", "suffixes"), AT_LAUNCH)
def test_auto_picks_a_tile_at_launch_and_computes_the_gemm(
    monkeypatch: pytest.MonkeyPatch, fn: str, sms: int, m: int, n: int, k: int, suffixes: list[str]
) -> None:
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", str(sms))
    tr = translate_full(PROG.read_text(), filename=str(PROG), schedule="auto")
    rows = occupancy.table(tr.contractions[fn][f"{fn}_k0"])
    assert rows is not None
    pick = occupancy.choose(rows, m, n, k, sms)
    out, ref, rec = run(module("auto"), fn, m, n, k)
    tag = f"_{pick.row.tag}" if pick.row.tag else ""
    expected = [f"{fn}_k0{tag}"] + ([f"{fn}_k0{tag}_sum"] if pick.schedule.split_k > 1 else [])
    assert rec.names == expected, pick.describe()
    assert rec.seen[0][1][0] == pick.programs
    if fn != "gemm_s8":  # 8-bit K steps are 128: the rows above are for 16/32-bit ones
        assert [n.removeprefix(f"{fn}_k0") for n in rec.names] == suffixes
    check(fn, out, ref)


def _v4_rows() -> tuple[occupancy.Row, ...]:
    tr = translate_full((EXAMPLES / "gemm_v4.co").read_text(), filename="gemm_v4.co", schedule="auto")
    c = tr.contractions["matmul"]["matmul_k0"]
    rows = occupancy.table(c)
    assert rows is not None and rows[0].schedule == policy.auto(c)
    return rows


def test_the_policy_for_the_issue_shapes_on_an_h200(capsys: pytest.CaptureFixture[str]) -> None:
    rows = _v4_rows()
    picks = {shape: occupancy.choose(rows, *shape, sms=132) for shape in [(256, 8192, 8192), (8192, 8192, 8192),
             (1024, 1024, 1024), (2048, 2048, 2048), (4000, 4000, 4000), (8192, 8192, 1024), (512, 512, 8192)]}  # fmt: skip
    for shape, p in picks.items():
        print("x".join(map(str, shape)), "->", p.describe())
    printed = capsys.readouterr().out
    assert "256x8192x8192 -> 128 x 128 x 64 tiles, 6 stages, 4 warps" in printed
    skinny = picks[256, 8192, 8192]  # 128 tiles for 132 SMs: the 6-stage pipeline measured 0.995 of cuBLAS
    assert (skinny.schedule.block_m, skinny.schedule.block_n, skinny.schedule.split_k) == (128, 128, 1)
    assert skinny.schedule.num_stages == occupancy.DEEPEST and skinny.schedule.num_warps == 4
    assert skinny.programs == 128 >= 0.9 * 132 and not skinny.schedule.persistent
    big = picks[8192, 8192, 8192]
    assert big.row is rows[0] and big.schedule == rows[0].schedule and (big.tiles, big.programs) == (2048, 132)
    for kept in [(2048, 2048, 2048), (4000, 4000, 4000), (8192, 8192, 1024)]:  # the default kernel, as measured
        assert picks[kept].row is rows[0]
    small = picks[1024, 1024, 1024]
    assert (small.schedule.block_m, small.schedule.block_n, small.programs) == (64, 64, 256)
    split = picks[512, 512, 8192]
    assert split.schedule.split_k == 3 and split.programs == 64 * 3 and split.row.tag == "splitk"


@pytest.mark.parametrize(
    "shape", [(256, 8192, 8192), (8192, 8192, 8192), (1024, 1024, 1024), (1536, 2048, 512), (512, 512, 8192)]
)
def test_the_launcher_takes_the_row_the_policy_picks(monkeypatch: pytest.MonkeyPatch, shape: tuple[int, ...]) -> None:
    """The launcher's conditions (emit/kernels.py) and occupancy.choose agree: recorded at 132 SMs."""
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "132")
    m, n, k = shape
    tr = translate_full((EXAMPLES / "gemm_v4.co").read_text(), filename="gemm_v4.co", schedule="auto")
    mod = load_source(tr.source, "v4_auto_at_launch", origin=str(EXAMPLES / "gemm_v4.co"))
    pick = occupancy.choose(_v4_rows(), m, n, k, sms=132)
    a, b, c = (torch.empty(*s, dtype=F16, device=DEVICE) for s in ((m, k), (n, k), (m, n)))
    launches = record(mod.matmul, a, b, c)
    tag = f"_{pick.row.tag}" if pick.row.tag else ""
    assert launches[0].kernel.__name__ == f"matmul_k0{tag}" and launches[0].grid == (pick.programs,)
    assert len(launches) == (2 if pick.schedule.split_k > 1 else 1)


def test_explain_prints_the_table(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CROQ2TRITON_EXPLAIN", "1")
    translate_full((EXAMPLES / "gemm_v4.co").read_text(), filename="gemm_v4.co", schedule="auto")
    err = capsys.readouterr().err
    for what in ("matmul_k0: 128 x 256 x 64 tiles", "matmul_k0_t64x128: 64 x 128 x 64", "K split at launch"):
        assert what in err, err


def test_a_point_that_sets_the_policys_own_values_keeps_the_choice_at_launch() -> None:
    auto = translate_full(PROG.read_text(), filename=str(PROG), schedule="auto")
    same = auto.schedules["gemm_f16"]["gemm_f16_k0"]
    fields = {"block_m": same.block_m, "block_n": same.block_n, "split_k": 1}
    text = functions_of(PROG, "gemm_f16")  # (the function the points set)
    tr = translate_full(text, filename=str(PROG), schedule="auto", point=Point.of(None, {"gemm_f16_k0": fields}))
    names = [k.name for k in tr.ir["gemm_f16"]]
    assert "gemm_f16_k0_t64x128" in names and "gemm_f16_k0_splitk_sum" in names
    other = Point.of(None, {"gemm_f16_k0": {**fields, "block_n": 128}})
    tr = translate_full(text, filename=str(PROG), schedule="auto", point=other)
    assert [k.name for k in tr.ir["gemm_f16"]] == ["gemm_f16_k0"]


def test_split_k_of_a_batched_contraction_is_refused() -> None:
    path = REPO / "tests" / "programs" / "gemm_forms" / "batched.co"
    point = Point.of(None, {"gemm_k0": {"split_k": 2}})
    tr = translate_full(path.read_text(), filename=str(path), schedule="auto", point=point)
    msg = tr.failed["gemm"].diagnostics[0].message
    assert "splits the K loop of kernel 'gemm_k0'" in msg and "batched" in msg


def test_tune_list_shows_split_k(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["tune", str(PROG), "--func", "gemm_f16", "--schedule", "auto", "--list"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("gemm_f16_k0.split_k "))
    assert line.split()[1] == "1" and "1,2,4" in line and "second kernel" in line


def test_tune_dry_run_prunes_a_split_k_past_the_k_steps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    prog = tmp_path / "splitk.co"  # (the function tuned: its worker translates the file at each point)
    prog.write_text(functions_of(PROG, "gemm_f16"))
    argv = ["tune", str(prog), "--func", "gemm_f16", "--schedule", "auto", "--dry-run", "--jobs", "1"]
    assert cli_main([*argv, "--size", "M=64,N=64,K=100", "--param", "split_k=1,2,4"]) == 0
    out = capsys.readouterr().out
    lines = {ln.split()[1].rstrip(":"): ln for ln in out.splitlines() if ln.startswith(("kept", "pruned"))}
    assert lines["gemm_f16_k0.split_k=1"].startswith("kept") and lines["gemm_f16_k0.split_k=2"].startswith("kept")
    bad = lines["gemm_f16_k0.split_k=4"]
    assert bad.startswith("pruned") and "split_k: 4 splits of K = 100, which has 2 K step(s) of 64" in bad
    assert "3 points: 2 kept, 1 pruned" in out


def test_a_tuned_module_dispatches_to_a_split_k_winner_by_size(tmp_path: Path) -> None:
    """best.json with a split-K winner at one size and another tile at the other: the launcher runs each
    size's winner (its kernels named with the point's suffix, which tune's pruning maps back)."""
    import hashlib

    from croq2triton.api import load
    from croq2triton.tune.prune import base_kernel

    small, large = (50, 70, 700), (197, 301, 91)
    split = {"gemm_f16_k0": {"split_k": 2, "block_m": 64, "block_n": 64, "persistent": False}}
    other = {"gemm_f16_k0": {"block_n": 128}}

    def entry(sizes: tuple[int, int, int], kernels: dict[str, Any]) -> dict[str, Any]:
        m, n, k = sizes
        point = {"defines": {}, "kernels": kernels}
        dtypes = {"a": "float16", "b": "float16", "out": "float16"}
        return {"sizes": {"M": m, "N": n, "K": k}, "dtypes": dtypes, "point": point, "ms": 1.0, "tie": False}

    winners = [entry(small, split), entry(large, other)]
    config = {
        "format": "croq2triton-tune/1", "source": str(PROG), "func": "gemm_f16", "schedule": "auto",
        "source_sha256": hashlib.sha256(PROG.read_text().encode()).hexdigest(), "f32_precision": "ieee",
        "device": {"name": "NVIDIA H200", "driver": "580"}, "versions": {"triton": "3.6.0"},
        "winners": winners, "top": winners,
    }  # fmt: skip
    path = tmp_path / "best.json"
    path.write_text(json.dumps(config))
    mod = load(PROG, config=str(path))
    contractions = mod.__croq_translation__.contractions["gemm_f16"]
    out, ref, rec = run(mod, "gemm_f16", *small)
    check("gemm_f16", out, ref)
    assert len(rec.names) == 2 and rec.names[1].startswith("gemm_f16_k0_sum__t"), rec.names
    assert all(base_kernel(n) in contractions for n in rec.names), (rec.names, list(contractions))
    out, ref, rec = run(mod, "gemm_f16", *large)
    check("gemm_f16", out, ref)
    assert len(rec.names) == 1 and base_kernel(rec.names[0]) in contractions


GEMM = lambda m, n, k: json.dumps([[[m, k], "float16"], [[n, k], "float16"], [[m, n], "float16"]])  # noqa: E731


@pytest.mark.skipif(DEVICE != "cpu", reason="compile-only check (no GPU needed)")
def test_split_k_kernels_compile_for_sm90a() -> None:
    # 64 x 64 x 1024 on the 4 SMs compile-only sees without a GPU: one 64 x 64 tile, K split 4 ways
    r = sm90.script(REPO / "tests" / "aot_check.py", str(PROG), "gemm_f16", GEMM(64, 64, 1024), "{}", "{}", "auto")
    assert r.returncode == 0, r.stderr[-3000:]
    recs = {x["kernel"]: x for x in map(json.loads, (ln for ln in r.stdout.splitlines() if ln.startswith("{")))}
    assert set(recs) == {"gemm_f16_k0_splitk", "gemm_f16_k0_splitk_sum"}, r.stdout
    assert all(x.get("target") for x in recs.values()), recs
    found = recs["gemm_f16_k0_splitk"]["found"]
    assert found["wgmma.mma_async"] and found["cp.async.bulk.tensor"], found


def test_the_program_file_exists() -> None:
    assert Path(PROG).exists()

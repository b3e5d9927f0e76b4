"""A launcher's one test of its arguments (issue 27: the host time of a call).

Arguments as declared (plain tensors of the declared dtypes and ranks on the kernels' device, sizes
that agree) pass one expression; anything else goes through the checks one by one
(``runtime.launch.tensor_arg``, ``bind_dim``, ...), which say what is wrong.  These tests hold the
two to the same results: every function of several programs is called with valid arguments and
with each of a list of mistakes, once as generated and once with the one test made to fail
(``device_of`` answering None, so the checks one by one run: the launcher as it was before it had
the test), launches recorded, not run; the errors (message, place, notes) and the launches must be
the same.  Then the one test is taken for valid arguments (no check one by one runs), the
split form's scratch area (not zeroed any more) is written before it is read, the TMA test at
launch agrees with the rules that explain a refusal, and the environment is read at each call.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest
import torch
from kernel_util import DEVICE, assert_close, load_co, poisoned, randn

import croq2triton
from croq2triton.errors import CroqError
from croq2triton.runinputs import make_inputs
from croq2triton.runsizes import choose
from croq2triton.runtime import launch as rt
from croq2triton.runtime.tma import runtime_fits, runtime_reason

REPO = Path(__file__).resolve().parent.parent
PROGRAMS = [
    REPO / "examples" / "vadd.co",
    REPO / "examples" / "gemm_v1.co",
    REPO / "examples" / "gemm_v4.co",
    REPO / "examples" / "tma_pipeline.co",
    REPO / "tests" / "programs" / "membound_forms.co",
    REPO / "tests" / "programs" / "host_views.co",
    REPO / "tests" / "programs" / "breadth_i.co",
    REPO / "tests" / "programs" / "host_updates.co",
    REPO / "tests" / "programs" / "name_clashes.co",
]


class Sub(torch.Tensor):
    """A tensor subclass: not a plain tensor, checked one by one."""


def _norm(x: Any, inputs: list[Any]) -> Any:
    """What a launch or a return value is made of, comparable between two calls: an argument tensor
    by its position among the inputs (else by its shape, strides and dtype: a buffer, a moved copy),
    a descriptor by its tensor and box."""
    if isinstance(x, torch.Tensor):
        for i, t in enumerate(inputs):
            if isinstance(t, torch.Tensor) and x is t:
                return ("input", i)
        return ("tensor", type(x).__name__, tuple(x.shape), x.stride(), x.dtype, x.device.type)
    if hasattr(x, "block_shape") and hasattr(x, "base"):
        return ("desc", _norm(x.base, inputs), list(x.block_shape), tuple(x.shape), tuple(x.strides), x.padding)
    if isinstance(x, (list, tuple)):
        return type(x)(_norm(v, inputs) for v in x)
    if isinstance(x, dict):
        return {k: _norm(v, inputs) for k, v in x.items()}
    return x


def _outcome(fn: Any, args: list[Any]) -> Any:
    """The launches ``fn(*args)`` makes and what it returns, or the error it raises."""
    rec = rt.Recorder()
    try:
        ret = fn(*args, _launch=rec)
    except CroqError as e:
        d = e.diagnostics[0]
        notes = [(n.message, str(n.span)) for n in d.notes]
        return ("error", type(e).__name__, d.message, str(d.span), d.hint, notes)
    except Exception as e:  # noqa: BLE001 - a Python error, compared as it is
        return ("python error", type(e).__name__, str(e))
    launches = [
        (getattr(la.kernel, "__name__", la.kernel), la.grid, _norm(la.args, args), _norm(la.kwargs, args))
        for la in rec.launches
    ]
    return ("ok", launches, _norm(ret, args))


def _both(monkeypatch: pytest.MonkeyPatch, fn: Any, make: Any) -> tuple[Any, Any, int]:
    """The outcome with the one test, the outcome with the checks one by one, and how many tensor
    checks one by one ran in the first (fresh arguments for each call: host code may write them)."""
    calls = {"n": 0}
    checked = rt.tensor_arg

    def counted(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        return checked(*a, **k)

    with monkeypatch.context() as m:
        m.setattr(rt, "tensor_arg", counted)
        fast = _outcome(fn, make())
    seen = calls["n"]
    with monkeypatch.context() as m:
        m.setattr(rt, "device_of", lambda f, t: rt._set_running(f) and None)  # the checks one by one
        slow = _outcome(fn, make())
    return fast, slow, seen


def _mistakes(args: list[Any], fn_params: list[Any]) -> list[tuple[str, int, Any]]:
    """(what, parameter index, the wrong argument) for the tensor and scalar parameters of ``args``."""
    out: list[tuple[str, int, Any]] = []
    for i, (a, p) in enumerate(zip(args, fn_params, strict=True)):
        if isinstance(a, torch.Tensor):
            other = torch.float64 if a.dtype != torch.float64 else torch.float32
            out += [
                ("dtype", i, a.to(other)),
                ("rank + 1", i, a.unsqueeze(0)),
                ("a list", i, a.tolist() if a.numel() < 64 else [1, 2]),
                ("meta", i, torch.empty(a.shape, dtype=a.dtype, device="meta")),
                ("parameter", i, torch.nn.Parameter(a.clone(), requires_grad=False)),
                ("subclass", i, a.clone().as_subclass(Sub)),
            ]
            if a.dim() > 1:
                out.append(("rank - 1", i, a[0]))
                out.append(("transposed", i, a.clone().transpose(0, 1).contiguous().transpose(0, 1)))
            for d in range(a.dim()):
                grown = list(a.shape)
                grown[d] += 1
                out.append((f"dim {d} + 1", i, torch.zeros(grown, dtype=a.dtype, device=a.device)))
                empty = list(a.shape)
                empty[d] = 0
                out.append((f"dim {d} empty", i, torch.zeros(empty, dtype=a.dtype, device=a.device)))
            if a.dim() == 1 and a.shape[0] > 2:
                out.append(("strided", i, torch.zeros(2 * a.shape[0], dtype=a.dtype, device=a.device)[::2]))
        elif p.type.kind in ("int", "elem", "bool"):
            out += [("a string", i, "two"), ("a float", i, 2.5), ("a bool", i, True), ("a tensor", i, torch.tensor(3))]
    return out


# the programs again under the auto schedule (split loops, persistent grids, launch-time tile choices)
AUTO = [REPO / "examples" / "gemm_v4.co", REPO / "tests" / "programs" / "membound_forms.co"]
_AUTO: dict[Path, Any] = {}


def _module(path: Path, schedule: str) -> Any:
    if schedule == "source":
        return load_co(path)
    if path not in _AUTO:
        _AUTO[path] = croq2triton.load(path, schedule="auto")
    return _AUTO[path]


def _functions() -> list[Any]:
    out = []
    for path, schedule in [*((p, "source") for p in PROGRAMS), *((p, "auto") for p in AUTO)]:
        tr = _module(path, schedule).__croq_translation__
        out += [
            pytest.param(path, schedule, fn.name, id=f"{path.stem}-{schedule}-{fn.name}")
            for fn in tr.unit.functions
            if fn.name not in tr.failed
        ]
    return out


@pytest.mark.parametrize(("path", "schedule", "name"), _functions())
def test_every_mistake_gets_the_error_the_checks_one_by_one_give(
    monkeypatch: pytest.MonkeyPatch, path: Path, schedule: str, name: str
) -> None:
    mod = _module(path, schedule)
    tr = mod.__croq_translation__
    (fn,) = [f for f in tr.unit.functions if f.name == name]
    launcher = getattr(mod, name)
    sizes = {}  # ragged sizes: no multiple of a tile
    for k, (n, kind) in enumerate(choose([fn], {})[name].kinds.items()):
        if kind == "size":
            sizes[n] = str(37 + 23 * k)
    chosen = choose([fn], sizes)[name]
    try:
        make_inputs(fn, chosen.values, DEVICE)
    except CroqError:
        pytest.skip("no random input for a parameter")

    def valid() -> list[Any]:
        return make_inputs(fn, chosen.values, DEVICE, seed=1).args

    fast, slow, checked = _both(monkeypatch, launcher, valid)
    assert fast == slow
    tensors = sum(isinstance(a, torch.Tensor) for a in valid())
    if fast[0] == "ok" and tensors:
        assert checked == 0, "valid arguments took the checks one by one"
    for what, i, wrong in _mistakes(valid(), list(fn.params)):

        def make(i: int = i, wrong: Any = wrong) -> list[Any]:
            args = valid()
            args[i] = wrong.clone() if isinstance(wrong, torch.Tensor) and wrong.device.type != "meta" else wrong
            return args

        fast, slow, _ = _both(monkeypatch, launcher, make)
        assert fast == slow, f"{name}, parameter {i}, {what}"


def test_the_errors_of_a_launch_stay_as_they_were() -> None:
    """The messages themselves (the differential test above holds the one test to them)."""
    mod = load_co(REPO / "examples" / "vadd.co")
    a, b = randn(100, seed=1), randn(100, seed=2)
    cases = [
        ((a.double(), b, poisoned(100)), "vadd: parameter 'a' has dtype torch.float64, expected torch.float32"),
        ((a, b[None], poisoned(100)), "vadd: parameter 'b' has rank 2 (shape (1, 100)), expected rank 1"),
        ((a, b, poisoned(101)), "vadd: inconsistent size 'N': a.shape[0] is 100 but out.shape[0] is 101"),
        ((a, [1.0] * 100, poisoned(100)), "vadd: parameter 'b' must be a torch.Tensor, got list"),
        ((a[:0], b[:0], poisoned(0)), "vadd: 'N' = a.shape[0] is 0; sizes must be positive"),
        (
            (a, b, torch.empty(100, device="meta")),
            "vadd: 'global' parameter 'out' is on meta, but kernels run "
            + ("on the GPU" if DEVICE == "cuda" else "on the CPU (no GPU: kernels run in the Triton interpreter)"),
        ),
    ]
    for args, message in cases:
        with pytest.raises(rt.CroqLaunchError) as info:
            mod.vadd(*args)
        assert info.value.diagnostics[0].message == message


def test_a_parameter_and_a_strided_view_take_the_one_test_and_compute() -> None:
    mod = load_co(REPO / "examples" / "vadd.co")
    a = torch.nn.Parameter(randn(2 * 333, seed=1)[::2], requires_grad=False)
    b, out = randn(333, seed=2), poisoned(333)
    mod.vadd(a, b, out)
    assert_close(out, (a.detach() + b).double())  # (f32 sums, as the kernel rounds them)


def test_the_split_forms_scratch_is_written_before_it_is_read() -> None:
    """col_means_f16 over many rows: partial folds through a scratch area that is not zeroed any
    more (under the tests' poison it starts as NaN: an element the partials did not write would
    reach the means), combined by the last program of each column block, which counts through the
    runtime's kept counters: zero before and after every launch."""
    mod = croq2triton.load(REPO / "tests" / "programs" / "membound_forms.co", schedule="auto")
    rec = rt.Recorder()
    x = randn(3001, 300, seed=4).half()
    mod.col_means_f16(x, poisoned(300, dtype=torch.float16), _launch=rec)
    names = [la.kernel.__name__ for la in rec.launches]
    assert names == ["col_means_f16_k0_split"], names
    assert "written=True" in mod.__croq_source__
    area, counters = rec.launches[0].args[-2:]
    assert area.isnan().all()  # poisoned, not zeroed
    assert counters.dtype == torch.int32 and not counters.any()
    m = poisoned(300, dtype=torch.float16)
    mod.col_means_f16(x, m)
    assert_close(m, x.double().mean(0), atol=2e-3, rtol=2e-3)


def test_scratch_is_zeroed_unless_written_first() -> None:
    f = rt.Fn("f", "f.co", 1)
    assert (rt.scratch(f, 7, torch.float32, torch.device("cpu")) == 0).all()
    assert rt.scratch(f, 7, torch.float32, torch.device("cpu"), written=True).isnan().all()  # the tests' poison
    assert rt.scratch(f, 0, torch.float32, torch.device("cpu")).shape == (1,)


def test_the_tma_test_at_launch_agrees_with_the_rules_that_explain_a_refusal() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        dtype = rng.choice([torch.float16, torch.float32, torch.int8, torch.float64])
        rank = rng.choice([1, 2, 3])
        shape = [rng.choice([1, 3, 8, 16, 24, 64, 100]) for _ in range(rank)]
        base = torch.empty(4 * max(1, torch.Size(shape).numel()) + 64, dtype=dtype)
        strides = list(torch.empty(shape).stride())
        if rng.random() < 0.3:
            strides = [s * rng.choice([1, 2, 3]) for s in strides]
        if rng.random() < 0.2:
            strides[-1] = rng.choice([0, 1, 2])
        offset = rng.choice([0, 0, 0, 1, 4, 8, 16])
        need = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1
        if need > base.numel():
            continue
        t = base.as_strided(shape, strides, offset)
        box = tuple(rng.choice([8, 16, 64]) for _ in range(rank if rng.random() < 0.9 else rank + 1))
        extents = box if rng.random() < 0.9 else tuple(b // 2 for b in box)
        assert runtime_fits(t, box, extents) == (runtime_reason("t", t, list(box), list(extents)) is None), (
            shape,
            strides,
            offset,
            dtype,
            box,
            extents,
        )


def test_tma_ok_says_what_the_rules_say_and_warns_once(recwarn: pytest.WarningsRecorder) -> None:
    f = rt.Fn("g", "g.co", 1)
    good = torch.empty(64, 64, dtype=torch.float16)
    assert rt.tma_ok(f, "a", good, (16, 16), (16, 16), "loads")
    assert not rt.tma_ok(f, "a", torch.empty(64, 63, dtype=torch.float16), (16, 16), (16, 16), "loads")
    assert not rt.tma_ok(f, "a", torch.empty(64, 63, dtype=torch.float16), (16, 16), (16, 16), "loads")
    said = [str(w.message) for w in recwarn if "TMA" in str(w.message) or "stride" in str(w.message)]
    assert said == ["croq2triton: g: a: row stride 126 B is not 16-byte aligned; using masked loads"]
    assert not rt.tma_ok(f, "a", torch.empty(64, 64, dtype=torch.float16, device="meta"), (16, 16), (16, 16))
    # lists (modules translated before the launch passed tuples) decide the same
    assert rt.tma_ok(f, "a", good, [16, 16], [16, 16], "loads")


def test_the_environment_is_read_at_each_call(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = torch.device("cpu")
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "7")
    assert rt.num_sms(cpu) == 7
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "12")
    assert rt.num_sms(cpu) == 12
    monkeypatch.delenv("CROQ2TRITON_NUM_SMS")
    assert rt.num_sms(cpu) == 4
    monkeypatch.setenv("CROQ2TRITON_NUM_SMS", "x")
    assert rt.num_sms(cpu) == 4
    for v in ("1", "0", ""):
        monkeypatch.setenv("TRITON_INTERPRET", v)
        assert rt.interpreting() is (v == "1")
    monkeypatch.delenv("TRITON_INTERPRET")
    assert not rt.interpreting()


def test_the_launch_wrapper_skips_an_empty_grid_and_takes_ints_of_other_types() -> None:
    seen: list[tuple[Any, ...]] = []

    class Kernel:
        __name__ = "k"

        def __getitem__(self, grid: Any) -> Any:
            return lambda *a, **k: seen.append((grid, a, k))

    import numpy as np

    rt.launch(Kernel(), (3, 2), [1], {"num_warps": 4})
    rt.launch(Kernel(), (0, 2), [1], {})
    rt.launch(Kernel(), (np.int64(5), True), [1], {})
    rt.launch(Kernel(), (np.int64(0),), [1], {})
    assert seen == [((3, 2), (1,), {"num_warps": 4}), ((5, 1), (1,), {})]
    assert all(type(g) is int for g in seen[1][0])


def test_pow2_is_the_least_power_of_two_at_or_above() -> None:
    for n, want in itertools.chain([(-3, 1), (0, 1), (1, 1), (2, 2), (3, 4), (1024, 1024), (1025, 2048)]):
        assert rt.pow2(n) == want

"""Helpers for numerical tests of translated kernels (interpreter on the CPU)."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

# CPU (default): kernels run in Triton's interpreter. CROQ2TRITON_TEST_DEVICE=cuda runs the same
# tests compiled on a GPU (perf/gpu_check.py does that on the H200).
DEVICE = os.environ.get("CROQ2TRITON_TEST_DEVICE", "cpu")
if DEVICE == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")

from croq2triton.api import load  # noqa: E402
from croq2triton.runtime import launch as rt  # noqa: E402

rt.POISON = True
_CACHE: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}


def load_co(path: str | Path, **defines: object) -> Any:
    key = (str(path), tuple(sorted((k, str(v)) for k, v in defines.items())))
    if key not in _CACHE:
        _CACHE[key] = load(path, defines=defines or None)
    return _CACHE[key]


def randn(*shape: int, dtype: torch.dtype = torch.float32, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=g).to(dtype).to(DEVICE)
    return torch.randint(-50, 50, shape, generator=g).to(dtype).to(DEVICE)


def poisoned(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, rt.poison_value(dtype), dtype=dtype, device=DEVICE)


def assert_close(got: torch.Tensor, ref: torch.Tensor, atol: float = 0.0, rtol: float = 0.0) -> None:
    assert got.shape == ref.shape, (got.shape, ref.shape)
    g, r = got.double().cpu(), ref.double().cpu()
    both_nan = torch.isnan(g) & torch.isnan(r)
    assert not (torch.isnan(g) & ~torch.isnan(r)).any(), "some elements were never written (NaN poison left)"
    bad = ~both_nan & ~torch.isclose(g, r, atol=atol, rtol=rtol)
    assert not bad.any(), f"{int(bad.sum())} elements differ; max |diff| {float((g - r)[bad].abs().max())}"


def assert_near_max(got: torch.Tensor, ref: torch.Tensor, tol: float, what: str) -> None:
    """Every element written (no NaN poison left) and within ``tol`` of the reference's largest element."""
    g, r = got.double().cpu(), ref.double().cpu()
    assert not torch.isnan(g).any(), f"{what}: some elements were never written (NaN poison left)"
    err = float((g - r).abs().max() / r.abs().max().clamp(min=1e-30))
    assert err <= tol, f"{what}: relative error {err:.3g} > {tol}"


def gemm_tol(k: int) -> float:
    """fp16 output of a length-k dot of N(0,1) inputs: a few fp16 ulps of the result."""
    return 2e-3 * (k**0.5) + 1e-2


def flat(text: str) -> str:
    """``text`` with every run of whitespace one space: a phrase of a docstring or comment that the
    formatter wrapped reads as it was written."""
    return " ".join(text.split())


def canonical(code: str) -> str:
    """Python code with its layout taken out (comments, line breaks, spaces, parentheses and trailing
    commas that only lay it out): generated code compares the same formatted by ruff or by the
    emitter's own line breaking (where ruff cannot run)."""
    import ast

    return "".join(ast.unparse(ast.parse(code)).split())


_LOADED: dict[tuple[str, str], object] = {}


def load_once(path: object, schedule: str) -> object:
    """A program translated under ``schedule`` and loaded, once per test process."""
    from croq2triton.api import load

    key = (str(path), schedule)
    if key not in _LOADED:
        _LOADED[key] = load(path, schedule=schedule)
    return _LOADED[key]


# Under --schedule auto most row kernels of the programs of forms run a program per row: at the sizes
# past the first (rows longer than a tile), more rows than a few only run more programs of the same
# kernel (each row's program is the same work), seconds of interpreter time. form_rows gives such a
# function FEW_ROWS rows; a function whose kernel takes many rows a program is named with the rows
# that give it two programs (its last one partial).
FEW_ROWS = 5


def form_rows(fn: str, schedule: str, m: int, n: int, many: Mapping[str, int]) -> int:
    """The rows function ``fn`` of a program of forms runs at for the size ``m x n`` under ``schedule``:
    ``m`` at the first size (rows no longer than 131) and under the source schedule (whose longer
    sizes are in the long tier); else FEW_ROWS, or ``many[fn]`` for a kernel of many rows a program."""
    if schedule != "auto" or n <= SOURCE_ROW:
        return m
    return min(m, many.get(fn, FEW_ROWS))


def check_forms(
    path: object,
    schedule: str,
    cases: dict[str, tuple[Any, Any, Any, float]],
    m: int,
    n: int,
    many: Mapping[str, int] | None = None,
) -> None:
    """Each function of a program of forms run under ``schedule`` at ``m x n``: ``cases`` maps it to
    (inputs of (m, n), output shapes and types of (m, n), its float64 reference, a tolerance relative
    to the reference's largest element); outputs poisoned with NaN first. With ``many`` (the
    functions of many rows a program), each at :func:`form_rows` rows, and every kernel it launches
    must run several programs (else it needs more rows: name it in ``many``)."""
    mod = load_once(path, schedule)
    for fn, (make, outs, ref, tol) in cases.items():
        rows = m if many is None else form_rows(fn, schedule, m, n, many)
        ins = make(rows, n)
        got = [poisoned(*shape, dtype=dtype) for shape, dtype in outs(rows, n)]
        ran, launch = recording_grids()
        getattr(mod, fn)(*ins, *got, _launch=launch)
        for g, r in zip(got, ref(*ins), strict=True):
            assert_near_max(g, r, tol, f"{fn} at {rows} x {n} ({schedule})")
        if rows < m:
            one = [k for k, grid in ran if math.prod(grid) < 2]
            assert not one, f"{fn} at {rows} x {n}: {one} ran as one program (give {fn} more rows in `many`)"


def kernel_code(source: str, name: str) -> str:
    """The ``@triton.jit`` function ``name`` of a generated module, its layout taken out (:func:`canonical`)."""
    start = source.index(f"def {name}(")
    end = source.find("\n@", start)
    return canonical(source[start : end if end > 0 else None])


def recording_grids() -> tuple[list[tuple[str, tuple[int, ...]]], Any]:
    """A ``_launch`` for a generated launcher that runs each kernel and records its name and grid."""
    ran: list[tuple[str, tuple[int, ...]]] = []

    def launch(kernel: object, grid: tuple[int, ...], args: list[object], kwargs: dict[str, object]) -> None:
        ran.append((getattr(kernel, "__name__", str(kernel)), tuple(int(g) for g in grid)))
        rt.launch(kernel, grid, args, kwargs)

    return ran, launch


def recording_launch() -> tuple[list[str], Any]:
    """A ``_launch`` for a generated launcher that runs each kernel and records its name: (names, launch)."""
    ran: list[str] = []

    def launch(kernel: object, grid: tuple[int, ...], args: list[object], kwargs: dict[str, object]) -> None:
        ran.append(getattr(kernel, "__name__", str(kernel)))
        rt.launch(kernel, grid, args, kwargs)

    return ran, launch


def functions_of(path: str | Path, *names: str) -> str:
    """The text of program ``path`` with only its ``__co__`` functions ``names`` (what comes before
    its first function kept: comments, ``#define``s, ``__device__`` helpers). A test that translates
    a program of many functions under tuning points, but runs a few of them, translates only those:
    translating costs time in proportion to the functions, and the others translate under their
    own defaults elsewhere. The functions keep their text, not their line numbers."""
    text = Path(path).read_text()
    # a function's part starts at the comment lines right above it
    starts = [m.start() for m in re.finditer(r"^(?://[^\n]*\n)*__co__ ", text, flags=re.M)]
    assert starts, f"{path}: no __co__ function"
    parts = [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    kept, found = [text[: starts[0]]], set()
    for part in parts:
        m = re.search(r"^__co__\s+[\w<>, ]+?\s+(\w+)\s*\(", part, flags=re.M)
        assert m, part[:80]
        if m.group(1) in names:
            kept.append(part)
            found.add(m.group(1))
        else:  # (a function dropped with a definition that a kept one could read: keep it whole instead)
            assert not re.search(r"^\s*(#|__device__)", part, flags=re.M), f"{path}: {m.group(1)} defines more"
    assert found == set(names), f"{path}: no function {sorted(set(names) - found)}"
    return "".join(kept)


def diagnostics(source: str, filename: str) -> str:
    """The diagnostics of translating ``source`` as ``filename`` (functions that do not translate
    are errors), formatted as the command line prints them."""
    from croq2triton.api import translate_full
    from croq2triton.errors import CroqError

    try:
        out = translate_full(source, filename=filename)
    except CroqError as e:
        return e.format()
    return "\n".join(d.format() for d in out.diagnostics)


def check_errors(source: str, filename: str = "t.co") -> list[Any]:
    """The errors ``croq2triton check`` reports for ``source`` (its static checks; empty: none)."""
    from croq2triton.errors import CroqError
    from croq2triton.frontend.driver import parse
    from croq2triton.sema.checks import check_unit

    try:
        check_unit(parse(source, filename))
    except CroqError as e:
        return [d for d in e.diagnostics if d.severity == "error"]
    return []


def line_col(d: Any) -> tuple[int, int]:
    """Where diagnostic ``d`` points: (line, column)."""
    assert d.span is not None
    return d.span.line, d.span.col


def loop_as_written(code: str, var: str, stop: str) -> bool:
    """Whether canonical ``code`` has the loop ``for var in range(0, stop)`` as written, plain or
    software-pipelined (``tl.range(0, stop, num_stages=S)``: a loop that only reads memory,
    schedule/loadstages.py)."""
    return re.search(rf"for{var}in(tl\.)?range\(0,{re.escape(stop)}(,num_stages=\d+)?\):", code) is not None


# The source schedule runs a lane's loop as written, one element a step: a long row costs the
# interpreter time in proportion and tests nothing a shorter ragged row does not (no tile of the row
# exists to be longer than); rows longer than a tile matter to --schedule auto, which keeps them.
SOURCE_ROW = 131


def form_sizes(sizes: list[tuple[int, int]]) -> list[Any]:
    """``(schedule, m, n)`` parameters for a program of forms at each of ``sizes``: every size under
    auto, and under the source schedule with rows of at most :data:`SOURCE_ROW` elements (sizes past
    the first in the long tier: conftest.py)."""
    import pytest

    out = []
    for i, (m, n) in enumerate(sizes):
        short = min(n, SOURCE_ROW)
        # (the source schedule runs the kernel as written: past the first size, the long tier)
        marks = [pytest.mark.long] if i else []
        out.append(pytest.param("source", m, short, id=f"source-{m}-{short}", marks=marks))
        out.append(pytest.param("auto", m, n, id=f"auto-{m}-{n}"))
    return out


def assert_folded(
    code: Callable[[str, str], str], kernel: str, counters: tuple[str, ...], reductions: tuple[str, ...]
) -> None:
    """``kernel``'s auto code (``code(schedule, name)``) walks no long axis with ``counters`` one element a
    step, makes no round trip through scratch memory and holds each of ``reductions``; its source
    schedule walks such a loop (the memory-bound forms' tests)."""
    body = code("auto", f"{kernel}_k0")
    walks = [c for c in counters if re.search(rf"\bfor {c} in\b", body)]
    assert not walks, f"{kernel}: loops still walk the row one element a step: {walks}"
    assert "_scratch" not in body, f"{kernel}: a round trip through scratch memory"
    for r in reductions:
        assert r in body, f"{kernel}: no {r}"
    written = code("source", f"{kernel}_k0")
    walked = any(re.search(rf"\bfor {c} in\b", written) for c in counters) or "while " in written
    assert walked, f"{kernel}: the source has no such loop"

"""Both schedules compute the same: every function of examples/ and of the shared corpus whose
kernel ``--schedule auto`` tiles as a contraction (lift/contraction.py proves it) is run under both
schedules on the same random inputs (every symbolic size 40, ragged, then 128) in the interpreter, and
every tensor it writes must agree (the source schedule lowers the kernel as written).  A wrong proof,
a wrong epilogue or a wrong tiling shows here on programs nobody wrote for this test.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest
import torch
from conftest import CORPUS, EXAMPLES, MANIFEST, needs_corpus
from kernel_util import DEVICE

from croq2triton.api import load
from croq2triton.errors import CroqError
from croq2triton.runinputs import make_inputs
from croq2triton.runsizes import choose

SIZES = (40, 128)  # ragged; and a multiple of the tiles (chunkat windows of cdiv grids are tiled only then)
MARK = re.compile(r"def (\w+?)_k\d+\w*\([^)]*\):\s*\"\"\"The \.co computes out = .{0,120}?\(a contraction")


def _files() -> list[object]:
    out: list[object] = []
    for group, root, marks in (("examples", EXAMPLES, []), ("corpus", CORPUS, [needs_corpus])):
        files = sorted(root.rglob("*.co")) if root.exists() and (group == "examples" or MANIFEST.exists()) else []
        for p in files:
            out.append(
                pytest.param(p, id=f"{group}/{p.relative_to(root).as_posix()}", marks=[pytest.mark.slow, *marks])
            )
    if not any(True for _ in CORPUS.rglob("*.co")) if CORPUS.exists() else True:
        out.append(pytest.param(Path("corpus-absent.co"), id="corpus", marks=[needs_corpus]))
    return out


def contraction_functions(source: str) -> set[str]:
    """The functions whose kernel the auto schedule tiles as a contraction (its docstring says so)."""
    flat = " ".join(source.split())
    return {m.group(1) for m in MARK.finditer(flat)}


def _outputs(fn: str, mod: object, args: list[object]) -> list[torch.Tensor]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = getattr(mod, fn)(*args)
    got = [a for a in args if isinstance(a, torch.Tensor)]
    if isinstance(res, torch.Tensor):
        got.append(res)
    elif isinstance(res, tuple):
        got += [r for r in res if isinstance(r, torch.Tensor)]
    return [g.detach().double().cpu() for g in got]


@pytest.mark.parametrize("path", _files())
def test_the_tiled_contraction_computes_what_the_source_does(path: Path) -> None:
    try:
        auto = load(path, schedule="auto")
        source = load(path, schedule="source")
    except CroqError:
        pytest.skip("the file is refused (its diagnostic is tested elsewhere)")
    names = contraction_functions(auto.__croq_translation__.source)
    tr = auto.__croq_translation__
    compared: list[str] = []
    for fn in tr.unit.functions:
        if fn.name not in names or fn.name in tr.failed:
            continue
        chosen = choose([fn], {})[fn.name]
        seen: list[dict[str, object]] = []
        for size in SIZES:
            values = {k: (size if chosen.kinds.get(k) == "size" else v) for k, v in chosen.values.items()}
            if values in seen:  # no symbolic size (extents of #defines): the run at 40 was this one
                continue
            seen.append(values)
            try:
                got = _outputs(fn.name, auto, make_inputs(fn, values, DEVICE, seed=7).args)
                want = _outputs(fn.name, source, make_inputs(fn, values, DEVICE, seed=7).args)
            except CroqError:
                continue  # refused at launch (sizes its tiles do not divide, ...): tested elsewhere
            compared.append(f"{fn.name}@{size}")
            _agree(fn.name, got, want)
    print(f"{path.name}: {len(names)} tiled functions, compared: {', '.join(compared)}")
    assert not names or compared, "no tiled function could be run at these sizes"


def _agree(fn: str, got: list[torch.Tensor], want: list[torch.Tensor]) -> None:
    assert len(got) == len(want), fn
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.shape == w.shape, (fn, i)
        assert bool((torch.isnan(g) == torch.isnan(w)).all()), (
            f"{fn}: tensor {i}: elements written by one schedule only"
        )
        ok = ~torch.isnan(w)
        if not bool(ok.any()):
            continue
        scale = float(w[ok].abs().max())
        err = float((g[ok] - w[ok]).abs().max())
        # f16 outputs and accumulators: a few f16 ulps of the largest element
        assert err <= 2e-2 * scale + 1e-3, f"{fn}: tensor {i}: max |auto - source| = {err:.3g} (max {scale:.3g})"

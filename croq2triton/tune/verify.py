"""Checking a tuning point's outputs before it is timed, so that no wrong kernel is ever ranked.

Each point runs on its own fresh copies of the inputs (random, the same for every point: one seed),
its outputs first filled with poison (NaN; the type's minimum for integers).  It is ``wrong`` when

* an element of an output still holds the poison (the kernel did not write it);
* an output differs from the *default translation*'s (the source schedule, no point, on the same
  inputs) past the dtype's tolerance (``croq2triton/tolerances.py``, the rule of ``run --check``);
* the function is one proved contraction without an epilogue, and its output differs from the
  float64 product of its inputs (torch) past that tolerance.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..check_run import Difference, Outputs
from ..runinputs import find_unwritten
from ..tir.contract import Contraction, Operand
from ..tolerances import RTOL


def contraction_info(c: Contraction | None) -> dict[str, Any] | None:
    """What the float64 reference needs of a contraction (None: there is none to build: an
    epilogue, a grouped or block-scaled contraction)."""
    if c is None or c.epilogue is not None or c.group is not None or c.scales:
        return None

    def op(o: Operand) -> dict[str, Any]:
        return {"tensor": o.tensor, "elem": o.elem, "free": o.free, "inner": o.inner, "batch": o.batch}

    return {"a": op(c.a), "b": op(c.b), "out": op(c.out), "acc": c.acc}


def _bmk(t: Any, o: Mapping[str, Any]) -> Any:
    """``t`` as [batch, free, inner] (a view)."""
    dims = ([o["batch"]] if o["batch"] is not None else []) + [o["free"], o["inner"]]
    v = t.permute(*dims)
    return v if o["batch"] is not None else v.unsqueeze(0)


def operands(info: Mapping[str, Any], named: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    """The contraction's A [b, m, k], B [b, n, k] and output [b, m, n] as views of the tensors."""
    return (
        _bmk(named[info["a"]["tensor"]], info["a"]),
        _bmk(named[info["b"]["tensor"]], info["b"]),
        _bmk(named[info["out"]["tensor"]], info["out"]),
    )


def float64_reference(info: Mapping[str, Any], named: Mapping[str, Any]) -> Outputs:
    """``{output name: the float64 product, rounded to the output's dtype}``."""
    a, b, out = operands(info, named)
    ref = a.double() @ b.double().transpose(-1, -2)
    shaped = ref if info["out"]["batch"] is not None else ref.squeeze(0)
    dims = ([info["out"]["batch"]] if info["out"]["batch"] is not None else []) + [
        info["out"]["free"],
        info["out"]["inner"],
    ]
    inverse = [dims.index(d) for d in range(len(dims))]
    return {info["out"]["tensor"]: shaped.permute(*inverse).to(out.dtype)}


def problems(
    outs: Outputs,
    poisoned: Mapping[str, Any],
    reference: Outputs | None,
    float64: Outputs | None,
    least_rtol: float | None = None,
) -> list[str]:
    """Why these outputs are wrong (empty: they are right); floating outputs compared at least at
    ``least_rtol`` (an fp8 MMA's accumulator on a GPU: tolerances.py)."""
    out: list[str] = []
    for u in find_unwritten(dict(poisoned)):
        out.append(f"unwritten: {u.format()}")
    if reference is not None:
        for d in compare_outputs(reference, outs, least_rtol):
            out.append(f"differs from the default translation: {d.format('default', 'point')}")
    if float64 is not None:
        for d in compare_outputs(float64, outs, least_rtol):
            out.append(f"differs from float64 torch: {d.format('float64', 'point')}")
    return out


def compare_outputs(ref: Outputs, got: Outputs, least_rtol: float | None = None) -> list[Difference]:
    """``check_run.compare``'s rule (``|x - ref| > rtol * (|ref| + mean |ref|)``, NaN where only one is
    NaN, integers exactly), computed where the tensors are (a GPU compares 8192^2 outputs in
    microseconds; the CPU copy ``run --check`` makes would take a second a point)."""
    import torch

    out: list[Difference] = []
    for name, r in ref.items():
        g = got.get(name)
        if g is None:
            continue
        if g.shape != r.shape or g.dtype != r.dtype:
            what = f"shape {tuple(r.shape)} {r.dtype} vs {tuple(g.shape)} {g.dtype}"
            out.append(Difference(name, r.numel(), r.numel(), (), float("nan"), float("nan"), None, what))
            continue
        r = r.to(g.device)
        if not r.dtype.is_floating_point:
            bad = r != g
            score = bad.to(torch.float32)
            rtol = None
        else:
            rtol = max(RTOL.get(str(r.dtype).removeprefix("torch."), 1e-4), least_rtol or 0.0)
            rd, gd = r.double(), g.double()
            rnan, gnan = torch.isnan(rd), torch.isnan(gd)
            finite = torch.isfinite(rd)
            floor = rd.abs().where(finite, torch.zeros_like(rd)).sum() / finite.sum().clamp(min=1)
            tol = rtol * (rd.abs() + floor)
            inf_same = torch.isinf(rd) & (rd == gd)
            diff = torch.where(~rnan & ~gnan & ~inf_same, (gd - rd).abs(), torch.zeros_like(rd))
            diff = torch.nan_to_num(diff, nan=float("inf"), posinf=float("inf"))
            score = torch.where(rnan != gnan, torch.full_like(rd, float("inf")), diff / tol.clamp(min=1e-300))
            bad = score > 1
        count = int(bad.sum())
        if not count:
            continue
        flat = int(torch.argmax(torch.where(bad, score, torch.full_like(score, -1.0))))
        idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), r.shape)) if r.dim() else ()
        rv = float(r[idx].item()) if idx else float(r.item())
        gv = float(g[idx].item()) if idx else float(g.item())
        out.append(Difference(name, count, r.numel(), idx, rv, gv, rtol, str(r.dtype).replace("torch.", "")))
    return out

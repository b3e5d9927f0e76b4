"""``croq2triton run --check``: run the same inputs through several variants and compare the outputs.

A :class:`Variant` turns a function's inputs into its outputs (the tensor parameters it writes, by
name, and the buffer it returns).  The standard variants are the translated launchers of both
schedules and the source schedule with Triton's ``num_stages=1``; an independent reference (e.g. an
interpreter of the ``.co`` AST) is one more class with the same ``run``.

Every variant's outputs are compared element by element with the first variant's (the reference).
An element differs when ``|x - ref| > rtol * (|ref| + mean |ref|)`` (``mean |ref|`` over the
output's finite elements: the floor for elements that cancel to near zero), when only one of the two
is NaN, or when they are different infinities; ``rtol`` depends on the output's dtype
(``tolerances.py``); integers and bools must be equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from .errors import CroqError
from .frontend import ast as A
from .runinputs import RETURNED
from .sema.writes import written_params
from .tolerances import RTOL

Outputs = dict[str, torch.Tensor]


class Variant(Protocol):
    """One way of computing a function's outputs."""

    name: str

    def run(self, fn: A.CoFunction, args: Sequence[Any]) -> Outputs:
        """The outputs of ``fn`` on ``args`` (which it may overwrite: callers pass copies).
        Raises :class:`CroqError` when this variant cannot run ``fn``."""
        ...


def clone_args(args: Sequence[Any]) -> list[Any]:
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


def outputs_of(fn: A.CoFunction, args: Sequence[Any], result: Any) -> Outputs:
    """What a call of ``fn`` produced: the tensor parameters it writes and a returned tensor."""
    writes = written_params(fn)
    out: Outputs = {}
    for p, a in zip(fn.params, args):
        if p.name in writes and isinstance(a, torch.Tensor):
            out[p.name] = a.detach().clone()
    if isinstance(result, torch.Tensor):
        out[RETURNED] = result.detach().clone()
    return out


@dataclass
class LauncherVariant:
    """A translated module's launcher, optionally with a ``_launch=`` (e.g. ``tuned(num_stages=1)``)."""

    name: str
    module: Callable[[], Any]  # the module, loaded on first use
    launch: Any = None

    def run(self, fn: A.CoFunction, args: Sequence[Any]) -> Outputs:
        mod = self.module()
        tr = getattr(mod, "__croq_translation__", None)
        if tr is not None and fn.name in tr.failed:
            raise tr.failed[fn.name]
        launcher = getattr(mod, fn.name)
        result = launcher(*args, _launch=self.launch) if self.launch is not None else launcher(*args)
        return outputs_of(fn, args, result)


@dataclass
class Precomputed:
    """Outputs already computed (the timed run's), standing for the variant that computed them."""

    name: str
    outputs: Outputs

    def run(self, fn: A.CoFunction, args: Sequence[Any]) -> Outputs:
        return self.outputs


@dataclass
class Difference:
    output: str
    count: int  # elements past the tolerance
    total: int
    index: tuple[int, ...]  # the worst one
    ref: float
    got: float
    rtol: float | None  # None: compared exactly
    dtype: str = ""

    def format(self, ref_name: str, name: str) -> str:
        tol = f"{self.dtype}, rtol {self.rtol:g}" if self.rtol is not None else f"{self.dtype}, exact"
        return (
            f"{self.output}: {self.count} of {self.total} elements differ ({tol}); worst at {list(self.index)}: "
            f"{ref_name} {self.ref!r}, {name} {self.got!r}"
        )


def fp8_mma(fn: A.CoFunction) -> bool:
    """Whether ``fn`` issues MMAs and takes fp8 tensors (whose products they accumulate with fewer
    bits than f32 on a GPU: tolerances.py ``FP8_MMA_RTOL``)."""
    fp8 = any(p.type.kind == "spanned" and (p.type.elem or "").startswith("f8") for p in fn.params)
    return fp8 and any(isinstance(n, A.MmaOp) for n in fn.walk())


def compare(ref: Outputs, got: Outputs, least_rtol: float | None = None) -> list[Difference]:
    """Elements of ``got`` that differ from ``ref`` past the tolerance (at least ``least_rtol`` for
    floating outputs), per output."""
    out: list[Difference] = []
    for name, r in ref.items():
        g = got.get(name)
        if g is None:
            continue
        if g.shape != r.shape or g.dtype != r.dtype:
            what = f"shape {tuple(r.shape)} {r.dtype} vs {tuple(g.shape)} {g.dtype}"
            out.append(Difference(name, r.numel(), r.numel(), (), float("nan"), float("nan"), None, what))
            continue
        d = _differ(r.cpu(), g.cpu(), least_rtol)
        if d is not None:
            d.output = name
            out.append(d)
    return out


def _differ(r: torch.Tensor, g: torch.Tensor, least_rtol: float | None = None) -> Difference | None:
    rtol = RTOL.get(str(r.dtype).removeprefix("torch."), 1e-4) if r.dtype.is_floating_point else None
    if rtol is not None and least_rtol is not None:
        rtol = max(rtol, least_rtol)
    if rtol is None:
        bad = r != g
        score = bad.to(torch.float64)
    else:
        rd, gd = r.double(), g.double()
        rnan, gnan = torch.isnan(rd), torch.isnan(gd)
        finite = torch.isfinite(rd)
        floor = float(rd[finite].abs().mean()) if bool(finite.any()) else 0.0
        tol = rtol * (rd.abs() + floor)
        both = ~rnan & ~gnan
        inf_same = torch.isinf(rd) & (rd == gd)
        diff = torch.where(both & ~inf_same, (gd - rd).abs(), torch.zeros_like(rd))
        diff = torch.nan_to_num(diff, nan=float("inf"), posinf=float("inf"))
        score = torch.where(rnan != gnan, torch.full_like(rd, float("inf")), diff / torch.clamp(tol, min=1e-300))
        bad = score > 1
    count = int(bad.sum())
    if not count:
        return None
    flat = int(torch.argmax(torch.where(bad, score, torch.full_like(score, -1.0))))
    idx = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), r.shape)) if r.dim() else ()
    return Difference("", count, r.numel(), idx, _item(r, idx), _item(g, idx), rtol, str(r.dtype).replace("torch.", ""))


def _item(t: torch.Tensor, idx: tuple[int, ...]) -> float:
    v = t[idx].item() if idx else t.item()
    return float(v)


@dataclass
class Verdict:
    name: str  # the variant
    error: CroqError | None = None  # it could not run
    differences: list[Difference] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.differences


def check(
    fn: A.CoFunction,
    args: Sequence[Any],
    variants: Sequence[Variant],
    progress: Callable[[str], None] = lambda s: None,
    least_rtol: float | None = None,
) -> tuple[Outputs | None, list[Verdict]]:
    """Run ``fn`` on copies of ``args`` through every variant; compare each with the first.

    Returns the reference outputs (None when the first variant could not run) and one verdict per
    variant after the first."""
    ref: Outputs | None = None
    verdicts: list[Verdict] = []
    for i, v in enumerate(variants):
        if not isinstance(v, Precomputed):
            progress(f"{fn.name}: check: running the {v.name} variant")
        try:
            outs = v.run(fn, clone_args(args))
        except CroqError as e:
            if i == 0:
                return None, [Verdict(v.name, e)]
            verdicts.append(Verdict(v.name, e))
            continue
        if i == 0:
            ref = outs
        else:
            assert ref is not None
            verdicts.append(Verdict(v.name, None, compare(ref, outs, least_rtol)))
    return ref, verdicts

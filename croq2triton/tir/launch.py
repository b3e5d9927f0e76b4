"""The launch of a tile-IR kernel, derived from its typed arguments: one host-IR :class:`~.host.Launch`.

Each argument says what the launcher passes: a tensor (:class:`~.nodes.Pointer`), one of its
strides, a scalar as the launcher computes it, a TMA descriptor (made before the launch, after
the check that the tensor meets TMA's rules sets its flag), or a constexpr: a literal, a block
extent fixed at launch (the power of two at or above a run-time size, one call per tile), a TMA
flag, the device's SM count, or the runtime's warp-specialization switch; a scratch area for
the buffers every program keeps in memory.  The launcher's
variables of one launch are named after the kernel (``_{kernel}_{argument}``).
"""

from __future__ import annotations

from . import expr as E
from . import host as H
from . import nodes as N


def launch_of(kernel: N.Kernel, line: int) -> H.Launch:
    """How the launcher launches ``kernel``, with ``line`` the ``.co`` line of its ``parallel``."""
    k = kernel.name
    flags = {a.flag for a in kernel.args if isinstance(a, N.Descriptor)}
    prepare: list[H.Preparation] = []
    args: list[H.LaunchArg] = []
    constexprs: list[tuple[str, E.Expr]] = []
    extents: dict[str, list[N.Constexpr]] = {}  # the sized constexprs of each tile fixed at launch
    chosen = kernel.autotune.names if kernel.autotune is not None else frozenset()  # triton.autotune passes them
    sized = {
        a.name: E.Var(f"_{k}_{a.name}", "i32") for a in kernel.args if isinstance(a, N.Constexpr) and a.size is not None
    }
    areas: list[H.Preparation] = []  # (scratch areas counting those extents: after them)
    for a in kernel.args:
        if isinstance(a, N.Pointer):
            args.append(H.TensorArg(a.tensor))
        elif isinstance(a, N.Stride):
            args.append(H.StrideArg(a.tensor, a.dim))
        elif isinstance(a, N.Scalar):
            args.append(H.ScalarArg(E.fold(a.host)))
        elif isinstance(a, N.Descriptor):
            flag = f"_{k}_{a.flag}"
            window = tuple(E.fold(x) for x in a.window)
            check = H.TmaCheck(flag, a.source, a.tensor, a.block, window, a.what)
            if check not in prepare:
                prepare.append(check)
            prepare.append(H.TmaDescriptor(f"_{k}_{a.name}", a.tensor, a.block, flag, a.fill))
            args.append(H.DescriptorArg(f"_{k}_{a.name}"))
        elif isinstance(a, N.Scratch) and a.area:  # an area an earlier launch filled (schedule/splitloop.py)
            args.append(H.ScratchArg(a.area))
        elif isinstance(a, N.Scratch):  # the buffers in scratch memory of every program
            # (elements may count a block extent fixed at launch, by its constexpr's name: sized after
            # the extents, below)
            per = E.substitute(a.elements, sized)
            elements = E.fold(E.Bin("*", _product(kernel.grid), per))
            area = H.ScratchArea(f"_{k}_{a.name}", elements, a.dtype, a.written, a.kept_zero)
            (areas if {v.name for v in E.free_vars(a.elements)} & sized.keys() else prepare).append(area)
            args.append(H.ScratchArg(f"_{k}_{a.name}"))
        elif isinstance(a, N.Constexpr):
            if a.name in chosen:
                continue
            constexprs.append((a.name, _constexpr(a, k, flags, prepare)))
            if a.size is not None:
                extents.setdefault(a.of, []).append(a)
        else:
            raise TypeError(f"kernel {k}: an argument of kind {type(a).__name__} has no launch")
    for what, dims in extents.items():  # the extents of tiles fixed at launch, checked there
        sizes = tuple(E.fold(a.size) for a in dims if a.size is not None)
        least = max(a.least for a in dims)
        prepare.append(H.BlockExtents(tuple(f"_{k}_{a.name}" for a in dims), what, sizes, dims[0].fixed, least))
    prepare += areas
    if "num_warps" in chosen:
        pass
    elif kernel.warps_per is not None:  # warps for a tile whose extent is fixed at launch
        extent, lanes, per_thread = kernel.warps_per[:3]
        least = kernel.warps_per[3] if len(kernel.warps_per) > 3 else 4
        elements = E.Bin("*", E.Var(f"_{k}_{extent}"), E.Const(lanes))
        given = (elements, E.Const(per_thread)) + ((E.Const(least),) if least != 4 else ())
        constexprs.append(("num_warps", E.Call("_rt.warps_for", given, "i32")))
    else:
        constexprs.append(("num_warps", E.Const(kernel.num_warps)))
    grid = tuple(E.fold(g) for g in kernel.grid)
    return H.Launch(k, grid, tuple(args), tuple(constexprs), tuple(prepare), line=line)


def _product(grid: tuple[E.Expr, ...]) -> E.Expr:
    out: E.Expr = E.Const(1)
    for g in grid:
        out = E.Bin("*", out, g)
    return out


def _constexpr(a: N.Constexpr, kernel: str, flags: set[str], prepare: list[H.Preparation]) -> E.Expr:
    """The launcher's value of a constexpr argument (adding what computes it to ``prepare``)."""
    var = E.Var(f"_{kernel}_{a.name}")
    if a.launch == "sms":
        prepare.insert(0, H.NumSms(var.name))
        return var
    if a.launch == "warp_specialize":  # off unless CROQ2TRITON_WARP_SPECIALIZE=1 (runtime/launch.py)
        return E.Var("_rt.WARP_SPECIALIZE")
    if a.size is not None or a.name in flags:  # set by a BlockExtents or a TmaCheck
        return var
    return E.Const(a.value, "i1" if isinstance(a.value, bool) else "i32")

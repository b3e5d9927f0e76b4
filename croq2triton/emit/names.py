"""The Python names of a function's Croqtile names: one renaming step, before the lifting.

Any Croqtile identifier is a valid name of the source (LANGUAGE.md 3.2, 3.4: none is reserved),
but in the generated module it lives among names Python and the translation take: Python's
keywords (``lambda``, ``None``), the module's imports and helpers (``tl``, ``torch``, ``_rt``,
``_oob_fill``), the builtins its code calls (``range``), the names the kernels give their
arguments after a tensor (``x_ptr``, ``x_stride_0``), Triton's launch options (``num_warps``), the
function's kernels (``f_k0``), and the launcher's own (``_F``, ``_launch``, ``x_d0``).  (A tiled
GEMM names its own values and its arguments apart itself: schedule/gemm.py ``local``.)  :func:`python_names` says which of the function's names clash
with one of them and what each is called instead (``lambda_``, ``tl_``, ``x_stride_0_``: the
first of ``name_``, ``name_2_``, ``name_3_``, .. that clashes with nothing); every other name keeps
its spelling.  :func:`renamed` gives the function with them renamed, so the launcher and the
kernels are lifted from names that are already Python's (``CoFunction.spelled`` keeps how the
source spells each renamed one, for messages).

A function whose own name clashes is a matter of the module (its launcher is defined under another
name and is the module's attribute under its own): :func:`launcher_def_name`.

A name of the launcher (a parameter, a size, what host code declares) also avoids the launcher's
own names, and one the kernels take as an argument Triton's launch options; a kernel's local only
the names of the kernels' code (a local ``sum`` or ``input`` stays one: nothing generated reads
them).
"""

from __future__ import annotations

import builtins
import copy
import keyword
import re

from ..frontend import ast as A
from ..lift.names import RESERVED as LAUNCHER_BUILTINS
from ..tir.pyexpr import REDUCE_COMBINE

# what the top of every generated module binds (emit/module.py HEADER, and the fp8 import some add)
MODULE_NAMES = frozenset(
    {
        "os",
        "torch",
        "triton",
        "tl",
        "_rt",
        "_atomics",
        "_libm",
        "_fp8",
        "_INTERPRET",
        "_OOB_FILL",
        "_OOB_NAN",
        "_OOB_PADDING",
        "_INF",
        "_CO_FILE",
        "_FN",
        "_as_dot_operand",
        "_oob_fill",
        *REDUCE_COMBINE.values(),
        "__croq_ops__",
    }
)
# the kernels of a function ``f`` (lift/launcher.py ``f_k0``; emit/kernels.py a grid phase's, the
# general kernel beside a specialised one's, a GEMM's by tile size, ..; schedule/gemm.py the sum of
# split-K's partial sums) and its tuned points' launchers and their kernels (``f__t0``, ``f_k0__t0``)
KERNEL_SUFFIX = (
    r"(?:_k\d+(?:_(?:phase\d+|general|t\d+x\d+|splitk|split|partial|combine|rows|blocked|lanes|narrow|sum))*)?"
    r"(?:__t\d+)?"
)
HELPER_PREFIX = "_device_"  # the module's @triton.jit helpers of __device__ functions (lift/helpers.py)
# builtins the kernels call (``for k in range(..)``, ``float("inf")``; tir/pyexpr.py writes min and max)
KERNEL_BUILTINS = frozenset({"range", "float", "min", "max"})
# builtins launchers call besides lift/names.py RESERVED (``dict(num_warps=4)``, prints)
HOST_BUILTINS = LAUNCHER_BUILTINS | frozenset({"map", "globals", "getattr", "isinstance", "repr", "round", "divmod"})
# Triton's launch options and the launch's own keywords: a kernel argument of one of these names is
# taken by the launch (``f_k0() got multiple values for argument 'num_warps'``)
LAUNCH_OPTIONS = frozenset(
    {
        "num_warps",
        "num_ctas",
        "num_stages",
        "warp_size",
        "maxnreg",
        "ptx_version",
        "ptx_options",
        "ir_override",
        "enable_fp_fusion",
        "enable_reflect_ftz",
        "launch_cooperative_grid",
        "launch_pdl",
        "supported_fp8_dtypes",
        "deprecated_fp8_dot_operand_dtypes",
        "default_dot_input_precision",
        "allowed_dot_input_precisions",
        "max_num_imprecise_acc_default",
        "extern_libs",
        "debug",
        "backend_name",
        "sanitize_overflow",
        "arch",
        "instrumentation_mode",
        "grid",
        "warmup",
        "waves_per_eu",
        "matrix_instr_nonkdim",
        "kpack",
        "schedule_hint",
    }
)
# names the lifting derives from another name: a tensor's pointer, strides, descriptors and their
# flags (lift/elements.py, lift/tma.py, schedule/gemm.py), a launcher's copy of a parameter and its
# ``?`` sizes (lift/launcher.py)
_SUFFIXED = re.compile(r"(?P<base>.+)_(?:ptr|caller|stride_\d+|d\d+)")


def python_words(name: str) -> bool:
    """Is ``name`` one of Python's keywords or soft keywords (``_`` aside: an ordinary name)?"""
    return name != "_" and (keyword.iskeyword(name) or keyword.issoftkeyword(name))


# where a name lives besides the kernels' code (flags): a launcher's variable under its own name
# (a parameter, a size, a host scalar or buffer), a kernel's argument under its own name (a scalar
# parameter, a size, a host scalar or loop counter)
VARIABLE, ARGUMENT = 1, 2


def declared(fn: A.CoFunction) -> dict[str, int]:
    """The names ``fn`` declares, in the order it first does, each with where it lives (the flags
    of all its declarations; 0: in a kernel's code only)."""
    out: dict[str, int] = {}

    def add(name: str | None, where: int) -> None:
        if name:
            out[name] = out.get(name, 0) | where

    for p in fn.params:
        add(p.name, VARIABLE if p.type.kind in ("spanned", "stream") else VARIABLE | ARGUMENT)
        shape = p.type.shape
        for d in (shape.dims or []) if shape is not None else []:
            if isinstance(d, A.Name):
                add(d.name, VARIABLE | ARGUMENT)

    def visit(n: A.Node, host: bool) -> None:
        if isinstance(n, A.Parallel) and not (n.levels and n.levels[0].level == "device"):
            for b in n.levels:
                for x in b.names:
                    add(x, 0)
            host = False
        if isinstance(n, A.ScalarDecl):
            for d in n.items:
                add(d.name, VARIABLE | ARGUMENT if host else 0)
        elif isinstance(n, A.SpannedDecl):
            for d in n.items:
                add(d.name, VARIABLE if host else 0)
        elif isinstance(n, A.Assign) and n.op == "=" and isinstance(n.target, A.Name):
            add(n.target.name, VARIABLE | ARGUMENT if host else 0)  # a scalar, or a view
        elif isinstance(n, (A.Declarator, A.EventDeclarator, A.MdspanDecl, A.ItupleDecl, A.FragInit)):
            add(n.name, 0)
        elif isinstance(n, (A.DmaStmt, A.DmaAny, A.MapStmt, A.MmaFill, A.MmaLoad, A.MmaOp)):
            add(n.result, 0)
        elif isinstance(n, (A.Within, A.PBy)):  # a host loop's counter: a launcher's ``_i1``
            for x in n.names:
                add(x, ARGUMENT if host else 0)
        elif isinstance(n, A.RangeItem):
            add(n.alias, ARGUMENT if host else 0)
        elif isinstance(n, A.Apply):
            for x in n.vars:
                add(x, 0)
        for c in n.children():
            visit(c, host)

    for s in fn.body:
        visit(s, True)
    return out


def python_names(fn: A.CoFunction) -> dict[str, str]:
    """The names of ``fn`` that clash with one of the generated code's (the module docstring), each
    with its Python name; deterministic, and empty for a function none of whose names clashes."""
    names = declared(fn)
    final = {u: u for u in names}
    every = set(names)
    for _ in range(len(names) + 1):  # a new name may be what another's is derived from: again
        changed = False
        for u, where in names.items():
            now = set(final.values())
            if not _clashes(final[u], where, fn.name, now):
                continue
            k = 1
            while True:
                cand = f"{u}_" if k == 1 else f"{u}_{k}_"
                if cand not in every and cand not in now and not _clashes(cand, where, fn.name, now):
                    break
                k += 1
            final[u] = cand
            changed = True
        if not changed:
            break
    return {u: p for u, p in final.items() if u != p}


def _clashes(name: str, where: int, function: str, names: set[str]) -> bool:
    """Does ``name``, living ``where``, clash with a name of the generated code, given the
    function's name and the Python names of all its names?"""
    if python_words(name) or name in MODULE_NAMES or name in KERNEL_BUILTINS or name.startswith(HELPER_PREFIX):
        return True
    if name.startswith("__") and name.endswith("__"):  # the module's own (``__name__``, ``__file__``)
        return True
    if where & VARIABLE and (
        name in HOST_BUILTINS or (name.startswith("_") and not name.endswith("_"))  # _F, _dims, _x1, ..
    ):
        return True
    if where & ARGUMENT and name in LAUNCH_OPTIONS:
        return True
    if name != function and re.fullmatch(re.escape(function) + KERNEL_SUFFIX, name):  # its kernels
        return True
    return _derived(name, names)


def _derived(name: str, names: set[str]) -> bool:
    """Is ``name`` one the lifting derives from another of ``names`` (``x_ptr``, ``x_stride_0``,
    ``stride_x0``, ``x_desc_64x32``, ``TMA_X_64X32`` of ``x``)?"""
    bases: set[str] = set()
    m = _SUFFIXED.fullmatch(name)
    if m is not None:
        bases.add(m.group("base"))
    bases.update(name[:i] for i in range(1, len(name)) if name.startswith("_desc", i))
    if name.startswith("stride_"):  # ``stride_x10``: of ``x1`` (axis 0) or ``x`` (axis 10)
        rest = name[len("stride_") :]
        bases.update(rest[:i] for i in range(1, len(rest)) if rest[i:].isdigit())
    if any(b in names for b in bases - {name}):
        return True
    if name.startswith("TMA_"):  # a descriptor's flag
        flag = name[len("TMA_") :]
        return any(flag == v.upper() or flag.startswith(v.upper() + "_") for v in names if v != name)
    return False


def renamed(fn: A.CoFunction, names: dict[str, str]) -> A.CoFunction:
    """``fn`` (a copy: the parsed file is left as it is) with each name of ``names`` renamed where
    it is declared and wherever it is read; ``spelled`` maps the new names back."""
    if not names:
        return fn
    out = copy.deepcopy(fn)
    for n in out.walk():
        _rename_node(n, names)
    out.spelled = {new: old for old, new in names.items()}
    return out


# the fields of nodes that hold a name of the program (declared or read); lists hold several
_NAME_FIELDS: dict[type, tuple[str, ...]] = {
    A.Name: ("name",),
    A.IncDec: ("target",),
    A.UBound: ("name",),
    A.Param: ("name",),
    A.MdspanDecl: ("name",),
    A.ItupleDecl: ("name",),
    A.Declarator: ("name",),
    A.EventDeclarator: ("name",),
    A.DmaStmt: ("result", "after"),
    A.DmaAny: ("result",),
    A.MapStmt: ("result",),
    A.MmaFill: ("result",),
    A.FragInit: ("name",),
    A.MmaLoad: ("result",),
    A.MmaOp: ("result",),
    A.Swap: ("names",),
    A.PBy: ("name", "vars"),
    A.Parallel: ("stream",),
    A.Within: ("name", "vars"),
    A.RangeItem: ("name", "alias"),
    A.Apply: ("vars", "frag"),
}


def _rename_node(n: A.Node, names: dict[str, str]) -> None:
    for f in _NAME_FIELDS.get(type(n), ()):
        v = getattr(n, f)
        if isinstance(v, str) and v in names:
            setattr(n, f, names[v])
        elif isinstance(v, list) and any(isinstance(x, str) and x in names for x in v):
            setattr(n, f, [names.get(x, x) if isinstance(x, str) else x for x in v])


def launcher_def_names(functions: list[str]) -> dict[str, str]:
    """The functions of a file whose launcher's ``def`` cannot take the function's name, each with
    the name it takes: a function named as Python or the module names something (a keyword, a
    builtin, one of the module's names, a kernel or a tuned point's launcher of the file) is defined
    under the first of ``name_``, ``name_2_``, .. that none takes, and is the module's attribute
    under its own name all the same (:func:`exposed_launchers`)."""
    out: dict[str, str] = {}
    taken = set(functions)
    for name in functions:
        if not _module_clash(name, functions):
            continue
        k = 1
        while True:
            cand = f"{name}_" if k == 1 else f"{name}_{k}_"
            if cand not in taken and not _module_clash(cand, functions):
                break
            k += 1
        out[name] = cand
        taken.add(cand)
    return out


def _module_clash(name: str, functions: list[str]) -> bool:
    """Does a module-level ``def name`` clash with a name of Python or of the module (whose
    kernels are ``f_k0``, ``f_k0_sum``, .. and tuned points' launchers ``f__t0``, for each
    function ``f``)?"""
    if keyword.iskeyword(name) or name in MODULE_NAMES or name in dir(builtins) or name.startswith(HELPER_PREFIX):
        return True
    if name.startswith("__") and name.endswith("__"):
        return True
    return any(name != f and re.fullmatch(re.escape(f) + KERNEL_SUFFIX, name) for f in functions)


def exposed_launchers(def_names: dict[str, str]) -> str:
    """The module's statement that makes each launcher defined under another name its attribute
    under the function's name (runtime/launch.py ``expose``)."""
    items = ", ".join(f"{name!r}: {py}" for name, py in def_names.items())
    return (
        "# functions named as Python or this module names something: each launcher is defined under\n"
        "# another name, and is the module's attribute under the function's name\n"
        f"_rt.expose(__name__, {{{items}}})"
    )

"""CUDA intrinsics called straight from a ``__co__`` body (``c = call __popc(m);``,
``s = call __shfl_xor_sync(0xffffffff, s, 16);``), read as the ``__device__`` helpers that would
wrap them: ``template <typename T0> __device__ int __popc(T0 a0) { return __popc(a0); }``.

A helper's body already knows these intrinsics (frontend/device.py: warp shuffles and votes, bit
intrinsics, ``__activemask``, conversions, bit casts, math); a call of one from a ``__co__`` body is
the same computation, so it is given the helper that computes it, its parameters of the
arguments' types (template parameters the call deduces) and its result of the type CUDA's prototype
returns (a shuffle's: its value's; ``__popc``'s: ``int``; ``__ballot_sync``'s: ``unsigned int``).
Without it the front end's own hint (``write 'call __shfl_xor_sync(...)'``) led to a refusal of the
call as a C++ function.  A file's own helper of that name wins."""

from __future__ import annotations

from . import ast as A
from .bitintrinsics import BITS, REDUCES, VOTES
from .cudaconversions import BITCASTS, CONVERSIONS
from .device import (
    ARITY,
    FLOAT_TESTS,
    HALF_COMPARES,
    HALF_OPS,
    INT_INTRINSICS,
    LIBM,
    MATH,
    OPERATORS,
    SHUFFLES,
    TYPED_MINMAX,
    DeviceFunction,
    read_device,
)
from .device_body import BARRIERS


def _returns(name: str, nargs: int) -> str | None:
    """The type a call of intrinsic ``name`` with ``nargs`` arguments has (``T1``: its second
    argument's), or None where the name is not one a helper's body reads with that many."""
    if name in BITS and nargs == 1:
        return {"__brev": "u32", "__brevll": "u64"}.get(name, "s32")
    if name in VOTES and nargs == (2 if VOTES[name] else 1):
        return "u32" if name.startswith("__ballot") else "s32"
    if name in BARRIERS and nargs <= 1:  # (no-ops: the threads run each statement together, LANGUAGE.md 14.4)
        return "void"
    if name in REDUCES and nargs == 2:
        return "T1"  # (of the value's type)
    if name == "__activemask" and nargs == 0:
        return "u32"
    if name in SHUFFLES:
        masked = SHUFFLES[name][1]
        return f"T{1 if masked else 0}" if nargs - masked in (2, 3) else None
    if name in CONVERSIONS and nargs == 1:
        return CONVERSIONS[name][0]
    if name in BITCASTS and nargs == 1:
        return BITCASTS[name].rsplit("_", 1)[1]
    if name in LIBM and nargs == LIBM[name][1]:
        return "f32"
    if name in ("fmodf", "fdimf") and nargs == 2:
        return "f32"
    if name in FLOAT_TESTS and nargs == 1:
        return "s32"
    if (name in HALF_OPS and nargs == 2) or (name in ("__hneg", "__habs") and nargs == 1):
        return "f16"
    if name in HALF_COMPARES and nargs == 2:
        return "bool"
    if name in TYPED_MINMAX and nargs == 2:
        return TYPED_MINMAX[name][1]
    if name == "__hadd" and nargs == 2:
        return "T0"  # (of halves a half, of ints an int)
    if name in INT_INTRINSICS and nargs == INT_INTRINSICS[name]:
        return "s32" if name in ("__mulhi", "__mul24", "__rhadd") else "u32"
    if name in OPERATORS and nargs == 2:
        return "f32"
    if name in ("__frcp_rn", "__saturatef") and nargs == 1:
        return "f32"
    if name in MATH and nargs == ARITY.get(MATH[name], 1):
        if name.endswith("f") or name.startswith("__"):
            return "f32"
        return "f64" if name.startswith("f") else "T0"  # fabs / fmax: double; max / abs: the argument's
    return None


def implicit_helper(call: A.Call) -> DeviceFunction | None:
    """The helper that computes ``call`` of a CUDA intrinsic (None where it names none)."""
    if call.kind != "call" or call.targs:
        return None
    name = call.name.removeprefix("::")
    n = len(call.args)
    returns = _returns(name, n)
    if returns is None:
        return None
    types = [f"T{i}" for i in range(n)]
    head = f"template <{', '.join(f'typename {t}' for t in types)}> " if types else ""
    params = ", ".join(f"{t} a{i}" for i, t in enumerate(types))
    args = ", ".join(f"a{i}" for i in range(n))
    body = f"{name}({args});" if returns == "void" else f"return {name}({args});"
    text = f"{head}__device__ {returns} {name}({params}) {{ {body} }}"
    df = read_device(text[len(head) :], call.span, set(types), set(), None, set())
    if df is None or df.body is None:
        return None
    df.tparams = tuple((t, True) for t in types)
    return df


def implicit_helpers(items: list[A.TopItem], devices: dict[str, DeviceFunction]) -> None:
    """Adds to ``devices`` the helper of each intrinsic the ``__co__`` functions of ``items`` call
    by a name no helper of the file has (in place)."""
    for item in items:
        if not isinstance(item, A.CoFunction):
            continue
        for node in item.walk():
            if isinstance(node, A.Call) and node.kind == "call" and node.name.removeprefix("::") not in devices:
                df = implicit_helper(node)
                if df is not None:
                    devices[node.name.removeprefix("::")] = df

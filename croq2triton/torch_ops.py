"""Register translated ``__co__`` functions as torch custom ops (``torch.ops.<namespace>.<name>``).

    mod = croq2triton.load("gemm.co")
    ops = croq2triton.register_ops(mod, "mylib")
    torch.ops.mylib.matmul(a, b, c)          # or ops.matmul(a, b, c)

Each op calls the module's launcher.  Its schema comes from the ``__croq_ops__`` table the
translator writes into every generated module: tensor / int / float / bool parameters, the
tensor parameters the function writes (declared as mutated, so ``torch.compile`` orders them
correctly) and the return kind.  The fake (meta) implementation that ``torch.compile`` traces
with runs the launcher itself on fake tensors with a launch that does nothing: shapes, dtypes and
the launcher's argument checks are the real ones, no kernel runs.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

from .errors import CroqError

# the ops this process registered: qualified name -> (signature, the launcher it calls now, the op).
# Registering the same function again (a notebook cell run twice, a module loaded anew) points the
# op at the new launcher; torch ops cannot be unregistered, so another signature is an error.
_REGISTERED: dict[str, tuple[dict[str, Any], list[Callable[..., Any]], Any]] = {}

_ANNOTATION = {"tensor": "torch.Tensor", "int": "int", "float": "float", "bool": "bool"}
_RETURN = {"none": "None", "tensor": "torch.Tensor", "int": "int", "float": "float", "bool": "bool"}


def _no_launch(kernel: Any, grid: Any, args: Any, kwargs: Any) -> None:
    """The fake implementation's launch: argument checks ran, nothing is computed."""


def register(module: types.ModuleType, namespace: str = "croq") -> types.SimpleNamespace:
    """Register every translated function of ``module`` as ``torch.ops.<namespace>.<name>``;
    returns the ops by function name (also set as ``module.ops``)."""
    table = getattr(module, "__croq_ops__", None)
    if not isinstance(table, dict):
        raise CroqError(
            f"{getattr(module, '__name__', module)!s} is not a croq2triton module (no __croq_ops__ table)",
            hint="load a .co file with croq2triton.load(), or import a module written by 'croq2triton translate'",
        )
    if not namespace.isidentifier():
        raise CroqError(f"the op namespace must be a Python identifier, not {namespace!r}")
    ops: dict[str, Any] = {}
    for name, sig in table.items():
        ops[name] = _register_one(namespace, name, getattr(module, name), sig)
    out = types.SimpleNamespace(**ops)
    module.ops = out  # type: ignore[attr-defined]
    return out


def _register_one(namespace: str, name: str, launcher: Callable[..., Any], sig: dict[str, Any]) -> Any:
    params: list[tuple[str, str]] = [tuple(p) for p in sig["params"]]  # type: ignore[misc]
    unsupported = [f"'{n}' ({k})" for n, k in params if k not in _ANNOTATION]
    if unsupported or sig["returns"] not in _RETURN:
        what = ", ".join(unsupported) or f"its {sig['returns']} result"
        raise CroqError(
            f"'{name}' cannot be a torch op: {what} has no torch op schema type",
            hint="torch ops take tensors, int, float and bool; call the launcher directly",
        )
    qualname = f"{namespace}::{name}"
    if qualname in _REGISTERED:
        known, current, op = _REGISTERED[qualname]
        if known == sig:  # the same function again: the op calls the new launcher
            current[0] = launcher
            return op
        raise CroqError(
            f"torch op {qualname} is already registered with another signature",
            hint="torch ops cannot be unregistered: register this module under another namespace, "
            "croq2triton.register_ops(mod, 'other'), or restart the process",
        )
    if hasattr(getattr(torch.ops, namespace), name):
        raise CroqError(
            f"torch op {qualname} is already registered (not by croq2triton)",
            hint="register this module under another namespace: croq2triton.register_ops(mod, 'other')",
        )
    names = [n for n, _ in params]
    tensors = [n for n, k in params if k == "tensor"]
    args = ", ".join(f"{n}: {_ANNOTATION[k]}" for n, k in params)
    call = ", ".join(names)
    fresh = " or ".join(f"_r is {t}" for t in tensors) or "False"
    # torch ops must not return one of their inputs: a returned input parameter is a copy
    src = (
        f"def {name}({args}) -> {_RETURN[sig['returns']]}:\n"
        f"    _r = _current[0]({call})\n"
        f"    return _r.clone() if isinstance(_r, torch.Tensor) and ({fresh}) else _r\n"
        f"def _fake({args}) -> {_RETURN[sig['returns']]}:\n"
        f"    _r = _current[0]({call}, _launch=_no_launch)\n"
        f"    return _r.clone() if isinstance(_r, torch.Tensor) and ({fresh}) else _r\n"
    )
    current = [launcher]
    env: dict[str, Any] = {"torch": torch, "_current": current, "_no_launch": _no_launch}
    exec(compile(src, f"<croq2triton op {qualname}>", "exec"), env)
    op = torch.library.custom_op(qualname, mutates_args=tuple(sig["writes"]))(env[name])
    op.register_fake(env["_fake"])
    _REGISTERED[qualname] = (dict(sig), current, op)
    return op

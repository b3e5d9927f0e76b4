"""Calls of ``__device__`` helpers (frontend/device.py) inside ``__co__`` functions.

A helper whose body only computes a value (``ABS_F32``) stays a call: the call node carries the
helper (``Call.device``) and the lifting makes it a ``@triton.jit`` function of the module.  A
helper whose body goes through an address or exchanges values between threads (``ATOMIC_ADD``
around ``atomicAdd``, ``SHFL_XOR`` around ``__shfl_xor_sync``) is what its body says at the call:
the body with each parameter replaced by the call's argument converted to the parameter's type,
``*&t.at(i)`` read as ``t.at(i)`` -- ``call ATOMIC_ADD(&t.at(i), 1)`` is ``__atomic_add(t.at(i),
1)``, which every later stage (the tensors a function writes, where buffers live, the lifting)
knows.  A body of several effects (atomics, calls of helpers that have them) is a ``Paren`` whose
``effects`` run before its value, in order; a ``call F(..);`` of one runs it (``Call.expanded``).
A helper called with template arguments is read again for them (one ``@triton.jit`` function per
set of types and values, ``_device_SCALE_f32``), from a ``__co__`` function or from another helper.
Recursion (a helper that calls itself, directly or through others) is refused, naming the cycle.
A call of a helper with no such body carries the helper too, and its refusal names why.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

from . import ast as A
from .device import C_TYPES, CROQ_TYPES, DeviceFunction, read_device, template_list
from .device_body import fold
from .direct_intrinsics import implicit_helpers


def device_functions(items: list[A.TopItem]) -> dict[str, DeviceFunction]:
    """The device functions of a file, by name (the last definition of a name wins over a
    declaration of it)."""
    out: dict[str, DeviceFunction] = {}
    before = ""
    for item in items:
        if isinstance(item, A.HostText):
            before = item.text
        elif isinstance(item, A.DeviceCode):
            tparams = template_list(before)
            types = {n for n, is_type in tparams if is_type}
            effectful = {name for name, f in out.items() if f.has_effects}
            df = read_device(item.text, item.span, types, {n for n, is_type in tparams if not is_type}, None, effectful)
            before = ""
            if df is not None:
                df.tparams = tuple(tparams)
            if df is not None and (df.name not in out or out[df.name].body is None or df.body is not None):
                if df.refusal == "it is declared here without a body" and df.name in out:
                    continue
                out[df.name] = df
    return out


def resolve_helpers(items: list[A.TopItem]) -> None:
    """Every call of a device helper in the ``__co__`` functions of ``items``, as the module
    docstring says (in place)."""
    devices = device_functions(items)
    implicit_helpers(items, devices)  # ``call __popc(m)`` of a CUDA intrinsic (frontend/direct_intrinsics.py)
    if not devices:
        return
    kinds: dict[str, str] = {}
    for name in devices:
        _kind(name, devices, kinds, [])
    for df in devices.values():  # calls between helpers
        if df.body is not None:
            df.lets = [(n, _resolve(e, devices, kinds)) for n, e in df.lets]  # type: ignore[misc]
            df.body, *df.effects = _resolve([df.body, *df.effects], devices, kinds)  # type: ignore[misc]
    for item in items:
        if isinstance(item, A.CoFunction):
            item.body = _resolve(item.body, devices, kinds)  # type: ignore[assignment]


def _kind(name: str, devices: dict[str, DeviceFunction], kinds: dict[str, str], stack: list[str]) -> str:
    """'value' (a jit helper), 'inline' (expanded at the call) or 'refused' (a refusal set)."""
    if name in kinds:
        return kinds[name]
    df = devices[name]
    if df.body is None:
        kinds[name] = "refused"
        return "refused"
    if name in stack:
        df.body, df.refusal = None, "it calls itself"
        kinds[name] = "refused"
        return "refused"
    kind = "inline" if df.shuffles or df.addresses or df.loops else "value"
    for n in df.nodes():
        if isinstance(n, A.Call) and n.kind == "call":
            if n.name not in devices:
                df.body, df.refusal = None, _unknown(n)
                kind = "refused"
                break
            if n.name in (*stack, name):  # recursion: every function of the cycle is refused
                cycle = [*stack[stack.index(n.name) :], name] if n.name in stack else [name]
                line = f" at line {n.span.line}" if n.span is not None and n.span.line else ""
                why = (
                    f"a recursive call of '{n.name}'{line} ({' -> '.join([*cycle, n.name])}): a @triton.jit"
                    " function cannot call itself"
                )
                for f in cycle:
                    devices[f].body, devices[f].refusal, kinds[f] = None, why, "refused"
                return "refused"
            inner = _kind(n.name, devices, kinds, [*stack, name])
            if df.body is None:  # (refused inside: a cycle through it)
                return "refused"
            why = devices[n.name].refusal
            if n.targs:  # ``POWK<3>(x)``: read for the call's template arguments (its own kind)
                given = _helper(n, devices)
                assert given is not None
                why = given.refusal
                if given.body is None:
                    inner = "refused"
                elif (
                    given.shuffles
                    or given.addresses
                    or given.loops
                    or any(
                        isinstance(x, A.Call)
                        and x.kind == "call"
                        and x.name in devices
                        and x.name not in (*stack, name)
                        and _kind(x.name, devices, kinds, [*stack, name]) == "inline"
                        for x in given.nodes()
                    )
                ):
                    inner = "inline"
                else:
                    inner = "value"
            if inner == "refused":
                df.body, df.refusal = None, f"it calls '{n.name}', which is not translated ({why})"
                kind = "refused"
                break
            if inner == "inline":
                kind = "inline"
    if kind == "inline":
        df.flatten()  # expanded at each call: one expression
        if df.body is None:  # (too large once expanded)
            kind = "refused"
    kinds[name] = kind
    return kind


def _unknown(c: A.Call) -> str:
    line = f" at line {c.span.line}" if c.span is not None and c.span.line else ""
    return f"it calls '{c.name}'{line}, which has no Triton counterpart"


def _resolve(node: object, devices: dict[str, DeviceFunction], kinds: dict[str, str]) -> object:
    def change(x: object) -> object | None:
        if isinstance(x, A.CallStmt) and _helper(x.call, devices) is not None:
            return _statement(x, devices, kinds)
        if isinstance(x, A.Call) and (df := _helper(x, devices)) is not None:
            x.args = [_resolve(a, devices, kinds) for a in x.args]  # type: ignore[misc]
            inline = kinds.get(df.name) == "inline"
            if df.instance and df.body is not None:  # read again for the call's template values
                df, inline = _settled(df, devices, kinds)
            if inline and df.body is not None:
                return _expand(x, df, devices, kinds)
            x.device = df
            return x
        return None

    return _rewrite(node, change)


def _helper(c: A.Call, devices: dict[str, DeviceFunction]) -> DeviceFunction | None:
    if c.kind not in ("call", "intrinsic"):
        return None
    df = devices.get(c.name.removeprefix("::"))
    if df is None:
        return None
    if c.targs:
        df = _specialized(df, c.targs)
    missing = df.params[len(c.args) :]
    if missing and all(p.default is not None for p in missing):  # ``LERP(a, b)`` of ``float t = 0.5f``
        c.args = [*c.args, *(copy.deepcopy(p.default) for p in missing)]  # type: ignore[misc]
    return df


def _specialized(df: DeviceFunction, targs: list[A.Expr]) -> DeviceFunction:
    """``call F<float, 3>(..)`` of ``template <typename T, int S>``: ``df`` with the parameters of
    type ``T`` of that type and ``S`` in its body that value (a refusal where they do not fit)."""
    if df.body is None or df.loops:  # (a loop bound by a value the call gives: unrolled once it is known)
        again = _read_given(df, targs)
        if again is None:
            return df
        if again.body is None:  # (why it does not translate with those values)
            return again
        df = again
    if len(targs) > len(df.tparams):
        what = f"{len(targs)} template argument(s), its template has {len(df.tparams)} parameter(s)"
        return dataclasses.replace(df, body=None, refusal=what)
    types: dict[str, str] = {}
    values: dict[str, A.Expr] = {}
    for (name, is_type), arg in zip(df.tparams, targs, strict=False):
        if is_type:
            spelled = arg.name if isinstance(arg, A.TypeArg) else arg.name if isinstance(arg, A.Name) else None
            ctype = C_TYPES.get(spelled or "") or (spelled if spelled in CROQ_TYPES else None)
            if ctype is None:
                return dataclasses.replace(df, body=None, refusal=f"its template argument for '{name}' is not a type")
            types[name] = ctype
        else:
            values[name] = arg
    params = [
        dataclasses.replace(p, ctype=types[p.template], template=None) if p.template in types else p for p in df.params
    ]

    def given(x: object) -> object | None:
        return copy.deepcopy(values[x.name]) if isinstance(x, A.Name) and x.name in values else None

    # (copied together: the values they share, a loop that several named values read)
    parts = copy.deepcopy([df.body, *df.effects, *(e for _, e in df.lets)])
    body, *rest = _rewrite(parts, given)  # type: ignore[misc]
    effects, values = rest[: len(df.effects)], rest[len(df.effects) :]
    lets = [(n, e) for (n, _), e in zip(df.lets, values, strict=True)]
    instance = "_".join([*types.values(), *filter(None, [df.instance])])  # its helper's name has the types
    return dataclasses.replace(
        df,
        params=params,
        body=body,
        lets=lets,
        effects=effects,
        instance=instance,  # type: ignore[arg-type]
    )


def _read_given(df: DeviceFunction, targs: list[A.Expr]) -> DeviceFunction | None:
    """``df`` read again with the constants a call gives its template's value parameters (a loop
    ``for (int i = 0; i < S; ++i)`` has a trip count known at translation once ``S`` is given)."""
    if df.source is None:
        return None
    text, span, types, values, effectful = df.source
    given: dict[str, int] = {}
    for (name, is_type), arg in zip(df.tparams, targs, strict=False):
        known = fold(arg) if not is_type and isinstance(arg, A.Expr) else None
        if isinstance(known, int) and not isinstance(known, bool):
            given[name] = known
    if not given:
        return None
    again = read_device(text, span, set(types), set(values), given, set(effectful))
    if again is None:
        return None
    again.tparams = df.tparams
    suffix = "_".join(f"{v}" if v >= 0 else f"m{-v}" for v in given.values())
    again.instance = suffix  # one @triton.jit function per set of values
    return again


def _settled(
    df: DeviceFunction, devices: dict[str, DeviceFunction], kinds: dict[str, str]
) -> tuple[DeviceFunction, bool]:
    """A helper read again for a call's template values (:func:`_read_given`) as :func:`_kind` and
    :func:`resolve_helpers` leave the others: the helpers it calls resolved, and whether it is
    expanded at the call."""
    inline = df.shuffles or df.addresses or df.loops
    for n in df.nodes():
        if isinstance(n, A.Call) and n.kind == "call":
            if n.name not in devices:
                return dataclasses.replace(df, body=None, refusal=_unknown(n)), False
            inner = _kind(n.name, devices, kinds, [df.name])
            if inner == "refused":
                why = f"it calls '{n.name}', which is not translated ({devices[n.name].refusal})"
                return dataclasses.replace(df, body=None, refusal=why), False
            inline = inline or inner == "inline"
    if inline:
        df.flatten()
        if df.body is None:
            return df, False
    df.lets = [(n, _resolve(e, devices, kinds)) for n, e in df.lets]  # type: ignore[misc]
    df.body, *df.effects = _resolve([df.body, *df.effects], devices, kinds)  # type: ignore[misc]
    return df, inline


def _statement(s: A.CallStmt, devices: dict[str, DeviceFunction], kinds: dict[str, str]) -> A.Stmt:
    """``call F(...);``: the atomic the helper's body is, the body run for its effects where it has
    several (``Call.expanded``), nothing where it only computes a value."""
    value = _resolve(s.call, devices, kinds)
    if isinstance(value, A.Paren) and value.written is not None and value.effects:
        s.call = dataclasses.replace(s.call, expanded=value)
        return s
    expanded = value
    while isinstance(value, (A.Paren, A.Cast)):
        value = value.expr
    if isinstance(value, A.Call):
        s.call = value
        return s
    if isinstance(expanded, A.Paren) and expanded.written is not None and _changes(value):
        s.call = dataclasses.replace(s.call, expanded=expanded)  # (one atomic under a condition)
        return s
    if isinstance(value, A.Expr) and not any(isinstance(n, (A.Call, A.IncDec)) for n in A.walk_once(value)):
        return A.Empty(span=s.span)  # a value nobody reads
    return s  # an atomic inside an expression: the lifting refuses the call (s.call.device)


def _changes(e: A.Expr) -> bool:
    return any(isinstance(n, A.Call) and n.kind in ("atomic", "call") for n in A.walk_once(e))


def _expand(c: A.Call, df: DeviceFunction, devices: dict[str, DeviceFunction], kinds: dict[str, str]) -> A.Expr:
    """The body of ``df`` for the call ``c``."""
    assert df.body is not None
    if len(c.args) != len(df.params):
        c.device = dataclasses.replace(
            df, body=None, refusal=f"it takes {len(df.params)} argument(s), {len(c.args)} given"
        )
        return c
    for p, arg in zip(df.params, c.args, strict=True):
        if p.pointer and isinstance(A.unparen(arg), A.At):  # an element, not its address (sema/calls.py)
            c.device = dataclasses.replace(df, body=None, refusal=f"a value given for its pointer parameter '{p.name}'")
            return c
    reads = list(A.walk_once(df.body, *df.effects))  # (a named value read twice: computed once)
    uses = {p.name: sum(isinstance(n, A.Name) and n.name == p.name for n in reads) for p in df.params}
    env: dict[str, A.Expr] = {}
    for p, arg in zip(df.params, c.args, strict=True):
        if uses[p.name] > 1 and any(isinstance(n, (A.Call, A.IncDec)) for n in arg.walk()):
            c.device = dataclasses.replace(
                df, body=None, refusal=f"its parameter '{p.name}' is read twice and the argument changes something"
            )
            return c
        if p.pointer:
            env[p.name] = A.Paren(arg, span=arg.span)
        else:  # one value that its reads share: computed once (lift/helpers.py)
            value = arg if p.ctype is None else A.Cast(p.ctype, False, arg, span=arg.span)
            env[p.name] = A.Paren(value, shared=p.name, span=arg.span)
    parts = list(copy.deepcopy((df.body, *df.effects)))  # (together: the values they share)
    parts = _rewrite(parts, lambda x: _read(env, x))  # type: ignore[assignment]
    parts = _rewrite(parts, _through_address)  # type: ignore[assignment]
    for n in A.walk_once(*parts):
        found = _address(n.operand) if isinstance(n, A.Unary) and n.op == "*" else None
        if found is not None and len(found[0].indices) > 1 and not _named(found[0].base):
            line = f" at line {n.span.line}" if n.span is not None and n.span.line else ""
            why = (
                f"an element at an offset from the address of an element of a view written in place{line}"
                " (bind the tensor or buffer to a name, or pass the address of an element of a whole tensor)"
            )
            c.device = dataclasses.replace(df, body=None, refusal=why)
            return c
    body, *effects = _resolve(parts, devices, kinds)  # type: ignore[misc]
    assert isinstance(body, A.Expr)
    if df.returns not in (None, "void") and not (isinstance(body, A.Call) and body.kind == "atomic"):
        body = A.Cast(df.returns, False, body, span=c.span)
    return A.Paren(body, written=c, effects=effects, span=c.span)


def _read(env: dict[str, A.Expr], x: object) -> object | None:
    """A parameter's argument where the body reads it (a pointer's a copy each: ``*&e`` is ``e``)."""
    if not isinstance(x, A.Name) or x.name not in env:
        return None
    value = env[x.name]
    return value if isinstance(value, A.Paren) and value.shared is not None else copy.deepcopy(value)


def _through_address(x: object) -> object | None:
    """``*&e`` is ``e`` (a pointer parameter given ``&t.at(i)``); ``*(&t.at(i) + k)`` (``p[k]``,
    ``p + k`` of an atomic) is ``t.at(i + k)`` where ``t.at`` takes one index, the element ``k``
    places further in row-major order where it takes several (:func:`_unravelled`)."""
    if isinstance(x, A.Unary) and x.op == "*":
        inner = A.unparen(x.operand)
        if isinstance(inner, A.Unary) and inner.op == "&":
            return _rewrite(inner.operand, _through_address)
        found = _address(inner)
        if found is not None and len(found[0].indices) == 1:
            at, offset = found
            assert offset is not None
            index = A.Binary("+", A.Paren(at.indices[0]), A.Paren(offset), span=inner.span)
            return _rewrite(A.At(at.base, [index], span=at.span), _through_address)
        if found is not None and _named(found[0].base):
            at, offset = found
            assert offset is not None
            return _rewrite(_unravelled(at, offset), _through_address)
    return None


def _named(base: A.Expr) -> bool:
    """Is ``base`` a name (a tensor, a buffer, a view bound to it) or a future's ``f.data``?"""
    base = A.unparen(base)
    if isinstance(base, A.Member) and base.member == "data":
        base = A.unparen(base.base)
    return isinstance(base, A.Name)


def _unravelled(at: A.At, offset: A.Expr) -> A.At:
    """``*(&t.at(i, j) + k)`` of a tensor or buffer ``t`` of several dimensions: its elements lie
    row after row (row-major), so the element ``k`` past ``t.at(i, j)`` is at the position
    ``f = i * t.span(1) + j + k``, that is ``t.at(f / t.span(1), f % t.span(1))`` (and so on for more
    dimensions; the first index is not reduced, so a position past the last row stays outside ``t``).
    ``through_address`` marks it: lift/elements.py refuses it where ``t`` names a view."""
    sp = at.span

    def extent(d: int) -> A.Expr:
        span = A.Member(copy.deepcopy(at.base), "span", span=sp)
        return A.GetIth(span, A.IntLit(d, str(d), "s32", span=sp), span=sp)

    flat: A.Expr = A.Paren(at.indices[0], span=sp)
    for d, i in enumerate(at.indices[1:], start=1):
        flat = A.Binary("+", A.Binary("*", A.Paren(flat, span=sp), extent(d), span=sp), A.Paren(i, span=sp), span=sp)
    flat = A.Paren(A.Binary("+", flat, A.Paren(offset, span=sp), span=sp), span=sp)
    indices: list[A.Expr] = []
    rest: A.Expr = flat
    for d in range(len(at.indices) - 1, 0, -1):
        indices.append(A.Paren(A.Binary("%", rest, extent(d), span=sp), span=sp))
        rest = A.Paren(A.Binary("/", rest, extent(d), span=sp), span=sp)
    indices.append(rest)
    return A.At(at.base, indices[::-1], through_address=True, span=sp)


def _address(e: A.Expr) -> tuple[A.At, A.Expr | None] | None:
    """``e`` as the address of an element and an offset from it (``&t.at(i) + k - m``: ``t.at(i)``
    and ``k - m``; None: no offset), or None where it is not one."""
    e = A.unparen(e)
    if isinstance(e, A.Unary) and e.op == "&":
        at = A.unparen(e.operand)
        return (at, None) if isinstance(at, A.At) else None
    if not (isinstance(e, A.Binary) and e.op in ("+", "-")):
        return None
    sides = [(e.lhs, e.rhs)] + ([(e.rhs, e.lhs)] if e.op == "+" else [])
    for address, offset in sides:
        found = _address(address)
        if found is not None:
            at, before = found
            step: A.Expr = A.Paren(offset) if e.op == "+" else A.Unary("-", A.Paren(offset), span=e.span)
            return at, step if before is None else A.Binary("+", A.Paren(before), step, span=e.span)
    return None


def _rewrite(node: object, change: Callable[[object], object | None], seen: dict[int, object] | None = None) -> object:
    """``node`` with every sub-node ``change`` replaces (returns other than None) replaced; a node
    that several parents share (a helper's named value) is rewritten once."""
    seen = {} if seen is None else seen
    if id(node) in seen:
        return seen[id(node)]
    new = change(node)
    if new is not None:
        seen[id(node)] = new
        return new
    if isinstance(node, A.Node):
        seen[id(node)] = node
        for f in dataclasses.fields(node):
            if f.name in ("span", "device", "written"):
                continue
            setattr(node, f.name, _rewrite(getattr(node, f.name), change, seen))
    elif isinstance(node, list):
        return [_rewrite(y, change, seen) for y in node]
    return node

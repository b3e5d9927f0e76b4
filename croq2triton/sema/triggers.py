"""``trigger e after f1, f2;`` (LANGUAGE.md 7.10): the completion of asynchronous global-to-shared
TMA futures is bound to one shared event, without waiting.  It is an error for any other future: a
DMA future or a synchronous copy (no completion the event can be bound to), a TMA store (shared to
global) or any other copy from shared memory or into local memory, an MMA future, a future already waited (``wait f`` before it: trigger the event directly),
and for something that is no future.  Several futures joined on ``e.at(order++)`` would advance the
order once per future: the order is advanced in a statement of its own.

The producer of a future is the last statement before the trigger that binds its name; one that is
not known statically (``dma.any`` placeholders, ``select``, ``swap``) is not judged.
"""

from __future__ import annotations

from ..errors import Diagnostic
from ..frontend import ast as A
from .scopes import Resolution, resolve
from .tiling import source_text
from .writes import root_name

# kinds of names that are certainly no future (an MMA future is bound as a fragment's name)
NOT_FUTURES = ("event", "spanned", "int", "bool", "elem", "bounded", "mdspan", "ituple", "dim", "stream")
WAIT_THEN_TRIGGER = "wait for it, then trigger the event directly: 'wait {f}; trigger {e};'"


def trigger_errors(fn: A.CoFunction) -> list[Diagnostic]:
    res = resolve(fn)
    storage = _storages(fn)
    producer: dict[str, A.Stmt | None] = {}  # future name -> the statement that last bound it
    waited: set[str] = set()
    out: list[Diagnostic] = []
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, (A.DmaStmt, A.MmaOp)) and n.result:
                producer[n.result] = n
                waited.discard(n.result)
            elif isinstance(n, A.DmaAny):
                producer[n.result] = None
                waited.discard(n.result)
            elif isinstance(n, A.Swap):
                for name in n.names:
                    producer[name] = None
            elif isinstance(n, A.Assign) and isinstance(n.target, A.Name):
                producer[n.target.name] = None
                waited.discard(n.target.name)
            elif isinstance(n, A.Wait):
                waited.update(x.name for x in n.items if isinstance(x, A.Name))
            elif isinstance(n, A.Trigger) and n.after:
                out.extend(_trigger(n, producer, waited, storage, res))
    return out


def _trigger(
    t: A.Trigger,
    producer: dict[str, A.Stmt | None],
    waited: set[str],
    storage: dict[str, str],
    res: Resolution,
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    event = source_text(t.items[0]) if t.items else "e"
    if len(t.items) != 1:
        out.append(
            Diagnostic(
                "error",
                f"'trigger ... after' binds the futures' completion to one event, here {len(t.items)} are given",
                t.span,
                "trigger the other events in a statement of their own",
            )
        )
    for ev in t.items:
        root = root_name(ev)
        if root is not None and storage.get(root.name) == "local":
            out.append(
                Diagnostic(
                    "error",
                    f"'trigger ... after' binds a TMA completion to a shared event; '{root.name}' is 'local'",
                    ev.span,
                    "declare the event 'shared event ...'",
                )
            )
        if len(t.after) > 1 and isinstance(ev, A.At) and any(isinstance(i, A.IncDec) for i in ev.indices):
            inc = next(i for i in ev.indices if isinstance(i, A.IncDec))
            out.append(
                Diagnostic(
                    "error",
                    f"'{source_text(ev)}' advances the order once for each of the {len(t.after)} futures it joins",
                    inc.span,
                    f"trigger '{root.name if root else 'e'}.at({inc.target})' and advance '{inc.target}' in a"
                    " statement of its own after it",
                )
            )
    for dep in t.after:
        name = dep.name if isinstance(dep, A.Name) else None
        if name is None:
            out.append(
                Diagnostic("error", f"'trigger ... after' takes named futures, not '{source_text(dep)}'", dep.span)
            )
            continue
        binding = res.binding(dep)
        if binding is not None and binding.kind in NOT_FUTURES:
            out.append(
                Diagnostic(
                    "error",
                    f"'trigger ... after' takes futures; '{name}' is {_kind(binding.kind)}",
                    dep.span,
                )
            )
            continue
        hint = WAIT_THEN_TRIGGER.format(f=name, e=event)
        if name in waited:
            out.append(
                Diagnostic(
                    "error",
                    f"the future '{name}' was waited already: 'trigger ... after' cannot bind its completion any more",
                    dep.span,
                    f"trigger the event directly after the wait: 'trigger {event};'",
                )
            )
            continue
        p = producer.get(name)
        why = _not_native(p, storage) if p is not None else None
        if why is not None:
            out.append(
                Diagnostic(
                    "error",
                    f"'trigger ... after' binds the completion of asynchronous TMA loads into shared memory;"
                    f" '{name}' is {why}",
                    dep.span,
                    hint,
                )
            )
    return out


def _not_native(p: A.Stmt, storage: dict[str, str]) -> str | None:
    """Why the future ``p`` binds cannot complete an event (None: it can)."""
    if isinstance(p, A.MmaOp):
        return "an MMA future (an MMA has no completion event)"
    if not isinstance(p, A.DmaStmt):
        return None
    what = f"{p.engine}.{p.op}{'.async' if p.is_async else ''}"
    if p.engine != "tma":
        return f"the future of a '{what}' (a DMA copy has no completion event)"
    if not p.is_async:
        return f"the future of a '{what}', which is synchronous"
    if p.dst_storage and isinstance(p.dst, A.Name) and p.dst.name in ("shared", "local"):
        dst: str | None = p.dst.name  # '=> shared' / '=> local': a buffer made by the copy
    else:
        root = root_name(p.dst)
        dst = storage.get(root.name) if root is not None else None
    src_root = root_name(p.src)
    src = storage.get(src_root.name) if src_root is not None else None
    if src == "shared" and dst == "global":
        return f"the future of a '{what}' from shared memory to global memory (a TMA store has no completion event)"
    if dst == "local":
        return f"the future of a '{what}' into local memory (a TMA load writes shared memory)"
    if src == "shared":
        return f"the future of a '{what}' from shared memory (only a load from global memory completes an event)"
    return None


def _storages(fn: A.CoFunction) -> dict[str, str]:
    """Where the spanned data and events of ``fn`` live, by name: global (parameters and buffers of
    the host code), shared or local."""
    out: dict[str, str] = {p.name: "global" for p in fn.params if p.name and p.type.kind == "spanned"}
    for s in fn.body:
        for n in s.walk():
            if isinstance(n, A.SpannedDecl):
                for d in n.items:
                    out[d.name] = n.storage or "global"
            elif isinstance(n, A.EventDecl):
                for d in n.items:
                    out[d.name] = n.storage or "shared"
    return out


def _kind(kind: str) -> str:
    return {
        "event": "an event",
        "spanned": "spanned data",
        "frag": "a fragment",
        "int": "an int",
        "bool": "a bool",
        "elem": "a scalar",
        "bounded": "an index",
        "mdspan": "an mdspan",
        "ituple": "an ituple",
    }.get(kind, f"a {kind}")

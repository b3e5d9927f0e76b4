"""Lines of at most 120 characters from a Python expression, the way ruff format breaks them.

An expression that fits stays on one line.  A call that does not fit puts its arguments on one
indented line, or one argument a line with a trailing comma; a chain of ``+``/``-`` (or ``&``,
``|``, ``*``) puts one operand a line, the operator first, in parentheses unless it already sits
inside a call's.  Each piece is laid out the same way, so nested calls break where they must.
"""

from __future__ import annotations

import ast
import textwrap

INDENT = "    "
LINE_LIMIT = 120

_CHAINS: tuple[tuple[type[ast.operator], ...], ...] = ((ast.Add, ast.Sub), (ast.BitAnd,), (ast.BitOr,), (ast.Mult,))
_SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.BitAnd: "&", ast.BitOr: "|", ast.Mult: "*"}
# how tightly the chains' operators bind (Python's precedence): an operand of a looser one needs parentheses
_BINDING: dict[object, int] = {ast.Mult: 5, ast.Div: 5, ast.FloorDiv: 5, ast.Mod: 5, ast.Add: 4, ast.Sub: 4}
_BINDING.update({ast.LShift: 3, ast.RShift: 3, ast.BitAnd: 2, ast.BitXor: 1, ast.BitOr: 0})
_BINDING.update({"*": 5, "+": 4, "-": 4, "&": 2, "|": 0})
# operators that bind less tightly than + - * (an operand of such a kind needs parentheses in a chain)
_LOOSE = (ast.Compare, ast.BoolOp, ast.IfExp, ast.Lambda, ast.NamedExpr)


def layout(node: ast.expr, depth: int, head: str = "", tail: str = "", bracketed: bool = False) -> list[str]:
    pad = INDENT * depth
    one = pad + head + ast.unparse(node) + tail
    if len(one) <= LINE_LIMIT:
        return [one]
    if isinstance(node, ast.Call):
        return _call(node, depth, head, tail)
    chain = _chain(node)
    if chain is not None:
        return _operands(chain, depth, head, tail, bracketed)
    return [one]


def _call(node: ast.Call, depth: int, head: str, tail: str) -> list[str]:
    pad = INDENT * depth
    items: list[tuple[str, ast.expr]] = [("", a) for a in node.args]
    items += [(f"{k.arg}=" if k.arg else "**", k.value) for k in node.keywords]
    opening = pad + head + ast.unparse(node.func) + "("
    inner = INDENT * (depth + 1) + ", ".join(p + ast.unparse(v) for p, v in items)
    if len(inner) <= LINE_LIMIT:
        return [opening, inner, pad + ")" + tail]
    lines = [opening]
    for prefix, value in items:
        lines.extend(layout(value, depth + 1, prefix, ",", bracketed=True))
    return [*lines, pad + ")" + tail]


def _chain(node: ast.expr) -> list[tuple[str, ast.expr]] | None:
    """A left-leaning chain of one operator family as (operator, operand) pairs."""
    if not isinstance(node, ast.BinOp):
        return None
    family = next((f for f in _CHAINS if isinstance(node.op, f)), None)
    if family is None:
        return None
    out: list[tuple[str, ast.expr]] = []
    e: ast.expr = node
    while isinstance(e, ast.BinOp) and isinstance(e.op, family):
        out.insert(0, (_SYMBOL[type(e.op)], e.right))
        e = e.left
    out.insert(0, ("", e))
    return out


def _operand_text(op: str, value: ast.expr, chain_op: str) -> tuple[str, ast.expr, str]:
    """(head, node, tail) of one operand line of a chain of ``chain_op``: operands that bind less
    tightly than it keep their parentheses (``(a | b)`` in a chain of ``&``)."""
    head = f"{op} " if op else ""
    needs_parens = isinstance(value, _LOOSE) or (
        isinstance(value, ast.BinOp)
        and (
            _BINDING.get(type(value.op), 0) < _BINDING[chain_op]
            or (op in ("+", "-") and isinstance(value.op, ast.Mult))
        )
    )
    if needs_parens:
        return head + "(", value, ")"
    return head, value, ""


def _operands(chain: list[tuple[str, ast.expr]], depth: int, head: str, tail: str, bracketed: bool) -> list[str]:
    pad = INDENT * depth
    inner = depth if bracketed else depth + 1
    lines: list[str] = [] if bracketed else [pad + head + "("]
    chain_op = chain[1][0]
    for i, (op, value) in enumerate(chain):
        h, v, t = _operand_text(op, value, chain_op)
        if bracketed and i == 0:
            h = head + h
        lines.extend(layout(v, inner, h, t, bracketed=False))
    if bracketed:
        lines[-1] += tail
        return lines
    return [*lines, pad + ")" + tail]


def docstring(doc: str, indent: str = INDENT) -> list[str]:
    """A docstring's lines: one if it fits, else wrapped at the line limit onto at least two lines
    of text (ruff puts a single line of text back on the line of its quotes, past the limit)."""
    if '"""' in doc or "\\" in doc or doc.endswith('"'):
        return [indent + repr(doc)]
    one = f'{indent}"""{doc}"""'
    if len(one) <= LINE_LIMIT:
        return [one]
    body = textwrap.wrap(doc, LINE_LIMIT - len(indent) - 3, break_long_words=False, break_on_hyphens=False)
    if len(body) == 1:
        body = textwrap.wrap(doc, 2 * len(doc) // 3, break_long_words=False, break_on_hyphens=False)
    return [f'{indent}"""{body[0]}', *(indent + line for line in body[1:]), f'{indent}"""']

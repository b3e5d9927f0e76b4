"""The running maximum and the rescaled sum of an online softmax, recognised as one fold.

A lane that walks its row once for both statistics of a softmax (a log-sum-exp, an attention row)
keeps the largest value so far ``m`` and the sum of ``E(x - m)`` so far ``s``, rescaling ``s`` each
time ``m`` grows::

    n = max(m, f);  s = s * E(m - n) + g * E(f - n);  m = n;

with ``E`` the exponential ``exp`` or ``exp2``, of the difference or of the difference times a constant
(``exp2((x - m) * log2(e))``): a homomorphism from ``+`` to ``*`` either way.  ``s`` is then
``sum_i g_i * E(f_i - m)``: the pair ``(m, s)`` is a fold whose operator ``(m1, s1) . (m2, s2) = (M,
s1 * E(m1 - M) + s2 * E(m2 - M))``, ``M = max(m1, m2)``, is associative and commutative, so a block of
``f`` folds into it at once::

    B = max(f over the block);  N = max(m, B);  s = s * E(m - N) + sum(g * E(f - N));  m = N;

(schedule/foldloops.py writes that; where ``m`` and ``N`` are both ``-inf`` -- no element yet -- the
scale is 1, as the running form's ``s`` stays untouched by masked-off steps.)  The sum adds in
another order (within the rounding of the type, as every float fold here), and ``E`` is evaluated at
``f - N`` rather than at each step's own maximum: the same value in exact arithmetic, and the blocked
form rounds at most as often.

What is matched (else None, and the loop is judged by the plain folds' proof): ``s``'s new value,
lets inlined, is ``s * E(m - n) + E(f - n)`` or ``... + g * E(f - n)`` (each sum and product in
either order), ``n`` is ``max(m, f)`` (either order), ``m`` is another accumulator of the same loop
assigned ``n`` (or ``max(m, f)``) after ``s``'s assignment, under the same guard, and neither ``f``
nor ``g`` reads ``s`` or ``m``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..tir import expr as E

EXPONENTIALS = ("exp", "exp2")


@dataclass(frozen=True)
class Rescaled:
    """``s := s * E(m - n) + g * E(f - n)`` with ``n = max(m, f)``."""

    peer: str  # m: the running maximum's accumulator
    fn: str  # E: exp or exp2
    of: E.Expr  # f: what the maximum takes in each step
    weight: E.Expr | None  # g (None: 1)
    scale: E.Expr | None = None  # c in E(c * (x - y)) (exp2 of a difference times log2(e), say; None: 1)

    def apply(self, a: E.Expr, b: E.Expr, dtype: str) -> E.Expr:
        """``E(c * (a - b))``."""
        diff: E.Expr = E.Bin("-", a, b)
        if self.scale is not None:
            diff = E.Bin("*", diff, self.scale)
        return E.Call(self.fn, (diff,), dtype)


def match(acc: E.Var, value: E.Expr) -> Rescaled | None:
    """The rescaled sum ``value`` (lets inlined) of accumulator ``acc``, or None."""
    if not (isinstance(value, E.Bin) and value.op == "+"):
        return None
    for scaled, term in ((value.lhs, value.rhs), (value.rhs, value.lhs)):
        head = _scaled(acc, scaled)
        if head is None:
            continue
        fn, scale, peer, top = head
        tail = _term(fn, scale, term, top)
        if tail is None:
            continue
        of, weight = tail
        if not _is_max_of(top, peer, of):
            continue
        names = {v.name for v in E.free_vars(of)} | ({v.name for v in E.free_vars(weight)} if weight else set())
        if names & {acc.name, peer.name}:
            continue
        return Rescaled(peer.name, fn, of, weight, scale)
    return None


def _scaled(acc: E.Var, e: E.Expr) -> tuple[str, E.Expr | None, E.Var, E.Expr] | None:
    """``acc * E(c * (m - n))`` (either order): (E, c, m, n)."""
    if not (isinstance(e, E.Bin) and e.op == "*"):
        return None
    for a, b in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
        if isinstance(a, E.Var) and a.name == acc.name:
            arg = _exp_arg(b)
            if arg is not None:
                fn, scale, (m, n) = arg
                if isinstance(m, E.Var) and m.name != acc.name:
                    return fn, scale, m, n
    return None


def _term(fn: str, scale: E.Expr | None, e: E.Expr, top: E.Expr) -> tuple[E.Expr, E.Expr | None] | None:
    """``E(c * (f - n))`` or ``g * E(c * (f - n))`` (either order) with the same ``E`` and ``c`` and
    ``n`` the same as ``top``: (f, g)."""

    def same(arg: tuple[str, E.Expr | None, tuple[E.Expr, E.Expr]] | None) -> bool:
        return (
            arg is not None
            and arg[0] == fn
            and (arg[1] is None and scale is None or arg[1] is not None and scale is not None and E.same(arg[1], scale))
            and E.same(arg[2][1], top)
        )

    arg = _exp_arg(e)
    if same(arg):
        assert arg is not None
        return arg[2][0], None
    if isinstance(e, E.Bin) and e.op == "*":
        for g, x in ((e.lhs, e.rhs), (e.rhs, e.lhs)):
            arg = _exp_arg(x)
            if same(arg):
                assert arg is not None
                return arg[2][0], g
    return None


def _exp_arg(e: E.Expr) -> tuple[str, E.Expr | None, tuple[E.Expr, E.Expr]] | None:
    """``E(a - b)`` or ``E((a - b) * c)`` / ``E(c * (a - b))`` with ``c`` a constant: (E, c, (a, b))."""
    if not (isinstance(e, E.Call) and e.fn in EXPONENTIALS and len(e.args) == 1):
        return None
    x = e.args[0]
    if isinstance(x, E.Bin) and x.op == "-":
        return e.fn, None, (x.lhs, x.rhs)
    if isinstance(x, E.Bin) and x.op == "*":
        for d, c in ((x.lhs, x.rhs), (x.rhs, x.lhs)):
            if isinstance(d, E.Bin) and d.op == "-" and isinstance(E.fold(c), E.Const):
                return e.fn, c, (d.lhs, d.rhs)
    return None


def _is_max_of(e: E.Expr, m: E.Var, of: E.Expr) -> bool:
    if not (isinstance(e, E.Bin) and e.op == "max"):
        return False
    pairs = ((e.lhs, e.rhs), (e.rhs, e.lhs))
    return any(isinstance(a, E.Var) and a.name == m.name and E.same(b, of) for a, b in pairs)

"""frontend/describe.py: messages name a construct as the source spells it, never by the AST's class."""

from __future__ import annotations

import inspect

import pytest

from croq2triton.api import translate_full
from croq2triton.frontend import ast as A
from croq2triton.frontend.describe import SPELLINGS, describe
from croq2triton.frontend.driver import parse

CLASSES = [
    c
    for _, c in inspect.getmembers(A, inspect.isclass)
    if c.__module__ == A.__name__ and issubclass(c, (A.Stmt, A.Expr)) and c not in (A.Stmt, A.Expr)
]


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_every_statement_and_expression_class_has_a_spelling(cls: type[A.Node]) -> None:
    assert cls in SPELLINGS, f"give {cls.__name__} its source spelling in frontend/describe.py"


def _nodes(src: str) -> list[A.Node]:
    return [n for fn in parse(src, "d.co").functions for s in fn.body for n in s.walk()]


def test_each_node_of_a_program_is_described_without_its_class_name() -> None:
    src = """
__co__ void f(global f32 [N] x, int n) {
  ituple<2> ix = {1, 2};
  parallel p by cdiv(N, 16) : block, t by 16 : thread {
    shared f32 [16] s;
    foreach k in [4] { if (k == 2) break; if (k == 3) continue; }
    s.at(t) = __to<f16>(x.at(p # t)) + (n > 0 ? -1.0f : __exp(2.0f));
    dma.copy s => x.subspan(16).at(p);
    __cpp__("int y = 0;");
    println("v ", |x.span|, #p);
  }
}
"""
    seen = set()
    for node in _nodes(src):
        if isinstance(node, (A.Stmt, A.Expr)):
            text = describe(node)
            seen.add(text)
            assert type(node).__name__ not in text or type(node).__name__.lower() in text, text
    for spelled in ("'break'", "'continue'", "'__cpp__(...)'", "'__to<f16>(...)'", "an 'ituple' declaration"):
        assert spelled in seen, spelled
    assert {"'dma.copy'", "'foreach'", "'if'", "the operator '?:'", "'__exp(...)'", "'println(...)'"} <= seen


@pytest.mark.parametrize(
    ("stmt", "spelled"),
    [
        # (break / continue translate, of loops over one name or several: tests/test_breadth_e.py,
        # tests/test_views_loops2.py)
        (
            '__asm__ volatile("mov.u32 %0, %0;" : "+r"(x.at(p # t)));',
            "inline '__asm__(...)' (Triton kernels take no PTX or C++ asm statements)",
        ),
        ('__cpp__("int y = 0;");', "'__cpp__(...)'"),
        ('if (p # t < N) x.at(p # t) = __to<"float4">(x.at(p # t));', "'__to<\"float4\">(...)'"),
    ],
)
def test_refusals_name_the_construct_as_written(stmt: str, spelled: str) -> None:
    src = f"__co__ void f(global f32 [N] x) {{\n  parallel p by cdiv(N, 16) : block, t by 16 : thread {{\n    {stmt}\n  }}\n}}\n"
    out = translate_full(src, filename="d.co")
    (d,) = [d for d in out.diagnostics if d.severity == "error"]
    assert d.message == f"'f' is not translated: croq2triton does not translate {spelled}"
    assert d.span is not None and d.span.line == 3

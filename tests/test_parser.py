"""Grammar coverage (LANGUAGE.md section 5), written from the reference, not the corpus."""

from __future__ import annotations

import pytest

from croq2triton.errors import CroqError
from croq2triton.frontend import ast as A
from croq2triton.frontend.driver import parse
from croq2triton.frontend.parser import conflicts, tables_current
from croq2triton.frontend.printer import print_unit

ACCEPTED = {
    "single statement bodies": """
__co__ void f(f32 [6, 64] out, f32 [6, 64] in0) {
  parallel p by 6, q by 64 out.at(p, q) = in0.at(p, q) + 1.0f;
  foreach i in 3 foreach j in 2 out.at(i, j) = 0.0f;
}""",
    "buffers, fills, events, fragments": """
__co__ void f() {
  parallel p by 2 : block {
    shared s32 [8] b {0};
    shared f16 [64, 64] buf[2], other;
    local f32 [4] l;
    shared event full[2], empty[2] = ready;
    local event x[2][2];
    shared event<128> e;
    frag f32 [16, 16] acc {0.0f};
    frag mc[2][3] {0.0};
    frag.s32 md[2] {0};
  }
}""",
    "views": """
__co__ void f(f32 [M, K] lhs, f32 [4, 8, 16] q, s32 [32, 18, 9] a, global s32 [M] offs) {
  parallel {bm, bk} by [4, 4] : block {
    dma.copy lhs.subspan(16, 16).at(bm, bk) => shared;
    dma.copy lhs.subspan(16, 16).step(8, 8).at(bm, bk) => local;
    dma.copy lhs.subspan(16, 16 : K, 1).at(bm, bk) => local;
    dma.copy lhs.chunkat(bm, _) => local;
    dma.copy lhs.chunk(4, 1).at(bm, 0) => local;
    dma.copy lhs.modspan(16, 16).at(bm, bk) => local;
    dma.copy lhs.view(16, K).from(offs.at(bm), 0) => local;
    dma.copy lhs.view(16, 16 : K, 1).from(bm, 0) => local;
    dma.copy q.subspan(1, 8, 16).at(bm, 0, 0).sqz() => local;
    dma.copy a.span_as([16, 9, 36]).chunkat(bm, bk, _) => local;
    dma.copy a.span_as(144, 36).chunkat(bm # bk, _) => local;
  }
}""",
    "dma and tma forms": """
__co__ void f(global f16 [M, K] lhs, f32 [36, 27, 128] input) {
  parallel p by 1 : block {
    shared f16 [64, 64] s[2];
    shared event full[2];
    f0 = dma.any;
    f1 = dma.copy.async lhs.chunkat(p, _) => shared after f0;
    f2 = tma.load.async.evict_first.swiz<128> lhs.subspan(64, 64).at(p, 0) => s[0];
    tma.copy.swiz<32>.zfill lhs.subspan(64, 64).at(p, 1) => s[1];
    f3 = dma.pad<{1, 1}, {0, 0}, {1, 0}, 1>.async input.chunkat(p, _, _) => local;
    f4 = dma.transp<1, 0, 2>.async input => local;
    f5 = dma.copy.sp<2:4> lhs => local;
    tma.copy.multicast.promote<128> lhs => s[0];
    trigger full[0] after f2;
    trigger.cluster full[1];
    wait f1, f3, f4;
    swap(f3, f4);
    rotate f1, f3, f4;
    x = select(p % 2, f3, f4);
    m = lhs.map<local>(0, 16);
  }
}""",
    "mma forms": """
__co__ void f(f16 [M, K] a, f16 [N, K] b, f32 [M, N] c, f32 [M, 4] sa, f32 [4, 4] sb) {
  parallel {bm, bn} by [1, 1] : block {
    parallel g by 1 : group-4 {
      acc = mma.fill.f32 0.0f;
      mma.fill acc, 0;
      ma = mma.load.frag.swiz<64>.async a.chunkat(bm, _);
      mma.load a.chunkat(bm, _), ma;
      mma.row.row acc, ma, b.chunkat(bn, _);
      mma.col.row acc, ma, b;
      mma.row.col acc, ma, b;
      mma.col.col acc, ma, b;
      f = mma.row.row.async acc, ma, b;
      mma.row.row.scale acc, ma, b, sa.subspan(64, 1).at(bm, 0), sb.at(bn, 0);
      mma.row.col.sp acc, ma, b, meta;
      mma.scale acc, sa, sb;
      [[schedule(k_tiles(1, 0))]]
      mma.row.row acc, ma, b;
      mma.store acc, c.chunkat(bm, bn);
      mma.store.transp acc, c;
      mma.store.async acc, c;
      mma.store.mask acc, c, 10, 12;
      reduce_max(m, acc, 1);
      reduce_sum(s, acc, 1);
      all_reduce_sum(s);
      copy(d, acc);
      apply {i, j} in acc.span { acc.at(i, j) = __to<f32>(__exp(acc.at(i, j))); }
    }
  }
}""",
    "control flow and sync": """
__co__ void f(int n, bool flag) {
  [[launch_bounds(256, _)]]
  [[maxnreg(128)]]
  parallel.async p by 2 : block(cpu) {
    parallel t by 128 : thread {
      mutable int k = 0;
      while (k < n) { k += 1; if (k == 3) continue; if (flag) break; }
      if (t == 0) yield;
      inthreads (t < 64) { sync.shared; }
      inthreads.async (t >= 64) { sync.barrier : block; }
      sync.fence : block<shared>;
    }
  }
  sync.global;
  with {x, y} in [2, 3] where x <-> y { foreach x, y {} }
  with a in [4], b in [5] { foreach c = a(1:-1), b(:2:1) : unroll(2), vectorize(b, 4) {} }
  foreach t = {i, j} in [4, 4] {}
  foreach m(:) {}
  return;
}""",
    "expressions": """
__co__ int f(s32 [8, 4] a, int c) {
  s : [3, c];
  mdspan<2> t : s [(1), (0)];
  d : a.span / {2, 1} + 1;
  ituple<2> u = {1, 2};
  v = u {(1), (0)};
  int x = 1 + 2 * 3 - 4 / 2 % 3 << 1 >> 1;
  bool y = !(x == 1) && x != 2 || x <= 3 && x >= 4 && x < 5 || x > 6;
  int z = y ? x & 3 | 1 ^ 2 : ~x;
  int w = -x + -(c) + cdiv(c, 4) + |a.span| + |s| + |f32| + |a.span * 2| + s(0) + s(-1);
  f64 g = 0.5;
  f32 h = -1.5f;
  f32 i = -inf;
  half j = __to<f16>(h);
  int k = __to<"int">(g);
  int l = __max(x, c) + __alignup(c, 16);
  assert(c > 0, "c must be " "positive");
  print!("shape: ", s);
  println(R"(raw "text")", x);
  call foo<3, #p * 2, cdiv(c, 4), f32, s(0)>(a, nullptr, &a.at(0, 0), a.data);
  mutable s32 old = __atomic_add(a.at(0, 0), 1);
  x2 = call bar(x > 0 ? x : c);
  __cpp__("int q = 0;");
  __asm__ volatile("nop" : "=r"(x) : [v] "r"(c) : "memory");
  asm("nop");
  call croq::cuda::setreg_inc(232);
  __lib_add(a, a, 8);
  __bar_sync(1, 256);
  __pragma_croq_intrinsic_prefix("hw_");
  hw_go<4>(1);
  return |a.span|;
}""",
    "parameters and return types": """
__co__ f16 [1, 2] a(f32 [3, 4, 5] b, int, bool d, stream s) { }
__co__ bf16 mdspan<2> b(f32 [?, 4, ??] c, global f32 [M] & e) { }
__co__ f32 mdspan[11, 1025] c(f32 mdspan[11, 1025] d, f32 [5 * (3 - 1), 4 % 3] g) { }
__co__ auto d() { f32 [M, N] out; return out; }
__co__ s32 e(int x) { return 0xFF; }
""",
    "compose and bound operators": """
__co__ void f(f32 [M] a) {
  parallel p by 4, q by 8 {
    foreach x in [2] {
      dma.copy a.chunkat(p # q # x) => local;
      dma.copy a.chunkat(p # q #- 1) => local;
      dma.copy a.chunkat((p #+ 1) # x(-1)) => local;
      dma.copy a.subspan(4 / #p).at(order++) => local;
    }
  }
}""",
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_reference_forms_parse_and_round_trip(name: str) -> None:
    tu = parse(ACCEPTED[name], f"{name}.co")
    assert tu.functions
    text = print_unit(tu)
    again = parse(text, "printed.co")
    assert again == tu
    assert print_unit(again) == text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("ituple it;", "an ituple must be initialized."),
        ("ituple it : {1};", "must use '=' to initialize an ituple."),
        ("ituple it[2] = {1, 2};", "no ituple array is allowed."),
        ("mdspan m = [1, 2];", "must use ':' to initialize a mdspan."),
        ("mds : [];", "syntax error, unexpected ']'"),
        ("parallel p by [5, 6] {}", "can not be assigned multiple bounds"),
        ("parallel by 1 { f = dma.any; swap(f); }", "'swap' accept exact two parameters"),
        ("parallel by 1 { dma.load a => local; }", "'.load' is a TMA-only operation."),
        ("parallel by 1 { f = tma.copy.async.evict_last a => local; }", "only valid on 'tma.load'"),
        ("parallel by 1 { f = tma.load.async.swiz<128>.evict_last a => local; }", "must precede '.swiz'"),
        ("parallel by 1 { dma.copy.swiz<16> a => local; }", "swizzle value must be 128, 64, or 32"),
        ("x = 18446744073709551619ull;", "out of range"),
        ("x = 9223372036854775808;", "signed integer literal"),
        ("x = y-1.5;", "syntax error"),
        ("foreach k in cdiv(8, 2) {}", "syntax error"),
        ("slot = stage<2>(order);", "removed 'stage<N>('"),
        ("invalid;", "syntax error, unexpected ';'"),
        ("dma.copy a.stride(1) => local;", "syntax error"),
        ("x = 1 /* never closed", "unterminated comment"),
        ('x = "never closed;', "missing terminating"),
        ("x = 1 @ 2;", "unexpected character '@'"),
        ("tma.store a => b;", "syntax error"),
    ],
)
def test_rejections(body: str, message: str) -> None:
    with pytest.raises(CroqError) as ei:
        parse(f"__co__ void f(f32 [8] a) {{\n  {body}\n}}\n", "bad.co", dialect="upstream")
    d = ei.value.diagnostics[0]
    assert message in d.message
    assert d.span is not None and d.span.file == "bad.co" and d.span.line == 2


TUTORIAL_FORMS = [
    ("tma.copy.swiz<3> a => s;", "swizzle level"),
    ("mma.commit;", "mma.commit"),
    ("tma.copy.async<full[0]> a => s;", "'.async<event>'"),
    ("tma.copy a.subspan(8).at(0).zfill => s;", "'.zfill' on the source view"),
]


@pytest.mark.parametrize(("stmt", "note"), TUTORIAL_FORMS)
def test_tutorial_forms_default_dialect_notes_upstream_rejects(stmt: str, note: str) -> None:
    src = f"__co__ void f(f16 [8] a) {{\n  parallel by 1 : block {{\n    shared f16 [8] s;\n    shared event full[1];\n    {stmt}\n  }}\n}}\n"
    tu = parse(src, "t.co")
    assert any(note in n.message for n in tu.notes)
    assert all(n.span is not None and n.span.line == 5 for n in tu.notes)
    with pytest.raises(CroqError) as ei:
        parse(src, "t.co", dialect="upstream")
    assert ei.value.diagnostics[0].span.line == 5  # type: ignore[union-attr]


def test_dangling_else_binds_to_the_nearest_if() -> None:
    tu = parse("__co__ void f(int a, int b) { if (a > 3) if (b < 2) x = 1; else x = 2; }", "t.co")
    outer = tu.functions[0].body[0]
    assert isinstance(outer, A.If) and outer.other is None
    assert isinstance(outer.then, A.If) and outer.then.other is not None


def test_precedence_follows_upstream() -> None:
    # '&' binds tighter than '+' and '=='; '#' tighter than arithmetic
    tu = parse("__co__ void f() { x = a + b & c; y = p # q + 1; z = a == b & c; }", "t.co")
    stmts = tu.functions[0].body
    x = stmts[0].items[0].value  # type: ignore[attr-defined]
    assert isinstance(x, A.Binary) and x.op == "+" and isinstance(x.rhs, A.Binary) and x.rhs.op == "&"
    y = stmts[1].items[0].value  # type: ignore[attr-defined]
    assert y.op == "+" and y.lhs.op == "#"
    z = stmts[2].items[0].value  # type: ignore[attr-defined]
    assert z.op == "==" and z.rhs.op == "&"


def test_spans_cover_nodes() -> None:
    src = "__co__ void f(f32 [8] a) {\n  parallel p by 2 {\n    dma.copy a.chunkat(p) => local;\n  }\n}\n"
    tu = parse(src, "t.co")
    dma = next(n for n in tu.walk() if isinstance(n, A.DmaStmt))
    assert (dma.span.line, dma.span.col) == (3, 5)  # type: ignore[union-attr]
    view = dma.src
    assert (view.span.line, view.span.col, view.span.end_col) == (3, 14, 26)  # type: ignore[union-attr]


def test_grammar_has_no_conflicts() -> None:
    assert conflicts() == []


def test_checked_in_parse_tables_match_the_grammar() -> None:
    assert tables_current(), "run: python -m croq2triton.frontend.parser --write-tables"


def test_mutable_declarations() -> None:
    # 'mutable x = v' takes its type from v (it once parsed as a scalar of type 'mutable')
    tu = parse("__co__ void f(f32 [8] a) {\n  mutable w = 64;\n  mutable int u = 2;\n  int v = 3;\n}\n", "m.co")
    decls = [s for s in tu.functions[0].body if isinstance(s, A.ScalarDecl)]
    assert [(d.type, d.mutable) for d in decls] == [(None, True), ("int", True), ("int", False)]
    from croq2triton.sema.checks import check_unit

    check_unit(tu)
    for body, message in (
        ("mutable b = {1};", "'b' is an ituple and cannot be declared 'mutable'"),
        ("mutable d;", "unable to deduce the type of 'd'"),
    ):
        with pytest.raises(CroqError) as ei:
            check_unit(parse(f"__co__ void f(f32 [8] a) {{\n  {body}\n}}\n", "m.co"))
        d = ei.value.diagnostics[0]
        assert message in d.message and d.span is not None and d.span.line == 2

"""The host IR (tir/host.py): launchers built by hand and written as Python (emit/launcher.py), the
launch derived from a tile-IR kernel's arguments (tir/launch.py), host expressions
(lift/hostexpr.py), and the lifting of a small function (lift/launcher.py) seen through its dump."""

from __future__ import annotations

import textwrap

import pytest

from croq2triton.api import translate_full
from croq2triton.emit.launcher import emit_launcher
from croq2triton.errors import CroqInternalError, CroqSemanticError
from croq2triton.frontend.driver import parse
from croq2triton.lift.hostexpr import binary, cdiv
from croq2triton.lift.launcher import lift_launcher
from croq2triton.tir import expr as E
from croq2triton.tir import host as H
from croq2triton.tir import nodes as N
from croq2triton.tir.hostdump import dump_launcher
from croq2triton.tir.launch import launch_of
from croq2triton.tir.pyexpr import host_source

N_ = E.Var("N", lo=0)  # a size: never negative
K = E.Var("k")
STEPS = E.Var("steps")


def _launcher(body: tuple[H.Stmt, ...]) -> H.Launcher:
    signature = H.OpSignature((("x", "tensor"), ("steps", "int")), ("x",), "tensor")
    places = (H.ParamAt("x", 3, 15, 26), H.ParamAt("steps", 3, 28, 37))
    doc = "f(f32 [N] x, int steps) -> f32 tensor."
    return H.Launcher("f", ("x", "steps"), "f.co", 3, doc, ("x",), body, signature, places)


def test_a_hand_built_launcher_is_written_as_python() -> None:
    launch = H.Launch(
        "f_k0",
        (E.CDiv(N_, E.Const(64)),),
        (H.TensorArg("x"), H.StrideArg("x", 0), H.ScalarArg(N_)),
        (("BLOCK", E.Const(64)), ("num_warps", E.Const(4))),
        line=7,
    )
    body = (
        H.BindTensor("x", "x", "f32", (H.BindDim(0, "N", "N"),), False, True, line=3),
        H.BindScalar("steps", "steps", "int", line=3),
        H.Let("k", E.Const(0), line=4),
        H.Alloc("half", (binary("/", N_, E.Const(2)),), "f32", E.Const(0.0, "f32"), line=5),
        H.While(binary("<", K, STEPS), (launch, H.Assign("k", binary("+", K, E.Const(1)), line=8)), line=6),
        H.ElemSet("x", "x", (E.Const(0),), H.ElemGet("x", "x", (binary("-", K, E.Const(1)),), "f32", 9), line=9),
        H.If(
            binary("&&", binary(">", K, E.Const(2)), binary("!=", STEPS, E.Const(0))),
            (H.Print(("k=", K, H.Braced((K, N_))), True, line=10),),
            (H.Assert(binary("==", binary("%", K, E.Const(2)), E.Const(0)), "odd", line=11),),
            line=10,
        ),
        H.CopyBack("x_caller", "x"),
        H.Return(H.TensorRef("half"), line=12),
    )
    assert emit_launcher(_launcher(body)) == textwrap.dedent(
        '''\
        _FN['f'] = _rt.Fn('f', _CO_FILE, 3, {'x': (3, 15, 26), 'steps': (3, 28, 37)})


        @_rt.launcher
        def f(x, steps, *, _launch=None):
            """f(f32 [N] x, int steps) -> f32 tensor."""
            _F = _FN['f']
            _launch = _launch or _rt.launch
            x_caller = x  # f.co:3
            # the arguments as declared (plain tensors of the declared dtypes and ranks, on the kernels' device, sizes that agree) pass one test; any others are checked one by one, which says what is wrong
            if (_dev := _rt.device_of(_F, x)) is not None and x.dtype is torch.float32 and x.dim() == 1 and (N := x.shape[0]) > 0:
                steps = _rt.scalar_arg(_F, 'steps', steps, int)
            else:
                _dev = _rt.pick_device(_F, {'x': x}, _launch)
                _dims = {}
                x = _rt.tensor_arg(_F, 'x', x, torch.float32, 1, _dev, is_global=False)  # f.co:3
                N = _rt.bind_dim(_F, _dims, 'N', 'x', x, 0)
                steps = _rt.scalar_arg(_F, 'steps', steps, int)
            k = 0  # f.co:4
            half = _rt.alloc(_F, (N // 2,), torch.float32, _dev, 0.0)  # f.co:5
            while k < steps:  # f.co:6
                _launch(f_k0, (_rt.cdiv(N, 64),), [x, x.stride()[0], N], dict(BLOCK=64, num_warps=4))  # f.co:7
                k = k + 1  # f.co:8
            _rt.elem_set(_F, 'x', x, (0,), _rt.elem_get(_F, 'x', x, (k - 1,), 9), 9)  # f.co:9
            if k > 2 and steps != 0:  # f.co:10
                print('k=', k, '{' + ', '.join(map(str, (k, N))) + '}', sep='', end='\\n')
            else:
                _rt.host_assert(_F, _rt.imod(k, 2) == 0, 'odd', 11)  # f.co:11
            _rt.copy_back(x_caller, x)
            return half  # f.co:12'''
    )


def test_an_empty_block_is_pass_and_a_constant_loop_condition_true() -> None:
    body = (H.While(E.Const(True, "i1"), (), line=4), H.For("_i1", N_, (), line=5), H.Return(None))
    text = emit_launcher(_launcher(body))
    assert "    while True:  # f.co:4\n        pass\n    for _i1 in range(N):  # f.co:5\n        pass\n" in text


def _kernel() -> N.Kernel:
    """A persistent kernel with a TMA descriptor and a tile whose extent is fixed at launch."""
    args: list[N.Arg] = [
        N.Pointer("a_ptr", "a", "f16", (N_,), ("a_stride_0",)),
        N.Stride("a_stride_0", "a", 0),
        N.Scalar("N", "i32", N_),
        N.Descriptor("a_desc", "a", (64,), flag="TMA_A", what="loads", source="a", fill="sanitizer"),
        N.Constexpr("TMA_A", True),
        N.Constexpr("T_D0", 0, size=binary("+", N_, E.Const(0)), of="buffer 't' (k.co:5)"),
        N.Constexpr("GROUP_M", 8),
        N.Constexpr("NUM_SMS", 132, launch="sms"),
        N.Constexpr("WARP_SPECIALIZE", False, launch="warp_specialize"),
    ]
    grid = (E.Bin("min", E.CDiv(N_, E.Const(64)), E.Var("_k0_NUM_SMS")),)
    return N.Kernel("k0", grid, (E.Var("pid"),), args, [], num_warps=8, line=5)


def test_the_launch_of_a_tile_ir_kernel_comes_from_its_arguments() -> None:
    launch = launch_of(_kernel(), 5)
    assert launch.prepare == (
        H.NumSms("_k0_NUM_SMS"),
        H.TmaCheck("_k0_TMA_A", "a", "a", (64,), (), "loads"),
        H.TmaDescriptor("_k0_a_desc", "a", (64,), "_k0_TMA_A", "sanitizer"),
        H.BlockExtents(("_k0_T_D0",), "buffer 't' (k.co:5)", (N_,), 1),
    )
    assert launch.args == (H.TensorArg("a"), H.StrideArg("a", 0), H.ScalarArg(N_), H.DescriptorArg("_k0_a_desc"))
    consts = {k: host_source(v) for k, v in launch.constexprs}
    assert consts == {
        "TMA_A": "_k0_TMA_A",
        "T_D0": "_k0_T_D0",
        "GROUP_M": "8",
        "NUM_SMS": "_k0_NUM_SMS",
        "WARP_SPECIALIZE": "_rt.WARP_SPECIALIZE",
        "num_warps": "8",
    }
    text = emit_launcher(_launcher((launch,)))
    assert "    _k0_NUM_SMS = _rt.num_sms(_dev)  # f.co:5\n" in text
    assert "    _k0_TMA_A = _rt.tma_ok(_F, 'a', a, (64,), (64,), 'loads')\n" in text
    assert "    _k0_a_desc = _rt.tma_desc(a, (64,), _k0_TMA_A, _OOB_PADDING)\n" in text
    assert "    _k0_T_D0, = _rt.block_extents(_F, \"buffer 't' (k.co:5)\", (N,))\n" in text
    assert "_launch(k0, (min(_rt.cdiv(N, 64), _k0_NUM_SMS),), [a, a.stride()[0], N, _k0_a_desc]," in text


def test_a_scratch_area_is_allocated_for_the_whole_grid() -> None:
    kernel = N.Kernel("k1", (E.CDiv(N_, E.Const(64)),), (), [N.Scratch("s", "f32", E.Bin("*", N_, E.Const(4)))], [])
    launch = launch_of(kernel, 1)
    (area,) = launch.prepare
    assert isinstance(area, H.ScratchArea) and area.var == "_k1_s" and area.dtype == "f32"
    assert host_source(area.elements) == "_rt.cdiv(N, 64) * N * 4", host_source(area.elements)
    assert launch.args == (H.ScratchArg("_k1_s"),)
    text = emit_launcher(_launcher((launch,)))
    assert "_k1_s = _rt.scratch(_F, _rt.cdiv(N, 64) * N * 4, torch.float32, _dev)" in text, text


def test_host_arithmetic_folds_as_it_builds_with_c_semantics() -> None:
    assert binary("/", E.Const(-7), E.Const(2)) == E.Const(-3)  # C truncates
    assert binary("%", E.Const(-7), E.Const(2)) == E.Const(-1)
    assert binary("+", E.Const(0), N_) is N_ and binary("*", N_, E.Const(1)) is N_
    assert binary("/", N_, N_) == E.Const(1)
    assert binary("&&", E.Const(True, "i1"), E.Const(False, "i1")) == E.Const(False, "i1")
    assert isinstance(binary("||", K, STEPS), H.Logic)
    assert cdiv(E.Const(10), E.Const(4)) == E.Const(3)
    # the launcher divides like C: '//' only where both sides are known not to be negative
    assert host_source(binary("/", N_, E.Const(4))) == "N // 4"
    assert host_source(binary("/", K, E.Const(4))) == "_rt.idiv(k, 4)"
    assert host_source(E.Where(binary("<", K, N_), K, N_)) == "k if k < N else N"
    assert host_source(H.Logic("and", (binary("<=", E.Const(0), K), binary("<", K, N_)))) == "0 <= k < N"


SOURCE = """\
__co__ f32 [N] scale(global f32 [N] x, int reps) {
  mutable int done = 0;
  while (done < reps) {
    parallel p by cdiv(N, 64) : block, t by 64 : thread
      if (p # t < N) x.at(p # t) = x.at(p # t) * 2.0f;
    done += 1;
  }
  foreach i in [2] { x.at(i) = x.at(i) + i; }
  f32 [N] halves;
  return halves;
}
"""


def test_a_small_function_lifts_to_this_host_ir() -> None:
    tr = translate_full(SOURCE, filename="scale.co")
    assert dump_launcher(tr.launchers["scale"]) == textwrap.dedent(
        """\
        launcher scale(x: tensor, reps: int) -> tensor writes x  @1
          tensor x: f32 [N] global  @1
          scalar reps: int  @1
          done = 0  @2
          while done < reps  @3
            launch scale_k0 grid (_rt.cdiv(N, 64))  @4
              args [N, x, x.stride(0)]
              constexprs num_warps=2
            done := _rt.s32(done + 1)  @6
          for _i1 in [0, 2)  @8
            x[_i1] := _rt.elem_get(_F, 'x', x, (_i1,), 8) + _i1  @8
          halves = alloc f32 [N]  @9
          return tensor halves  @10
        """
    )


def test_a_mistake_in_host_code_stays_a_located_diagnostic() -> None:
    src = "__co__ void f(int n) {\n  break;\n}\n"
    with pytest.raises(CroqSemanticError) as caught:  # the static checks find it (sema/misuse.py)
        translate_full(src, filename="f.co")
    d = caught.value.diagnostics[0]
    assert d.message == "'break' outside a loop" and d.span is not None and d.span.line == 2


def test_an_unexpected_exception_is_a_located_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CROQ2TRITON_DEBUG", raising=False)
    fn = parse(SOURCE, "scale.co").functions[0]

    def broken(top: object, name: str, host: object) -> list[H.Stmt]:
        raise ZeroDivisionError("a bug")

    with pytest.raises(CroqInternalError) as e:
        lift_launcher(fn, "scale.co", broken)
    d = e.value.diagnostics[0]
    assert "ZeroDivisionError in the lowering of kernel scale_k0: a bug" in d.message
    assert d.span is not None and d.span.line == 4

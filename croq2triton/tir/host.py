"""The host IR: what a launcher does, as typed statements (DESIGN.md: "host statements make the launcher").

A :class:`Launcher` is the Python function of one ``__co__`` function.  It binds its parameters
(:class:`BindTensor`, :class:`BindScalar`, :class:`BindStream`), runs the host code between the
kernels (scalars, buffers, element reads and writes, checks, prints, control flow), launches each
kernel (:class:`Launch`: its grid, arguments and constexprs, and what the launch needs prepared
first: TMA descriptors, block extents fixed at launch, the SM count), copies the writes of
parameters that live elsewhere back (:class:`CopyBack`) and returns.

Expressions are :mod:`~.expr` trees over launcher variables, with two kinds only host code has:
:class:`ElemGet` (an element of a tensor read by the launcher) and :class:`Logic` (``&&`` and
``||``, which short-circuit).  Every statement carries the ``.co`` line it comes from (``line``, 0
for none); ``croq2triton/emit/launcher.py`` writes it as a ``# file.co:line`` comment.  Element
types are tile-IR types (``f32``, ``i32`` ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .expr import Expr, Shape

# ------------------------------------------------------------------ host expressions


@dataclass(frozen=True)
class ElemGet(Expr):
    """``x.at(i, j)`` read by the launcher (``_rt.elem_get`` checks the index; its message names
    ``tensor`` and the ``.co`` line)."""

    tensor: str  # the Croqtile name
    host: str  # the launcher variable holding the torch tensor
    index: tuple[Expr, ...]
    type: str
    line: int
    address: bool = False  # ``&x.at(i, j)``: the element's address (an ``i64``), not its value

    @property
    def dtype(self) -> str:
        return self.type

    @property
    def shape(self) -> Shape:
        return ()

    def children(self) -> tuple[Expr, ...]:
        return self.index


@dataclass(frozen=True)
class Logic(Expr):
    """``a && b && ...`` (``op`` "and") or ``a || b || ...`` ("or"): evaluated left to right and
    only as far as it needs, as in C."""

    op: Literal["and", "or"]
    values: tuple[Expr, ...]

    @property
    def dtype(self) -> str:
        return "i1"

    @property
    def shape(self) -> Shape:
        return ()

    def children(self) -> tuple[Expr, ...]:
        return self.values


@dataclass(frozen=True)
class CScalar(Expr):
    """A scalar of the source's host code, computed as C computes it (tir/hostc.py): integers wrap
    to their types, ``f32`` values round to ``f32``, comparisons of signed and unsigned values are
    unsigned; then converted to ``type`` (a scalar's declared type; None: the value's own type).
    ``store``: the value is written into a tensor of ``type``, whose element write wraps or rounds
    it (runtime/launch.py ``elem_set``) where a conversion would have nothing else to do, or is an
    element index (``type`` None), which the element access checks as it is."""

    value: Expr
    type: str | None = None
    store: bool = False

    @property
    def dtype(self) -> str:
        return self.type or self.value.dtype

    @property
    def shape(self) -> Shape:
        return ()

    def children(self) -> tuple[Expr, ...]:
        return (self.value,)


# ------------------------------------------------------------------ statements


@dataclass(frozen=True)
class Stmt:
    line: int = field(default=0, kw_only=True)  # the .co line (0: none)


@dataclass(frozen=True)
class BindDim:
    """Dimension ``dim`` is the size ``symbol``: the first tensor with it binds it (to ``var``),
    the others are checked against it."""

    dim: int
    symbol: str
    var: str


@dataclass(frozen=True)
class AnyDim:
    """Dimension ``dim`` is ``?``: any extent, read into ``var``."""

    dim: int
    var: str


@dataclass(frozen=True)
class FixedDim:
    """Dimension ``dim`` must be ``extent``."""

    dim: int
    extent: int


DimCheck = BindDim | AnyDim | FixedDim


@dataclass(frozen=True)
class BindTensor(Stmt):
    """A tensor parameter: checked (element type, rank, device), moved to the kernels' device, its
    dimensions checked or bound.  ``keep_caller``: the caller's tensor is kept (``{var}_caller``)
    because the function writes this one and it may live elsewhere: :class:`CopyBack` copies the
    writes back to it."""

    var: str  # the parameter, and the launcher variable of the device tensor
    name: str  # its Croqtile name, for messages
    dtype: str
    dims: tuple[DimCheck, ...]
    is_global: bool
    keep_caller: bool
    move: bool = True  # False: checked and its sizes read, but the caller's tensor is kept (a dispatcher's)


@dataclass(frozen=True)
class BindScalar(Stmt):
    """A scalar parameter, checked to be a Python ``kind``."""

    var: str
    name: str
    kind: Literal["int", "float", "bool"]


@dataclass(frozen=True)
class BindStream(Stmt):
    """A stream parameter (accepted and checked; kernels run on the current stream)."""

    var: str


@dataclass(frozen=True)
class Let(Stmt):
    """``var = value``: a host scalar the launcher computes."""

    var: str
    value: Expr


@dataclass(frozen=True)
class Assign(Stmt):
    """``var = value`` for a launcher variable defined before (a ``mutable`` scalar, a parameter,
    a loop counter)."""

    var: str
    value: Expr


@dataclass(frozen=True)
class Alloc(Stmt):
    """A global buffer of the function: a fresh tensor on the kernels' device, filled with
    ``fill`` where the source gives one.  ``empty``: not filled at all (a workspace every element of
    which a kernel writes before another reads it: split-K's partial sums); the runtime's poison
    fills it with NaN under tests, so an element read unwritten shows."""

    var: str
    shape: tuple[Expr, ...]
    dtype: str
    fill: Expr | None
    empty: bool = False


@dataclass(frozen=True)
class SpanAs(Stmt):
    """``var`` = the contiguous tensor ``host`` (the source's ``tensor``) seen with ``shape``
    (``t.span_as([...])``, LANGUAGE.md 7.6): the same memory, checked at launch."""

    var: str
    tensor: str
    host: str
    shape: tuple[Expr, ...]


@dataclass(frozen=True)
class Window(Stmt):
    """``var`` = the window of the tensor ``host`` (the source's ``tensor``) from ``origin`` with
    ``shape`` (a ``chunkat`` / ``subspan`` / ``view`` of a host-level copy): the same memory,
    checked at launch to lie inside the tensor."""

    var: str
    tensor: str
    host: str
    origin: tuple[Expr, ...]
    shape: tuple[Expr, ...]
    drop: tuple[int, ...] = ()  # dimensions (of extent 1) the view drops: ``.sqz()``
    # a copy's window (not a view kernels read): it may reach past the tensor (LANGUAGE.md 14.3)
    partial: bool = False


@dataclass(frozen=True)
class Strided(Stmt):
    """``var`` = the elements of the contiguous tensor ``host`` in row-major order from ``offset``,
    ``shape`` of them ``strides`` apart (a view with explicit strides, LANGUAGE.md 7.6, of a
    host-level copy): the same memory, checked at launch to lie inside the tensor."""

    var: str
    tensor: str
    host: str
    offset: Expr
    shape: tuple[Expr, ...]
    strides: tuple[Expr, ...]


@dataclass(frozen=True)
class HostCopy(Stmt):
    """A ``dma.copy`` between launches (LANGUAGE.md 7.8, at host level): the tensor ``src``
    (the Croqtile name ``src_name``), its dimensions permuted by ``perm`` (``dma.transp``) where
    given, copied into ``dst``; with ``dst_name`` None into a fresh tensor ``dst`` (``=> global``)."""

    dst: str
    dst_name: str | None
    src: str
    src_name: str
    perm: tuple[int, ...] | None = None


@dataclass(frozen=True)
class HostPad(Stmt):
    """A ``dma.pad<lo, hi, mid, value>`` between launches (LANGUAGE.md 7.8): ``src`` with ``lo`` and
    ``hi`` elements of ``value`` before and after each dimension and ``mid`` between two of its
    elements, into ``dst`` (``dst_name`` None: a fresh tensor)."""

    dst: str
    dst_name: str | None
    src: str
    src_name: str
    lo: tuple[Expr, ...]
    hi: tuple[Expr, ...]
    mid: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True)
class ElemSet(Stmt):
    """``x.at(i, j) = value`` done by the launcher (``_rt.elem_set`` checks the index)."""

    tensor: str  # the Croqtile name
    host: str
    index: tuple[Expr, ...]
    value: Expr


@dataclass(frozen=True)
class Assert(Stmt):
    """A check the launcher makes; ``message`` is raised with the ``.co`` line when it fails."""

    cond: Expr
    message: str


@dataclass(frozen=True)
class Braced:
    """An index tuple printed as ``{a, b}``."""

    items: tuple[Expr, ...]


PrintItem = str | Expr | Braced


@dataclass(frozen=True)
class Print(Stmt):
    """Host ``print`` / ``println``: the items one after another."""

    items: tuple[PrintItem, ...]
    newline: bool


@dataclass(frozen=True)
class Sync(Stmt):
    """``sync.global``: wait for the kernels' device."""


@dataclass(frozen=True)
class Comment(Stmt):
    """A comment line for the reader of the launcher."""

    text: str


@dataclass(frozen=True)
class If(Stmt):
    """``if cond: then else: orelse``.  ``note`` is a comment on the ``if`` line; ``else_line`` the
    ``.co`` line the ``else:`` names (0: none)."""

    cond: Expr
    then: tuple[Stmt, ...]
    orelse: tuple[Stmt, ...] = ()
    note: str = ""
    else_line: int = 0


@dataclass(frozen=True)
class While(Stmt):
    cond: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class For(Stmt):
    """``for var in range(stop)``."""

    var: str
    stop: Expr
    body: tuple[Stmt, ...]


@dataclass(frozen=True)
class Break(Stmt):
    pass


@dataclass(frozen=True)
class Continue(Stmt):
    pass


@dataclass(frozen=True)
class CopyBack(Stmt):
    """The device tensor ``device`` written by the kernels, copied back into the caller's tensor
    where that is another one (see :class:`BindTensor`)."""

    caller: str
    device: str


@dataclass(frozen=True)
class TensorRef:
    """A tensor the launcher returns, by its launcher variable."""

    var: str


@dataclass(frozen=True)
class Reshape:
    """A tensor returned with another shape (``span_as`` at host level)."""

    var: str
    dims: tuple[Expr, ...]


@dataclass(frozen=True)
class Return(Stmt):
    value: Expr | TensorRef | Reshape | None


@dataclass(frozen=True)
class TunedLauncher:
    """The launcher of one tuned point (``matmul__t0``): what the point sets (``Point.describe()``)
    and the sizes it won at, in the order of :class:`CallTuned`'s ``symbols``."""

    launcher: str
    point: str
    sizes: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class CallTuned(Stmt):
    """Return what the launcher tuned at this launch's sizes returns: the launcher whose tuned
    sizes are these, else the one tuned at the nearest sizes (``runtime.launch.nearest_tuned``:
    in log space, a tie to the larger).  ``values`` are the launcher variables of the sizes named
    ``symbols``; ``args`` the parameters passed on, as the caller gave them."""

    symbols: tuple[str, ...]
    values: tuple[Expr, ...]
    choices: tuple[TunedLauncher, ...]
    args: tuple[str, ...]
    origin: str = "best.json"  # where the points come from, for the comment


# ------------------------------------------------------------------ launches


@dataclass(frozen=True)
class TensorArg:
    """A tensor passed to a kernel (its base pointer)."""

    var: str


@dataclass(frozen=True)
class StrideArg:
    """``tensor.stride(dim)``."""

    tensor: str
    dim: int


@dataclass(frozen=True)
class ScalarArg:
    value: Expr


@dataclass(frozen=True)
class DescriptorArg:
    """A TMA descriptor made by a :class:`TmaDescriptor` preparation."""

    var: str


@dataclass(frozen=True)
class ScratchArg:
    """A scratch area made by a :class:`ScratchArea` preparation."""

    var: str


LaunchArg = TensorArg | StrideArg | ScalarArg | DescriptorArg | ScratchArg


@dataclass(frozen=True)
class NumSms:
    """``var`` = the number of SMs of the kernels' device (persistent grids)."""

    var: str


@dataclass(frozen=True)
class TmaCheck:
    """``flag`` = whether this launch's ``tensor`` meets TMA's rules for boxes of ``box`` over
    ``window`` (``box`` itself where ``window`` is empty) when it ``what`` ("loads" / "stores");
    the runtime's messages name it ``source``."""

    flag: str
    source: str
    tensor: str
    box: tuple[int, ...]
    window: tuple[Expr, ...]
    what: str


@dataclass(frozen=True)
class TmaDescriptor:
    """``var`` = a TensorDescriptor of ``tensor`` with blocks of ``box`` where ``flag`` holds.
    ``fill``: what loads read outside the tensor: zero, or what the OOB sanitizer asks for."""

    var: str
    tensor: str
    box: tuple[int, ...]
    flag: str
    fill: Literal["zero", "sanitizer"]


@dataclass(frozen=True)
class BlockExtents:
    """``vars`` = the power-of-two block extents at or above ``sizes`` (the extents of one tile
    fixed at launch, ``fixed`` the product of its extents known when translating), checked
    against what a block may hold; the runtime's messages name the tile ``what``."""

    vars: tuple[str, ...]
    what: str
    sizes: tuple[Expr, ...]
    fixed: int
    least: int = 1  # the smallest extent passed (16: a tile an MMA takes)


@dataclass(frozen=True)
class ScratchArea:
    """``var`` = zeroed device memory of ``elements`` of ``dtype`` (a tile-IR type): the scratch
    area of a kernel's buffers, for every program of its grid; ``written``: not zeroed (the kernel
    stores every element before it is read: :class:`~.nodes.Scratch`)."""

    var: str
    elements: Expr
    dtype: str
    written: bool = False
    kept_zero: bool = False  # counters the kernel leaves zero: the runtime's kept area (runtime/launch.py counters)


Preparation = NumSms | TmaCheck | TmaDescriptor | BlockExtents | ScratchArea


@dataclass(frozen=True)
class Launch(Stmt):
    """A launch of the tile-IR kernel ``kernel``: ``prepare`` in order, then
    ``kernel[grid](*args, **constexprs)`` (through the launcher's ``_launch``)."""

    kernel: str
    grid: tuple[Expr, ...]
    args: tuple[LaunchArg, ...]
    constexprs: tuple[tuple[str, Expr], ...]  # keyword -> value (``num_warps`` among them)
    prepare: tuple[Preparation, ...] = ()


# ------------------------------------------------------------------ the launcher


@dataclass(frozen=True)
class OpSignature:
    """What a torch op registration needs (``croq2triton/torch_ops.py``): each parameter's kind
    ("tensor", "int", "float", "bool", "stream"), the tensor parameters the function writes, and
    what it returns ("none", "tensor", "int", "float", "bool")."""

    params: tuple[tuple[str, str], ...]
    writes: tuple[str, ...]
    returns: str


@dataclass(frozen=True)
class ParamAt:
    """Where the parameter ``name`` (its Croqtile name) is declared in the ``.co`` signature: on
    ``line``, columns ``col`` up to ``end`` (1-based, ``end`` excluded).  The runtime's messages
    about a parameter (dtype, rank, device, sizes) point there."""

    name: str
    line: int
    col: int
    end: int


@dataclass(frozen=True)
class Launcher:
    """The launcher of the ``__co__`` function ``name`` of ``source``:
    ``def name(*params, *, _launch=None)``."""

    name: str
    params: tuple[str, ...]
    source: str  # the .co file's name
    line: int  # the function's .co line
    doc: str
    tensors: tuple[str, ...]  # the tensor parameters (they pick the kernels' device)
    body: tuple[Stmt, ...]
    signature: OpSignature
    places: tuple[ParamAt, ...] = ()  # where the parameters are declared
    suffix: str = ""  # the launcher of a tuned point behind a dispatcher: ``def name{suffix}`` (``__t0``)
    # the function's own launcher where Python or the module takes its name (emit/names.py): ``def lambda_``
    def_name: str = ""

    @property
    def python_name(self) -> str:
        """The name of the launcher's ``def`` (its messages name the function, ``name``)."""
        return self.def_name if self.def_name and not self.suffix else self.name + self.suffix

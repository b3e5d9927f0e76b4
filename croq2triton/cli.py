"""Command line: ``croq2triton parse|check|translate|compile|run|tune ...``."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from .errors import CroqError, Diagnostic
from .frontend import ast as A
from .frontend.driver import parse_file
from .options import F32_PRECISIONS
from .tolerances import TOLERANCE_TEXT
from .version import __version__

if TYPE_CHECKING:
    from .emit.module import Translation


def _defines(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items or []:
        name, _, value = it.partition("=")
        if not name.isidentifier():
            raise CroqError(f"bad -D option '{it}'", hint="write -D NAME or -D NAME=VALUE")
        out[name] = value if _ else "1"
    return out


def _expand_paths(paths: Sequence[str]) -> Iterator[str]:
    """The files named, and the .co files under the directories named.  A directory without .co
    files is reported (an error) when the walk reaches it."""
    for p in paths:
        if os.path.isdir(p):
            found = False
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith(".co"):
                        found = True
                        yield os.path.join(root, f)
            if not found:
                raise NoCoFiles(p)
        else:
            yield p


class NoCoFiles(CroqError):
    def __init__(self, path: str) -> None:
        super().__init__(f"no .co files in {path}", hint="name .co files, or directories that hold some")
        self.path = path


def _each_path(paths: Sequence[str], on_error: Callable[[CroqError], None]) -> Iterator[str]:
    """``_expand_paths``, going on after a directory without .co files (reported with ``on_error``)."""
    for p in paths:
        try:
            yield from _expand_paths([p])
        except NoCoFiles as e:
            on_error(e)


def dump_ast(node: object, indent: int = 0) -> str:
    """A readable, indented dump of an AST (``parse --ast``)."""
    pad = "  " * indent
    if isinstance(node, A.Node):
        name = type(node).__name__
        fields = [(k, v) for k, v in vars(node).items() if k not in ("span", "notes") and v not in (None, [], False)]
        loc = f"  @{node.span.line}:{node.span.col}" if node.span is not None and node.span.line else ""
        if isinstance(node, (A.HostText, A.DeviceCode)):
            first = node.text.strip().splitlines()[0][:60] if node.text.strip() else ""
            return f"{pad}{name} ({len(node.text)} chars) {first!r}{loc}"
        simple = [(k, v) for k, v in fields if not isinstance(v, (A.Node, list))]
        nested = [(k, v) for k, v in fields if isinstance(v, (A.Node, list))]
        head = f"{pad}{name}" + "".join(f" {k}={v!r}" for k, v in simple) + loc
        lines = [head]
        for k, v in nested:
            if isinstance(v, list):
                if all(not isinstance(x, A.Node) for x in v):
                    lines.append(f"{pad}  {k}: {v!r}")
                    continue
                lines.append(f"{pad}  {k}:")
                for x in v:
                    lines.append(dump_ast(x, indent + 2))
            else:
                lines.append(f"{pad}  {k}:")
                lines.append(dump_ast(v, indent + 2))
        return "\n".join(lines)
    return f"{pad}{node!r}"


def cmd_parse(args: argparse.Namespace) -> int:
    defines = _defines(args.define)
    status = 0

    def no_files(e: CroqError) -> None:
        nonlocal status
        status = 1
        if args.report:
            print(f"{getattr(e, 'path', '?')}\terror\t0:0\t{e.message}")
        else:
            print(e.format(), file=sys.stderr)

    for path in _each_path(args.files, no_files):
        try:
            tu = parse_file(path, defines=defines, dialect=args.dialect)
        except CroqError as e:
            status = 1
            if args.report:
                d = e.diagnostics[0]
                pos = f"{d.span.line}:{d.span.col}" if d.span is not None else "0:0"
                msg = d.message.splitlines()[0] if d.message else "error"
                print(f"{path}\terror\t{pos}\t{msg}")
            else:
                print(e.format(), file=sys.stderr)
            continue
        if args.report:
            print(f"{path}\tok")
        elif args.ast:
            print(dump_ast(tu))
        if args.notes and not args.report:
            for n in tu.notes:
                print(n.format(), file=sys.stderr)
    return status


def _as_warning(d: Diagnostic) -> Diagnostic:
    return dataclasses.replace(d, severity="warning") if d.severity == "error" else d


def _translate(path: str, args: argparse.Namespace) -> Translation:
    """Everything ``translate`` does short of writing: parse, check, lower every function."""
    from .api import translate_full
    from .frontend.driver import read_source

    src = read_source(path)
    out = translate_full(
        src,
        filename=path,
        defines=_defines(args.define),
        dialect=args.dialect,
        schedule=args.schedule,
        f32_precision=args.f32_precision,
        config=getattr(args, "config", None),
        emit_autotune=_emit_autotune(args),
    )
    if out.unit is not None and not out.unit.functions:
        raise _no_function(path, src)
    return out


def _no_function(path: str, src: str) -> CroqError:
    """A file without a ``__co__`` function: what it holds instead, where that shows."""
    import re

    from .errors import Span

    def located(m: re.Match[str], message: str, hint: str) -> CroqError:
        line = src.count("\n", 0, m.start()) + 1
        col = m.start() - (src.rfind("\n", 0, m.start()) + 1) + 1
        return CroqError(message, Span.at(path, line, col, line, col + len(m.group(0))), hint)

    if not src.strip():
        return CroqError(f"{path} is empty: no __co__ function", hint="a .co file translates its __co__ functions")
    cuda = re.search(r"\b__global__\b", src)
    if cuda is not None:
        return located(
            cuda,
            f"no __co__ function in {path}: '__global__' is a CUDA kernel",
            "croq2triton translates Croqtile '__co__' functions: '__co__ void f(global f32 [N] x) { parallel .. }'",
        )
    python = re.search(r"^(import \w|from [\w.]+ import |def \w+\(|class \w+)", src, re.M)
    if python is not None:
        return located(
            python,
            f"no __co__ function in {path}: this looks like Python",
            "croq2triton reads Croqtile (.co) files; 'croq2triton translate X.co' writes the Python",
        )
    return CroqError(f"no __co__ function in {path}", hint="a .co file translates its __co__ functions")


def _report(out: Translation, args: argparse.Namespace) -> None:
    """The translation's diagnostics on stderr: untranslated functions are errors, or warnings with
    --allow-partial when some function did translate."""
    partial = args.allow_partial and bool(out.lowered)
    for d in out.diagnostics:
        print((_as_warning(d) if partial else d).format(), file=sys.stderr)
    if args.notes and out.unit is not None:
        for n in out.unit.notes:
            print(n.format(), file=sys.stderr)


def _verdict(out: Translation, args: argparse.Namespace) -> str | None:
    """None when the file counts as translated, else why not."""
    total = len(out.lowered) + len(out.failed)
    if not out.failed:
        return None
    names = ", ".join(out.failed)
    if not out.lowered:
        return f"no function translates ({names})"
    if args.allow_partial:
        return None
    return f"{len(out.failed)} of {total} function(s) do not translate ({names}); --allow-partial accepts the others"


def cmd_check(args: argparse.Namespace) -> int:
    if args.lowerability:
        return cmd_lowerability(args)
    if args.format is not None:
        raise CroqError("--format goes with --lowerability", hint="croq2triton check --lowerability --format tsv PATH")
    status = 0

    def no_files(e: CroqError) -> None:
        nonlocal status
        status = 1
        print(e.format(), file=sys.stderr)

    for path in _each_path(args.files, no_files):
        try:
            out = _translate(path, args)
        except CroqError as e:
            print(e.format(), file=sys.stderr)
            status = 1
            continue
        _report(out, args)
        why = _verdict(out, args)
        total = len(out.lowered) + len(out.failed)
        if why is not None:
            print(f"{path}: error: {why}", file=sys.stderr)
            status = 1
        elif out.failed:
            print(f"{path}: ok ({len(out.lowered)} of {total} function(s); not translated: {', '.join(out.failed)})")
        else:
            print(f"{path}: ok ({total} function(s))")
    return status


def cmd_lowerability(args: argparse.Namespace) -> int:
    """``check --lowerability``: a file x function x status table with its counts (a report: exit 0
    unless a file cannot be read)."""
    from .api import _options
    from .lowerability import Row, Unreadable, file_rows, format_text, format_tsv

    if getattr(args, "config", None) is not None:
        raise CroqError("--lowerability does not take --config", hint="it reports each function as translated")
    options = _options(args.schedule or "source", False, args.f32_precision)
    defines = _defines(args.define)
    status = 0
    rows: list[Row] = []

    def unreadable(e: CroqError) -> None:
        nonlocal status
        status = 1
        print(e.format(), file=sys.stderr)

    for path in _each_path(args.files, unreadable):
        try:
            rows.extend(file_rows(path, defines, args.dialect, options))
        except Unreadable as e:
            unreadable(e)
    sys.stdout.write(format_tsv(rows) if args.format == "tsv" else format_text(rows))
    return status


def _emit_autotune(args: argparse.Namespace) -> int:
    """``--emit-autotune K`` as given (0: not given)."""
    k = getattr(args, "emit_autotune", None)
    if k is None:
        return 0
    if args.config is None:
        raise CroqError("--emit-autotune needs --config", hint="give the tuner's result: --config best.json")
    if k < 1:
        raise CroqError(f"--emit-autotune {k}: the number of configs must be at least 1")
    return int(k)


def cmd_translate(args: argparse.Namespace) -> int:
    target = args.output or os.path.splitext(args.file)[0] + ".py"
    if target != "-":
        _check_target(target)
    out = _translate(args.file, args)
    _report(out, args)
    if args.dump_ir:
        _dump_ir(out)
    why = _verdict(out, args)
    if why is not None:
        where = "" if target == "-" else f"; {target} not written"
        print(f"{args.file}: error: {why}{where}", file=sys.stderr)
        return 1
    if target == "-":
        sys.stdout.write(out.source)
        return 0
    try:
        with open(target, "w") as f:
            f.write(out.source)
    except OSError as e:
        raise CroqError(f"cannot write '{target}': {e.strerror or e}") from None
    n = len(out.lowered)
    skipped = f"; not translated, raise when called: {', '.join(out.failed)}" if out.failed else ""
    print(f"{args.file} -> {target} ({n} function(s) translated{skipped})", file=sys.stderr)
    return 0


def _dump_ir(out: Translation) -> None:
    """``translate --dump-ir``: the tile IR of every kernel lifted into it and each launcher's host
    IR, on stderr (the module still goes where -o says)."""
    from .tir.dump import dump_functions

    sys.stderr.write(dump_functions(out.ir, out.launchers))  # type: ignore[arg-type]


def _check_target(target: str) -> None:
    """Say what is wrong with an output path before translating."""
    if os.path.isdir(target):
        raise CroqError(
            f"cannot write '{target}': it is a directory",
            hint=f"name the file to write, e.g. -o {os.path.join(target, 'out.py')}",
        )
    parent = os.path.dirname(target) or "."
    if not os.path.isdir(parent):
        raise CroqError(
            f"cannot write '{target}': directory '{parent}' does not exist", hint="create it first, or write elsewhere"
        )


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import run_file

    return run_file(
        args.file,
        defines=_defines(args.define),
        sizes=args.size,
        functions=args.only,
        repeat=args.repeat,
        oob_fill=args.oob_fill,
        schedule=args.schedule or "source",
        f32_precision=args.f32_precision,
        check=args.check,
    )


def cmd_compile(args: argparse.Namespace) -> int:
    from .compiler import compile_file
    from .runsizes import parse_sizes

    results = compile_file(
        args.file,
        sizes=parse_sizes(args.size),
        functions=args.only,
        defines=_defines(args.define),
        schedule=args.schedule,
        f32_precision=args.f32_precision,
        config=args.config,
        emit_autotune=_emit_autotune(args),
        target=args.target,
        progress=lambda msg: print(msg, file=sys.stderr, flush=True),  # a kernel can take seconds
    )
    for fn, reports in results:
        for r in reports:
            if args.emit:
                sys.stdout.write(f"// {fn}: {r.kernel} ({args.emit} for {args.target})\n{r.asm[args.emit]}\n")
            print(f"{fn}: {r.line()}", file=sys.stderr if args.emit else sys.stdout)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    from .tune.sweep import Config, Sweep, list_parameters, parse_duration

    cfg = Config(
        path=args.file,
        func=args.tune_func,
        sizes=args.size or [],
        dtype=args.dtype,
        schedule=args.schedule,
        f32_precision=args.f32_precision,
        defines=_defines(args.define),
        params=args.param or [],
        budget_s=parse_duration(args.budget) if args.budget else None,
        search=args.search,
        jobs=args.jobs or 0,
        gpus=args.gpus,
        ray=args.ray,
        out=args.out,
        cache=args.cache,
        dry_run=args.dry_run,
        timeout_s=parse_duration(args.timeout) if args.timeout else None,
        time_per_point_s=args.time_per_point,
        top_k=args.top,
    )
    if args.list:
        print(list_parameters(cfg))
        return 0
    sweep = Sweep(cfg)
    return sweep.dry_run() if cfg.dry_run else sweep.run()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="croq2triton", description="Translate Croqtile (.co) kernels into Triton.")
    ap.add_argument("--version", action="version", version=f"croq2triton {__version__}")
    ap.add_argument("--debug", action="store_true", help="show Python tracebacks of internal errors")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("files", nargs="+", metavar="FILE", help=".co files or directories")
        p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
        p.add_argument(
            "--dialect",
            choices=("default", "upstream"),
            default="default",
            help="'upstream' rejects the tutorial forms upstream removed (default accepts both)",
        )
        p.add_argument("--notes", action="store_true", help="print notes (e.g. tutorial-dialect spellings)")

    p = sub.add_parser("parse", help="parse files and report errors")
    common(p)
    p.add_argument("--ast", action="store_true", help="print the AST")
    p.add_argument(
        "--report", action="store_true", help="one line per file: PATH<TAB>ok or PATH<TAB>error<TAB>LINE:COL<TAB>msg"
    )
    p.set_defaults(func=cmd_parse)

    def schedule(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--schedule",
            choices=("source", "auto"),
            default=None,
            help="'auto': translator picks stages, warps, order (default: 'source', as the file states; with "
            "--config, the mode the config was tuned under)",
        )

    def config(p: argparse.ArgumentParser, autotune: bool = True) -> None:
        p.add_argument(
            "--config",
            metavar="BEST.json",
            help="what 'croq2triton tune' found: the tuned function runs the winning point of each tuned size "
            "(dispatching on the launch's sizes: the tuned size, else the nearest), under the schedule mode and "
            "precision the config records",
        )
        if autotune:
            p.add_argument(
                "--emit-autotune",
                dest="emit_autotune",
                type=int,
                metavar="K",
                help="with --config: one kernel under triton.autotune over the best K points of each size, where "
                "they differ only in launch parameters (num_warps, GROUP_M, NUM_STAGES)",
            )

    def precision(p: argparse.ArgumentParser) -> None:
        g = p.add_mutually_exclusive_group()
        g.add_argument(
            "--allow-tf32",
            dest="f32_precision",
            action="store_const",
            const="tf32",
            help="dots on f32 operands may use TF32 products (10-bit mantissas, faster); without it they keep "
            "f32-accurate products (tf32x3). Operands declared tf32 always use TF32",
        )
        g.add_argument(
            "--f32-precision",
            dest="f32_precision",
            choices=F32_PRECISIONS,
            help="the products of dots on f32 operands: tf32x3 (the default: three TF32 products, as accurate as "
            "IEEE f32 against float64), ieee (f32 FMAs, slower on tensor-core tiles), tf32",
        )

    def allow_partial(p: argparse.ArgumentParser, what: str) -> None:
        p.add_argument(
            "--allow-partial",
            dest="allow_partial",
            action="store_true",
            help=f"{what} when some functions do not translate (reported as warnings; their launchers raise "
            "when called); without it such a file is an error (exit 1). A file where no function translates is "
            "always an error",
        )

    p = sub.add_parser(
        "check",
        help="parse, run the static checks and lower every function: 'ok' means 'translate' succeeds",
        description="Report every error 'translate' would report, without writing anything. "
        "Exit 0 iff every file translates.",
    )
    common(p)
    schedule(p)
    precision(p)
    config(p, autotune=False)
    allow_partial(p, "say ok")
    p.add_argument(
        "--lowerability",
        action="store_true",
        help="report instead: a table of every __co__ function of the files (translated; refused, naming the "
        "construct; invalid, with the diagnostic), with the counts at the end; exit 0 unless a file cannot be read",
    )
    p.add_argument(
        "--format",
        choices=("text", "tsv"),
        default=None,
        help="with --lowerability: 'text' (aligned columns, the default) or 'tsv' (file, function, status, "
        "line:col, message; the counts as '#' lines)",
    )
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("translate", help="translate a .co file into a Python module of Triton kernels")
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", metavar="OUT.py", help="output path ('-' for stdout; default: FILE with .py)")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
    p.add_argument("--dialect", choices=("default", "upstream"), default="default")
    p.add_argument("--notes", action="store_true", help="print notes (e.g. tutorial-dialect spellings)")
    schedule(p)
    precision(p)
    config(p)
    allow_partial(p, "write the module with the functions that translate")
    p.add_argument("--dump-ir", action="store_true", help="print the IR of each kernel and launcher on stderr")
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser(
        "compile", help="compile the translation for a GPU target (no GPU needed) and summarise each kernel"
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
    p.add_argument("--size", action="append", metavar="M=..,N=..", help="values of symbolic sizes and int parameters")
    p.add_argument("--func", dest="only", action="append", metavar="NAME", help="only this function (repeatable)")
    schedule(p)
    precision(p)
    config(p)
    p.add_argument("--target", default="sm_90a", help="GPU target (default sm_90a: Hopper)")
    p.add_argument("--emit", choices=("ttir", "ttgir", "llir", "ptx"), help="also print this IR of every kernel")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser(
        "run",
        help="translate and run kernels on random inputs (GPU if present, else the interpreter)",
        description="Run each function on random inputs, its outputs filled with NaN (integers: the type's "
        "minimum, unsigned: maximum; bools cannot be) first; elements left so are reported (a warning; an error "
        "with --check). "
        "Progress goes to stderr, results to stdout.",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
    p.add_argument(
        "--size",
        action="append",
        metavar="M=..,N=..",
        help="values of symbolic sizes (default 256; 64 for '?' dims, set by the parameter's name) and of scalar "
        "parameters (int, float, true/false; default 1); the sizes chosen are printed",
    )
    p.add_argument("--func", dest="only", action="append", metavar="NAME", help="run only this function (repeatable)")
    p.add_argument(
        "--repeat",
        type=int,
        metavar="N",
        default=0,
        help="timed calls (default 0: 10 on a GPU after an untimed compiling call, 1 in the interpreter)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="also run the same inputs through the source schedule, --schedule auto and Triton's num_stages=1 and "
        "compare every output element with the source schedule's (NaN positions included); exit 1 when one "
        "differs: |x - ref| > rtol * (|ref| + mean |ref|), rtol: " + TOLERANCE_TEXT + "; elements left "
        "unwritten are then errors too",
    )
    p.add_argument(
        "--oob-fill",
        dest="oob_fill",
        choices=("zero", "nan"),
        default="zero",
        help="what loads not marked .zfill read outside a tensor. 'nan' finds kernels that rely on it: output "
        "elements that are NaN under it but a number with the zero fill (the function is run again with it to "
        "tell) are reported as computed from out-of-bounds reads, an error (exit 1)",
    )
    schedule(p)
    precision(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "tune",
        help="sweep a kernel's schedule space: pruned, compiled in parallel, verified, timed, cached (docs/tune.md)",
        description="Sweep the parameters of one __co__ function (its #define values, the fields of each kernel's "
        "schedule) at the given sizes: points are pruned with their reasons, compiled in worker processes, checked "
        "against the default translation (and float64 torch for GEMMs) and timed; every result is appended to a "
        "JSON-lines cache (a rerun does only what is new); the end re-times the best and writes table.txt, "
        "best.json and tune.png to --out. Without a GPU the kernels run in Triton's interpreter with a CPU timer.",
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument(
        "--func", dest="tune_func", metavar="NAME", help="the function to tune (needed when the file has several)"
    )
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
    p.add_argument(
        "--size", action="append", metavar="M=..,N=..", help="sizes to tune at (repeatable: one winner each)"
    )
    p.add_argument("--dtype", metavar="TYPE", help="write the source's f16 element types as TYPE (bf16, f8_e4m3, ...)")
    schedule(p)
    precision(p)
    p.add_argument(
        "--param",
        action="append",
        metavar="NAME=VALUES",
        help="a parameter and its values (repeatable): WARP_N=64..256:8, block_n=64,128,256, num_stages=1..4, "
        "persistent=true,false, factors=1x2,2x2; without --param the default space of each kernel is swept",
    )
    p.add_argument("--budget", metavar="TIME", help="wall-time budget: 10m, 90s, 1h (default: the whole space)")
    p.add_argument(
        "--search",
        choices=("auto", "exhaustive", "random", "guided"),
        default="auto",
        help="auto (default): exhaustive while the space fits the budget, else guided (Optuna TPE)",
    )
    p.add_argument("--jobs", type=int, metavar="N", help="compile worker processes (default: one per core)")
    p.add_argument(
        "--gpus",
        metavar="all|0,1",
        help="benchmark on these GPUs, one worker each (without a GPU: interpreter stand-ins)",
    )
    p.add_argument(
        "--ray", metavar="ADDRESS", help="run the sweep's points as tasks on this Ray cluster ('local': start one)"
    )
    p.add_argument("--out", metavar="DIR", help="where table.txt, best.json, tune.png go (default tune-FILE-FUNC)")
    p.add_argument("--cache", metavar="DIR", help="the JSON-lines cache directory (default OUT/cache; shareable)")
    p.add_argument("--timeout", metavar="TIME", help="per point and size: a worker silent this long is killed")
    p.add_argument(
        "--time-per-point", type=float, metavar="S", help="seconds of timing per point (default 0.25 on a GPU)"
    )
    p.add_argument("--top", type=int, default=5, metavar="K", help="points re-timed at the end and kept in best.json")
    p.add_argument(
        "--dry-run", action="store_true", help="print every point as kept or pruned (with why); no compiling"
    )
    p.add_argument("--list", action="store_true", help="print the parameters: current value, values, what each changes")
    p.set_defaults(func=cmd_tune)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if not getattr(args, "func", None):
        ap.print_help()
        return 2
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except CroqError as e:
        print(e.format(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # an internal bug: say so, without a traceback unless asked
        if args.debug or os.environ.get("CROQ2TRITON_DEBUG"):
            traceback.print_exc()
        print(
            f"croq2triton: internal error: {type(e).__name__}: {e}\n"
            "This is a bug in croq2triton, not in your program; rerun with --debug for the traceback.",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())

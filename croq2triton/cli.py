"""Command line: ``croq2triton parse|check ...``."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence

from . import __version__
from .errors import CroqError
from .frontend import ast as A
from .frontend.driver import parse_file


def _defines(items: Sequence[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for it in items or []:
        name, _, value = it.partition("=")
        if not name.isidentifier():
            raise CroqError(f"bad -D option '{it}'", hint="write -D NAME or -D NAME=VALUE")
        out[name] = value if _ else "1"
    return out


def _expand_paths(paths: Sequence[str]) -> Iterator[str]:
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for f in sorted(files):
                    if f.endswith(".co"):
                        yield os.path.join(root, f)
        else:
            yield p


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
    for path in _expand_paths(args.files):
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


def cmd_check(args: argparse.Namespace) -> int:
    from .sema.checks import check_unit

    defines = _defines(args.define)
    status = 0
    for path in _expand_paths(args.files):
        try:
            tu = parse_file(path, defines=defines, dialect=args.dialect)
            warnings = check_unit(tu)
        except CroqError as e:
            print(e.format(), file=sys.stderr)
            status = 1
            continue
        for w in warnings:
            print(w.format(), file=sys.stderr)
        for n in tu.notes if args.notes else []:
            print(n.format(), file=sys.stderr)
        print(f"{path}: ok ({len(tu.functions)} function(s))")
    return status


def cmd_translate(args: argparse.Namespace) -> int:
    from .api import translate_full
    from .frontend.driver import read_source

    defines = _defines(args.define)
    src = read_source(args.file)
    out = translate_full(src, filename=args.file, defines=defines, dialect=args.dialect, schedule=args.schedule)
    for d in out.diagnostics:
        print(d.format(), file=sys.stderr)
    target = args.output or os.path.splitext(args.file)[0] + ".py"
    if target == "-":
        sys.stdout.write(out.source)
    else:
        with open(target, "w") as f:
            f.write(out.source)
        print(f"{args.file} -> {target} ({len(out.lowered)} function(s) translated)", file=sys.stderr)
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from .runner import run_file

    return run_file(
        args.file,
        defines=_defines(args.define),
        sizes=args.size,
        functions=args.only,
        repeat=args.repeat,
        oob_fill=args.oob_fill,
        schedule=args.schedule,
    )


def cmd_compile(args: argparse.Namespace) -> int:
    from .compiler import compile_file
    from .runner import parse_sizes

    results = compile_file(
        args.file,
        sizes=parse_sizes(args.size),
        functions=args.only,
        defines=_defines(args.define),
        schedule=args.schedule,
        target=args.target,
    )
    for fn, reports in results:
        for r in reports:
            if args.emit:
                sys.stdout.write(f"// {fn}: {r.kernel} ({args.emit} for {args.target})\n{r.asm[args.emit]}\n")
            print(f"{fn}: {r.line()}", file=sys.stderr if args.emit else sys.stdout)
    return 0


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

    p = sub.add_parser("check", help="parse and run the static checks")
    common(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("translate", help="translate a .co file into a Python module of Triton kernels")
    p.add_argument("file", metavar="FILE")
    p.add_argument("-o", "--output", metavar="OUT.py", help="output path ('-' for stdout; default: FILE with .py)")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
    p.add_argument("--dialect", choices=("default", "upstream"), default="default")
    p.add_argument(
        "--schedule", choices=("source", "auto"), default="source", help="'auto': translator picks stages, warps, order"
    )
    p.set_defaults(func=cmd_translate)

    p = sub.add_parser(
        "compile", help="compile the translation for a GPU target (no GPU needed) and summarise each kernel"
    )
    p.add_argument("file", metavar="FILE")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
    p.add_argument("--size", action="append", metavar="M=..,N=..", help="values of symbolic sizes and int parameters")
    p.add_argument("--func", dest="only", action="append", metavar="NAME", help="only this function (repeatable)")
    p.add_argument("--schedule", choices=("source", "auto"), default="source")
    p.add_argument("--target", default="sm_90a", help="GPU target (default sm_90a: Hopper)")
    p.add_argument("--emit", choices=("ttir", "ttgir", "llir", "ptx"), help="also print this IR of every kernel")
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser("run", help="translate and run kernels on random inputs (GPU if present, else the interpreter)")
    p.add_argument("file", metavar="FILE")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]", help="define a macro")
    p.add_argument("--size", action="append", metavar="M=..,N=..", help="values of symbolic sizes and int parameters")
    p.add_argument("--func", dest="only", action="append", metavar="NAME", help="run only this function (repeatable)")
    p.add_argument(
        "--repeat", type=int, default=0, help="timed repetitions (default: 10 on a GPU, 1 in the interpreter)"
    )
    p.add_argument(
        "--oob-fill",
        dest="oob_fill",
        choices=("zero", "nan"),
        default="zero",
        help="what loads not marked .zfill read outside a tensor ('nan': find kernels that rely on it)",
    )
    p.add_argument(
        "--schedule", choices=("source", "auto"), default="source", help="'auto': translator picks stages, warps, order"
    )
    p.set_defaults(func=cmd_run)
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

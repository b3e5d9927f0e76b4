"""Worker processes of a sweep: a pool that translates, prunes and compiles points, and one
long-lived benchmark process per GPU.

Each worker is a process of its own (``spawn``: nothing of the parent's Triton or CUDA state is
inherited), serving one task at a time over a pipe.  The parent (:mod:`.sweep`) waits on all of
them at once; a worker that dies (a crash, an illegal memory access, a signal) or does not answer
within the task's timeout (a hang) is killed and started again, and the task is recorded as failed
with that reason.  A benchmark worker that meets a CUDA error (which is sticky: every later call in
that process fails) answers, then exits, and is started again.  Workers die with the parent
(``PR_SET_PDEATHSIG`` on Linux).

Compile workers run Triton out of interpreter mode with no GPU visible: each point's launches are
recorded at the sizes swept (runtime/launch.py ``Recorder``) and compiled with ``triton.compile`` for
the GPU's target exactly as the JIT would (runtime/aot.py), so the kernel lands in Triton's on-disk
cache under the key the benchmark process's launch looks up; the compiled figures (shared memory,
registers, spills) prune points.  Without a GPU, every worker runs Triton's interpreter: compile
workers translate, prune and record; benchmark workers run kernels in the interpreter with a CPU
timer (``--gpus 0,1`` then starts one such stand-in per listed id).

Fault injection for tests: ``CROQ2TRITON_TUNE_FAULTS="TEXT:FAULT;..."`` makes the point whose
description (``Point.describe()``) contains ``TEXT`` fail with ``FAULT``: ``compile`` (its compile
raises), ``die`` (its benchmark worker kills itself with SIGSEGV) or ``hang`` (its benchmark worker
sleeps until killed).
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from collections.abc import Mapping
from typing import Any

FAULTS_ENV = "CROQ2TRITON_TUNE_FAULTS"


def faults_for(describe: str, text: str | None = None) -> set[str]:
    """The faults injected into the point described as ``describe``."""
    text = os.environ.get(FAULTS_ENV, "") if text is None else text
    out: set[str] = set()
    for item in text.split(";"):
        where, _, fault = item.rpartition(":")
        if where and fault and where in describe:
            out.add(fault.strip())
    return out


CUDA_STICKY = (
    "illegal memory access",
    "unspecified launch failure",
    "CUDA error",
    "misaligned address",
    "illegal instruction",
    "device-side assert",
)


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except Exception:  # noqa: BLE001 - not essential: an idle worker also exits at EOF
            pass


def serve(conn: Any, role: str, env: Mapping[str, str]) -> None:
    """A worker's loop: answer each task sent over ``conn`` until it is closed."""
    _die_with_parent()
    os.environ.update(env)
    handler: Any = PrepareHandler() if role == "prepare" else BenchHandler()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        try:
            reply = handler.handle(msg)
        except Exception as e:  # noqa: BLE001 - every failure is an answer, the worker goes on
            reply = {"error": f"{type(e).__name__}: {_first(str(e))}", "traceback": traceback.format_exc()[-4000:]}
            if any(s in str(e) for s in CUDA_STICKY):
                reply["restart"] = "a CUDA error is sticky: a fresh benchmark process"
        try:
            conn.send(reply)
        except (OSError, BrokenPipeError):
            return
        if reply.get("restart"):
            os._exit(0)


def _first(text: str, n: int = 600) -> str:
    text = text.strip()
    return (text.splitlines()[0] if text else "")[:n]


def _error_text(e: BaseException) -> str:
    from ..errors import CroqError

    if isinstance(e, CroqError):
        d = e.diagnostics[0]
        where = f" (line {d.span.line})" if d.span is not None and d.span.line else ""
        return f"{d.message}{where}"
    return f"{type(e).__name__}: {_first(str(e))}"


def _fn(unit: Any, func: str) -> Any:
    for f in unit.functions:
        if f.name == func:
            return f
    return None


def _load(source: str, tag: str, interpret: bool, origin: str) -> Any:
    from ..api import load_source

    return load_source(source, f"croq2triton_tune_{tag}", interpret=interpret, origin=origin)


def _unload(mod: Any) -> None:
    sys.modules.pop(getattr(mod, "__name__", ""), None)


# ------------------------------------------------------------------ translate, prune, compile
class PrepareHandler:
    """Tasks of a compile worker: ``prepare`` one point (translate, prune, record, compile)."""

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        if op != "prepare":
            raise ValueError(f"unknown task {op!r}")
        return prepare(msg)


def prepare(msg: dict[str, Any]) -> dict[str, Any]:
    """Translate the point, prune it before compiling, then per size record its launches (the
    launcher's own checks) and, with ``compile``, compile them and prune on the compiled figures."""
    import hashlib

    from ..api import translate_full
    from ..errors import CroqError
    from ..options import Point
    from .prune import Limits, after_compiling, at_sizes, base_kernel, before_compiling, failure_kind
    from .verify import contraction_info

    point = Point.from_json(msg["point"])
    func = msg["func"]
    out: dict[str, Any] = {"sizes": {}}
    t0 = time.perf_counter()
    try:
        tr = translate_full(
            msg["text"],
            filename=msg["filename"],
            defines=msg.get("defines") or {},
            schedule=msg["schedule"],
            f32_precision=msg.get("f32_precision"),
            point=point,
        )
    except CroqError as e:
        return {**out, "status": "pruned", "stage": "translate", "reason": f"{failure_kind(e)}: {_error_text(e)}"}
    out["translate_s"] = time.perf_counter() - t0
    fn = _fn(tr.unit, func)
    limits = Limits(**msg.get("limits", {}))
    reasons = before_compiling(tr, func, fn, limits)
    if reasons:
        stage = "translate" if reasons[0].startswith(("does not translate", "invalid")) else "static"
        return {**out, "status": "pruned", "stage": stage, "reason": "; ".join(reasons)}
    source = tr.source
    out["module"] = source
    out["module_hash"] = hashlib.sha256(source.encode()).hexdigest()[:16]
    contractions = tr.contractions.get(func, {})
    kernels = tr.ir.get(func, [])
    one = len(contractions) == 1 and len({base_kernel(k.name) for k in kernels}) == 1  # its variants aside
    only = next(iter(contractions.values())) if one else None
    out["contraction"] = contraction_info(only)
    out["kernels"] = {k: _schedule_json(s) for k, s in tr.schedules.get(func, {}).items()}
    faults = faults_for(point.describe(), msg.get("faults"))
    interpret = not msg.get("compile")
    mod = None
    try:
        mod = _load(source, f"prep_{out['module_hash']}_{os.getpid()}", interpret, msg["filename"])
        for key, values in msg["sizes"].items():
            here = at_sizes(tr, func, fn, values)
            if here:
                out["sizes"][key] = {"status": "pruned", "stage": "static", "reason": "; ".join(here)}
                continue
            out["sizes"][key] = _prepare_size(mod, fn, values, msg, faults, limits, after_compiling)
    finally:
        if mod is not None:
            _unload(mod)
    out["status"] = "ready"
    return out


def _schedule_json(s: Any) -> dict[str, Any]:
    import dataclasses

    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(s).items()}


def _prepare_size(
    mod: Any, fn: Any, values: dict[str, Any], msg: dict[str, Any], faults: set[str], limits: Any, after: Any
) -> dict[str, Any]:
    from ..errors import CroqError
    from ..runinputs import make_inputs
    from ..runtime.aot import record

    try:
        args = make_inputs(fn, values, "cpu", empty=True).args
        launches = record(getattr(mod, fn.name), *args)
    except CroqError as e:
        return {"status": "pruned", "stage": "launch", "reason": f"the launcher refuses these sizes: {_error_text(e)}"}
    except Exception as e:  # noqa: BLE001 - a launcher that breaks at these sizes: recorded, not fatal
        return {"status": "failed", "stage": "launch", "reason": f"recording the launch failed: {_error_text(e)}"}
    res: dict[str, Any] = {"status": "ready", "launches": len(launches)}
    if "compile" in faults:
        return {"status": "failed", "stage": "compile", "reason": "compile: injected fault (CROQ2TRITON_TUNE_FAULTS)"}
    if not msg.get("compile"):
        return res
    from ..compiler import block_tile, pipelined_stages, resource_usage
    from ..runtime.aot import compile_launch

    figures: dict[str, dict[str, Any]] = {}
    t0 = time.perf_counter()
    seen: set[str] = set()
    for launch in launches:
        name = launch.kernel.__name__
        sig = f"{name}:{sorted((k, str(v)) for k, v in launch.kwargs.items())}"
        if sig in seen:
            continue
        seen.add(sig)
        try:
            kernel = compile_launch(launch, arch=int(msg.get("arch", 90)))
        except Exception as e:  # noqa: BLE001 - Triton's compile errors: the point failed to compile
            return {"status": "failed", "stage": "compile", "reason": f"{name} does not compile: {_error_text(e)}"}
        usage = resource_usage(kernel.asm.get("cubin", b""))
        ttgir = kernel.asm.get("ttgir", "")
        figures[name] = {
            "shared": int(kernel.metadata.shared),
            "registers": usage.get("registers"),
            "spills": usage.get("local", 0) + usage.get("stack", 0),
            "num_warps": int(kernel.metadata.num_warps),
            "stages": pipelined_stages(ttgir),
            "tile": block_tile(ttgir),
        }
    res["compile_s"] = time.perf_counter() - t0
    res["compiled"] = figures
    reasons = after(figures, limits)
    if reasons:
        return {**res, "status": "pruned", "stage": "compiled", "reason": "; ".join(reasons)}
    return res


# ------------------------------------------------------------------ benchmark
class BenchHandler:
    """Tasks of a benchmark worker (one per GPU, or an interpreter stand-in): ``hello`` (the device),
    ``setup`` (inputs, the reference outputs and the baseline per size), ``evaluate`` (verify and
    time one point at one size), ``retime`` (the best few, interleaved)."""

    def __init__(self) -> None:
        self.interpret = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
        self.setup_msg: dict[str, Any] | None = None
        self.sizes: dict[str, Any] = {}
        self.fn: Any = None
        self.timer: Any = None

    @property
    def device(self) -> str:
        return "cpu" if self.interpret else "cuda"

    def handle(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        if op == "hello":
            return self.hello()
        if op == "setup":
            return self.setup(msg)
        if op == "evaluate":
            return self.evaluate(msg)
        if op == "retime":
            return self.retime(msg)
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}
        raise ValueError(f"unknown task {op!r}")

    def hello(self) -> dict[str, Any]:
        import torch
        import triton

        from ..version import __version__

        versions = {"croq2triton": __version__, "triton": triton.__version__, "torch": torch.__version__}
        if self.interpret:
            return {
                "device": {"name": "CPU (Triton interpreter)", "driver": "-", "sms": 4, "shared": 232_448},
                "versions": versions,
                "pid": os.getpid(),
            }
        props = torch.cuda.get_device_properties(0)
        driver = _driver_version()
        shared = int(getattr(props, "shared_memory_per_block_optin", 232_448) or 232_448)
        return {
            "device": {
                "name": torch.cuda.get_device_name(0),
                "driver": driver,
                "sms": int(props.multi_processor_count),
                "shared": shared,
                "capability": list(torch.cuda.get_device_capability(0)),
            },
            "versions": versions,
            "pid": os.getpid(),
        }

    # ---------------------------------------------------------------- setup
    def setup(self, msg: dict[str, Any]) -> dict[str, Any]:
        from ..frontend.driver import parse
        from .timing import Timer

        self.setup_msg = msg
        self.timer = Timer(self.device)
        defines = {k: str(v) for k, v in (msg.get("defines") or {}).items()}
        unit = parse(msg["text"], msg["filename"], defines=defines)
        self.fn = _fn(unit, msg["func"])
        reference = _load(msg["reference"], f"ref_{os.getpid()}", self.interpret, msg["filename"])
        out: dict[str, Any] = {}
        for key, values in msg["sizes"].items():
            out[key] = self._setup_size(key, values, reference, msg)
        return {"sizes": out, "pid": os.getpid()}

    def _setup_size(self, key: str, values: dict[str, Any], reference: Any, msg: dict[str, Any]) -> dict[str, Any]:
        from ..check_run import clone_args, outputs_of
        from ..runinputs import make_inputs
        from .verify import float64_reference

        fn = self.fn
        inputs = make_inputs(fn, values, self.device, seed=int(msg.get("seed", 0)))
        named = {p.name: a for p, a in zip(fn.params, inputs.args) if p.name}
        state: dict[str, Any] = {"inputs": inputs, "values": values}
        info: dict[str, Any] = {}
        try:
            args = clone_args(inputs.args)
            with _poison_allocations(inputs.poison_returned):
                result = getattr(reference, fn.name)(*args)
            self._sync()
            state["reference"] = outputs_of(fn, args, result)
            info["reference"] = "ok"
        except Exception as e:  # noqa: BLE001 - no reference from the default translation: said in every record
            state["reference"] = None
            info["reference"] = f"the default translation does not run: {_error_text(e)}"
        contraction = msg.get("contraction")
        state["float64"] = None
        if contraction is not None:
            try:
                state["float64"] = float64_reference(contraction, named)
                a, b, o = _operand_views(contraction, named)
                batch, m, k = a.shape
                n = b.shape[1]
                info["flops"] = 2.0 * batch * m * n * k
                state["baseline"] = _baseline(contraction, named, self.device)
            except Exception as e:  # noqa: BLE001 - a layout the reference does not cover: compared with the default only
                info["float64"] = f"no float64 reference: {_error_text(e)}"
        info["bytes"] = sum(a.numel() * a.element_size() for a in inputs.args if hasattr(a, "element_size"))
        base = state.get("baseline")
        if base is not None:
            try:
                t = self.timer.measure({"baseline": base}, budget_s=float(msg.get("calibrate_s", 0.5)))
                info["baseline_ms"] = t.ms("baseline")
                info["baseline_how"] = t.how["baseline"]
            except Exception as e:  # noqa: BLE001
                state["baseline"] = None
                info["baseline"] = f"no baseline: {_error_text(e)}"
        state["info"] = info
        self.sizes[key] = state
        return info

    def _sync(self) -> None:
        if not self.interpret:
            import torch

            torch.cuda.synchronize()

    # ---------------------------------------------------------------- evaluate
    def evaluate(self, msg: dict[str, Any]) -> dict[str, Any]:
        from ..check_run import clone_args, fp8_mma, outputs_of
        from ..runinputs import RETURNED
        from ..tolerances import FP8_MMA_RTOL
        from .timing import clocks
        from .verify import problems

        faults = faults_for(msg.get("describe", ""), msg.get("faults"))
        if "die" in faults:
            os.kill(os.getpid(), signal.SIGSEGV)
        if "hang" in faults:
            while True:
                time.sleep(0.5)
        state = self.sizes[msg["size"]]
        fn = self.fn
        inputs = state["inputs"]
        mod = _load(msg["module"], f"{msg['module_hash']}_{os.getpid()}", self.interpret, msg["filename"])
        info = state["info"]
        rec: dict[str, Any] = {k: info[k] for k in ("flops", "bytes") if info.get(k)}
        if info.get("baseline_ms"):
            rec["baseline_calibration_ms"] = info["baseline_ms"]
        try:
            launcher = getattr(mod, fn.name)
            args = clone_args(inputs.args)  # fresh outputs, poisoned (make_inputs poisoned the originals)
            t0 = time.perf_counter()
            try:
                with _poison_allocations(inputs.poison_returned):
                    result = launcher(*args)
                self._sync()
            except Exception as e:  # noqa: BLE001 - the point does not run: failed, with the reason
                rec.update(status="failed", stage="run", reason=f"does not run: {_error_text(e)}")
                if any(s in str(e) for s in CUDA_STICKY):
                    rec["restart"] = "a CUDA error is sticky: a fresh benchmark process"
                return rec
            rec["first_call_s"] = time.perf_counter() - t0
            outs = outputs_of(fn, args, result)
            poisoned = {n: outs[n] for n in inputs.poisoned if n in outs}
            if inputs.poison_returned and RETURNED in outs:
                poisoned[RETURNED] = outs[RETURNED]
            # compiled, fp8 MMAs accumulate with fewer bits than f32: compared at their tolerance
            least = FP8_MMA_RTOL if not self.interpret and fp8_mma(fn) else None
            wrong = problems(outs, poisoned, state["reference"], state["float64"], least)
            checked = [x for x, v in (("default", state["reference"]), ("float64", state["float64"])) if v is not None]
            rec["checked"] = checked
            if wrong:
                return {**rec, "status": "wrong", "stage": "verify", "reason": "; ".join(wrong)[:2000]}
            if not checked:
                return {
                    **rec,
                    "status": "failed",
                    "stage": "verify",
                    "reason": "nothing to verify against (the default translation does not run at these sizes)",
                }
            fns = {"point": lambda: launcher(*args)}
            base = state.get("baseline")
            if base is not None:
                fns["baseline"] = base
            timed = self.timer.measure(fns, budget_s=float(msg.get("budget_s", 0.5)))
            rec.update(
                status="ok",
                ms=timed.ms("point"),
                ms_spread=timed.spread("point"),
                samples=len(timed.samples["point"]),
                how=timed.how["point"],
            )
            if base is not None:
                rec.update(baseline_ms=timed.ms("baseline"), ratio=timed.ratio("baseline", "point"))
            if not self.interpret:
                rec["clocks"] = clocks(int(os.environ.get("CROQ2TRITON_TUNE_GPU", "0") or 0))
            return rec
        finally:
            _unload(mod)

    # ---------------------------------------------------------------- retime
    def retime(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Time the candidates of one size interleaved (and the baseline): samples per candidate."""
        from ..check_run import clone_args

        state = self.sizes[msg["size"]]
        fns: dict[str, Any] = {}
        mods = []
        try:
            for c in msg["candidates"]:
                mod = _load(c["module"], f"{c['module_hash']}_re_{os.getpid()}", self.interpret, msg["filename"])
                mods.append(mod)
                launcher = getattr(mod, self.fn.name)
                args = clone_args(state["inputs"].args)
                fns[c["id"]] = lambda launcher=launcher, args=args: launcher(*args)
            if state.get("baseline") is not None:
                fns["baseline"] = state["baseline"]
            timed = self.timer.measure(fns, budget_s=float(msg.get("budget_s", 2.0)), min_rounds=5)
            return {"samples": timed.samples, "how": timed.how}
        finally:
            for m in mods:
                _unload(m)


def _driver_version() -> str:
    try:
        import subprocess

        r = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        return r.stdout.strip().splitlines()[0] if r.stdout.strip() else "?"
    except Exception:  # noqa: BLE001
        return "?"


class _poison_allocations:
    """Buffers the launcher allocates without a value are poisoned instead of zeroed (``on``)."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __enter__(self) -> None:
        from ..runtime import launch as rt

        self.old = rt.POISON
        rt.POISON = self.old or self.on

    def __exit__(self, *exc: object) -> None:
        from ..runtime import launch as rt

        rt.POISON = self.old


def _operand_views(info: Mapping[str, Any], named: Mapping[str, Any]) -> tuple[Any, Any, Any]:
    from .verify import operands

    return operands(info, named)


def _baseline(info: Mapping[str, Any], named: Mapping[str, Any], device: str) -> Any:
    """The vendor GEMM of the same operands (cuBLAS through ``torch.matmul``; ``torch._scaled_mm`` for
    fp8, ``torch._int_mm`` for int8), as a callable writing into its own output."""
    import torch

    a, b, o = _operand_views(info, named)
    elem = info["a"]["elem"]
    if elem.startswith("f8"):
        a2, b2 = a[0].contiguous(), b[0].contiguous()  # row-major A, B as [N, K]: B.T column-major
        one = torch.ones((), dtype=torch.float32, device=a.device)
        out_dtype = o.dtype if o.dtype in (torch.float16, torch.bfloat16, torch.float32) else torch.bfloat16
        return lambda: torch._scaled_mm(a2, b2.t(), scale_a=one, scale_b=one, out_dtype=out_dtype)
    if elem == "s8":
        a2, b2 = a[0].contiguous(), b[0].contiguous()
        return lambda: torch._int_mm(a2, b2.t())
    out = torch.empty(o.shape, dtype=o.dtype if o.dtype.is_floating_point else a.dtype, device=a.device)
    bt = b.transpose(-1, -2)
    if o.dtype != a.dtype:
        return lambda: torch.matmul(a, bt)
    return lambda: torch.matmul(a, bt, out=out)


# ------------------------------------------------------------------ the parent's side
class Worker:
    """A worker process as the parent sees it: the task it is busy with, its deadline, and how to
    kill and start it again.  ``env`` is set in the child before anything imports Triton."""

    def __init__(self, name: str, role: str, env: Mapping[str, str]) -> None:
        import multiprocessing

        self.name, self.role, self.env = name, role, dict(env)
        self.ctx = multiprocessing.get_context("spawn")
        self.task: dict[str, Any] | None = None
        self.deadline: float | None = None
        self.timeout = 0.0
        self.started = 0.0
        self.restarts = 0
        self.conn: Any = None
        self.proc: Any = None
        self.start()

    def start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=serve, args=(child, self.role, self.env), daemon=True, name=self.name)
        self.proc.start()
        child.close()
        self.conn = parent
        self.task = None
        self.deadline = None
        self.started = time.time()

    @property
    def busy(self) -> bool:
        return self.task is not None

    def send(self, task: dict[str, Any], timeout: float | None) -> None:
        self.conn.send(task)
        self.task = task
        self.timeout = timeout or 0.0
        self.deadline = time.time() + timeout if timeout else None

    def take(self) -> dict[str, Any]:
        """The answer to the task (the caller saw the pipe ready)."""
        reply = self.conn.recv()
        self.task = None
        self.deadline = None
        return reply

    def alive(self) -> bool:
        return bool(self.proc is not None and self.proc.is_alive())

    def death(self) -> str:
        """How the process ended (after it did)."""
        self.proc.join(5)
        code = self.proc.exitcode
        if code is None:
            return "did not exit"
        if code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exited with code {code}"

    def kill(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            self.proc.kill()
        if self.proc is not None:
            self.proc.join(10)
        if self.conn is not None:
            self.conn.close()

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.start()

    def stop(self) -> None:
        try:
            if self.alive() and not self.busy:
                self.conn.send(None)
                self.proc.join(5)
        except (OSError, BrokenPipeError):
            pass
        self.kill()

    def call(self, task: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``task`` and wait for its answer (a died or hung worker is an answer with ``error``)."""
        from multiprocessing.connection import wait

        self.send(task, timeout)
        ready = wait([self.conn, self.proc.sentinel], timeout=timeout)
        if self.conn in ready:
            try:
                return self.take()
            except (EOFError, OSError):
                pass
        why = "did not answer within its timeout" if not ready else f"died ({self.death()})"
        self.restart()
        return {"error": f"the {self.role} worker {why}"}

"""A tuning sweep: the space of one function, pruned, compiled, verified, timed, cached, reported.

The parent process does no Triton work.  It translates the function once (the default translation:
its parameters and the reference), starts one benchmark worker per GPU (an interpreter stand-in per
listed id without a GPU) and a pool of compile workers, and then loops: a free compile worker gets
the next point the search proposes (skipping points whose every size is in the cache), a free
benchmark worker gets the next compiled point and size; every answer, death and timeout becomes a
record appended to the cache at once.  When the budget is spent no new point is started.  At the
end the best few points of each size are timed again, interleaved, until the winner's lead is
outside the run-to-run spread (or they are reported as tied), and the table, ``best.json`` and the
plot are written.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CroqError
from ..options import DEFAULT_F32, Point
from .cache import Cache, record_key, sha256_text, size_key
from .prune import Limits
from .search import Search
from .space import Space, build_space, list_text, parameters


@dataclass
class Config:
    path: str
    func: str | None = None
    sizes: list[str] = field(default_factory=list)
    dtype: str | None = None
    schedule: str = "source"
    f32_precision: str | None = None
    defines: dict[str, str] = field(default_factory=dict)
    params: list[str] = field(default_factory=list)
    budget_s: float | None = None
    search: str = "auto"
    jobs: int = 0
    gpus: str | None = None
    ray: str | None = None
    out: str | None = None
    cache: str | None = None
    dry_run: bool = False
    list_only: bool = False
    timeout_s: float | None = None
    compile_timeout_s: float = 600.0
    time_per_point_s: float | None = None
    top_k: int = 5
    seed: int = 0


def parse_duration(text: str) -> float:
    """``10m``, ``90s``, ``1h``, ``1h30m`` or a number of seconds."""
    t = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([hms])", t)
    if not parts or "".join(n + u for n, u in parts) != t.replace(" ", ""):
        raise CroqError(f"bad duration '{text}'", hint="write e.g. --budget 10m, 90s, 1h30m")
    return sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)


def as_dtype(text: str, dtype: str | None) -> str:
    """The source with its ``f16`` element types written as ``dtype`` (as perf/bench.py does)."""
    return text if not dtype or dtype == "f16" else re.sub(r"\bf16\b", dtype, text)


# ------------------------------------------------------------------ the function and its space
@dataclass
class Target:
    """The function being tuned, its default translations and its space."""

    text: str
    filename: str
    func: str
    fn: Any
    default: Any  # the translation under the sweep's schedule, no point
    reference: Any  # the source schedule, no point: the outputs every point must reproduce
    space: Space
    sizes: dict[str, dict[str, Any]]  # size key -> values of the function's sizes
    dtypes: dict[str, str]


def target(cfg: Config) -> Target:
    from ..api import translate_full
    from ..frontend.driver import read_source
    from ..runsizes import choose, parse_sizes
    from ..sema.types import TYPES

    text = as_dtype(read_source(cfg.path), cfg.dtype)
    opts = {"filename": cfg.path, "defines": cfg.defines, "f32_precision": cfg.f32_precision}
    default = translate_full(text, schedule=cfg.schedule, **opts)  # type: ignore[arg-type]
    names = [f.name for f in default.unit.functions]
    if not names:
        raise CroqError(f"no __co__ function in {cfg.path}")
    if cfg.func is None:
        if len(names) > 1:
            raise CroqError(
                f"{cfg.path} has {len(names)} functions: name the one to tune",
                hint=f"--func {names[0]} (functions: {', '.join(names)})",
            )
        func = names[0]
    else:
        func = cfg.func
        if func not in names:
            raise CroqError(f"no __co__ function named {func} in {cfg.path}", hint=f"functions: {', '.join(names)}")
    if func in default.failed:
        e = default.failed[func]
        raise CroqError(f"'{func}' does not translate, so it cannot be tuned: {e.diagnostics[0].message}")
    reference = default if cfg.schedule == "source" else translate_full(text, schedule="source", **opts)  # type: ignore[arg-type]
    fn = next(f for f in default.unit.functions if f.name == func)
    params = parameters(text, fn, default.schedules.get(func, {}), default.contractions.get(func, {}), cfg.defines)
    space = build_space(func, params, cfg.params)
    sizes: dict[str, dict[str, Any]] = {}
    for item in cfg.sizes or [""]:
        chosen = choose([fn], parse_sizes([item] if item else []))[func]
        sizes[size_key(chosen.values)] = dict(chosen.values)
    dtypes = {}
    for p in fn.params:
        if p.type.kind == "spanned" and p.name:
            et = TYPES.get(p.type.elem or "f32")
            dtypes[p.name] = et.torch if et is not None and et.torch else str(p.type.elem)
    return Target(text, cfg.path, func, fn, default, reference, space, sizes, dtypes)


def list_parameters(cfg: Config) -> str:
    t = target(cfg)
    return list_text(t.func, t.space.parameters, t.space)


# ------------------------------------------------------------------ devices and workers
def gpu_ids(spec: str | None) -> tuple[bool, list[str]]:
    """(a real GPU?, the ids of the benchmark workers): ``all`` / ``0,1`` / none (the first).
    Without a GPU (or with TRITON_INTERPRET=1) the ids name interpreter stand-ins."""
    import torch

    interpret = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
    gpu = torch.cuda.is_available() and not interpret
    if spec is None:
        return gpu, ["0"]
    if spec == "all":
        return gpu, [str(i) for i in range(torch.cuda.device_count())] if gpu else ["0"]
    ids = [s.strip() for s in spec.split(",") if s.strip()]
    if not ids or not all(i.isdigit() for i in ids):
        raise CroqError(f"bad --gpus '{spec}'", hint="write --gpus all or --gpus 0,1")
    if gpu and any(int(i) >= torch.cuda.device_count() for i in ids):
        raise CroqError(f"--gpus {spec}: this machine has {torch.cuda.device_count()} GPU(s)")
    return gpu, ids


def bench_env(gpu: bool, gid: str) -> dict[str, str]:
    if gpu:
        return {"TRITON_INTERPRET": "0", "CUDA_VISIBLE_DEVICES": gid, "CROQ2TRITON_TUNE_GPU": gid}
    return {"TRITON_INTERPRET": "1", "CROQ2TRITON_TUNE_GPU": gid}


def compile_env(gpu: bool, sms: int) -> dict[str, str]:
    env = {"CROQ2TRITON_NUM_SMS": str(sms)}
    if gpu:  # Triton out of interpreter mode, no GPU in sight: compile only, into the shared cache
        env.update(TRITON_INTERPRET="0", CUDA_VISIBLE_DEVICES="")
    else:
        env.update(TRITON_INTERPRET="1")
    return env


# ------------------------------------------------------------------ the sweep
@dataclass
class Pending:
    """A point between its compile and its last size's benchmark."""

    point: Point
    prepared: dict[str, Any]
    sizes_left: set[str]
    scores: dict[str, float | None] = field(default_factory=dict)


class Sweep:
    def __init__(self, cfg: Config, say: Any = None) -> None:
        self.cfg = cfg
        self.say = say or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.t = target(cfg)
        self.out = Path(cfg.out or f"tune-{Path(cfg.path).stem}-{self.t.func}")
        self.start = time.time()
        self.records: list[dict[str, Any]] = []  # this run's and the cache's records of this context
        self.modules: dict[str, str] = {}  # module hash -> the point (describe) that produced it
        self.best: dict[str, tuple[float, str]] = {}
        self.progress: Any = None
        self.sources: dict[str, tuple[str, str]] = {}  # point key -> (module source, its hash), until benchmarked
        self.compiled: dict[tuple[str, str], dict[str, Any]] = {}
        self.calibration: dict[str, dict[str, Any]] = {}
        self.gpu = False

    # ---------------------------------------------------------------- context and keys
    def context(self, device: dict[str, Any], versions: dict[str, Any]) -> dict[str, Any]:
        return {
            "source_sha256": sha256_text(self.t.text),
            "func": self.t.func,
            "schedule": self.cfg.schedule,
            "f32_precision": self.cfg.f32_precision or DEFAULT_F32,
            "defines": dict(sorted(self.cfg.defines.items())),
            "dtype": self.cfg.dtype or "as written",
            "device": {"name": device.get("name"), "driver": device.get("driver")},
            "versions": dict(versions),
        }

    def key(self, point: Point, size: str) -> str:
        return record_key(self.ctx, point.key(), self.t.sizes[size])

    def base_record(self, point: Point, size: str) -> dict[str, Any]:
        return {
            "key": self.key(point, size),
            "context_id": self.ctx_id,
            "context": self.ctx,
            "point": point.to_json(),
            "point_key": point.key(),
            "describe": point.describe(),
            "values": {k: _plain(v) for k, v in self.t.space.values_of(point).items()},
            "size": size,
            "sizes": self.t.sizes[size],
            "dtypes": self.t.dtypes,
            "host": socket.gethostname(),
            "elapsed": round(time.time() - self.start, 3),
        }

    # ---------------------------------------------------------------- the sweep proper
    def open(self, device: dict[str, Any], versions: dict[str, Any]) -> None:
        """Fix the context (device, versions) and read the cache's records of it."""
        self.device, self.versions = device, versions
        self.limits = Limits(shared=int(device.get("shared") or Limits().shared))
        self.ctx = self.context(device, versions)
        self.ctx_id = sha256_text(dumps(self.ctx))[:16]
        self.out.mkdir(parents=True, exist_ok=True)
        self.cache = Cache(self.cfg.cache or self.out / "cache")
        self.records = [
            r for r in self.cache.records.values() if r.get("context_id") == self.ctx_id and r.get("kind") != "final"
        ]
        for r in self.records:
            if r.get("module_hash") and r.get("status") != "duplicate":
                self.modules.setdefault(r["module_hash"], r.get("describe", "?"))
            self._note_best(r)

    def setup_task(self) -> dict[str, Any]:
        from .prune import base_kernel
        from .verify import contraction_info

        contractions = self.t.default.contractions.get(self.t.func, {})
        kernels = self.t.default.ir.get(self.t.func, [])
        one = len(contractions) == 1 and len({base_kernel(k.name) for k in kernels}) == 1  # its variants aside
        only = next(iter(contractions.values())) if one else None
        gpu = self.gpu
        return {
            "op": "setup",
            "text": self.t.text,
            "filename": self.t.filename,
            "func": self.t.func,
            "defines": self.cfg.defines,
            "reference": self.t.reference.source,
            "sizes": self.t.sizes,
            "contraction": contraction_info(only),
            "seed": self.cfg.seed,
            "calibrate_s": 1.0 if gpu else 0.0,
        }

    def missing_sizes(self, point: Point) -> list[str]:
        return [s for s in self.t.sizes if self.key(point, s) not in self.cache.records]

    def cached_score(self, point: Point) -> float | None:
        return self.score([self.cache.records.get(self.key(point, s)) for s in self.t.sizes])

    @staticmethod
    def score(recs: Sequence[dict[str, Any] | None]) -> float | None:
        """A point's throughput over the sizes (geometric mean of those it ran at)."""
        from .report import throughput

        values = [throughput(r)[0] for r in recs if r is not None and r.get("status") == "ok"]
        values = [v for v in values if v]
        if not values:
            return None
        prod = 1.0
        for v in values:
            prod *= v
        return float(prod ** (1.0 / len(values)))

    def write(self, rec: dict[str, Any]) -> None:
        rec.setdefault("elapsed", round(time.time() - self.start, 3))
        self.cache.append(rec)
        self.records.append(self.cache.records[rec["key"]])
        self._note_best(rec)
        if self.progress is not None:
            self.progress.update(rec.get("status", "?"), self.best_text())

    def _note_best(self, rec: dict[str, Any]) -> None:
        from .report import throughput

        value, unit = throughput(rec)
        if rec.get("status") == "ok" and value is not None:
            size = rec.get("size", "")
            if size not in self.best or value > self.best[size][0]:
                self.best[size] = (value, unit)

    def best_text(self) -> str:
        if not self.best:
            return "-"
        value, unit = max(self.best.values())
        return f"{value:.3g} {unit}"

    def prepared_records(self, point: Point, sizes: Sequence[str], answer: dict[str, Any]) -> list[str]:
        """Record what the compile worker said about ``point``: the sizes left to benchmark."""
        common = {k: answer.get(k) for k in ("translate_s", "module_hash", "kernels") if answer.get(k) is not None}
        if "error" in answer:
            for s in sizes:
                self.write({**self.base_record(point, s), **common, "status": "failed", "stage": "compile",
                            "reason": answer["error"]})  # fmt: skip
            return []
        if answer.get("status") != "ready":
            for s in sizes:
                self.write({**self.base_record(point, s), **common, "status": answer.get("status", "pruned"),
                            "stage": answer.get("stage"), "reason": answer.get("reason")})  # fmt: skip
            return []
        mhash = answer["module_hash"]
        first = self.modules.get(mhash)
        if first is not None and first != point.describe():
            for s in sizes:
                self.write({**self.base_record(point, s), **common, "status": "duplicate", "stage": "translate",
                            "reason": f"the same kernels as the point {first}"})  # fmt: skip
            return []
        self.modules[mhash] = point.describe()
        self.sources[point.key()] = (answer["module"], mhash)
        ready = []
        for s in sizes:
            res = answer["sizes"].get(s, {})
            extra = {k: res[k] for k in ("compile_s", "compiled", "launches") if k in res}
            if res.get("status") == "ready":
                ready.append(s)
                self.compiled[(point.key(), s)] = {**common, **extra}
            else:
                self.write({**self.base_record(point, s), **common, **extra, "status": res.get("status", "failed"),
                            "stage": res.get("stage"), "reason": res.get("reason")})  # fmt: skip
        return ready

    def bench_record(self, point: Point, size: str, answer: dict[str, Any], worker: str) -> dict[str, Any]:
        rec = {**self.base_record(point, size), **self.compiled.pop((point.key(), size), {}), "worker": worker}
        if "error" in answer:
            rec.update(status="failed", stage="run", reason=answer["error"])
        else:
            rec.update({k: v for k, v in answer.items() if k not in ("restart",)})
        return rec

    def run(self) -> int:
        if self.cfg.ray:
            from .rayrun import run_on_ray

            return run_on_ray(self)
        from multiprocessing.connection import wait

        from .report import Progress
        from .workers import Worker

        cfg = self.cfg
        self.gpu, ids = gpu_ids(cfg.gpus)
        where = "GPU" if self.gpu else "interpreter stand-in"
        self.say(
            f"tune: {self.t.func} of {cfg.path}: starting {len(ids)} benchmark worker(s) ({where}: {', '.join(ids)})"
        )
        benches = [Worker(f"bench{gid}", "bench", bench_env(self.gpu, gid)) for gid in ids]
        pool: list[Any] = []
        self.progress: Any = None
        try:
            hellos = [w.call({"op": "hello"}, 600) for w in benches]
            for w, h in zip(benches, hellos):
                if "error" in h:
                    raise CroqError(f"benchmark worker {w.name} does not start: {h['error']}")
            names = {h["device"]["name"] for h in hellos}
            if len(names) > 1:
                self.say(f"tune: warning: the GPUs differ ({', '.join(sorted(names))}): one winner table for all")
            self.open(hellos[0]["device"], hellos[0]["versions"])
            self.say(f"tune: device {self.device['name']} (driver {self.device['driver']}); cache {self.cache.dir}")
            setup = self.setup_task()
            jobs = cfg.jobs or max(1, os.cpu_count() or 1)
            sms = int(self.device.get("sms") or 132)
            search = Search(self.t.space, cfg.search, seeds=[self.t.space.seed()], rng=cfg.seed)
            if cfg.search in ("guided", "auto"):
                for r in self.records:  # the cache's results seed the model
                    if r.get("point") is not None:
                        p = Point.from_json(r["point"])
                        if not self.missing_sizes(p):
                            search.tell(p, self.cached_score(p))
            total = search.total
            self.progress = Progress(total, f"tune {self.t.func}")
            budget = cfg.budget_s
            reserve = min(60.0, 0.1 * budget) if budget else 0.0
            per_point = cfg.time_per_point_s if cfg.time_per_point_s is not None else (0.25 if self.gpu else 0.0)
            timeout = cfg.timeout_s or (120.0 if self.gpu else 600.0)
            prep_busy: dict[int, tuple[Point, list[str]]] = {}
            bench_busy: dict[int, tuple[Point, str]] = {}
            queue: deque[tuple[Point, str]] = deque()
            left: dict[str, set[str]] = {}
            exhausted = stopped = False
            evaluated = 0
            bench_time = 0.0
            while True:
                now = time.time()
                if budget and not stopped and now - self.start > budget - reserve:
                    stopped = True
                    self.say(f"\ntune: the budget ({budget:.0f} s) is spent: no new points")
                    queue.clear()
                # compile workers (started as the first points need them): the next points
                while not stopped and not exhausted and len(queue) <= 4 * len(benches) + jobs:
                    idle = [i for i, w in enumerate(pool) if not w.busy]
                    if not idle and len(pool) >= jobs:
                        break
                    nxt = self._next(search)
                    if nxt is None:
                        exhausted = True
                        break
                    if not idle:
                        pool.append(Worker(f"compile{len(pool)}", "prepare", compile_env(self.gpu, sms)))
                        idle = [len(pool) - 1]
                    point, sizes = nxt
                    pool[idle[0]].send(self._prepare_task(point, sizes, self.gpu), cfg.compile_timeout_s)
                    prep_busy[idle[0]] = (point, sizes)
                # benchmark workers: the next compiled point and size
                for i, w in enumerate(benches):
                    if not w.busy and queue:
                        if w.name not in self.calibration:
                            self._setup(w, setup)
                        point, size = queue.popleft()
                        w.send(self._bench_task(point, size, per_point), timeout)
                        bench_busy[i] = (point, size)
                if not prep_busy and not bench_busy and not queue and (exhausted or stopped):
                    break
                busy = [w for w in pool + benches if w.busy]
                ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0)
                for i, w in enumerate(pool):
                    if i in prep_busy:
                        answer = _answer(w, ready, "compile")
                        if answer is None:
                            continue
                        point, sizes = prep_busy.pop(i)
                        todo = self.prepared_records(point, sizes, answer)
                        if todo and not stopped:
                            left[point.key()] = set(todo)
                            queue.extend((point, s) for s in todo)
                        else:
                            search.tell(point, self.cached_score(point))
                for i, w in enumerate(benches):
                    if i not in bench_busy:
                        continue
                    t0 = w.deadline - w.timeout if w.deadline else time.time()
                    answer = _answer(w, ready, "benchmark")
                    if answer is None:
                        continue
                    point, size = bench_busy.pop(i)
                    bench_time += time.time() - t0
                    evaluated += 1
                    self.write(self.bench_record(point, size, answer, w.name))
                    if answer.get("restart") or answer.get("restarted"):
                        if not answer.get("restarted"):
                            w.restart()
                        self.calibration.pop(w.name, None)  # set up again before its next point
                    rest = left.get(point.key())
                    if rest is not None:
                        rest.discard(size)
                        if not rest:
                            del left[point.key()]
                            self.sources.pop(point.key(), None)
                            search.tell(point, self.cached_score(point))
                    if cfg.search == "auto" and search.mode == "exhaustive" and budget and evaluated >= 3:
                        per = bench_time / evaluated / max(1, len(benches))
                        need = search.remaining() * per * len(self.t.sizes)
                        have = budget - reserve - (time.time() - self.start)
                        if need > have:
                            self.say(
                                f"\ntune: {search.remaining()} points left would take ~{need:.0f} s, "
                                f"{have:.0f} s left: guided search (Optuna TPE) from here"
                            )
                            search.switch("guided")
            self.progress.close()
            self.progress = None
            for w in pool:
                w.stop()
            pool = []
            self.finish(benches[0], search)
            return 0
        finally:
            if self.progress is not None:
                self.progress.close()
            for w in pool + benches:
                w.stop()
            if hasattr(self, "cache"):
                self.cache.close()

    def _setup(self, w: Any, setup: dict[str, Any]) -> None:
        ans = w.call(setup, 3600)
        if "error" in ans:
            raise CroqError(f"benchmark worker {w.name} cannot set up the sizes: {ans['error']}")
        self.calibration[w.name] = ans["sizes"]
        for size, info in ans["sizes"].items():
            if info.get("reference") != "ok":
                self.say(f"tune: {size}: {info.get('reference')}")
            if info.get("baseline_ms"):
                self.say(
                    f"tune: {w.name} {size}: vendor GEMM {info['baseline_ms']:.4f} ms ({info.get('baseline_how')})"
                )

    def _next(self, search: Search) -> tuple[Point, list[str]] | None:
        while True:
            p = search.ask()
            if p is None:
                return None
            missing = self.missing_sizes(p)
            if missing:
                return p, missing
            search.tell(p, self.cached_score(p))
            if self.progress is not None:
                self.progress.update("cached", self.best_text())

    def _bench_task(
        self, point: Point, size: str, budget_s: float, module: tuple[str, str] | None = None
    ) -> dict[str, Any]:
        source, mhash = module or self.sources[point.key()]
        return {
            "op": "evaluate",
            "describe": point.describe(),
            "module": source,
            "module_hash": mhash,
            "filename": self.t.filename,
            "size": size,
            "budget_s": budget_s,
            "faults": os.environ.get("CROQ2TRITON_TUNE_FAULTS", ""),
        }

    # ---------------------------------------------------------------- the end: re-time, report
    def finish(self, bench: Any, search: Search) -> None:
        from .report import best_json, plot, summary, table, write_json

        per_size: dict[str, list[dict[str, Any]]] = {s: [] for s in self.t.sizes}
        latest: dict[str, dict[str, Any]] = {}
        for r in self.records:
            latest[r["key"]] = r
        seed = self.t.space.seed().key()
        for r in latest.values():  # this run's space (and the untuned point): a cache may hold more
            ours = r.get("point_key") == seed or self._in_space(r.get("point") or {})
            if r.get("size") in per_size and r.get("point_key") is not None and ours:
                per_size[r["size"]].append(dict(r))
        for recs in per_size.values():
            for r in recs:
                r["untuned"] = r.get("point_key") == seed
        if bench is not None:
            for size, recs in per_size.items():
                self.retime(bench, size, recs)
        lines = []
        if search is not None and search.note:
            lines.append(f"search: {search.note}")
        for size, recs in per_size.items():
            lines.append(f"== {self.t.func} at {size} ({self.device.get('name')}) ==")
            lines.append(table(recs))
            lines.append(_versus_untuned(recs))
            lines.append(summary(recs, search.total if search is not None else self.t.space.size()))
            lines.append("")
        text = "\n".join(lines)
        print(text)
        (self.out / "table.txt").write_text(text + "\n")
        data = best_json(
            source=self.cfg.path,
            source_sha256=sha256_text(self.t.text),
            func=self.t.func,
            schedule=self.cfg.schedule,
            f32_precision=self.cfg.f32_precision or DEFAULT_F32,
            device=self.device,
            versions=self.versions,
            per_size=per_size,
            top_k=self.cfg.top_k,
        )
        write_json(self.out / "best.json", data)
        all_recs = [r for recs in per_size.values() for r in recs]
        title = f"{self.t.func} of {self.cfg.path}, {self.cfg.schedule} schedule, {self.device.get('name')}"
        try:
            plot(self.out / "tune.png", all_recs, [p.name for p in self.t.space.swept], title)
        except Exception as e:  # noqa: BLE001 - the plot is a convenience: say why it is missing
            self.say(f"tune: no plot: {type(e).__name__}: {e}")
        timed = sum(1 for r in all_recs if r.get("status") == "ok")
        self.say(
            f"tune: {timed} timed record(s) in {time.time() - self.start:.1f} s; wrote {self.out / 'table.txt'}, "
            f"{self.out / 'best.json'}, {self.out / 'tune.png'}"
        )

    def _in_space(self, point: dict[str, Any]) -> bool:
        try:
            values = self.t.space.values_of(Point.from_json(point))
        except (ValueError, TypeError):
            return False
        swept = {p.name for p in self.t.space.swept}
        p = Point.from_json(point)
        names = set(dict(p.defines)) | {f"{k}.{f}" for k, fs in p.kernels for f, _ in fs}
        return names <= swept and all(values[q.name] in q.values for q in self.t.space.swept)

    def retime(self, bench: Any, size: str, recs: list[dict[str, Any]], rounds: int = 3) -> None:
        """Time the best few of ``size`` again, interleaved, until the winner's lead is outside the
        spread of the samples (interquartile ranges apart), or mark the ones it cannot be told from
        as tied."""
        from ..api import translate_full
        from .report import ranked
        from .timing import median, spread

        best = ranked(recs)[: self.cfg.top_k]
        if len(best) < 1:
            return
        final_key = record_key(self.ctx, "final:" + dumps(sorted(r["point_key"] for r in best)), self.t.sizes[size])
        done = self.cache.get(final_key)
        if done is not None and len(done.get("ranking", [])) == len(best):  # re-timed already: as it was
            by_key = {x["point_key"]: x for x in done["ranking"]}
            for r in best:
                r.update({k: v for k, v in by_key.get(r["point_key"], {}).items() if k != "point_key"})
            recs.sort(key=lambda r: r.get("final_ms") or r.get("ms") or float("inf"))
            return
        if self.calibration.get(bench.name) is None:
            self._setup(bench, self.setup_task())
        candidates = []
        for i, r in enumerate(best):
            tr = translate_full(
                self.t.text,
                filename=self.t.filename,
                defines=self.cfg.defines,
                schedule=self.cfg.schedule,
                f32_precision=self.cfg.f32_precision,
                point=Point.from_json(r["point"]),
            )
            candidates.append({"id": f"c{i}", "module": tr.source, "module_hash": r.get("module_hash", f"re{i}")})
        budget = 2.0 if self.gpu else 0.0
        samples: dict[str, list[float]] = {}
        for _attempt in range(rounds):
            ans = bench.call(
                {
                    "op": "retime",
                    "size": size,
                    "candidates": candidates,
                    "filename": self.t.filename,
                    "budget_s": budget,
                },
                max(600.0, budget * 20),
            )
            if "error" in ans:
                self.say(f"tune: {size}: re-timing failed: {ans['error']}")
                self.calibration.pop(bench.name, None)
                return
            for k, v in ans["samples"].items():
                samples.setdefault(k, []).extend(v)
            order = sorted((c["id"] for c in candidates), key=lambda k: median(samples[k]))
            if len(order) < 2:
                break
            w, r = order[0], order[1]
            if median(samples[w]) + spread(samples[w]) / 2 < median(samples[r]) - spread(samples[r]) / 2:
                break
            budget *= 2
        winner = min((c["id"] for c in candidates), key=lambda k: median(samples[k]))
        wm, ws = median(samples[winner]), spread(samples[winner])
        for i, r in enumerate(best):
            cid = f"c{i}"
            r["final_ms"] = median(samples[cid])
            r["final_spread"] = spread(samples[cid])
            if "baseline" in samples:
                pairs = [b / c for b, c in zip(samples["baseline"], samples[cid]) if c > 0]
                r["final_ratio"] = median(pairs)
            overlaps = r["final_ms"] - r["final_spread"] / 2 <= wm + ws / 2
            r["tie"] = bool(overlaps and len(best) > 1 and (cid != winner or _ties(samples, winner, candidates)))
        fields = ("final_ms", "final_spread", "final_ratio", "tie")
        ranking = [{"point_key": r["point_key"], **{k: r[k] for k in fields if k in r}} for r in best]
        self.cache.append({"key": final_key, "kind": "final", "context_id": self.ctx_id, "size": size,
                           "ranking": ranking, "samples": {k: len(v) for k, v in samples.items()}})  # fmt: skip
        recs.sort(key=lambda r: r.get("final_ms") or r.get("ms") or float("inf"))

    # ---------------------------------------------------------------- dry run
    def dry_run(self) -> int:
        from .workers import Worker

        space = self.t.space
        jobs = self.cfg.jobs or max(1, os.cpu_count() or 1)
        self.say(f"tune --dry-run: {space.size()} points of {self.t.func}, {len(self.t.sizes)} size(s), {jobs} job(s)")
        env = {"TRITON_INTERPRET": "1", "CROQ2TRITON_NUM_SMS": "132"}
        pool = [Worker(f"prepare{i}", "prepare", env) for i in range(jobs)]
        todo = deque(space.points())
        counts: dict[str, int] = {}
        kept = 0
        results: dict[str, str] = {}
        order = [p.key() for p in todo]
        try:
            for point, prepared in self._prepare_all(pool, todo, compile_=False):
                reason = _prepare_reason(prepared)
                if reason is None:
                    kept += 1
                    line = f"kept    {point.describe()}"
                else:
                    head = reason.split(":", 1)[0]
                    counts[head] = counts.get(head, 0) + 1
                    line = f"pruned  {point.describe()}: {reason}"
                results[point.key()] = line
        finally:
            for w in pool:
                w.stop()
        for k in order:
            print(results.get(k, "?"))
        pruned = sum(counts.values())
        print(f"{space.size()} points: {kept} kept, {pruned} pruned")
        for head, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"  {n:5d} pruned: {head}")
        return 0

    def _prepare_task(self, point: Point, sizes: Sequence[str], compile_: bool) -> dict[str, Any]:
        return {
            "op": "prepare",
            "text": self.t.text,
            "filename": self.t.filename,
            "func": self.t.func,
            "schedule": self.cfg.schedule,
            "f32_precision": self.cfg.f32_precision,
            "defines": self.cfg.defines,
            "point": point.to_json(),
            "sizes": {s: self.t.sizes[s] for s in sizes},
            "compile": compile_,
            "arch": 90,
            "limits": {"shared": self.limits.shared} if hasattr(self, "limits") else {},
            "faults": os.environ.get("CROQ2TRITON_TUNE_FAULTS", ""),
        }

    def _prepare_all(self, pool: list[Any], todo: deque[Point], compile_: bool) -> Any:
        """Prepare every point of ``todo`` on ``pool``: (point, answer) as they come."""
        from multiprocessing.connection import wait

        busy: dict[int, Point] = {}
        while todo or busy:
            for i, w in enumerate(pool):
                if not w.busy and todo:
                    p = todo.popleft()
                    w.send(self._prepare_task(p, list(self.t.sizes), compile_), self.cfg.compile_timeout_s)
                    busy[i] = p
            waiting = [w for w in pool if w.busy]
            ready = wait([w.conn for w in waiting] + [w.proc.sentinel for w in waiting], timeout=5)
            for i, w in enumerate(pool):
                if i in busy:
                    answer = _answer(w, ready, "compile")
                    if answer is not None:
                        yield busy.pop(i), answer


def _versus_untuned(recs: list[dict[str, Any]]) -> str:
    """The best point against the untuned one (what the file and the schedule pick), same run."""
    from .report import ranked

    order = ranked(recs)
    base = next((r for r in recs if r.get("untuned")), None)
    if not order or base is None:
        return "untuned point: not in this run's records"
    if base.get("status") != "ok":
        return f"untuned point: {base.get('status')} ({base.get('reason')})"
    best = order[0]
    b_ms, u_ms = best.get("final_ms") or best["ms"], base.get("final_ms") or base["ms"]
    ratio = (
        f", ratio to the vendor GEMM {best.get('final_ratio') or best.get('ratio'):.3f} (untuned "
        + (f"{base.get('final_ratio') or base.get('ratio'):.3f})" if base.get("ratio") else "-)")
        if best.get("ratio")
        else ""
    )
    return f"best {b_ms:.4f} ms against the untuned point's {u_ms:.4f} ms ({u_ms / b_ms:.3f}x){ratio}"


def _ties(samples: dict[str, list[float]], winner: str, candidates: list[dict[str, Any]]) -> bool:
    """Whether another candidate's samples overlap the winner's (interquartile half-widths)."""
    from .timing import median, spread

    wm, ws = median(samples[winner]), spread(samples[winner])
    return any(
        median(samples[c["id"]]) - spread(samples[c["id"]]) / 2 <= wm + ws / 2 for c in candidates if c["id"] != winner
    )


def _answer(w: Any, ready: list[Any], what: str) -> dict[str, Any] | None:
    """The answer of busy worker ``w`` if it has one: its reply, or an error when it died or hung
    (it is started again then); None while it is still working."""
    if w.conn in ready:
        try:
            return w.take()  # type: ignore[no-any-return]
        except (EOFError, OSError):
            pass
    if not w.alive() or w.proc.sentinel in ready:
        why = f"died ({w.death()})"
    elif w.deadline is not None and time.time() > w.deadline:
        why = f"did not answer within {w.timeout:.0f} s (a hang: killed)"
    else:
        return None
    w.restart()
    return {"error": f"the {what} worker {why}", "restarted": True}


def _prepare_reason(prepared: dict[str, Any]) -> str | None:
    """Why a prepared point is out at every size (None: kept at some size)."""
    if "error" in prepared:
        return f"failed: {prepared['error']}"
    if prepared.get("status") != "ready":
        return str(prepared.get("reason"))
    reasons = [s.get("reason") for s in prepared.get("sizes", {}).values() if s.get("status") != "ready"]
    if reasons and len(reasons) == len(prepared.get("sizes", {})):
        return str(reasons[0])
    return None


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return "x".join(str(x) for x in v)
    return v


def dumps(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=str)

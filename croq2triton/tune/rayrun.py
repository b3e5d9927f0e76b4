"""The sweep on a Ray cluster (``tune --ray ADDRESS``; ``--ray local`` starts a local instance):
one Ray task per point, holding one GPU, that prepares the point (translates, prunes, records and
compiles it) and benchmarks it at every size; the parent streams each task's records into the same
cache as a local sweep, so a sweep can move between one machine and a cluster and resume.

Ray is an optional dependency (``pip install croq2triton[ray]``).  Every node needs croq2triton
installed (or on its ``PYTHONPATH``).  Without GPUs in the cluster the tasks run Triton's
interpreter (the CPU tests do that with a local instance).  A task that dies (its worker process
crashes) or runs past ``--timeout`` (cancelled, its worker killed) is recorded as failed with why.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from typing import Any

_HANDLERS: dict[str, Any] = {}  # per Ray worker process: the benchmark state of a setup


def _handler(setup: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
    from .workers import BenchHandler

    key = hashlib.sha256(json.dumps(setup, sort_keys=True, default=str).encode()).hexdigest()
    if key in _HANDLERS:
        return _HANDLERS[key], None
    h = BenchHandler()
    info = h.setup(setup)
    _HANDLERS[key] = h
    return h, info


def task(setup: dict[str, Any] | None, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One Ray task: answer ``messages`` in order (``prepare``, ``evaluate``, ``retime``, ``hello``,
    ``setup``) in this worker process; ``evaluate`` messages whose ``module`` is None take the module
    the ``prepare`` before them made."""
    from .workers import BenchHandler, prepare

    out: list[dict[str, Any]] = []
    module: tuple[str, str] | None = None
    ready: set[str] = set()
    for msg in messages:
        op = msg.get("op")
        try:
            if op == "hello":
                out.append(BenchHandler().hello())
            elif op == "setup":
                out.append(_handler(msg)[1] or {"sizes": {}})
            elif op == "prepare":
                ans = prepare(msg)
                if ans.get("status") == "ready":
                    module = (ans["module"], ans["module_hash"])
                    ready = {k for k, v in ans.get("sizes", {}).items() if v.get("status") == "ready"}
                out.append(ans)
            else:
                assert setup is not None
                handler, _ = _handler(setup)
                if op == "evaluate" and msg.get("module") is None:
                    if module is None or msg.get("size") not in ready:
                        continue
                    msg = {**msg, "module": module[0], "module_hash": module[1]}
                out.append(handler.handle(msg))
        except Exception as e:  # noqa: BLE001 - an answer, as in a local worker
            out.append({"error": f"{type(e).__name__}: {str(e).strip()[:600]}"})
    return out


class RemoteBench:
    """A benchmark worker as the sweep's re-timing sees it, each call one Ray task."""

    name = "ray"

    def __init__(self, remote: Any) -> None:
        self.remote = remote
        self.setup: dict[str, Any] | None = None

    def call(self, msg: dict[str, Any], timeout: float) -> dict[str, Any]:
        import ray

        if msg.get("op") == "setup":
            self.setup = msg
        ref = self.remote.remote(self.setup, [msg])
        try:
            return ray.get(ref, timeout=timeout)[0]  # type: ignore[no-any-return]
        except Exception as e:  # noqa: BLE001
            ray.cancel(ref, force=True)
            return {"error": f"the Ray task failed: {type(e).__name__}: {str(e).strip()[:300]}"}


def run_on_ray(sweep: Any) -> int:
    try:
        import ray
    except ImportError:
        from ..errors import CroqError

        raise CroqError(
            "--ray needs Ray, which is not installed", hint="pip install 'croq2triton[ray]' (or pip install ray)"
        ) from None
    from ..options import Point
    from .report import Progress
    from .search import Search

    cfg = sweep.cfg
    started_here = False
    if not ray.is_initialized():
        if cfg.ray == "local":
            ray.init(include_dashboard=False, log_to_driver=False, num_cpus=max(1, cfg.jobs or os.cpu_count() or 1))
            started_here = True
        else:
            ray.init(address=cfg.ray, log_to_driver=False)
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        sweep.gpu = gpus > 0
        env = {"TRITON_INTERPRET": "0" if sweep.gpu else "1", "CROQ2TRITON_NUM_SMS": "4"}
        probe = ray.remote(num_gpus=1 if sweep.gpu else 0, max_retries=0, runtime_env={"env_vars": env})(task)
        hello = ray.get(probe.remote(None, [{"op": "hello"}]))[0]
        if "error" in hello:
            from ..errors import CroqError

            raise CroqError(f"the Ray workers cannot start: {hello['error']}")
        sweep.open(hello["device"], hello["versions"])
        env["CROQ2TRITON_NUM_SMS"] = str(hello["device"].get("sms") or 132)
        remote = ray.remote(num_gpus=1 if sweep.gpu else 0, max_retries=0, runtime_env={"env_vars": env})(task)
        slots = max(1, gpus) if sweep.gpu else max(1, int(ray.cluster_resources().get("CPU", 1)))
        sweep.say(f"tune: Ray cluster {cfg.ray}: {hello['device']['name']}, {slots} task(s) at once")
        setup = sweep.setup_task()
        per_point = cfg.time_per_point_s if cfg.time_per_point_s is not None else (0.25 if sweep.gpu else 0.0)
        timeout = (cfg.timeout_s or (120.0 if sweep.gpu else 600.0)) * len(sweep.t.sizes) + cfg.compile_timeout_s
        search = Search(sweep.t.space, cfg.search, seeds=[sweep.t.space.seed()], rng=cfg.seed)
        sweep.progress = Progress(search.total, f"tune {sweep.t.func} (ray)")
        inflight: dict[Any, tuple[Point, list[str], float]] = {}
        exhausted = stopped = False
        while True:
            if cfg.budget_s and not stopped and time.time() - sweep.start > cfg.budget_s * 0.9:
                stopped = True
            while not stopped and not exhausted and len(inflight) < slots:
                nxt = sweep._next(search)
                if nxt is None:
                    exhausted = True
                    break
                point, sizes = nxt
                msgs = [sweep._prepare_task(point, sizes, sweep.gpu)]
                for s in sizes:
                    msgs.append(sweep._bench_task(point, s, per_point, module=("", "")) | {"module": None})
                inflight[remote.remote(setup, msgs)] = (point, sizes, time.time())
            if not inflight:
                break
            done, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
            for ref in done:
                point, sizes, _t0 = inflight.pop(ref)
                try:
                    answers = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - the task's worker died
                    why = f"the Ray task's worker died ({type(e).__name__}: {_first(str(e))})"
                    _failed(sweep, point, sizes, why)
                    search.tell(point, None)
                    continue
                _records(sweep, point, sizes, answers)
                search.tell(point, sweep.cached_score(point))
            now = time.time()
            for ref, (point, sizes, t0) in list(inflight.items()):
                if now - t0 > timeout:
                    ray.cancel(ref, force=True)
                    del inflight[ref]
                    _failed(sweep, point, sizes, f"no answer within {timeout:.0f} s (a hang: the task was cancelled)")
                    search.tell(point, None)
        sweep.progress.close()
        sweep.progress = None
        bench = RemoteBench(remote)
        bench.setup = setup
        sweep.calibration[bench.name] = {"ray": True}
        sweep.finish(bench, search)
        return 0
    finally:
        if sweep.progress is not None:
            sweep.progress.close()
        sweep.cache.close() if hasattr(sweep, "cache") else None
        if started_here:
            ray.shutdown()


def _first(text: str) -> str:
    text = text.strip()
    return (text.splitlines()[0] if text else "")[:300]


def _failed(sweep: Any, point: Any, sizes: list[str], why: str) -> None:
    for s in sizes:
        sweep.write({**sweep.base_record(point, s), "status": "failed", "stage": "run", "reason": why, "worker": "ray"})


def _records(sweep: Any, point: Any, sizes: list[str], answers: list[dict[str, Any]]) -> None:
    prepared, benched = answers[0], answers[1:]
    ready = sweep.prepared_records(point, sizes, prepared)
    sweep.sources.pop(point.key(), None)
    for s, ans in zip([s for s in sizes if s in ready], benched):
        sweep.write(sweep.bench_record(point, s, ans, "ray"))

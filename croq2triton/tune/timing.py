"""The one timing method of croq2triton: used by ``tune`` during a sweep and for its final ranking,
and by the ``perf/`` scripts.

On a GPU:

* every sample starts from a cold L2: a buffer larger than the L2 (256 MB) is written before it;
* launch overhead is kept out: a callable is captured in a CUDA graph when it can be (one replay
  is one launch with no Python in between), else called as it is (``how`` says which); the
  sample is timed with CUDA events around the launch, queued behind the flush so the GPU never
  waits for the host;
* candidates are interleaved: each round times every candidate once, in an order rotated from
  round to round, so a clock that drifts (power, temperature) touches them alike;
* the number of rounds is sized to a time budget from a first estimate (at least ``min_rounds``);
* results are medians; the spread is the interquartile range; a ratio between two candidates is
  the median of the per-round ratios (paired: both timed at the same clock).

On the CPU (Triton's interpreter) the same rounds run with a wall-clock timer and no flush.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FLUSH_BYTES = 256 * 1024 * 1024


def median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    if not n:
        return float("nan")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def spread(xs: Sequence[float]) -> float:
    """The interquartile range."""
    return quantile(xs, 0.75) - quantile(xs, 0.25)


@dataclass
class Timed:
    """The samples (ms) of each candidate, and how each was launched (graph / eager / cpu)."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    how: dict[str, str] = field(default_factory=dict)

    def ms(self, name: str) -> float:
        return median(self.samples[name])

    def spread(self, name: str) -> float:
        return spread(self.samples[name])

    def ratio(self, base: str, name: str) -> float:
        """Median of the per-round ratios base / name (> 1: ``name`` is faster)."""
        pairs = [b / c for b, c in zip(self.samples[base], self.samples[name]) if c > 0]
        return median(pairs)


class Timer:
    """Times callables on ``device`` ("cuda" or "cpu") the same way everywhere (see the module doc)."""

    def __init__(self, device: str = "cuda", flush: bool = True, graphs: bool = True) -> None:
        self.device = device
        self.gpu = device.startswith("cuda")
        self.flush = flush and self.gpu
        self.graphs = graphs and self.gpu
        self._buffer: Any = None

    def _flush(self) -> None:
        if self.flush:
            import torch

            if self._buffer is None:
                self._buffer = torch.empty(FLUSH_BYTES, dtype=torch.int8, device=self.device)
            self._buffer.zero_()

    def prepare(self, fn: Callable[[], Any]) -> tuple[Callable[[], Any], str]:
        """``fn`` as it is timed: a CUDA graph replay where capture works, else ``fn`` (warmed up)."""
        if not self.gpu:
            fn()
            return fn, "cpu"
        import torch

        fn()
        torch.cuda.synchronize()
        if not self.graphs:
            return fn, "eager"
        try:
            stream = torch.cuda.Stream()
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                fn()
            torch.cuda.current_stream().wait_stream(stream)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                fn()
            graph.replay()
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - a launcher that syncs or reads back cannot be captured
            torch.cuda.synchronize()
            return fn, "eager"
        return graph.replay, "graph"

    def once(self, fn: Callable[[], Any]) -> float:
        """One sample of ``fn`` in ms (flushed first)."""
        if not self.gpu:
            t0 = time.perf_counter()
            fn()
            return (time.perf_counter() - t0) * 1e3
        import torch

        self._flush()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end))

    def measure(
        self,
        fns: Mapping[str, Callable[[], Any]],
        budget_s: float = 1.0,
        min_rounds: int = 3,
        max_rounds: int = 500,
        prepared: bool = False,
    ) -> Timed:
        """Interleaved rounds of every callable in ``fns`` within about ``budget_s`` seconds."""
        out = Timed()
        runs: dict[str, Callable[[], Any]] = {}
        for name, fn in fns.items():
            if prepared:
                runs[name], out.how[name] = fn, ("graph" if self.graphs else "eager") if self.gpu else "cpu"
            else:
                runs[name], out.how[name] = self.prepare(fn)
            out.samples[name] = []
        first = {name: self.once(run) for name, run in runs.items()}
        per_round = sum(first.values()) / 1e3 + (len(runs) * 1e-4 if self.gpu else 0.0)
        rounds = int(max(min_rounds, min(max_rounds, budget_s / max(per_round, 1e-6))))
        names = list(runs)
        if not self.gpu:
            for r in range(rounds):
                for i in range(len(names)):
                    name = names[(i + r) % len(names)]
                    out.samples[name].append(self.once(runs[name]))
            return out
        import torch

        for r in range(rounds):
            events = []
            for i in range(len(names)):
                name = names[(i + r) % len(names)]
                self._flush()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                runs[name]()
                end.record()
                events.append((name, start, end))
            torch.cuda.synchronize()
            for name, start, end in events:
                out.samples[name].append(float(start.elapsed_time(end)))
        return out


# ------------------------------------------------------------------ clocks and power
_LAST: dict[str, Any] = {"at": 0.0, "value": None}


def clocks(device_index: int = 0, max_age_s: float = 2.0) -> dict[str, Any] | None:
    """The GPU's SM and memory clocks (MHz), power draw (W) and temperature now: from pynvml where
    installed (every call), else from nvidia-smi (at most once every ``max_age_s``, its age given)."""
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(device_index)
        return {
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
            "mem_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
            "temp_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            "source": "nvml",
        }
    except Exception:  # noqa: BLE001 - no pynvml, or no NVML library: ask nvidia-smi
        pass
    now = time.time()
    if _LAST["value"] is not None and now - _LAST["at"] < max_age_s:
        return {**_LAST["value"], "age_s": round(now - _LAST["at"], 2)}
    try:
        q = "clocks.sm,clocks.mem,power.draw,temperature.gpu"
        r = subprocess.run(
            ["nvidia-smi", f"--id={device_index}", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        sm, mem, power, temp = (x.strip() for x in r.stdout.strip().split(","))
        value = {"sm_mhz": _num(sm), "mem_mhz": _num(mem), "power_w": _num(power), "temp_c": _num(temp)}
        value["source"] = "nvidia-smi"
    except Exception:  # noqa: BLE001 - no nvidia-smi
        return None
    _LAST.update(at=now, value=value)
    return {**value, "age_s": 0.0}


def _num(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None

"""What a sweep shows: a progress bar while it runs, then a ranked table, ``best.json`` and a plot.

``best.json`` (format ``croq2triton-tune/1``, read by ``translate --config`` and
``load(config=...)``): the source and its hash, the function, the schedule mode, the device and the
versions, one winner per tuned size (the point, its time, its ratio to the vendor GEMM, whether it
ties with the runner-up) and the best few points per size (``top``, for ``--emit-autotune K``).

The plot (``tune.png``): the throughput of every timed point against each swept parameter, points
pruned, failed and wrong marked below the axis, and the best throughput so far against the sweep's
wall time.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

FORMAT = "croq2triton-tune/1"
STATUSES = ("ok", "pruned", "duplicate", "failed", "wrong")


def throughput(rec: Mapping[str, Any]) -> tuple[float | None, str]:
    """(value, unit) of a timed record: TFLOP/s for a contraction, else GB/s of the tensors' bytes."""
    ms = rec.get("ms")
    if not ms:
        return None, ""
    if rec.get("flops"):
        return rec["flops"] / (ms * 1e-3) / 1e12, "TFLOP/s"
    if rec.get("bytes"):
        return rec["bytes"] / (ms * 1e-3) / 1e9, "GB/s"
    return 1e3 / ms, "1/s"


class Progress:
    """A tqdm bar with the counts and the best so far (a line every 10% where stderr is no terminal)."""

    def __init__(self, total: int, what: str) -> None:
        from tqdm import tqdm

        self.counts: Counter[str] = Counter()
        self.best: str = "-"
        self.total = total
        self.done = 0
        self.tty = sys.stderr.isatty()
        self.bar = tqdm(total=total, desc=what, unit="pt", file=sys.stderr, disable=not self.tty, dynamic_ncols=True)
        self._said = 0

    def update(self, status: str, best: str | None = None) -> None:
        self.counts[status] += 1
        self.done += 1
        if best is not None:
            self.best = best
        self.bar.update(1)
        self.bar.set_postfix_str(self.summary(), refresh=False)
        if not self.tty and self.total and self.done * 10 // self.total > self._said:
            self._said = self.done * 10 // self.total
            print(f"tune: {self.done}/{self.total} points, {self.summary()}", file=sys.stderr, flush=True)

    def summary(self) -> str:
        c = self.counts
        return (
            f"ok {c['ok']} pruned {c['pruned'] + c['duplicate']} failed {c['failed']} wrong {c['wrong']}"
            f" cached {c['cached']} best {self.best}"
        )

    def close(self) -> None:
        self.bar.close()


def ranked(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Timed records, best first: those re-timed at the end (interleaved with each other: their
    times compare) by their final time, then the others by their ratio to the vendor GEMM (timed
    paired, so a GPU clock that drifted during the sweep does not reorder them) or, without one,
    their time."""
    ok = [r for r in records if r.get("status") == "ok" and r.get("ms")]
    final = sorted((r for r in ok if r.get("final_ms")), key=lambda r: r["final_ms"])
    rest = [r for r in ok if not r.get("final_ms")]
    if all(r.get("ratio") for r in rest):
        rest.sort(key=lambda r: -r["ratio"])
    else:
        rest.sort(key=lambda r: r["ms"])
    return final + rest


def table(records: Sequence[Mapping[str, Any]], limit: int = 20) -> str:
    """The ranked table of one size: time, throughput, ratio, compile time, status and the point, whole
    (the last column: a point is what the table is read for; the kernel name all of its fields share
    is said once, in the header)."""
    top = ranked(records)[:limit]
    kernel, points = _common_kernel([str(r.get("describe", "?")) for r in top])
    rows = [("#", "ms", "throughput", "ratio", "compile s", "status", f"point ({kernel}.)" if kernel else "point")]
    for i, (r, point) in enumerate(zip(top, points, strict=True), 1):
        value, unit = throughput({**r, "ms": r.get("final_ms") or r["ms"]})
        ratio = r.get("final_ratio") or r.get("ratio")
        status = "ok" + (" (tie)" if r.get("tie") else "") + (" re-timed" if r.get("final_ms") else "")
        if r.get("untuned"):
            status += ", untuned"
        rows.append(
            (
                str(i),
                f"{r.get('final_ms') or r['ms']:.4f}",
                f"{value:.4g} {unit}" if value is not None else "-",
                f"{ratio:.3f}" if ratio else "-",
                f"{r['compile_s']:.1f}" if r.get("compile_s") is not None else "-",
                status,
                point,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths)] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _common_kernel(points: Sequence[str]) -> tuple[str, list[str]]:
    """The kernel name every field of every point starts with (``matmul_k0.block_m=128``), and the
    points without it; ("", the points) where they do not share one."""
    fields = [f for p in points for f in p.split()]
    names = {f.split(".", 1)[0] for f in fields if "." in f.split("=", 1)[0]}
    if len(names) != 1 or any("." not in f.split("=", 1)[0] for f in fields):
        return "", list(points)
    (kernel,) = names
    return kernel, [" ".join(f[len(kernel) + 1 :] for f in p.split()) for p in points]


def summary(records: Sequence[Mapping[str, Any]], space_size: int) -> str:
    """Counts by status, the prune reasons by kind, and how much of the space was timed."""
    by_point: dict[str, str] = {}
    for r in records:  # a point's status: ok at some size wins, else the first other status
        k = r.get("point_key", "")
        if by_point.get(k) != "ok":
            by_point[k] = r.get("status", "?")
    counts = Counter(by_point.values())
    timed = counts.get("ok", 0) + counts.get("wrong", 0)
    parts = [f"{counts.get(s, 0)} {s}" for s in STATUSES if counts.get(s)]
    share = f"{timed} of {space_size} points run ({100.0 * timed / space_size:.1f}% of the space)" if space_size else ""
    lines = [f"points: {', '.join(parts) or 'none'}; {share}"]
    reasons = Counter(_reason_kind(r) for r in records if r.get("status") in ("pruned", "failed", "wrong"))
    for reason, n in reasons.most_common():
        lines.append(f"  {n:5d} x {reason}")
    return "\n".join(lines)


def _reason_kind(r: Mapping[str, Any]) -> str:
    reason = str(r.get("reason", ""))
    head = reason.split(":", 1)[0] if ":" in reason else reason
    return f"{r.get('status')}: {head[:80]}"


# ------------------------------------------------------------------ best.json
def _dispatch_sizes(sizes: Mapping[str, Any]) -> dict[str, int]:
    """The sizes a tuned module dispatches on: the symbolic dimensions and ``int`` parameters (the
    values ``--config`` takes); a ``bool`` or ``float`` parameter a sweep ran at is not one."""
    return {k: v for k, v in sizes.items() if type(v) is int and v > 0}


def best_json(
    *,
    source: str,
    source_sha256: str,
    func: str,
    schedule: str,
    f32_precision: str,
    device: Mapping[str, Any],
    versions: Mapping[str, Any],
    per_size: Mapping[str, Sequence[Mapping[str, Any]]],
    top_k: int = 5,
) -> dict[str, Any]:
    """The ``best.json`` of a sweep (/work/notes/best_json.md's format)."""
    winners: list[dict[str, Any]] = []
    top: list[dict[str, Any]] = []
    for records in per_size.values():
        order = ranked(records)
        for i, r in enumerate(order[:top_k]):
            entry = {
                "sizes": _dispatch_sizes(r.get("sizes", {})),
                "dtypes": r.get("dtypes", {}),
                "point": r.get("point", {}),
                "ms": r.get("final_ms") or r.get("ms"),
                "ratio": r.get("final_ratio") or r.get("ratio"),
                "tie": bool(r.get("tie", False)),
            }
            top.append(entry)
            if i == 0:
                winners.append(entry)
    return {
        "format": FORMAT,
        "source": source,
        "source_sha256": source_sha256,
        "func": func,
        "schedule": schedule,
        "f32_precision": f32_precision,
        "device": {"name": device.get("name"), "driver": device.get("driver")},
        "versions": dict(versions),
        "winners": winners,
        "top": top,
    }


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")


# ------------------------------------------------------------------ the plot
MARKS = {"pruned": ("v", "0.6"), "duplicate": ("v", "0.8"), "failed": ("x", "tab:red"), "wrong": ("X", "tab:purple")}


def plot(path: Path, records: Sequence[Mapping[str, Any]], swept: Sequence[str], title: str) -> None:
    """Throughput against each swept parameter (pruned / failed / wrong marked below zero) and the
    best throughput so far against the sweep's wall time, one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(swept) or ["(none)"]
    panels = len(names) + 1
    cols = min(3, panels)
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    unit = next((throughput(r)[1] for r in records if throughput(r)[0] is not None), "")
    timed = [(r, throughput(r)[0]) for r in records if throughput(r)[0] is not None]
    top = max((v for _, v in timed), default=1.0) or 1.0
    for i, name in enumerate(names):
        ax = axes[i // cols][i % cols]
        labels: list[str] = []

        def xpos(r: Mapping[str, Any], name: str = name, labels: list[str] = labels) -> int:
            v = str(r.get("values", {}).get(name, "-"))
            if v not in labels:
                labels.append(v)
            return labels.index(v)

        for r in sorted(records, key=lambda r: _sortable(r.get("values", {}).get(name))):
            xpos(r)
        xs = [xpos(r) for r, _ in timed]
        ax.scatter(xs, [v for _, v in timed], s=14, c="tab:blue", label="timed")
        for status, (marker, color) in MARKS.items():
            sel = [r for r in records if r.get("status") == status]
            if sel:
                ax.scatter([xpos(r) for r in sel], [-0.05 * top] * len(sel), marker=marker, c=color, s=20, label=status)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=60 if len(labels) > 8 else 0, fontsize=7)
        ax.set_xlabel(name)
        ax.set_ylabel(unit)
        ax.axhline(0, color="0.8", lw=0.5)
        if i == 0:
            ax.legend(fontsize=7)
    ax = axes[(panels - 1) // cols][(panels - 1) % cols]
    best = 0.0
    xs, ys = [], []
    for r in sorted((r for r, _ in timed), key=lambda r: r.get("elapsed", 0.0)):
        v = throughput(r)[0] or 0.0
        best = max(best, v)
        xs.append(r.get("elapsed", 0.0))
        ys.append(best)
    ax.step(xs, ys, where="post", c="tab:green")
    ax.set_xlabel("sweep wall time (s)")
    ax.set_ylabel(f"best {unit} so far")
    for j in range(panels, rows * cols):
        axes[j // cols][j % cols].axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _sortable(v: Any) -> tuple[int, Any]:
    if isinstance(v, bool):
        return (0, int(v))
    if isinstance(v, (int, float)):
        return (0, v)
    return (1, str(v))

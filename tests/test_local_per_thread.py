"""A ``local`` buffer is each thread's own (LANGUAGE.md 7.5), wherever it is declared: one declared at
block level (or at a warp's level) and written by the threads of a thread-level ``parallel`` inside
its declaration has a copy per thread, not one for the block (lift/placement.py ``OwnLanes``,
lift/scratch.py ``owner_lanes``: it was one copy per program, the lanes overwriting each other's
elements, a silently wrong result).  The same buffers declared inside the thread level are the
controls.  A read where the threads' copies differ and no one thread's is meant (a block-level read
after the threads wrote their copies) is refused with the reason.  Numerics against float64 torch
on ragged sizes with NaN-poisoned outputs, in both schedules."""

from __future__ import annotations

import pytest
import torch
from kernel_util import DEVICE, assert_close, poisoned, randn

from croq2triton.api import load_source, translate_full
from croq2triton.emit.module import Translation
from croq2triton.tir.dump import dump

SCHEDULES = ("source", "auto")

SOURCE = """
__co__ void prefix(global f32 [N, 5] x, global f32 [N, 5] y) {
  parallel b by cdiv(N, 24) : block {
    local f32 [5] acc;
    parallel t by 24 : thread {
      int r = b # t;
      if (r < N) {
        acc.at(0) = x.at(r, 0);
        foreach k in [4] {
          acc.at(k + 1) = acc.at(k) + x.at(r, k + 1);
        }
        foreach k in [5] {
          y.at(r, k) = acc.at(k);
        }
      }
    }
  }
}

__co__ void prefix_inside(global f32 [N, 5] x, global f32 [N, 5] y) {
  parallel b by cdiv(N, 24) : block {
    parallel t by 24 : thread {
      local f32 [5] acc;
      int r = b # t;
      if (r < N) {
        acc.at(0) = x.at(r, 0);
        foreach k in [4] {
          acc.at(k + 1) = acc.at(k) + x.at(r, k + 1);
        }
        foreach k in [5] {
          y.at(r, k) = acc.at(k);
        }
      }
    }
  }
}

__co__ void histogram(global s32 [N, 7] x, global s32 [N, 6] y) {
  parallel b by cdiv(N, 20) : block {
    local s32 [6] h;
    parallel t by 20 : thread {
      int r = b # t;
      foreach k in [6] { h.at(k) = 0; }
      if (r < N) {
        foreach k in [7] {
          int v = x.at(r, k);
          h.at(v) = h.at(v) + 1;
        }
        foreach k in [6] { y.at(r, k) = h.at(k); }
      }
    }
  }
}

__co__ void weighted(global f32 [N, 6] x, global f32 [N] y) {
  parallel b by cdiv(N, 40) : block {
    local f32 [1] s;
    parallel t by 40 : thread {
      int r = b # t;
      s.at(0) = 0.0f;
      if (r < N) {
        foreach k in [6] { s.at(0) = s.at(0) + x.at(r, k) * __to<f32>(k + 1); }
        y.at(r) = s.at(0);
      }
    }
  }
}

__co__ void reversed(global f32 [N, 6] x, global f32 [N, 6] y) {
  parallel b by cdiv(N, 12) : block {
    local f32 [6] v;
    parallel t by 12 : thread {
      int r = b # t;
      foreach k in [6] { v.at(k) = (r < N) ? x.at(r, k) : 0.0f; }
      if (r < N) {
        foreach k in [6] { y.at(r, k) = v.at(5 - k) * 2.0f; }
      }
    }
  }
}

__co__ void warps_block(global f32 [N, 3] x, global f32 [N] y) {
  parallel b by cdiv(N, 64) : block {
    local f32 [3] v;
    parallel w by 2 : group {
      parallel t by 32 : thread {
        int r = b # w # t;
        foreach k in [3] { v.at(2 - k) = (r < N) ? x.at(r, k) : 0.0f; }
        if (r < N) y.at(r) = v.at(0) * 3.0f + v.at(1) * 2.0f + v.at(2);
      }
    }
  }
}

__co__ void warps_warp(global f32 [N, 3] x, global f32 [N] y) {
  parallel b by cdiv(N, 64) : block {
    parallel w by 2 : group {
      local f32 [3] v;
      v.at(1) = 0.5f;
      parallel t by 32 : thread {
        int r = b # w # t;
        v.at(0) = (r < N) ? x.at(r, 0) : 0.0f;
        v.at(2) = (r < N) ? x.at(r, 2) * 2.0f : 0.0f;
        if (r < N) y.at(r) = v.at(0) + v.at(1) * x.at(r, 1) + v.at(2);
      }
    }
  }
}

__co__ void segment(global f32 [N, 4] x, global f32 [N] y) {
  parallel b by cdiv(N, 16) : block {
    local f32 [1, 4] v;
    parallel t by 16 : thread {
      int r = b # t;
      if (r < N) {
        dma.copy x.subspan(1, 4).at(r, 0) => v;
        y.at(r) = v.at(0, 3) - v.at(0, 0) * v.at(0, 1);
      }
    }
  }
}

__co__ void segment_inside(global f32 [N, 4] x, global f32 [N] y) {
  parallel b by cdiv(N, 16) : block {
    parallel t by 16 : thread {
      local f32 [1, 4] v;
      int r = b # t;
      if (r < N) {
        dma.copy x.subspan(1, 4).at(r, 0) => v;
        y.at(r) = v.at(0, 3) - v.at(0, 0) * v.at(0, 1);
      }
    }
  }
}

__co__ void read_only(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block {
    local f32 [4] c {2.0f};
    c.at(1) = 5.0f;
    parallel t by 32 : thread {
      int r = b # t;
      if (r < N) y.at(r) = x.at(r) * c.at(1) + c.at(3);
    }
  }
}

__co__ void own_then_first(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block {
    local f32 [32] v {1.0f};
    parallel t by 32 : thread {
      int r = b # t;
      v.at(t) = (r < N) ? x.at(r) : 0.0f;
      if (r < N) y.at(r) = v.at(t) + v.at(0);
    }
  }
}

__co__ void two_levels(global f32 [N, 3] x, global f32 [N] y) {
  parallel b by cdiv(N, 32) : block {
    local f32 [1] acc;
    acc.at(0) = 1.0f;
    parallel t by 32 : thread {
      int r = b # t;
      if (r < N) { foreach k in [3] { acc.at(0) = acc.at(0) + x.at(r, k); } }
    }
    parallel u by 32 : thread {
      int r = b # u;
      if (r < N) y.at(r) = acc.at(0) * 2.0f;
    }
  }
}

__co__ void grid_loop(global f32 [R, 5, 5] x, global f32 [R, 5] y) {
  parallel b by cdiv(R, 3) : block {
    local f32 [2] acc {0.0f};
    foreach k in [5] {
      parallel {i, j} by [3, 5] : thread {
        int r = b # i;
        if (r < R) acc.at(k % 2) = acc.at(k % 2) + x.at(r, j, k);
      }
    }
    parallel {i, j} by [3, 5] : thread {
      int r = b # i;
      if (r < R) y.at(r, j) = acc.at(0) - acc.at(1);
    }
  }
}

__co__ void map_init(global f32 [N, 4] x, global f32 [N, 4] y) {
  parallel b by cdiv(N, 32) : block {
    local f32 [4] acc;
    foreach k in [4] { acc.at(k) = __to<f32>(k); }
    parallel t by 32 : thread {
      int r = b # t;
      if (r < N) {
        foreach k in [4] { acc.at(3 - k) = acc.at(3 - k) + x.at(r, k); }
        foreach k in [4] { y.at(r, k) = acc.at(k); }
      }
    }
  }
}
"""

_MODULES: dict[str, tuple[Translation, object]] = {}


def _module(schedule: str, name: str) -> object:
    if schedule not in _MODULES:
        out = translate_full(SOURCE, filename="local_per_thread.co", schedule=schedule)
        _MODULES[schedule] = out, load_source(out.source, f"local_per_thread_{schedule}")
    out, mod = _MODULES[schedule]
    assert name not in out.failed, str(out.failed[name])
    return mod


def _d(t: torch.Tensor) -> torch.Tensor:
    return t.double().cpu()


N = 53  # not a multiple of any level's threads


def _cases() -> dict[str, tuple[tuple[torch.Tensor, ...], tuple[int, ...], torch.dtype, torch.Tensor]]:
    """name -> (inputs, output shape, output type, float64 reference)."""
    x5, x6, x3, x4, x1 = (
        randn(N, 5, seed=1),
        randn(N, 6, seed=2),
        randn(N, 3, seed=3),
        randn(N, 4, seed=4),
        randn(N, seed=5),
    )
    g = torch.Generator().manual_seed(6)
    xi = torch.randint(0, 6, (N, 7), generator=g, dtype=torch.int32)
    hist = torch.stack([torch.bincount(xi[i].long(), minlength=6) for i in range(N)]).int()
    r = 7
    xg = randn(r, 5, 5, seed=7)
    first = torch.where(torch.arange(N) % 32 == 0, _d(x1), torch.ones(N, dtype=torch.float64))
    weights = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    return {
        "prefix": ((x5,), (N, 5), torch.float32, _d(x5).cumsum(1)),
        "prefix_inside": ((x5,), (N, 5), torch.float32, _d(x5).cumsum(1)),
        "histogram": ((xi.to(DEVICE),), (N, 6), torch.int32, hist.double()),
        "weighted": ((x6,), (N,), torch.float32, (_d(x6) * torch.arange(1, 7).double()).sum(1)),
        "reversed": ((x6,), (N, 6), torch.float32, _d(x6).flip(1) * 2),
        "warps_block": ((x3,), (N,), torch.float32, _d(x3) @ weights),
        "warps_warp": ((x3,), (N,), torch.float32, _d(x3) @ torch.tensor([1.0, 0.5, 2.0], dtype=torch.float64)),
        "segment": ((x4,), (N,), torch.float32, _d(x4)[:, 3] - _d(x4)[:, 0] * _d(x4)[:, 1]),
        "segment_inside": ((x4,), (N,), torch.float32, _d(x4)[:, 3] - _d(x4)[:, 0] * _d(x4)[:, 1]),
        "read_only": ((x1,), (N,), torch.float32, _d(x1) * 5 + 2),
        "own_then_first": ((x1,), (N,), torch.float32, _d(x1) + first),
        "two_levels": ((x3,), (N,), torch.float32, (1 + _d(x3).sum(1)) * 2),
        "grid_loop": ((xg,), (r, 5), torch.float32, _d(xg)[:, :, 0::2].sum(2) - _d(xg)[:, :, 1::2].sum(2)),
        "map_init": ((x4,), (N, 4), torch.float32, _d(x4).flip(1) + torch.arange(4).double()),
    }


NAMES = list(_cases())


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", NAMES)
def test_each_thread_has_its_own_local_buffer(name: str, schedule: str) -> None:
    inputs, shape, dtype, ref = _cases()[name]
    out = poisoned(*shape, dtype=dtype)
    getattr(_module(schedule, name), name)(*inputs, out)
    assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_a_block_level_local_has_a_copy_per_thread_that_writes_it() -> None:
    """The IR: one copy for each lane of the level that writes it (the block's 24 threads as 32
    lanes; a warp's local, 2 warps of 32 threads), as the same buffer declared inside the threads
    has; a buffer the threads only read stays one copy."""
    out = translate_full(SOURCE, filename="local_per_thread.co")
    assert not out.failed, out.failed
    for name, line in [
        ("prefix", "  arg acc_scratch: scratch<f32> 160 per program (a copy for each of 32 lanes)"),
        ("prefix_inside", "  arg acc_scratch: scratch<f32> 160 per program (a copy for each of 32 lanes)"),
        ("warps_block", "  arg v_scratch: scratch<f32> 192 per program (a copy for each of 64 lanes)"),
        ("warps_warp", "  arg v_scratch: scratch<f32> 192 per program (a copy for each of 64 lanes)"),
        ("read_only", "  arg c_scratch: scratch<f32> 4 per program"),
    ]:
        text = dump(out.ir[name][0])  # type: ignore[arg-type]
        assert line in text, text


REFUSED = [
    (
        """__co__ void f(global f32 [N] x, global f32 [B] y) {
  parallel b by B : block {
    local f32 [2] acc;
    parallel t by 32 : thread {
      acc.at(1) = x.at(b # t);
    }
    y.at(b) = acc.at(1);
  }
}""",
        "f.co:7:15",
        "a read of the local buffer 'acc' outside the threads that write it",
        "read 'acc' inside that thread-level 'parallel', or declare it 'shared'",
    ),
    (
        """__co__ void f(global f32 [N] x, global f32 [B, 2] y) {
  parallel b by B : block {
    local f32 [1, 2] acc;
    parallel t by 32 : thread {
      acc.at(0, 1) = x.at(b # t);
    }
    dma.copy acc => y.subspan(1, 2).at(b, 0);
  }
}""",
        "f.co:7:5",
        "a read of the local buffer 'acc' outside the threads that write it",
        "declare it 'shared'",
    ),
    (
        """__co__ void f(global f32 [N] x, global f32 [N] y) {
  parallel b by cdiv(N, 64) : block {
    local f32 [2] acc;
    parallel t by 32 : thread {
      acc.at(0) = x.at(b # t);
    }
    parallel u by 64 : thread {
      acc.at(1) = x.at(b # u);
      y.at(b # u) = acc.at(1);
    }
  }
}""",
        "f.co:3:19",
        "the local buffer 'acc', each thread's own, written by thread levels of different shapes",
        "declare 'acc' inside the thread-level 'parallel'",
    ),
    (
        """__co__ void f(global f32 [R, C] x, global f32 [R, C] y) {
  parallel b by R : block {
    local f32 [1] acc;
    parallel j by C : thread {
      acc.at(0) = x.at(b, j);
      y.at(b, j) = acc.at(0) * 2.0f;
    }
  }
}""",
        "f.co:4:19",
        "the local buffer 'acc', each thread's own, written by a thread level whose count is known only at launch",
        "give the thread level a constant count",
    ),
]


@pytest.mark.parametrize(
    ("source", "at", "reason", "hint"), REFUSED, ids=["block_read", "block_copy", "shapes", "launch"]
)
@pytest.mark.parametrize("schedule", SCHEDULES)
def test_where_the_threads_copies_have_no_one_value_the_kernel_is_refused(
    source: str, at: str, reason: str, hint: str, schedule: str
) -> None:
    out = translate_full(source, filename="f.co", schedule=schedule)
    assert "f" in out.failed, out.source
    text = str(out.failed["f"])
    assert text.startswith(f"{at}: error: "), text
    assert reason in text, text
    assert hint in " ".join(text.split()), text

"""Block reductions through shared memory in halving steps, read as tile reductions under
``--schedule auto`` (schedule/treefold.py): the forms the proof takes (steps written out, a loop
over the shift, a ``while`` halving it; sums, max, min; one buffer holding a max tree and then a
sum tree; the total read by one thread or by all) and forms it must leave as written (a tree that
stops early, a total that counts elements twice).  Every function runs under both schedules in the
interpreter against float64 torch on ragged sizes, outputs poisoned with NaN."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from kernel_util import canonical, poisoned, randn

from croq2triton.api import load, translate_full

PROGRAM = Path(__file__).parent / "programs" / "trees.co"
FORMS = Path(__file__).parent / "programs" / "membound_forms.co"
SIZES = [(3, 50), (5, 700)]


def _kernel(source: str, name: str) -> str:
    start = source.index(f"def {name}(")
    end = source.find("\n@", start)
    return source[start : end if end > 0 else None]


def _expected(fn: str, x: torch.Tensor) -> torch.Tensor:
    x = x.double()
    cols = torch.arange(x.shape[1], device=x.device)
    if fn == "softmax_trees":
        return torch.softmax(x, 1)
    if fn == "row_min_tree":
        return x.amin(1)
    if fn == "partial_tree":  # element 0 after two of three steps: the partials of even threads
        return x[:, cols % 2 == 0].sum(1)
    assert fn == "double_counted_tree"  # the even partials once, the odd ones twice
    return x[:, cols % 2 == 0].sum(1) + 2 * x[:, cols % 2 == 1].sum(1)


@pytest.mark.parametrize(
    ("schedule", "m", "n"),
    # (the source schedule runs the same kernel at both sizes, its loops longer: the long tier)
    [(s, m, n) if s == "auto" or (m, n) == SIZES[0] else pytest.param(s, m, n, marks=pytest.mark.long)
     for m, n in SIZES for s in ("source", "auto")],
)  # fmt: skip
@pytest.mark.parametrize("fn", ["softmax_trees", "row_min_tree", "partial_tree", "double_counted_tree"])
def test_each_tree_computes_what_it_says(fn: str, schedule: str, m: int, n: int) -> None:
    mod = load(PROGRAM, schedule=schedule)
    x = randn(m, n, seed=m * 31 + n)
    out = poisoned(m, n) if fn == "softmax_trees" else poisoned(m)
    getattr(mod, fn)(x, out)
    got, want = out.double().cpu(), _expected(fn, x).cpu()
    assert not torch.isnan(got).any(), "elements never written"
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), (got - want).abs().max()


def test_whole_trees_are_tile_reductions_under_auto() -> None:
    text = translate_full(PROGRAM.read_text(), filename="trees.co", schedule="auto").source
    softmax = _kernel(text, "softmax_trees_k0")
    assert "_scratch" not in softmax and "debug_barrier" not in softmax and "while" not in softmax
    # the trees' totals are the totals of the lanes' folds (schedule/totals.py: the lanes' axis first)
    assert "red_max = m_max" in softmax and "red_sum = s_sum" in softmax
    flat = canonical(softmax)
    assert "tl.max(tl.max(" in flat and "tl.sum(tl.sum(" in flat
    low = _kernel(text, "row_min_tree_k0")
    assert "_scratch" not in low and "red_min = m_min" in low
    forms = translate_full(FORMS.read_text(), filename=str(FORMS), schedule="auto").source
    for fn, acc in (("row_sums_tree", "acc"), ("row_meansq_tree_f16", "acc"), ("rmsnorm_tree_f16", "ss")):
        body = _kernel(forms, f"{fn}_k0")  # steps written out, a loop over the shift, a while loop
        assert "_scratch" not in body and "debug_barrier" not in body, fn
        # the total of the lanes' partials, the lanes' axis folded first (schedule/totals.py)
        flat = canonical(body)
        assert f"part_sum={acc}_sum" in flat and f"{acc}_sum={acc}_sum+tl.sum(tl.sum(" in flat, fn
        assert ",axis=1),axis=0)" in flat, fn
    # the row is read once: the normalisation reuses the statistics pass's load
    assert _kernel(forms, "rmsnorm_tree_f16_k0").count("tl.load(x_ptr") == 1


def test_trees_that_are_not_whole_stay_as_written() -> None:
    text = translate_full(PROGRAM.read_text(), filename="trees.co", schedule="auto").source
    for fn in ("partial_tree", "double_counted_tree"):
        body = _kernel(text, f"{fn}_k0")
        assert "red_scratch" in body and "tl.debug_barrier()" in body, fn
        assert "tl.sum(acc, axis=0)" not in body, fn


def test_the_source_schedule_keeps_the_steps() -> None:
    text = translate_full(PROGRAM.read_text(), filename="trees.co", schedule="source").source
    assert "red_scratch" in _kernel(text, "softmax_trees_k0")


LONG = """
__co__ void long_loop(global f32 [M, N] x, global f32 [M] s) {
  parallel r by M : block {
    shared f32 [1024] red;
    parallel t by 1024 : thread {
      red.at(t) = x.at(r, t % N);
      sync.shared;
      foreach k in [100000] {
        if (t < 1) red.at(t) = red.at(t) + red.at(t + 1);
        sync.shared;
      }
      if (t == 0) s.at(r) = red.at(0);
    }
  }
}
"""


def test_a_run_too_long_to_follow_is_left_as_written() -> None:
    """The proof stops after a bounded amount of work (statements and lanes reached), so a loop of
    100,000 steps over 1,024 lanes neither folds nor stalls the translation (about a second)."""
    text = translate_full(LONG, filename="long.co", schedule="auto").source
    assert "red_scratch" in _kernel(text, "long_loop_k0")

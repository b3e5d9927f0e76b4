"""Every example .co has its generated .py beside it, and regenerating it changes nothing."""

from __future__ import annotations

import pytest
from conftest import EXAMPLES

from croq2triton.api import translate_full

SOURCES = sorted(EXAMPLES.glob("*.co"))


def test_there_are_examples() -> None:
    names = {p.stem for p in SOURCES}
    assert {"vadd", "tiled_add", "gemm_v0", "gemm_v1", "gemm_v2"} <= names


@pytest.mark.parametrize("src", SOURCES, ids=[p.name for p in SOURCES])
def test_generated_module_is_current(src: object) -> None:
    from pathlib import Path

    path = Path(str(src))
    out = translate_full(path.read_text(), filename=str(path))
    assert not out.failed, f"{path.name}: {sorted(out.failed)} not translated"
    py = path.with_suffix(".py")
    assert py.exists(), f"{py.name} is missing: run croq2triton translate {path}"
    assert py.read_text() == out.source, f"{py.name} is stale: run croq2triton translate {path}"


def test_translation_is_deterministic() -> None:
    path = EXAMPLES / "gemm_v2.co"
    a = translate_full(path.read_text(), filename=str(path)).source
    b = translate_full(path.read_text(), filename=str(path)).source
    assert a == b


def test_the_kernel_shown_in_the_readme_is_the_generated_one() -> None:
    from conftest import REPO

    readme = (REPO / "README.md").read_text()
    start = readme.index("```python\n@triton.jit\ndef vadd_k0(") + len("```python\n")
    shown = readme[start : readme.index("```", start)]
    assert shown in (EXAMPLES / "vadd.py").read_text(), "README's vadd_k0 is stale: copy it from examples/vadd.py"


def test_the_gemm_kernel_shown_in_the_readme_is_the_generated_one() -> None:
    from conftest import REPO

    readme = (REPO / "README.md").read_text()
    start = readme.index("```python\n@triton.jit\ndef matmul_k0(") + len("```python\n")
    shown = readme[start : readme.index("```", start)]
    text = (EXAMPLES / "gemm_v4.co").read_text()
    generated = translate_full(text, filename="gemm_v4.co", schedule="auto").source
    assert shown in generated, "README's matmul_k0 is stale: translate examples/gemm_v4.co with --schedule auto"
    assert max(len(line) for line in shown.splitlines()) <= 120

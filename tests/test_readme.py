"""Every ```python block in README.md and in docs/*.md runs as written (each in a fresh
namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]

_BLOCK = re.compile(r"^```python\n(.*?)^```$", flags=re.DOTALL | re.MULTILINE)
_FENCE = re.compile(r"^[ \t]*```python[ \t]*$", flags=re.MULTILINE)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _blocks(page: Path) -> list[str]:
    return _BLOCK.findall(page.read_text(encoding="utf-8"))


BLOCKS = [
    (_name(page), number, code) for page in PAGES for number, code in enumerate(_blocks(page))
]


def test_readme_has_examples() -> None:
    assert len(_blocks(README)) >= 1


def test_docs_pages_exist() -> None:
    assert DOCS, "no docs/*.md pages found"


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_python_block_is_collected(page: Path) -> None:
    # A page with code has every one of its ```python fences collected as a block (an
    # unclosed or mis-indented fence would silently drop examples from the run below).
    text = page.read_text(encoding="utf-8")
    assert len(_blocks(page)) == len(_FENCE.findall(text))


@pytest.mark.parametrize(
    ("name", "number", "code"), BLOCKS, ids=[f"{name}-{number}" for name, number, _ in BLOCKS]
)
def test_example_runs(name: str, number: int, code: str) -> None:
    compiled = compile(code, f"{name} python block {number}", "exec")
    module = re.sub(r"\W", "_", name)
    exec(compiled, {"__name__": f"docs_block_{module}_{number}"})

"""Every ```python block in README.md runs as written (each in a fresh namespace)."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_readme_example_runs(number: int) -> None:
    code = compile(BLOCKS[number], f"README.md python block {number}", "exec")
    exec(code, {"__name__": f"readme_block_{number}"})

"""The wheel ships the libraries, not their benchmarks: pyproject.toml's package list leaves
every ``bench`` subpackage out, and no shipped module imports one at module level (it would fail
with ImportError once installed from the wheel); a command that runs a benchmark imports it
inside the function that needs it."""

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIND = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"][
    "find"
]
LIBRARIES = (
    "purgatory",
    "replica",
    "coordinator",
    "apis",
    "cluster",
    "sim",
    "msgqueue",
    "consume_proxy",
    "trio_http",
)


def _is_bench(dotted: str) -> bool:
    return "bench" in dotted.split(".")


def _module_level(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``tree`` outside function bodies (those run only when called)."""
    for node in ast.iter_child_nodes(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield node
            yield from _module_level(node)


def test_the_wheel_leaves_out_every_bench_subpackage() -> None:
    setuptools = pytest.importorskip("setuptools")
    # [tool.setuptools.packages.find] also finds namespace packages (sim/scenarios' data).
    find = setuptools.find_namespace_packages
    shipped = set(find(str(ROOT), include=FIND["include"], exclude=FIND["exclude"]))
    assert {*LIBRARIES, "sim", "purgatory.testing", "sim.scenarios", "sim.studies"} <= shipped
    assert [name for name in shipped if _is_bench(name)] == []
    every = set(find(str(ROOT), include=FIND["include"]))
    benches = {
        "purgatory.bench", "replica.bench", "sim.bench", "sim.sweep.bench", "msgqueue.bench",
        "consume_proxy.bench",
    }  # fmt: skip
    assert benches <= every


@pytest.mark.parametrize("package", LIBRARIES)
def test_shipped_modules_do_not_import_a_benchmark(package: str) -> None:
    for path in sorted((ROOT / package).rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        if _is_bench(module):
            continue
        for node in _module_level(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                imported = [f"{node.module or ''}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Import):
                imported = [alias.name for alias in node.names]
            else:
                continue
            assert not any(_is_bench(name) for name in imported), (
                f"{module} imports {imported} (line {node.lineno})"
            )

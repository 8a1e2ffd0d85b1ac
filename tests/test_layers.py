"""The layer contract: imports point down only, and no file or package imports itself back.

The project's packages stack up as ``docs/architecture.md`` draws them::

    msgqueue       the message queue (a purgatory user: it may import purgatory and
                   trio_http only)
    sim            the simulator (inside it: core < clients < scenario | output < proxy
                   < world < ...)
    kafka_server   beside sim: the wire-protocol server real Kafka clients connect to
    consume_proxy  the consume proxy (purgatory, replica's types; its cluster adapter also
                   apis and cluster); below sim, which drives its real code
    cluster        the in-process broker cluster
    apis           KafkaApis, request and response types
    coordinator    OffsetManager (the group coordinator)
    replica        Log, Partition, ReplicaManager, DelayedProduce, DelayedFetch
    purgatory      timing wheel, delayed operations, reapers: knows nothing of Kafka
    trio_http      beside purgatory: the services' HTTP/1.1 server (h11 on trio)

A module may import from its own layer and the layers below it, never from a layer above, nor
from a sibling on the same floor (``scenario`` and ``output`` are independent). Every import
statement counts, including those under ``if TYPE_CHECKING:`` and inside functions: a
type-only back-import still ties the lower layer to the upper one. The graph is read from the
source with :mod:`ast`; nothing is imported.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

LAYERS: tuple[tuple[str, ...], ...] = (
    ("purgatory", "trio_http"),
    ("replica",),
    ("coordinator",),
    ("apis",),
    ("cluster",),
    # The simulator runs the consume proxy's real code (sim.proxy), as it runs the brokers':
    # the proxy sits below it, above the cluster its adapter (cluster_feed) talks to.
    ("consume_proxy",),
    ("kafka_server", "sim"),
    ("msgqueue",),
)
"""The project's top-level packages, bottom first; one tuple per floor."""

SERVICES: dict[str, frozenset[str]] = {
    "msgqueue": frozenset({"purgatory", "trio_http"}),
    # The core needs purgatory and replica's TopicPartition; cluster_feed, the adapter to the
    # in-process cluster, its Client and the response types; the HTTP server trio_http.
    "consume_proxy": frozenset({"purgatory", "replica", "apis", "cluster", "trio_http"}),
}
"""The purgatory's users, and the only project packages each may import: the floors between
``purgatory`` and them are not theirs to use."""

SIM_LAYERS: tuple[tuple[str, ...], ...] = (
    ("sim.core", "sim.logs"),
    ("sim.clients",),
    ("sim.scenario", "sim.output"),
    ("sim.proxy",),
    ("sim.world",),
    ("sim.runner",),
    ("sim.replications",),
    ("sim.sweep",),
    ("sim.compare",),
    ("sim.bench",),
    ("sim.cli",),
    ("sim.__main__",),
)
"""Inside ``sim``, bottom first. ``sim/__init__.py`` imports nothing and is on no floor."""

PACKAGES = tuple(name for floor in LAYERS for name in floor)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module ``name`` refers to (the longest existing prefix), if any."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imported_names(module: str, path: Path) -> Iterator[str]:
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield f"{base}.{alias.name}"  # a submodule if one exists, else _resolve trims


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (edges into itself excluded)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        targets = {_resolve(name) for name in _imported_names(module, path)}
        graph[module] = {t for t in targets if t is not None and t != module}
    return graph


GRAPH = import_graph()


def _floor(module: str, layers: Iterable[tuple[str, ...]]) -> tuple[int, str] | None:
    for index, floor in enumerate(layers):
        for name in floor:
            if module == name or module.startswith(name + "."):
                return index, name
    return None


def _violations(layers: tuple[tuple[str, ...], ...], scope: str) -> list[str]:
    found = []
    for module, targets in sorted(GRAPH.items()):
        here = _floor(module, layers)
        if here is None or not (module == scope or module.startswith(scope)):
            continue
        for target in sorted(targets):
            there = _floor(target, layers)
            if there is None or there[1] == here[1]:
                continue
            if there[0] > here[0]:
                found.append(f"{module} imports {target}, a layer above it")
            elif there[0] == here[0]:
                found.append(f"{module} imports {target}, an independent sibling layer")
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _package_of(module: str) -> str:
    floor = _floor(module, SIM_LAYERS) if module.startswith("sim.") else None
    return floor[1] if floor is not None else module.split(".")[0]


def test_the_graph_is_read() -> None:
    assert "purgatory.timing_wheel" in GRAPH
    assert "purgatory.timing_wheel" in GRAPH["purgatory.delayed_operation_purgatory"]


def test_top_level_packages_import_downward_only() -> None:
    assert _violations(LAYERS, "") == []


def test_services_import_only_what_they_may() -> None:
    found = [
        f"{module} imports {target}"
        for module, targets in sorted(GRAPH.items())
        if (service := module.split(".")[0]) in SERVICES
        for target in sorted(targets)
        if target.split(".")[0] not in SERVICES[service] | {service}
    ]
    assert found == []


def test_the_services_check_catches_an_import_of_the_broker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(GRAPH, "msgqueue.model", GRAPH["msgqueue.model"] | {"replica.log"})
    with pytest.raises(AssertionError):
        test_services_import_only_what_they_may()


def test_sim_subpackages_import_downward_only() -> None:
    assert _violations(SIM_LAYERS, "sim.") == []


def test_no_import_cycle_between_files() -> None:
    # A package's __init__ re-exporting its submodules is not a cycle unless a submodule
    # imports the package back; that would show here as a component with the __init__.
    assert _cycles(GRAPH) == []


def test_no_import_cycle_between_packages() -> None:
    packages: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        source = _package_of(module)
        packages.setdefault(source, set()).update(
            _package_of(t) for t in targets if _package_of(t) != source
        )
    assert _cycles(packages) == []


@pytest.mark.parametrize(
    ("layers", "module", "target", "expected"),
    [
        (LAYERS, "purgatory.timing_wheel", "replica.log", "a layer above it"),
        (SIM_LAYERS, "sim.scenario.schema", "sim.output.summary", "independent sibling"),
    ],
)
def test_the_check_catches_a_back_import(
    layers: tuple[tuple[str, ...], ...],
    module: str,
    target: str,
    expected: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(GRAPH, module, GRAPH[module] | {target})
    scope = "sim." if layers is SIM_LAYERS else ""
    assert any(expected in v for v in _violations(layers, scope))


def test_the_check_catches_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


_PROXY_DRIVERS = {
    "consume_proxy.cluster_feed": {"apis", "cluster"},
    "consume_proxy.cli": {"trio_http"},
    "consume_proxy.http": {"trio_http"},
    "consume_proxy.server": {"trio_http"},
    "consume_proxy.bench.throughput": {"trio_http"},
    "consume_proxy.bench.wakeup": {"trio_http"},
}
"""The consume proxy's drivers and what each may import beyond the core's floors."""


def test_the_consume_proxy_core_needs_no_kafka_client() -> None:
    # Only the adapter (consume_proxy.cluster_feed) talks to the cluster, only the front end,
    # the server, the command and the benchmarks to trio_http; the core, and the package's
    # __init__, stay on purgatory and replica's types.
    found = [
        f"{module} imports {target}"
        for module, targets in sorted(GRAPH.items())
        if module.split(".")[0] == "consume_proxy"
        for target in sorted(targets)
        if target.split(".")[0]
        not in {"consume_proxy", "purgatory", "replica"} | _PROXY_DRIVERS.get(module, set())
    ]
    assert found == []

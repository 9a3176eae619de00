"""The import layers of fakeprovider and its pytest plugin, checked from the source.

Every module sits in one layer; a module may import from its own layer and the layers below it,
never from a layer above, and no chain of imports may lead back to where it started. Every
import counts: at the top of a module, inside a function (a lazy import) and under
``if TYPE_CHECKING:``. docs/architecture.md draws the same table as a diagram.

Adding a module: put it in ``LAYERS`` in the same commit (the table must name every module).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: Where each top-level package's folder lives.
PACKAGES = {"fakeprovider": ROOT, "fakeprovider_pytest": ROOT / "pytest_plugin"}

#: Lowest first. A name ending in ``.*`` stands for a package and every module in it.
LAYERS: dict[str, tuple[str, ...]] = {
    # no fakeprovider imports but each other: small helpers, values, the exception tree
    "pure": (
        "fakeprovider._ed25519",
        "fakeprovider._extras",
        "fakeprovider._suggest",
        "fakeprovider._version",
        "fakeprovider._yaml",
        "fakeprovider.clock",
        "fakeprovider.durations",
        "fakeprovider.errors",
        "fakeprovider.http",
    ),
    # what is played and what was recorded: the scenario, its settings, job state, the journal,
    # and the messages the engine, dialects and adapters exchange
    "models": (
        "fakeprovider._declarative",
        "fakeprovider.entries",
        "fakeprovider._runs",
        "fakeprovider.jobstore",
        "fakeprovider.journal",
        "fakeprovider.limits",
        "fakeprovider.messages",
        "fakeprovider.scenario",
        "fakeprovider.settings",
    ),
    # pure work on models: the engine, the checker and its reports, webhooks, words, strategies
    "core": (
        "fakeprovider._docs",
        "fakeprovider._formats",
        "fakeprovider._hypothesis",
        "fakeprovider._judges",
        "fakeprovider._report",
        "fakeprovider._rules",
        "fakeprovider._starter",
        "fakeprovider._stream",
        "fakeprovider._table",
        "fakeprovider.engine",
        "fakeprovider.explain",
        "fakeprovider.htmlreport",
        "fakeprovider.invariants",
        "fakeprovider.strategies",
        "fakeprovider.webhooks",
    ),
    # how engine states look on the wire
    "dialects": ("fakeprovider.dialects.*",),
    # the provider and the ways requests reach it: ASGI, uvicorn, in-process, webhook sender
    "adapters": (
        "fakeprovider._exchange",
        "fakeprovider._intercept",
        "fakeprovider._tls",
        "fakeprovider._via_httpcore2",
        "fakeprovider._via_httpx",
        "fakeprovider._via_urllib3",
        "fakeprovider.app",
        "fakeprovider.dispatcher",
        "fakeprovider.inprocess",
        "fakeprovider.provider",
        "fakeprovider.server",
        "fakeprovider.virtualtime",
    ),
    # what users call: the package's re-exports, the command line, the pytest plugin
    "facade": (
        "fakeprovider",
        "fakeprovider.__main__",
        "fakeprovider._check_cli",
        "fakeprovider._cli_options",
        "fakeprovider._run_cli",
        "fakeprovider.cli",
        "fakeprovider_pytest.*",
    ),
}


# -- the checker ---------------------------------------------------------------------------


def layer_table(layers: Mapping[str, Iterable[str]]) -> dict[str, tuple[int, str]]:
    """Each module pattern's (rank, layer name), rank 0 the lowest."""
    return {
        pattern: (rank, name)
        for rank, (name, patterns) in enumerate(layers.items())
        for pattern in patterns
    }


def layer_of(module: str, table: Mapping[str, tuple[int, str]]) -> tuple[int, str] | None:
    if module in table:
        return table[module]
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = table.get(".".join(parts[:end]) + ".*")
        if found is not None:
            return found
    return None


def discover(packages: Mapping[str, Path]) -> dict[str, tuple[Path, bool]]:
    """Every module of ``packages`` (name -> folder holding it): its file, and whether it is a
    package's ``__init__``."""
    found: dict[str, tuple[Path, bool]] = {}
    for package, base in packages.items():
        for path in sorted((base / package).rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


def imports_of(module: str, source: str, is_package: bool, known: Iterable[str]) -> set[str]:
    """The modules among ``known`` that ``source`` (the text of ``module``) imports, wherever
    the import statement is: top level, functions, ``TYPE_CHECKING`` blocks."""
    known = set(known)
    package = module if is_package else module.rpartition(".")[0]
    named: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join([*parts, node.module] if node.module else parts)
            else:
                base = node.module or ""
            for alias in node.names:
                # ``from . import engine`` imports a module; ``from .engine import Engine`` a name
                candidate = f"{base}.{alias.name}"
                named.add(candidate if candidate in known else base)
    found: set[str] = set()
    for name in named:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return found


def import_graph(packages: Mapping[str, Path]) -> dict[str, set[str]]:
    modules = discover(packages)
    return {
        name: imports_of(name, path.read_text(encoding="utf-8"), is_package, modules)
        for name, (path, is_package) in modules.items()
    }


def _cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """One cycle per strongly connected component (Tarjan): the shortest way from its smallest
    module name back to itself inside the component (ties broken by name). Fixing it shows the
    next cycle of the component, if any."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: set[str] = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.add(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    cycles = []
    for component in components:
        start = min(component)
        # the shortest way back to the start inside the component (breadth first)
        previous: dict[str, str] = {}
        frontier = [start]
        while frontier and start not in previous:
            following: list[str] = []
            for node in frontier:
                for target in sorted(set(graph.get(node, ())) & component):
                    if target not in previous:
                        previous[target] = node
                        following.append(target)
            frontier = following
        back = [start]
        while back[-1] != start or len(back) == 1:
            back.append(previous[back[-1]])
        cycles.append(back[::-1])
    return sorted(cycles)


def find_problems(
    graph: Mapping[str, Iterable[str]], layers: Mapping[str, Iterable[str]]
) -> list[str]:
    """Every module the table does not place, every upward import and every import cycle, each
    as one line naming the modules (and layers) involved."""
    table = layer_table(layers)
    problems: list[str] = []
    for module in sorted(graph):
        if layer_of(module, table) is None:
            problems.append(f"{module} is in no layer (add it to LAYERS)")
    for pattern in sorted(table):
        name = pattern.removesuffix(".*")
        if not any(m == name or m.startswith(f"{name}.") for m in graph):
            problems.append(f"{pattern} is in LAYERS but is no module (remove it)")
    for module in sorted(graph):
        here = layer_of(module, table)
        for target in sorted(graph[module]):
            there = layer_of(target, table)
            if here is not None and there is not None and there[0] > here[0]:
                problems.append(f"{module} ({here[1]}) imports {target} ({there[1]})")
    problems.extend(f"import cycle: {' -> '.join(cycle)}" for cycle in _cycles(graph))
    return problems


#: Libraries that do I/O or run an event loop: only adapters and the facade may use them.
IO_LIBRARIES = frozenset(
    {"asyncio", "httpcore2", "httpx", "respx", "socket", "starlette", "urllib3", "uvicorn"}
)
#: The lowest layer that may import ``IO_LIBRARIES``.
IO_LAYER = "adapters"


def libraries_of(source: str) -> set[str]:
    """The top-level names of what ``source`` imports from outside (absolute imports)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.partition(".")[0])
    return found


def io_problems(
    libraries: Mapping[str, Iterable[str]], layers: Mapping[str, Iterable[str]]
) -> list[str]:
    """Every module below ``IO_LAYER`` that imports one of ``IO_LIBRARIES``."""
    table = layer_table(layers)
    lowest = list(layers).index(IO_LAYER)
    problems = []
    for module in sorted(libraries):
        here = layer_of(module, table)
        if here is not None and here[0] < lowest:
            problems.extend(
                f"{module} ({here[1]}) imports {library}, which only adapters may use"
                for library in sorted(IO_LIBRARIES.intersection(libraries[module]))
            )
    return problems


def public_modules_without_all(packages: Mapping[str, Path]) -> list[str]:
    """Public modules (no ``_`` in their name) that do not declare ``__all__``, the names they
    offer users; the per-provider modules of ``dialects`` are internal (docs/architecture.md)."""
    missing = []
    for module, (path, _) in sorted(discover(packages).items()):
        if any(part.startswith("_") for part in module.split(".")[1:]):
            continue
        if module.startswith("fakeprovider.dialects.") and module != "fakeprovider.dialects.base":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            target.id
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        if "__all__" not in names:
            missing.append(module)
    return missing


# -- the package ---------------------------------------------------------------------------


def test_the_package_keeps_its_layers_and_has_no_import_cycle() -> None:
    assert find_problems(import_graph(PACKAGES), LAYERS) == []


def test_lazy_and_type_checking_imports_of_the_package_are_edges() -> None:
    graph = import_graph(PACKAGES)
    assert "fakeprovider._check_cli" in graph["fakeprovider.cli"]  # inside a function
    assert "fakeprovider.invariants" in graph["fakeprovider._formats"]  # TYPE_CHECKING only


def diagram_layers(text: str) -> dict[str, tuple[str, ...]]:
    """The layers the first code block of ``text`` draws (top first in the text, returned lowest
    first, as ``LAYERS``): each line that starts with a layer name, and the indented lines under
    it, name its modules (``cli``, ``dialects/`` for the package and its modules, ``fakeprovider``
    for the package itself); words in parentheses are comments."""
    block = text.split("```", 2)[1]
    drawn: dict[str, list[str]] = {}
    layer = ""
    for line in block.splitlines():
        words = re.sub(r"\([^)]*\)", "", line).split()
        if not words or words == ["|"]:
            continue
        if not line.startswith(" " * 6):
            layer, words = words[0], words[1:]
        for word in words:
            if word == "dialects/":
                name = "fakeprovider.dialects.*"
            elif word.startswith("fakeprovider"):
                name = word
            else:
                name = f"fakeprovider.{word}"
            drawn.setdefault(layer, []).append(name)
    return {layer: tuple(sorted(drawn[layer])) for layer in reversed(drawn)}


def test_the_diagram_in_docs_architecture_md_is_the_layer_table() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert diagram_layers(text) == {layer: tuple(sorted(names)) for layer, names in LAYERS.items()}


def test_only_adapters_and_the_facade_do_io() -> None:
    libraries = {
        name: libraries_of(path.read_text(encoding="utf-8"))
        for name, (path, _) in discover(PACKAGES).items()
    }
    assert io_problems(libraries, LAYERS) == []


def test_every_public_module_says_what_it_offers_users() -> None:
    assert public_modules_without_all(PACKAGES) == []


def test_io_below_the_adapters_is_named() -> None:
    libraries = {"p.engine": {"json", "asyncio"}, "p.app": {"starlette"}, "p.durations": set()}
    assert io_problems(
        libraries, {"pure": ("p.durations",), "core": ("p.engine",), "adapters": ("p.app",)}
    ) == ["p.engine (core) imports asyncio, which only adapters may use"]


# -- the checker on planted graphs ---------------------------------------------------------

_PLANTED_LAYERS = {
    "pure": ("p.durations",),
    "core": ("p.engine", "p.invariants", "p._rules"),
    "adapters": ("p.app", "p.dialects.*"),
}


def test_a_clean_graph_has_no_problem() -> None:
    graph = {
        "p.durations": set(),
        "p.engine": {"p.durations"},
        "p.invariants": {"p._rules", "p.durations"},
        "p._rules": {"p.durations"},
        "p.app": {"p.engine", "p.dialects.base"},
        "p.dialects.base": {"p.engine"},
    }
    assert find_problems(graph, _PLANTED_LAYERS) == []


def test_an_upward_import_is_named_with_both_layers() -> None:
    graph = {
        "p.durations": set(),
        "p.engine": {"p.app"},
        "p.invariants": set(),
        "p._rules": set(),
        "p.app": set(),
        "p.dialects.base": set(),
    }
    assert find_problems(graph, _PLANTED_LAYERS) == ["p.engine (core) imports p.app (adapters)"]


def test_a_cycle_within_a_layer_is_named_from_its_smallest_module() -> None:
    graph = {
        "p.durations": set(),
        "p.engine": set(),
        "p.invariants": {"p._rules"},
        "p._rules": {"p.engine", "p.invariants"},
        "p.app": set(),
        "p.dialects.base": set(),
    }
    assert find_problems(graph, _PLANTED_LAYERS) == [
        "import cycle: p._rules -> p.invariants -> p._rules"
    ]


def test_a_longer_cycle_is_named_once_along_its_shortest_way_back() -> None:
    graph = {
        "p.durations": set(),
        "p.engine": {"p.invariants"},
        "p.invariants": {"p._rules"},
        "p._rules": {"p.engine", "p.durations"},
        "p.app": set(),
        "p.dialects.base": set(),
    }
    assert find_problems(graph, _PLANTED_LAYERS) == [
        "import cycle: p._rules -> p.engine -> p.invariants -> p._rules"
    ]


def test_a_cycle_across_layers_is_named_with_its_upward_edge() -> None:
    graph = {
        "p.durations": set(),
        "p.engine": {"p.dialects.base"},
        "p.invariants": set(),
        "p._rules": set(),
        "p.app": set(),
        "p.dialects.base": {"p.engine"},
    }
    assert find_problems(graph, _PLANTED_LAYERS) == [
        "p.engine (core) imports p.dialects.base (adapters)",
        "import cycle: p.dialects.base -> p.engine -> p.dialects.base",
    ]


def test_a_module_in_no_layer_and_a_stale_row_are_named() -> None:
    graph = {
        "p.durations": set(),
        "p.engine": set(),
        "p.invariants": set(),
        "p._rules": set(),
        "p.dialects.base": set(),
        "p.webhooks": set(),
    }
    assert find_problems(graph, _PLANTED_LAYERS) == [
        "p.webhooks is in no layer (add it to LAYERS)",
        "p.app is in LAYERS but is no module (remove it)",
    ]


_LAZY_SOURCE = """
from __future__ import annotations
from typing import TYPE_CHECKING
from . import durations
from .dialects import base as dialect_base
import p.journal

if TYPE_CHECKING:
    from .scenario import Scenario

def later() -> None:
    from ._rules import told
"""


@pytest.mark.parametrize(
    ("module", "is_package", "expected"),
    [
        (
            "p.engine",
            False,
            {"p.durations", "p.dialects.base", "p.journal", "p.scenario", "p._rules"},
        ),
        ("p.engine", True, {"p.engine.durations", "p.engine.dialects.base", "p.journal"}),
    ],
)
def test_imports_are_found_at_top_level_in_functions_and_type_checking_blocks(
    module: str, is_package: bool, expected: set[str]
) -> None:
    known = {
        "p",
        "p.durations",
        "p.dialects",
        "p.dialects.base",
        "p.journal",
        "p.scenario",
        "p._rules",
        "p.engine",
        "p.engine.durations",
        "p.engine.dialects.base",
    }
    assert imports_of(module, _LAZY_SOURCE, is_package, known) == expected

"""The shape of selp's imports: no cycles, no library module driving a CLI, no private names
borrowed from another module.

Every module of ``selp/`` is parsed (not imported: no Spark, no JVM) and every ``import`` in it,
at module level or inside a function, is an edge of the module graph -- a function-level import
still ties the two modules together, it only hides the cycle until the function runs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from helpers.paths import ROOT
from selp.scc import strongly_connected

PACKAGE = ROOT / "selp"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
# compiled extension modules (their C source sits where the module goes): importable, not parsed
EXTENSIONS: set[str] = {_module_name(p) for p in PACKAGE.rglob("*.c")}


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _is_cli(module: str) -> bool:
    """The command-line modules: the package ``selp.cli``, and ``python -m selp``."""
    return module == "selp.cli" or module.startswith("selp.cli.") or module == "selp.__main__"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(module: str, level: int, target: str | None) -> str:
    """The absolute name of ``from <level dots><target> import ...`` written in ``module``."""
    if level == 0:
        return target or ""
    base = module.split(".") if _is_package(module) else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """``(imported module, imported name or None, line)`` for every import in ``module`` that
    reaches into selp; a ``from`` import of a submodule counts as an import of the submodule."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    out: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.split(".")[0] == "selp"]
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(module, node.level, node.module)
            if source.split(".")[0] != "selp":
                continue
            for a in node.names:
                sub = f"{source}.{a.name}"
                if sub in EXTENSIONS:
                    continue  # compiled code imports nothing of selp: not an edge of the graph
                out.append((sub, None, node.lineno) if sub in MODULES else (source, a.name, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m in MODULES:
        for target, _, _ in _imports(m):
            if target in MODULES and target != m:
                graph[m].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component with more than one module."""
    components = strongly_connected(sorted(graph), lambda v: sorted(graph[v]))
    return [_a_cycle(graph, set(c)) for c in components if len(c) > 1]


def _a_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A concrete cycle inside a strongly connected component, as a path back to its start."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:  # breadth first: the shortest way back to start
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"not a cycle: {sorted(component)}")  # pragma: no cover


def test_modules_found() -> None:
    assert "selp.cli" in MODULES and "selp.cli.root" in MODULES and "selp.engines.spark" in MODULES


def test_the_command_line_is_one_package() -> None:
    # every command module lives in selp/cli/, where the import rules below recognise it
    stray = [m for m in MODULES if not _is_cli(m) and m.rsplit(".", 1)[-1] in ("cli", "cli_params")]
    assert not stray, f"command-line modules outside selp/cli: {stray}"
    assert _is_cli("selp.cli.cdss") and _is_cli("selp.__main__") and not _is_cli("selp.cdss.store")


def test_no_import_cycles() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_library_does_not_import_cli() -> None:
    bad = [
        f"{m} (line {line}) imports {target}"
        for m in MODULES
        if not _is_cli(m)
        for target, _, line in _imports(m)
        if target in MODULES and _is_cli(target)
    ]
    assert not bad, "library modules importing a CLI module:\n" + "\n".join(bad)


def test_no_private_names_imported() -> None:
    # a module whose own name starts with "_" (selp.topk._kernel) may be imported; a private
    # name defined in another module may not
    bad = [
        f"{m} (line {line}) imports {name} from {target}"
        for m in MODULES
        for target, name, line in _imports(m)
        if name is not None and _is_private(name) and target != m
    ]
    assert not bad, "private names imported from another module:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    ("module", "level", "target", "expected"),
    [
        ("selp.cdss.proql.api", 1, "render", "selp.cdss.proql.render"),
        ("selp.cli.bench", 1, "root", "selp.cli.root"),
        ("selp.cdss.proql.api", 2, "store", "selp.cdss.store"),
        ("selp.cdss", 1, "store", "selp.cdss.store"),
        ("selp.cdss.proql", 1, None, "selp.cdss.proql"),
        ("selp.cli", 0, "selp.errors", "selp.errors"),
    ],
)
def test_relative_imports_resolve(module: str, level: int, target: str | None, expected: str) -> None:
    assert _resolve(module, level, target) == expected


def test_cycle_is_reported_as_a_path() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]

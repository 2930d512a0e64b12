"""No import circles in the service's packages: each module's imports go one way, so a module
can be read, tested and changed knowing only what it imports.

Every ``import`` counts, the ones inside functions too (a lazy import is still a dependency);
importing ``a.b.c`` counts as depending on module ``a.b.c`` only, not on the packages above it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("ai_workers", "engine_service", "clients")


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in (ROOT / package).rglob("*.py"):
        if path.name.endswith(("_pb2.py", "_pb2_grpc.py")):
            continue
        folders = path.relative_to(ROOT).parents[:-1]  # up to the package's own folder
        if any(not (ROOT / folder / "__init__.py").exists() for folder in folders):
            continue  # not a module of the package (e.g. the example plugin project)
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that module ``name`` imports."""
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from this module's package (or one above it)
                package = name.split(".")
                if path.name != "__init__.py":
                    package.pop()
                base = package[: len(package) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:  # `from pkg import module` imports the module
                sub = f"{source}.{alias.name}"
                targets.add(sub if sub in known else source)
    out = set()
    for target in targets:
        while target and target not in known:  # `a.b.attr` -> module `a.b`
            target = target.rpartition(".")[0]
        if target and target != name:
            out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def graph_of(known: dict[str, Path]) -> dict[str, set[str]]:
    return {name: imports(name, path, known) for name, path in known.items()}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycles(package: str) -> None:
    known: dict[str, Path] = {}
    for p in PACKAGES:
        known.update(modules(p))
    graph = graph_of(known)
    inside = [c for c in cycles(graph) if any(m.split(".")[0] == package for m in c)]
    explained = []
    for component in inside:
        edges = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in component]
        explained.append(f"{', '.join(component)}: {'; '.join(edges)}")
    assert not inside, "import cycles:\n" + "\n".join(explained)


def test_the_finder_finds_a_cycle_lazy_imports_included(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from pkg.b import f\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from pkg import a\n")
    (tmp_path / "pkg" / "c.py").write_text("from . import a\nimport pkg.b\n")
    known = {f"pkg.{m}": tmp_path / "pkg" / f"{m}.py" for m in "abc"}
    known["pkg"] = tmp_path / "pkg" / "__init__.py"
    graph = graph_of(known)
    assert graph["pkg.c"] == {"pkg.a", "pkg.b"}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]

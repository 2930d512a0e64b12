"""Is this installation whole? ``python -m engine_service.install_check`` exits 0 when

- every package the product's code imports is one of its declared dependencies: the base
  ones for imports at the top of a module, those of an optional feature's extra (tracing)
  for an import inside a function, so that an installation without extras works (the
  ``dev`` extra's tools never count);
- every runtime module of the product imports in this environment, with the Celery broker's
  Redis transport (which Celery loads only when a worker connects) and hiredis;

else it prints each problem and exits 1. The container image's build runs it, and the test
suite runs it in a fresh virtualenv holding the product without extras
(tests/ai/test_fresh_install.py).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.metadata as md
import importlib.util
import re
import sys
import traceback
from pathlib import Path

DISTRIBUTION = "ascension-engine"
PACKAGES = ("engine_service", "ai_workers", "clients")
# Modules that never run in a deployment, with what provides their imports.
NOT_RUNTIME = {
    "engine_service._build": "the build backend (pyproject.toml, build-system requires)",
    "engine_service.proto_gen": "regenerates the gRPC stubs (grpcio-tools, the dev extra)",
    "ai_workers.bots.fit_value": "fits the value model's weights (numpy, the dev extra)",
    "ai_workers.fit_chances": "fits the scaling of the chances shown (numpy, the dev extra)",
    "clients.web.build": "builds the browser client's page from its sources (Node.js)",
}
# Modules the runtime loads by name, which importing the product does not import.
LOADED_BY_NAME = ("kombu.transport.redis", "hiredis")
# A declared distribution whose modules another one installs (a meta-package).
INSTALLED_THROUGH = {"protobuf-py": ("protobuf-py-pure",)}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> tuple[set[str], set[str]]:
    """(base dependencies, dependencies of the optional features' extras), normalized."""
    base: set[str] = set()
    extras: set[str] = set()
    for requirement in md.requires(DISTRIBUTION) or []:
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
        if match is None:
            continue
        name = _normal(match.group(1))
        marker = requirement.partition(";")[2]
        names = {name, *INSTALLED_THROUGH.get(name, ())}
        if re.search(r"extra\s*==\s*['\"]dev['\"]", marker):
            continue  # the developers' tools
        (extras if "extra ==" in marker else base).update(names)
    return base, extras - base


def sources() -> dict[str, Path]:
    """Every module of the product's packages, by name, from where it is installed."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.submodule_search_locations, package
        root = Path(next(iter(spec.submodule_search_locations)))
        for path in _package_files(root):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _package_files(directory: Path) -> list[Path]:
    """The .py files of a package and of its subpackages (not of other directories in it,
    such as a plugin project kept as an example)."""
    files = sorted(directory.glob("*.py"))
    for sub in sorted(directory.iterdir()):
        if sub.is_dir() and (sub / "__init__.py").exists():
            files += _package_files(sub)
    return files


def _imported(tree: ast.Module) -> list[tuple[str, bool]]:
    """(module name, imported at the top of the module) of each absolute import; for
    ``from a.b import c``, ``a.b.c`` (a module or a name in ``a.b``)."""
    out: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                out.extend((alias.name, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and not child.level and child.module:
                out.extend((f"{child.module}.{alias.name}", top) for alias in child.names)
            inner = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, top and not inner)

    visit(tree, True)
    return out


@functools.cache
def _module_owners() -> dict[str, set[str]]:
    """Module name -> the installed distributions whose files hold it (or a module in it):
    a namespace package such as ``opentelemetry`` has many, ``opentelemetry.sdk`` one."""
    owners: dict[str, set[str]] = {}
    for dist in md.distributions():
        name = _normal(dist.metadata["Name"] or "")
        for file in dist.files or []:
            if file.suffix not in (".py", ".so", ".pyd") or ".." in file.parts:
                continue
            parts = file.with_suffix("").parts
            parts = tuple(p.split(".")[0] for p in parts)  # mod.cpython-311-x86_64.so -> mod
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for i in range(1, len(parts) + 1):
                owners.setdefault(".".join(parts[:i]), set()).add(name)
    return owners


def _owners_of(module: str, owners: dict[str, set[str]]) -> set[str]:
    """The distributions of the longest known prefix of ``module`` (``a.b.name`` -> ``a.b``)."""
    while module:
        if module in owners:
            return owners[module]
        module = module.rpartition(".")[0]
    return set()


def undeclared_imports(modules: dict[str, Path]) -> list[str]:
    base, extras = declared()
    owners = _module_owners()
    own = {*PACKAGES, "__future__"}
    problems: dict[str, None] = {}  # (ordered, without repeats)
    for name, path in sorted(modules.items()):
        if name in NOT_RUNTIME:
            continue
        for module, at_top in _imported(ast.parse(path.read_text(), str(path))):
            top = module.split(".")[0]
            if top in own or top in sys.stdlib_module_names:
                continue
            dists = _owners_of(module, owners)
            allowed = base if at_top else base | extras
            if not dists & allowed:
                where = "at the top of the module" if at_top else "inside a function"
                found = ", ".join(sorted(dists)) or "no installed package"
                kind = "base dependencies" if at_top else "dependencies (extras included)"
                problems[
                    f"{name} imports {module} ({where}), from {found}: not among the {kind} "
                    f"of {DISTRIBUTION}"
                ] = None
    return list(problems)


def unimportable(modules: dict[str, Path]) -> list[str]:
    problems = []
    for name in [*sorted(set(modules) - set(NOT_RUNTIME)), *LOADED_BY_NAME]:
        try:
            importlib.import_module(name)
        except Exception as e:
            last = traceback.extract_tb(e.__traceback__)[-1]
            problems.append(f"import {name}: {type(e).__name__}: {e} ({last.filename}:{last.lineno})")
    return problems


def main() -> int:
    modules = sources()
    missing = sorted(set(NOT_RUNTIME) - set(modules))
    problems = [f"{m} is listed as not run but does not exist" for m in missing]
    problems += undeclared_imports(modules) + unimportable(modules)
    for p in problems:
        print(f"install check: {p}", file=sys.stderr)
    if problems:
        return 1
    count = len(modules) - len(NOT_RUNTIME)
    print(f"install check: {count} modules of {DISTRIBUTION} import, with their dependencies declared")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""docs/architecture.md matches the code: its import rules hold for every module, the names in
its diagrams and text exist, and its list of compiled modules is the build's."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("engine_service", "ai_workers", "clients")
RULES_HEADING = "## The parts and what each may import"


def section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else len(text)]


def import_rules() -> dict[str, set[str]]:
    """part -> the project parts it may import, from the doc's table."""
    rules: dict[str, set[str]] = {}
    for line in section(DOC.read_text(), RULES_HEADING).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not re.fullmatch(r"`[\w.]+`", cells[0]):
            continue
        allowed = set(re.findall(r"`([\w.]+)`", cells[2]))
        assert allowed or cells[2] == "nothing", f"unreadable row: {line}"
        rules[cells[0].strip("`")] = allowed
    return rules


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    """A module, or a package (with or without an ``__init__.py``)."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or any(path.glob("*.py"))


def project_modules() -> Iterator[Path]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "node_modules" not in path.parts and path.read_text().strip():
                yield path  # (an empty __init__.py belongs to no part)


def imports_of(path: Path, source: str | None = None) -> Iterator[tuple[int, str]]:
    """(line, module) for each project module the file imports, at any depth of the code."""
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    tree = ast.parse(path.read_text() if source is None else source, str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            names = [f"{origin}.{a.name}" if is_module(f"{origin}.{a.name}") else origin
                     for a in node.names]  # fmt: skip
        else:
            continue
        for name in names:
            if name.split(".")[0] in PACKAGES:
                yield node.lineno, name


def violations(path: Path, rules: dict[str, set[str]], source: str | None = None) -> list[str]:
    me = part_of(module_name(path), set(rules))
    assert me is not None, f"{path.relative_to(ROOT)} is in no part of docs/architecture.md's table"
    found = []
    for line, target in imports_of(path, source):
        other = part_of(target, set(rules))
        if other is not None and other != me and other not in rules[me]:
            found.append(f"{path.relative_to(ROOT)}:{line}: {me} imports {target} ({other})")
    return found


def part_of(module: str, parts: set[str]) -> str | None:
    """The longest listed part that is the module or a package holding it."""
    holders = [p for p in parts if module == p or module.startswith(p + ".")]
    return max(holders, key=len) if holders else None


def test_the_table_is_read() -> None:
    rules = import_rules()
    assert {"engine_service.rules", "engine_service.server", "clients.sdk", "ai_workers"} <= set(
        rules
    )
    assert rules["engine_service.cards"] == set()
    for part, allowed in rules.items():
        assert is_module(part), f"docs/architecture.md names a part that does not exist: {part}"
        assert allowed <= set(rules), (
            f"{part} may import parts the table does not list: {allowed - set(rules)}"
        )


def test_every_module_keeps_the_import_rules() -> None:
    rules = import_rules()
    broken = [v for path in project_modules() for v in violations(path, rules)]
    assert not broken, "imports the rules of docs/architecture.md forbid:\n" + "\n".join(broken)


def test_the_check_sees_forbidden_imports() -> None:
    """Not blind: the rules importing the server, a client importing the rules (lazily, in a
    function), the engine importing a worker's module: each is reported."""
    rules = import_rules()
    cases = {
        "engine_service/rules/state.py": "from engine_service.server import games\n",
        "clients/terminal/play.py": "def f():\n    from engine_service import rules\n",
        "engine_service/server/dispatch.py": "import ai_workers.runner\n",
        "clients/sdk/sync.py": "from ..terminal import render\n",
    }
    for path, source in cases.items():
        assert violations(ROOT / path, rules, source), (path, source)
    assert not violations(ROOT / "clients/sdk/sync.py", rules, "from engine_service.api import x\n")


def test_the_rules_import_no_clock_randomness_or_io() -> None:
    """The doc's list of modules the rules never import holds for every module of the rules."""
    text = section(DOC.read_text(), RULES_HEADING)
    claim = re.search(r"They import\s+none of (.*?): randomness", text, re.S)
    assert claim, "docs/architecture.md no longer lists what the rules never import"
    banned = set(re.findall(r"`([\w.]+)`", claim.group(1)))
    assert {"time", "random", "os", "socket", "asyncio", "redis", "grpc"} <= banned
    found = []
    for path in sorted((ROOT / "engine_service" / "rules").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])  # fmt: skip
            found += [f"{path.name}: {n}" for n in names if n.split(".")[0] in banned]
    assert not found, found


def defined_methods() -> dict[str, set[str]]:
    """Class name -> its methods, over the project's code."""
    classes: dict[str, set[str]] = {}
    for path in project_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = {
                    n.name
                    for n in node.body
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                classes.setdefault(node.name, set()).update(methods)
    return classes


def test_the_names_in_the_page_exist() -> None:
    """Every `Class.method` of the diagrams and text, every `module:function` and every path."""
    text = DOC.read_text()
    classes = defined_methods()
    calls = set(re.findall(r"(?<![\w/])([A-Z][A-Za-z]+)\.([a-z_]+)\b(?!\.)", text)) - {
        ("README", "md")
    }
    assert ("Games", "submit") in calls and ("Store", "commit") in calls
    missing = [f"{c}.{m}" for c, m in sorted(calls) if m not in classes.get(c, set())]
    assert not missing, f"docs/architecture.md names methods the code does not have: {missing}"
    for module, func in re.findall(r"`([\w.]+):(\w+)`", text):
        path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
        tree = ast.parse(path.read_text())
        assert any(isinstance(n, ast.FunctionDef) and n.name == func for n in tree.body), (
            f"{module}:{func}"
        )
    paths = set(re.findall(r"`((?:[\w.-]+/)+[\w.*-]*)`", text))
    assert "engine_service/server/games.py" in paths
    gone = [p for p in sorted(paths)
            if not any((ROOT / base / p).exists() or list((ROOT / base).glob(p))
                       for base in ("", "engine_service"))]  # fmt: skip
    assert not gone, f"docs/architecture.md names paths that do not exist: {gone}"


def test_the_compiled_modules_are_the_builds() -> None:
    from engine_service import native

    text = section(DOC.read_text(), "## What is compiled")
    bots = re.search(r"`ai_workers/bots`: (.*?) \(", text, re.S)
    assert bots, "the list of the search's compiled modules is gone from docs/architecture.md"
    assert sorted(re.findall(r"`(\w+)`", bots.group(1))) == native.PACKAGES["ai_workers/bots"]
    assert "`engine_service/rules`: every module but `__init__`" in text
    rules = sorted(
        p.stem for p in (ROOT / "engine_service" / "rules").glob("*.py") if p.stem != "__init__"
    )
    assert native.PACKAGES["engine_service/rules"] == rules

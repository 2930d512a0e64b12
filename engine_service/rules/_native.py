"""Which build of the rules runs: the modules compiled by mypyc (``engine_service/_build.py``) or their Python
sources.

The compiled modules lie beside their sources, and Python would import them first, also
after a source was edited (an editable install, a checkout of another commit): the rules
would then silently be others than the code says. So the build writes a manifest of the
sources it compiled (their SHA-256), and the compiled modules are used only when every one is
there and every source is still the one compiled; otherwise the Python sources are imported,
with a warning that says why. ``ASCENSION_PURE_PYTHON=1`` chooses the sources (debugging,
profiling Python code, comparing the two builds). Either way the rules are the same: the
sources are the spec, the compiled modules their translation (tests/rules/test_native.py
plays games in both and compares every state).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE = "engine_service.rules"
HERE = Path(__file__).resolve().parent
MANIFEST = "_native.json"  # written by _build.py beside the compiled modules
PURE_ENV = "ASCENSION_PURE_PYTHON"
COMPILED, PYTHON = "compiled", "python"


def source_digest(path: Path) -> str:
    """The SHA-256 of a source; "" when it cannot be read (deleted: no longer the one compiled)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def compiled_file(module: str) -> Path | None:
    """The compiled module ``module`` of this package for this interpreter, if built."""
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        p = HERE / f"{module}{suffix}"
        if p.exists():
            return p
    return None


def _manifest() -> dict[str, Any]:
    try:
        manifest: dict[str, Any] = json.loads((HERE / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return manifest


def unavailable() -> str:
    """Why the compiled modules may not be used: "" when they may."""
    manifest = _manifest()
    if not manifest:
        built = any(compiled_file(p.stem) for p in HERE.glob("*.py"))
        return f"compiled modules without {MANIFEST}" if built else "no compiled build"
    group = manifest.get("group", "")
    if not group or importlib.util.find_spec(group) is None:
        return f"their shared library {group or '(unnamed)'} is missing"
    modules: dict[str, str] = manifest.get("modules", {})
    missing = [m for m in modules if compiled_file(m) is None]
    if missing:
        return f"not every module was compiled (missing: {', '.join(sorted(missing))})"
    edited = [m for m, d in modules.items() if source_digest(HERE / f"{m}.py") != d]
    if edited:
        return f"{', '.join(sorted(edited))} changed since they were compiled"
    return ""


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Imports this package's modules from their ``.py`` files, passing over compiled ones."""

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, module = fullname.rpartition(".")
        source = HERE / f"{module}.py"
        if package != PACKAGE or not source.exists():
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def choose() -> str:
    """Choose the build (before any module of the package is imported) and return which:
    ``"compiled"`` or ``"python"``."""
    pure = os.environ.get(PURE_ENV, "") not in ("", "0")
    why = f"{PURE_ENV} is set" if pure else unavailable()
    if not why:
        return COMPILED
    if any(compiled_file(p.stem) for p in HERE.glob("*.py")):
        sys.meta_path.insert(0, _SourcesFirst())
        if not pure:
            warnings.warn(
                f"{PACKAGE}: running the Python sources, not the compiled modules beside them:"
                f" {why}. Rebuild them with `pip install -e .` (or set {PURE_ENV}=1)",
                RuntimeWarning,
                stacklevel=2,
            )
    return PYTHON

"""Which build of a package runs: the modules compiled by mypyc (``engine_service/_build.py``)
or their Python sources.

Two packages have compiled modules, built together as one mypyc library: the rules
(``engine_service.rules``) and the bots' search (``ai_workers.bots``: ISMCTS and what it calls
on every iteration). The compiled modules lie beside their sources, and Python would import
them first, also after a source was edited (an editable install, a checkout of another
commit): the code run would then silently be other than the code read. So the build writes,
in each package, a manifest of the sources it compiled (their SHA-256), and a package's
compiled modules are used only when every one is there and every source is still the one
compiled; otherwise its Python sources are imported, with a warning that says why.

The search's compiled modules call the compiled rules directly (one library), so they are used
only when the rules' are. ``ASCENSION_PURE_PYTHON=1`` chooses the sources of both (debugging,
profiling Python code, comparing the builds). Either way the code is the same: the sources are
the spec, the compiled modules their translation (tests/rules/test_native.py plays games in
both builds and compares every state; tests/bots/test_native_search.py compares searches).
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
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

MANIFEST = "_native.json"  # written by _build.py beside each package's compiled modules
GROUP = "ascension__mypyc"  # mypyc's shared library of the compiled modules
ROOT = Path(__file__).resolve().parent.parent  # the source tree, in an editable install
# The packages' compiled modules: every module of the rules but the package's __init__ (it
# chooses the build when imported), and the search's (the bots' other modules decide in well
# under a millisecond, or run searches in other processes).
PACKAGES = {
    "engine_service/rules": sorted(
        p.stem for p in (ROOT / "engine_service/rules").glob("[!_]*.py")
    ),
    "ai_workers/bots": [
        "evaluation",
        "expert",
        "ismcts",
        "knowledge",
        "policy",
        "sampling",
        "seeding",
    ],
}
SOURCES = [f"{package}/{m}.py" for package, modules in PACKAGES.items() for m in modules]
PURE_ENV = "ASCENSION_PURE_PYTHON"
COMPILED, PYTHON = "compiled", "python"


def source_digest(path: Path) -> str:
    """The SHA-256 of a source; "" when it cannot be read (deleted: no longer the one compiled)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


@dataclass(frozen=True)
class CompiledPackage:
    """A package whose modules may run compiled: its name and its directory."""

    name: str
    here: Path

    def compiled_file(self, module: str) -> Path | None:
        """The compiled module ``module`` of this package for this interpreter, if built."""
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            p = self.here / f"{module}{suffix}"
            if p.exists():
                return p
        return None

    def _manifest(self) -> dict[str, Any]:
        try:
            manifest: dict[str, Any] = json.loads((self.here / MANIFEST).read_text())
        except (OSError, ValueError):
            return {}
        return manifest

    def _any_compiled(self) -> bool:
        return any(self.compiled_file(p.stem) for p in self.here.glob("*.py"))

    def unavailable(self) -> str:
        """Why the compiled modules may not be used: "" when they may."""
        manifest = self._manifest()
        if not manifest:
            return (
                f"compiled modules without {MANIFEST}"
                if self._any_compiled()
                else "no compiled build"
            )
        group = manifest.get("group", "")
        if not group or importlib.util.find_spec(group) is None:
            return f"their shared library {group or '(unnamed)'} is missing"
        modules: dict[str, str] = manifest.get("modules", {})
        missing = [m for m in modules if self.compiled_file(m) is None]
        if missing:
            return f"not every module was compiled (missing: {', '.join(sorted(missing))})"
        edited = [m for m, d in modules.items() if source_digest(self.here / f"{m}.py") != d]
        if edited:
            return f"{', '.join(sorted(edited))} changed since they were compiled"
        return ""

    def choose(self, requires: str = "") -> str:
        """Choose the build (before any module of the package is imported) and return which:
        ``"compiled"`` or ``"python"``. ``requires``: a reason the compiled modules may not be
        used whatever their state ("" if none: a package they call compiled runs as Python)."""
        pure = os.environ.get(PURE_ENV, "") not in ("", "0")
        why = f"{PURE_ENV} is set" if pure else requires or self.unavailable()
        if not why:
            return COMPILED
        # The sources first even when nothing is compiled yet: a compile that finishes while
        # this process is still importing must not hand it a compiled module
        sys.meta_path.insert(0, _SourcesFirst(self))
        if self._any_compiled() and not pure:
            warnings.warn(
                f"{self.name}: running the Python sources, not the compiled modules beside"
                f" them: {why}. Compile them again with `python -m engine_service.native_build`"
                f" (or set {PURE_ENV}=1)",
                RuntimeWarning,
                stacklevel=2,
            )
        return PYTHON


class _SourcesFirst(importlib.abc.MetaPathFinder):
    """Imports a package's modules from their ``.py`` files, passing over compiled ones."""

    def __init__(self, package: CompiledPackage) -> None:
        self.package = package

    def find_spec(
        self, fullname: str, path: Any = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        package, _, module = fullname.rpartition(".")
        source = self.package.here / f"{module}.py"
        if package != self.package.name or not source.exists():
            return None
        return importlib.util.spec_from_file_location(fullname, source)

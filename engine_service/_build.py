"""The project's build backend (pyproject.toml): setuptools', which also compiles the rules
(engine_service/rules) with mypyc, as C extensions beside their sources.

The rules are the hot path of every SubmitAction and of the bots' search, and compiled they
run about 1.4x faster (docs/scaling.md, "Compiled rules"). Everything else about the package
is in pyproject.toml; this is setuptools' backend with a ``setup()`` call of its own in place
of a setup.py (the top level holds the product's parts only). Without a C compiler, or with
``ASCENSION_BUILD_NATIVE=0``, the package installs as pure Python and plays the same games,
slower: each extension is optional, and the manifest that lets the compiled modules be used
(engine_service/rules/_native.py) is written only once all of them are built. Never imported
by the engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from setuptools import build_meta, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent.parent
RULES = "engine_service/rules"
GROUP = "engine_service_rules__mypyc"  # mypyc's shared library of the compiled modules
MANIFEST = "_native.json"
# Every module of the rules but those whose names start with "_": the package's __init__
# (it chooses the build when imported) and _native (the choosing).
SOURCES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / RULES).glob("[!_]*.py"))


def _say(message: str) -> None:
    print(f"ascension-engine build: {message}", file=sys.stderr)


class BuildRules(build_ext):
    """build_ext, then the manifest of what was compiled (none unless every module was)."""

    def run(self) -> None:
        target = ROOT / RULES if self.inplace else Path(self.build_lib) / RULES
        # An earlier build's manifest would vouch for this build: gone until this one is done
        (target / MANIFEST).unlink(missing_ok=True)
        super().run()
        built = [Path(self.get_ext_fullpath(e.name)) for e in self.extensions]
        if not built or not all(p.exists() for p in built):
            _say("the rules were not compiled: they run as Python (slower, the same games)")
            return
        digests = {
            Path(s).stem: hashlib.sha256((ROOT / s).read_bytes()).hexdigest() for s in SOURCES
        }
        target.mkdir(parents=True, exist_ok=True)
        (target / MANIFEST).write_text(json.dumps({"group": GROUP, "modules": digests}, indent=1))


def _extensions() -> list[Any]:
    if os.environ.get("ASCENSION_BUILD_NATIVE", "1") == "0":
        _say("ASCENSION_BUILD_NATIVE=0: the rules stay Python")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _say("no mypyc (the mypy package) to compile the rules with: they stay Python")
        return []
    extensions: list[Any] = mypycify(SOURCES, group_name=GROUP.removesuffix("__mypyc"))
    for e in extensions:
        e.optional = True  # no compiler: a warning and pure Python, not a failed install
    return extensions


class _Backend(build_meta._BuildMetaBackend):
    def run_setup(self, setup_script: str = "setup.py") -> None:
        setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildRules})


# The hooks of PEP 517 and PEP 660, as setuptools.build_meta names them
_BACKEND = _Backend()
get_requires_for_build_wheel = _BACKEND.get_requires_for_build_wheel
get_requires_for_build_sdist = _BACKEND.get_requires_for_build_sdist
prepare_metadata_for_build_wheel = _BACKEND.prepare_metadata_for_build_wheel
build_wheel = _BACKEND.build_wheel
build_sdist = _BACKEND.build_sdist
get_requires_for_build_editable = _BACKEND.get_requires_for_build_editable
prepare_metadata_for_build_editable = _BACKEND.prepare_metadata_for_build_editable
build_editable = _BACKEND.build_editable

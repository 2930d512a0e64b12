"""The project's build backend (pyproject.toml): setuptools', which also compiles the rules
(engine_service/rules) and the bots' search (ai_workers/bots: ISMCTS and what it calls on
every iteration) with mypyc, as C extensions beside their sources.

The rules are the hot path of every SubmitAction and of the search, and compiled they run
about 1.4x faster; the search compiled with them (one library: it calls them directly)
makes about 1.6x the iterations (docs/notes/2026-12-search-speed.md). Everything else about
the package is in pyproject.toml; this is setuptools' backend with a ``setup()`` call of its
own in place of a setup.py (the top level holds the product's parts only).

A wheel (``pip install .``, the image) is compiled as it is built. An editable install
(``pip install -e .``, the README's quickstart) is not: it installs the sources in seconds,
and the compile runs afterwards, from engine_service/native_build.py (in the background on
the first start of ``ascension``, or at once with ``python -m engine_service.native_build``),
so that a first game never waits minutes for a C compiler on a busy machine. Without a C
compiler, or with ``ASCENSION_BUILD_NATIVE=0``, the package runs as pure Python and plays the
same games, slower: each extension is optional, and the manifests that let the compiled
modules be used (engine_service/native.py) are written only once all of them are built.
Never imported by the engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from setuptools import Extension, build_meta, setup
from setuptools.command.build_ext import build_ext

# (stdlib only: importable while building)
from engine_service.native import GROUP, MANIFEST, PACKAGES, ROOT, SOURCES

# mypy brings mypyc, pinned: the C it writes is its own. Asked for only by builds that
# compile (a wheel's), not by an editable install's: that one must take seconds.
COMPILER_REQUIRES = ["mypy==2.4.1"]
_DEFERRED = [False]  # an editable install's build: nothing compiled now
_STARTED = [0.0]  # when _extensions began compiling (time.monotonic)
# The SHA-256 of each source, read before mypyc reads them: the manifest vouches for the
# sources that were compiled, not for whatever is there once the compile ends
_DIGESTS: dict[str, dict[str, str]] = {}


def _say(message: str) -> None:
    """A line for whoever runs the install. pip shows a build backend's output only with -v,
    so it goes to the terminal pip runs in when there is one, and to stderr otherwise (a log,
    CI)."""
    line = f"ascension-engine build: {message}\n"
    try:
        with open("/dev/tty", "w") as tty:  # no controlling terminal: OSError
            tty.write("\n" + line)  # below pip's "Building editable ..." line
        return
    except OSError:
        pass
    sys.stderr.write(line)
    sys.stderr.flush()


class BuildNative(build_ext):
    """build_ext, then each package's manifest of what was compiled (none unless every module
    of both was: the search's compiled modules call the rules' directly)."""

    def build_extension(self, ext: Any) -> None:
        # mypyc writes one C file per module (multi_file): compile them on every core at once
        # (a 2-core machine builds in about half the time of one file on one core)
        compiler = self.compiler
        one_by_one = compiler.compile

        def compile_parallel(sources: list[str], *args: Any, **kwargs: Any) -> list[str]:
            if len(sources) < 2:
                return list(one_by_one(sources, *args, **kwargs))
            biggest_first = sorted(sources, key=lambda s: -os.path.getsize(s))
            with ThreadPoolExecutor(_cores()) as pool:
                done = dict(zip(biggest_first, pool.map(
                    lambda s: one_by_one([s], *args, **kwargs), biggest_first
                ), strict=True))  # fmt: skip
            return [o for s in sources for o in done[s]]  # the link keeps the sources' order

        compiler.compile = compile_parallel
        try:
            super().build_extension(ext)
        finally:
            del compiler.compile  # the class's method again

    def run(self) -> None:
        if _DEFERRED[0]:
            return  # an editable install: compiled afterwards (engine_service/native_build.py)
        base = ROOT if self.inplace else Path(self.build_lib)
        # An earlier build's manifests would vouch for this build: gone until this one is done
        for package in PACKAGES:
            (base / package / MANIFEST).unlink(missing_ok=True)
        super().run()
        built = [Path(self.get_ext_fullpath(e.name)) for e in self.extensions]
        if not built or not all(p.exists() for p in built):
            _say(
                "the rules and the search were not compiled: they run as Python (slower, the same games)"
            )
            return
        for package in PACKAGES:
            (base / package).mkdir(parents=True, exist_ok=True)
            manifest = {"group": GROUP, "modules": _DIGESTS[package]}
            (base / package / MANIFEST).write_text(json.dumps(manifest, indent=1))
        _say(f"compiled in {time.monotonic() - _STARTED[0]:.0f} s")


def _extensions(editable: bool) -> list[Any]:
    if editable:
        _say(
            "installed as Python, in seconds; the rules and the bots' search are compiled to C "
            "afterwards (in the background on the first start of `ascension`, or now with "
            "`python -m engine_service.native_build`)"
        )
        # Not built, only named: the editable install's import map then holds the shared
        # library's name, and finds it once native_build has put it beside the sources
        _DEFERRED[0] = True
        return [Extension(GROUP, sources=[], optional=True)]
    if os.environ.get("ASCENSION_BUILD_NATIVE", "1") == "0":
        _say("ASCENSION_BUILD_NATIVE=0: the rules and the search stay Python")
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _say("no mypyc (the mypy package) to compile with: the rules and the search stay Python")
        return []
    _STARTED[0] = time.monotonic()
    _DIGESTS.clear()
    for package, modules in PACKAGES.items():
        _DIGESTS[package] = {
            m: hashlib.sha256((ROOT / package / f"{m}.py").read_bytes()).hexdigest()
            for m in modules
        }
    _say(
        f"compiling the rules and the bots' search to C with mypyc on {_cores()} core(s), "
        "about 1-2 minutes on an idle 2-core machine, 3-5 under load (ASCENSION_BUILD_NATIVE=0 "
        "skips it: the same games, slower)"
    )
    # multi_file: one C file per module, compiled in parallel (BuildNative.build_extension)
    extensions: list[Any] = mypycify(
        SOURCES, group_name=GROUP.removesuffix("__mypyc"), multi_file=True
    )
    for e in extensions:
        e.optional = True  # no compiler: a warning and pure Python, not a failed install
    return extensions


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class _Backend(build_meta._BuildMetaBackend):
    def run_setup(self, setup_script: str = "setup.py") -> None:
        # pip asks for the build's requirements and its metadata before it builds, each a
        # setup() of its own: only a build needs the C (mypyc writes it in 20-30 s)
        metadata_only = bool({"egg_info", "dist_info"} & set(sys.argv[1:]))
        editable = "editable_wheel" in sys.argv[1:]
        extensions = [] if metadata_only else _extensions(editable)
        setup(ext_modules=extensions, cmdclass={"build_ext": BuildNative})


# The hooks of PEP 517 and PEP 660, as setuptools.build_meta names them
_BACKEND = _Backend()


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    compiles = os.environ.get("ASCENSION_BUILD_NATIVE", "1") != "0"
    requires: list[str] = _BACKEND.get_requires_for_build_wheel(config_settings)
    return requires + (COMPILER_REQUIRES if compiles else [])


get_requires_for_build_sdist = _BACKEND.get_requires_for_build_sdist
prepare_metadata_for_build_wheel = _BACKEND.prepare_metadata_for_build_wheel
build_wheel = _BACKEND.build_wheel
build_sdist = _BACKEND.build_sdist
get_requires_for_build_editable = _BACKEND.get_requires_for_build_editable
prepare_metadata_for_build_editable = _BACKEND.prepare_metadata_for_build_editable
build_editable = _BACKEND.build_editable

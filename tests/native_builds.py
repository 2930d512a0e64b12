"""Fresh interpreters choosing a build (engine_service/native.py): for the tests that compare
the compiled modules with their Python sources (tests/rules/test_native.py,
tests/bots/test_native_search.py). A process imports one build only, hence a process each."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from engine_service import native
from engine_service.native import GROUP  # mypyc's shared library of the compiled modules

ROOT = Path(__file__).resolve().parents[1]


def run(
    code: str, *args: str, pure: bool = False, path: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -c code args`` from the repository, or with ``path`` first on its path;
    ``pure``: with ASCENSION_PURE_PYTHON=1 (else without it)."""
    env = {k: v for k, v in os.environ.items() if k != native.PURE_ENV}
    if pure:
        env[native.PURE_ENV] = "1"
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=240,
        cwd=path or ROOT,
    )  # fmt: skip


def copy_of_the_packages(tmp_path: Path, *packages: str) -> Path:
    """``packages`` (sources and compiled modules) and mypyc's shared library, elsewhere."""
    spec = importlib.util.find_spec(GROUP)
    assert spec is not None and spec.origin is not None
    for package in packages:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(spec.origin, tmp_path)
    return tmp_path

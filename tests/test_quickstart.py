"""The quickstart's pieces: the build's lines reach a person even though pip hides a build
backend's output, and tests/dev-venv installs exactly the development extras."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parents[1]
SAY = "from engine_service._build import _say; _say('compiling, about 1-2 minutes')"


def test_the_build_speaks_to_the_terminal_pip_runs_in() -> None:
    """pip captures the backend's stdout and stderr; the line goes to the terminal itself."""
    child = pexpect.spawn(
        "bash", ["-c", f"{sys.executable} -c \"{SAY}\" >/dev/null 2>/dev/null"],
        cwd=str(ROOT), encoding="utf-8", timeout=60,
    )  # fmt: skip
    child.expect(pexpect.EOF)
    assert "ascension-engine build: compiling, about 1-2 minutes" in (child.before or "")


def test_without_a_terminal_the_build_writes_to_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SAY], cwd=ROOT, capture_output=True, text=True, timeout=60,
        start_new_session=True,  # no controlling terminal, as in CI or a log
    )  # fmt: skip
    assert done.returncode == 0
    assert "ascension-engine build: compiling, about 1-2 minutes" in done.stderr


def test_the_dev_extras_are_listed_with_the_extras_they_name() -> None:
    done = subprocess.run(
        [sys.executable, "tests/dev_requirements.py"], cwd=ROOT, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    reqs = done.stdout.split("\n")
    assert done.returncode == 0
    assert any(r.startswith("pytest") for r in reqs) and any(r.startswith("pexpect") for r in reqs)
    # "ascension-engine[tracing]" becomes the tracing extra's own list
    assert not any(r.startswith("ascension-engine") for r in reqs)
    assert any(r.startswith("opentelemetry-sdk") for r in reqs)
    # the venv this test runs in has them all
    stamp = ROOT / ".venv" / "ascension-dev-extras"
    if stamp.exists() and Path(sys.prefix).resolve() == (ROOT / ".venv").resolve():
        check = subprocess.run(
            [sys.executable, "tests/dev_requirements.py", "--check", str(stamp)], cwd=ROOT,
            timeout=60,
        )  # fmt: skip
        assert check.returncode == 0


def test_the_readme_installs_what_playing_needs() -> None:
    text = (ROOT / "README.md").read_text()
    quickstart = text[text.index("## Quickstart") :]
    first = quickstart[
        quickstart.index("```sh") + 6 : quickstart.index("```", quickstart.index("```sh") + 6)
    ]
    assert "pip install -e . " in first and "[dev]" not in first
    assert "ascension play" in first


def test_an_editable_install_asks_for_no_compiler_and_a_wheel_does() -> None:
    """The quickstart's `pip install -e .` must take seconds: it does not even install mypy
    (the compile comes afterwards, engine_service/native_build.py); a wheel compiles."""
    code = (
        "import json; from engine_service import _build as b; "
        "print(json.dumps([b.get_requires_for_build_editable(), b.get_requires_for_build_wheel()]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    editable, wheel = json.loads(done.stdout.strip().splitlines()[-1])
    assert not any(r.startswith("mypy") for r in editable), editable
    assert any(r.startswith("mypy==") for r in wheel), wheel


def test_the_first_start_of_an_uncompiled_checkout_compiles_in_the_background(
    tmp_path: Path,
) -> None:
    """What `ascension` does on its first start: in a checkout with nothing compiled, one
    compile is started in the background (a second start while it runs starts none), and a
    compile that failed for these sources is not started again by itself."""
    code = (
        "import sys, json, unittest.mock as m\n"
        "from engine_service import native_build as nb\n"
        "calls = []\n"
        "with m.patch.object(nb.subprocess, 'Popen', lambda *a, **k: calls.append(a[0])):\n"
        "    first = nb.start_in_background()\n"
        "    nb.FAILED.parent.mkdir(parents=True, exist_ok=True)\n"
        "    nb.FAILED.write_text(nb.sources_digest())\n"
        "    again = nb.start_in_background()\n"
        "print(json.dumps([first, again, calls]))\n"
    )
    tree = tmp_path / "tree"
    for part in ("engine_service", "ai_workers"):
        shutil.copytree(
            ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__", "*.so", "_native.json")
        )  # fmt: skip
    shutil.copy(ROOT / "pyproject.toml", tree)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("ASCENSION_PURE_PYTHON", "ASCENSION_BUILD_NATIVE")
    }
    env["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, again, calls = json.loads(done.stdout.strip().splitlines()[-1])
    assert "being compiled in the background" in first and "next start" in first
    assert len(calls) == 1 and calls[0][-2:] == ["engine_service.native_build", "--background"]
    assert "compile failed" in again and "native_build" in again

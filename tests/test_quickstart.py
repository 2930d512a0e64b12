"""The quickstart's pieces: the build's lines reach a person even though pip hides a build
backend's output, and tests/dev-venv installs exactly the development extras."""

from __future__ import annotations

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

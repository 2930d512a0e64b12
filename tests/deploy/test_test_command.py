"""The README's two commands are everything a newcomer runs: the set-up command, then
`tests/run`, which brings the system tools the tests need; `.ci/run` calls the same script."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib

from tests.deploy.deploy_support import REPO

TESTS_RUN = REPO / "tests" / "run"


def test_readme_test_command_is_tests_run() -> None:
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.S)
    commands = [line.strip() for block in blocks for line in block.splitlines()]
    assert "tests/run" in commands
    assert not any(c.startswith(".venv/bin/python -m pytest") for c in commands), (
        "the README must not offer a test command that skips tests/run's set-up"
    )


def test_ci_calls_tests_run_last() -> None:
    lines = [
        line.strip()
        for line in (REPO / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    assert lines[-1] == "tests/run"
    assert not any("-m pytest" in line for line in lines)


def test_tests_run_brings_every_tool_the_tests_need() -> None:
    assert os.access(TESTS_RUN, os.X_OK), "tests/run must be executable"
    script = TESTS_RUN.read_text()
    subprocess.run(["bash", "-n", str(TESTS_RUN)], check=True)
    assert "set -euo pipefail" in script
    for tool, install in (
        ("redis-server", "apt_install redis-server"),
        ("promtool", "apt_install prometheus"),
        (".ci/buf/node_modules/.bin/buf", "npm ci"),
    ):
        assert tool in script and install in script, tool
    assert script.rstrip().endswith(
        'exec .venv/bin/python -m pytest -q -n "${TESTS_WORKERS:-3}" --dist loadfile "$@"'
    )


def test_tests_run_passes_its_arguments_to_pytest() -> None:
    """With the tools present it installs nothing and runs pytest with the arguments given."""
    result = subprocess.run(
        [str(TESTS_RUN), "--collect-only", "-q", "tests/deploy/test_test_command.py"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=REPO,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"tests/deploy/test_test_command.py: \d+", result.stdout)
    assert "installing" not in result.stdout


def test_license_is_the_mit_license_pyproject_names() -> None:
    with (REPO / "pyproject.toml").open("rb") as handle:
        assert tomllib.load(handle)["project"]["license"] == "MIT"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text

"""The product's top level is fixed: tools the tests or CI need live under .ci/ (buf's npm
project: .ci/buf) or next to what they check (proto/buf.yaml), not at the root."""

from __future__ import annotations

import subprocess

from tests.deploy.deploy_support import REPO

TOP_LEVEL = {
    "pyproject.toml",
    "README.md",
    "LICENSE",
    "proto",
    "engine_service",
    "ai_workers",
    "clients",
    "deploy",
    "tests",
    "benchmarks",
    "docs",  # the guides the README links to
    ".ci",
}


def test_the_top_level_holds_only_the_products_parts() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], capture_output=True, text=True, check=True, cwd=REPO, timeout=60
    ).stdout.split()
    top = {path.split("/", 1)[0] for path in tracked}
    extra = {name for name in top - TOP_LEVEL if not name.startswith(".")}
    assert not extra, f"not part of the product's top level: {sorted(extra)} (tools go in .ci/)"
    assert {"proto/buf.yaml", ".ci/buf/package.json", ".ci/buf/package-lock.json"} <= set(tracked)

"""Proto hygiene: `buf lint` and `buf breaking` on the module proto/ (its buf.yaml; buf from
npm).

tests/run installs buf into .ci/buf with `npm ci` (.ci/buf/package.json pins @bufbuild/buf)
when .ci/buf/node_modules/.bin/buf is missing. The breaking-change baseline is the proto of the
previous release: the newest git tag `v*`, or before the first release the commit that first
published ascension.v1 (docs/operations.md, "Proto hygiene").
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped, unused-ignore]

from tests.deploy.deploy_support import REPO

BUF = REPO / ".ci" / "buf" / "node_modules" / ".bin" / "buf"
MODULE = REPO / "proto"  # the buf module: proto/buf.yaml, imports relative to proto/
FIRST_PROTO = "proto/ascension/v1/engine.proto"

# The STANDARD findings buf.yaml records as exceptions (rule, symbol named in the message):
# each is a rename that would break today's clients (reasons in buf.yaml).
ACCEPTED_FINDINGS = {
    ("SERVICE_SUFFIX", '"Engine"'),
    ("RPC_RESPONSE_STANDARD_NAME", '"GameView"'),
    ("RPC_RESPONSE_STANDARD_NAME", '"GameUpdate"'),
    ("RPC_RESPONSE_STANDARD_NAME", '"Replay"'),
    ("RPC_RESPONSE_STANDARD_NAME", '"DecisionReview"'),
    ("ENUM_ZERO_VALUE_SUFFIX", '"VIEW_DETAIL_FULL"'),
    ("ENUM_VALUE_PREFIX", '"HUMAN"'),
    ("ENUM_VALUE_PREFIX", '"AI"'),
}


@pytest.fixture(scope="module")
def buf() -> str:
    assert BUF.exists(), "buf is missing: run tests/run (it runs `npm ci` in .ci/buf)"
    return str(BUF)


def run(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=120, check=False, cwd=cwd
    )


def git(*argv: str) -> str:
    return run("git", *argv).stdout.strip()


def baseline_ref() -> str:
    """The previous release: the newest tag v*, else the commit that added ascension.v1."""
    tags = git("tag", "--list", "v*", "--sort=-v:refname", "--merged", "HEAD").split()
    if tags:
        return tags[0]
    assert git("rev-parse", "--is-shallow-repository") == "false", (
        "buf breaking needs the history (the first published proto): fetch with full depth"
    )
    added = git("log", "--diff-filter=A", "--format=%H", "--", FIRST_PROTO).split()
    assert added, f"no commit adds {FIRST_PROTO}"
    return added[-1]


def extract_proto(ref: str, into: Path) -> Path:
    """proto/ as it was at `ref` (git archive works in worktrees and plain clones), a module of
    its own: proto/buf.yaml came later, and without one buf would look for a configuration in
    the directories above (any buf.yaml left in /tmp)."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", ref, "proto"],
        capture_output=True,
        check=True,
        cwd=REPO,
        timeout=60,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    config = into / "proto" / "buf.yaml"
    if not config.exists():
        config.write_text("version: v2\n")
    return into / "proto"


def findings(result: subprocess.CompletedProcess[str]) -> set[tuple[str, str]]:
    out = set()
    for line in result.stdout.splitlines():
        item = json.loads(line)
        symbol = item["message"].split(" should ")[0].rsplit(" ", 1)[-1]
        out.add((item["type"], symbol))
    return out


def test_buf_lint_passes(buf: str) -> None:
    result = run(buf, "lint", "proto")
    assert result.returncode == 0, result.stdout + result.stderr


def test_lint_exceptions_are_exactly_the_recorded_ones(buf: str) -> None:
    """Without buf.yaml's ignore_only, STANDARD finds the recorded exceptions and nothing
    else: a new violation in an excepted file is not hidden by the file-wide exception."""
    config = yaml.safe_load((MODULE / "buf.yaml").read_text())
    ignored = config["lint"].pop("ignore_only")
    assert set(ignored) == {rule for rule, _ in ACCEPTED_FINDINGS}
    # A --config is a module at the working directory: run in proto/.
    result = run(buf, "lint", "--config", json.dumps(config), "--error-format", "json", cwd=MODULE)
    assert result.returncode != 0, "STANDARD found nothing: drop the exceptions from buf.yaml"
    assert findings(result) == ACCEPTED_FINDINGS


def test_buf_breaking_against_the_previous_release(buf: str, tmp_path: Path) -> None:
    baseline = extract_proto(baseline_ref(), tmp_path)
    result = run(buf, "breaking", "proto", "--against", str(baseline))
    assert result.returncode == 0, (
        f"proto/ breaks the API of {baseline_ref()}:\n{result.stdout}{result.stderr}"
    )


def test_buf_breaking_detects_a_breaking_change(buf: str, tmp_path: Path) -> None:
    baseline = extract_proto(baseline_ref(), tmp_path / "base")
    changed = tmp_path / "changed"
    shutil.copytree(MODULE, changed / "proto")  # with its buf.yaml
    engine = changed / FIRST_PROTO
    engine.write_text(engine.read_text().replace("string game_id = 1;", "string match_id = 1;"))
    result = run(buf, "breaking", "proto", "--against", str(baseline), cwd=changed)
    assert result.returncode != 0
    assert "changed name from" in result.stdout

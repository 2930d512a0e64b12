"""The compiled search (engine_service/_build.py compiles it with the rules) against its Python
sources (engine_service/native.py).

Compiled, the search must decide exactly as the sources do, and must not be used once a source
differs from what was compiled, nor with the rules as Python (the compiled search calls the
compiled rules directly). Each check runs in fresh interpreters, since a process imports one
build only. Where the package was installed without a C compiler there is nothing compiled to
check: those tests skip, saying so (.ci/run requires the compiled build before the suite).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ai_workers.bots as bots
from engine_service import native
from tests.native_builds import copy_of_the_packages, run

needs_compiled = pytest.mark.skipif(
    bool(bots.NATIVE.unavailable()),
    reason=f"the compiled search cannot be used here: {bots.NATIVE.unavailable()}",
)

# The golden searches (six positions, two seeds, 200 iterations: root action, visits, values
# and tree size), in whichever build the interpreter chooses.
SEARCHES = r"""
import json, warnings
warnings.simplefilter("error")  # a build chosen with a warning is no clean build
import ai_workers.bots as bots
from tests.bots.test_search_golden import _canonical, searches
print(json.dumps([bots.BUILD, _canonical(searches())]))
"""

WHICH = r"""
import json
from engine_service import rules
import ai_workers.bots as bots
import ai_workers.bots.ismcts as ismcts
print(json.dumps([rules.BUILD, bots.BUILD, ismcts.__file__]))
"""


@needs_compiled
def test_compiled_and_python_searches_decide_the_same() -> None:
    compiled, python = run(SEARCHES), run(SEARCHES, pure=True)
    assert compiled.returncode == 0, compiled.stderr
    assert python.returncode == 0, python.stderr
    (cb, c_rows), (pb, p_rows) = json.loads(compiled.stdout), json.loads(python.stdout)
    assert (cb, pb) == ("compiled", "python")
    assert len(c_rows) == 12 and all(r["tree_nodes"] > 1 for r in c_rows)
    assert c_rows == p_rows


def test_pure_python_is_chosen_by_the_environment() -> None:
    out = run(WHICH, pure=True)
    assert out.returncode == 0, out.stderr
    rules_build, search_build, ismcts_file = json.loads(out.stdout)
    assert (rules_build, search_build) == ("python", "python") and ismcts_file.endswith("ismcts.py")
    assert "RuntimeWarning" not in out.stderr  # asked for: no warning


@needs_compiled
def test_an_edited_search_source_is_run_as_python(tmp_path: Path) -> None:
    copy = copy_of_the_packages(tmp_path, "engine_service", "ai_workers")
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[:2] == ["compiled", "compiled"]  # the copy as built
    policy = copy / "ai_workers" / "bots" / "policy.py"
    policy.write_text(policy.read_text() + "\n# edited after the build\n")
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    rules_build, search_build, ismcts_file = json.loads(out.stdout)
    assert (rules_build, search_build) == ("compiled", "python")  # the rules are still theirs
    assert ismcts_file == str(copy / "ai_workers/bots/ismcts.py")
    assert "ai_workers.bots: running the Python sources" in out.stderr
    assert "policy changed since they were compiled" in out.stderr


@needs_compiled
def test_the_search_runs_as_python_with_python_rules(tmp_path: Path) -> None:
    copy = copy_of_the_packages(tmp_path, "engine_service", "ai_workers")
    scoring = copy / "engine_service" / "rules" / "scoring.py"
    scoring.write_text(scoring.read_text() + "\n# edited after the build\n")
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[:2] == ["python", "python"]
    assert "the rules it calls run as Python" in out.stderr


@needs_compiled
def test_a_search_without_its_manifest_is_not_compiled(tmp_path: Path) -> None:
    copy = copy_of_the_packages(tmp_path, "engine_service", "ai_workers")
    (copy / "ai_workers" / "bots" / native.MANIFEST).unlink()
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[:2] == ["compiled", "python"]
    assert f"compiled modules without {native.MANIFEST}" in out.stderr

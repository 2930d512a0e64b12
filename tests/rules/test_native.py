"""The compiled rules (engine_service/_build.py, mypyc) against their Python sources (engine_service/native.py).

The compiled modules must play exactly the games the sources play, and must never be used
once a source differs from what was compiled. Each check runs in fresh interpreters, one
per build, since a process imports one build only. Where the package was installed without
a C compiler there is nothing compiled to check: those tests skip, saying so (.ci/run
requires the compiled build before it runs the suite).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine_service import native, rules
from tests.native_builds import copy_of_the_packages, run

needs_compiled = pytest.mark.skipif(
    bool(rules.NATIVE.unavailable()),
    reason=f"the compiled rules cannot be used here: {rules.NATIVE.unavailable()}",
)

# Plays seeded games of every table size and set, with every seat's legal actions, their
# descriptions, the events, the state's bytes and each seat's view bytes folded into one
# digest: two builds that differ anywhere differ here.
PLAY = r"""
import hashlib, random, sys, warnings
warnings.simplefilter("error")  # a build chosen with a warning is no clean build
from engine_service import rules
from engine_service.rules.view import view_bytes
h = hashlib.sha256()
actions = 0
for game in range(int(sys.argv[1])):
    sets = ("ss", "cotgi", "both")[game % 3]
    players = 2 + game % (3 if sets == "ss" else 5)
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=1000 + game))
    rng = random.Random(game)
    while not s.over:
        legal = rules.legal_actions(s)
        h.update(repr([(a, rules.describe_action(s, a)) for a in legal]).encode())
        a = rng.choice(legal[:-1] if len(legal) > 1 and rng.random() < 0.9 else legal)
        h.update(repr(rules.apply(s, a)).encode())
        raw = rules.serialize(s)
        assert rules.deserialize(raw) == s
        h.update(raw)
        for seat in range(-1, s.n):
            h.update(view_bytes(s, seat))
        actions += 1
    h.update(repr([rules.score_breakdown(s, q) for q in range(s.n)]).encode())
    d = rules.determinize(rules.view(s, 0), seed=game)
    h.update(rules.serialize(d))
print(rules.BUILD, actions, h.hexdigest())
"""

WHICH = r"""
import json
from engine_service import rules
import engine_service.rules.engine as engine
print(json.dumps([rules.BUILD, engine.__file__]))
"""


@needs_compiled
def test_compiled_and_python_builds_play_the_same_games() -> None:
    compiled, python = run(PLAY, "15"), run(PLAY, "15", pure=True)
    assert compiled.returncode == 0, compiled.stderr
    assert python.returncode == 0, python.stderr
    (cb, cn, cd), (pb, pn, pd) = compiled.stdout.split(), python.stdout.split()
    assert (cb, pb) == ("compiled", "python")
    assert int(cn) > 3000  # whole games were played, at every size
    assert (cn, cd) == (pn, pd)


def test_pure_python_is_chosen_by_the_environment() -> None:
    out = run(WHICH, pure=True)
    assert out.returncode == 0, out.stderr
    build, engine_file = json.loads(out.stdout)
    assert build == "python" and engine_file.endswith("engine.py")
    assert "RuntimeWarning" not in out.stderr  # asked for: no warning


@needs_compiled
def test_a_source_edited_after_compiling_is_run_as_python(tmp_path: Path) -> None:
    copy = copy_of_the_packages(tmp_path, "engine_service")
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0] == "compiled"  # the copy as built: compiled
    scoring = copy / "engine_service" / "rules" / "scoring.py"
    scoring.write_text(scoring.read_text() + "\n# edited after the build\n")
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    build, engine_file = json.loads(out.stdout)
    assert build == "python" and engine_file == str(copy / "engine_service/rules/engine.py")
    assert "scoring changed since they were compiled" in out.stderr
    (copy / "engine_service" / "rules" / "scenario.py").unlink()  # a source gone: the same
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0] == "python"
    assert "scenario, scoring changed since they were compiled" in out.stderr


@needs_compiled
def test_compiled_modules_without_their_manifest_are_not_used(tmp_path: Path) -> None:
    copy = copy_of_the_packages(tmp_path, "engine_service")
    (copy / "engine_service" / "rules" / native.MANIFEST).unlink()
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0] == "python"
    assert f"compiled modules without {native.MANIFEST}" in out.stderr


@needs_compiled
def test_a_missing_compiled_module_means_python(tmp_path: Path) -> None:
    copy = copy_of_the_packages(tmp_path, "engine_service")
    so = rules.NATIVE.compiled_file("view")
    assert so is not None
    (copy / "engine_service" / "rules" / so.name).unlink()
    out = run(WHICH, path=copy)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[0] == "python"
    assert "missing: view" in out.stderr

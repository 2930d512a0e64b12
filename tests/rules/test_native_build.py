"""Compiling an editable install after it (engine_service/native_build.py): the compiled modules
go in place with their manifests last, a build missing anything is not put in place, and a
process that chose the Python sources never picks up a compiled module placed while it runs.

The compiled modules come from this checkout's own build, packed as pip's wheel holds them.
"""

from __future__ import annotations

import importlib.machinery
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from engine_service import native, native_build, rules
from tests.native_builds import run

ROOT = Path(__file__).resolve().parents[2]
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
WHICH = r"""
import json, warnings
warnings.simplefilter("error")  # a build chosen with a warning is no clean build
from engine_service import rules
import ai_workers.bots as bots
import engine_service.rules.engine as engine
print(json.dumps([rules.BUILD, bots.BUILD, engine.__file__]))
"""

needs_compiled = pytest.mark.skipif(
    bool(native_build.unavailable()),
    reason=f"nothing compiled here to pack: {native_build.unavailable()}",
)


def wheel_of_this_build(path: Path, leave_out: str = "") -> Path:
    """This checkout's compiled modules and manifests, laid out as in the wheel pip builds."""
    with zipfile.ZipFile(path, "w") as z:
        group = f"{native.GROUP}{SUFFIX}"
        z.write(ROOT / group, group)
        for package, modules in native.PACKAGES.items():
            z.write(ROOT / package / native.MANIFEST, f"{package}/{native.MANIFEST}")
            for m in modules:
                name = f"{package}/{m}{SUFFIX}"
                if name != leave_out:
                    z.write(ROOT / name, name)
    return path


def sources_only(tmp_path: Path) -> Path:
    """The packages' sources, nothing compiled: a fresh editable install."""
    tree = tmp_path / "tree"
    for package in ("engine_service", "ai_workers"):
        shutil.copytree(
            ROOT / package, tree / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.so", native.MANIFEST),
        )  # fmt: skip
    return tree


def compiled_in(tree: Path) -> list[Path]:
    return sorted(tree.rglob("*.so")) + sorted(tree.rglob(native.MANIFEST))


@needs_compiled
def test_a_compiled_build_goes_in_place_and_is_used_from_the_next_start(tmp_path: Path) -> None:
    tree = sources_only(tmp_path)
    out = run(WHICH.replace('simplefilter("error")', 'simplefilter("default")'), path=tree)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[:2] == ["python", "python"]
    assert "RuntimeWarning" not in out.stderr  # nothing compiled yet: nothing to warn about
    assert native_build.unavailable(tree)

    native_build.install(wheel_of_this_build(tmp_path / "a.whl"), tree)
    assert native_build.unavailable(tree) == ""
    out = run(WHICH, path=tree)
    assert out.returncode == 0, out.stderr
    build, search, engine_file = json.loads(out.stdout)
    assert (build, search) == ("compiled", "compiled") and engine_file.endswith(SUFFIX)
    assert not list(tree.rglob("*.part"))  # every file was replaced whole


@needs_compiled
def test_a_build_missing_a_module_is_not_put_in_place(tmp_path: Path) -> None:
    tree = sources_only(tmp_path)
    wheel = wheel_of_this_build(tmp_path / "a.whl", leave_out=f"ai_workers/bots/ismcts{SUFFIX}")
    with pytest.raises(native_build.CompileFailed, match="ismcts"):
        native_build.install(wheel, tree)
    assert compiled_in(tree) == []  # nothing half there


@needs_compiled
def test_a_source_edited_during_the_compile_is_not_vouched_for(tmp_path: Path) -> None:
    tree = sources_only(tmp_path)
    scoring = tree / "engine_service" / "rules" / "scoring.py"
    scoring.write_text(scoring.read_text() + "\n# edited while it compiled\n")
    native_build.install(wheel_of_this_build(tmp_path / "a.whl"), tree)
    assert "scoring changed since they were compiled" in native_build.unavailable(tree)
    out = run(WHICH.replace('simplefilter("error")', 'simplefilter("default")'), path=tree)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)[:2] == ["python", "python"]


@needs_compiled
def test_a_process_running_the_sources_keeps_them_when_a_compile_lands(tmp_path: Path) -> None:
    """The compile finishes while a game runs (its engine chose the sources at start): a module
    it imports afterwards is still the source, not the compiled module just put beside it."""
    tree = sources_only(tmp_path)
    wheel = wheel_of_this_build(tmp_path / "a.whl")
    code = (
        "import sys, json; from pathlib import Path\n"
        "from engine_service import rules, native_build\n"
        "native_build.install(Path(sys.argv[1]), Path(sys.argv[2]))\n"
        "import engine_service.rules.scenario as late\n"
        "print(json.dumps([rules.BUILD, late.__file__]))\n"
    )
    out = run(code, str(wheel), str(tree), path=tree)
    assert out.returncode == 0, out.stderr
    build, late = json.loads(out.stdout)
    assert build == "python" and late == str(tree / "engine_service/rules/scenario.py")


def test_nothing_starts_where_the_build_is_already_the_sources() -> None:
    if rules.NATIVE.unavailable():
        pytest.skip("this checkout is not compiled")
    assert native_build.start_in_background() == ""
    done = native_build.main([])  # the foreground command: nothing to do
    assert done == 0

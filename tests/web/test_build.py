"""The committed TypeScript stubs and built page match a fresh generation and build.

As ``python -m engine_service.proto_gen --check`` does for the Python stubs: a change to
proto/ or to clients/web/app without ``python -m clients.web.build`` fails here.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from clients.web import build
from tests.web.conftest import missing


def test_committed_stubs_and_page_are_up_to_date() -> None:
    if shutil.which("npm") is None:
        missing("npm (Node.js >= 20.19)")
    problems = build.check()
    assert not problems, "run `python -m clients.web.build` and commit:\n" + "\n".join(problems)


def test_differences_finds_added_missing_and_changed_files(tmp_path: Path) -> None:
    committed, fresh = tmp_path / "committed", tmp_path / "fresh"
    for root in (committed, fresh):
        (root / "assets").mkdir(parents=True)
        (root / "index.html").write_text("<html>")
    (committed / "assets" / "old.js").write_text("1")
    (fresh / "assets" / "new.js").write_text("2")
    (fresh / "index.html").write_text("<html lang=en>")
    found = set(build.differences(committed, fresh))
    assert found == {
        "differs: index.html",
        "not built any more (stale?): assets/old.js",
        "missing: assets/new.js",
    }
    assert build.differences(committed, committed) == []


def test_the_built_page_is_package_data() -> None:
    """``pip install`` ships static/ (pyproject package-data): no Node.js needed to serve it."""
    static = Path(build.STATIC)
    assert (static / "index.html").is_file()
    assets = list((static / "assets").iterdir())
    assert any(p.suffix == ".js" for p in assets) and any(p.suffix == ".css" for p in assets)
    text = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '"clients.web" = ["static/*.html", "static/assets/*"]' in text

"""One truth per setting: what docs/bots.md, docs/reliability.md and docs/operations.md say
of the workers' defaults, of a seat's ``time_ms`` 0 and of the liveness command is read from
the code here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ai_workers import config
from ai_workers.bots.settings import DEFAULT_TIME_MS, MAX_TIME_MS
from ai_workers.cli import build_parser
from tests.deploy.deploy_support import CONTRACT

DOCS = Path(__file__).resolve().parents[2] / "docs"
PAGES = ("bots.md", "reliability.md", "operations.md")
GRACE = CONTRACT.worker_defaults["WORKER_DECISION_GRACE_SECONDS"]


def text(page: str) -> str:
    return (DOCS / page).read_text()


def unwrapped(page: str) -> str:
    """The page with its lines joined (a sentence may be wrapped anywhere)."""
    return re.sub(r"\s+", " ", text(page))


@pytest.mark.parametrize("page", PAGES)
def test_worker_defaults_are_the_codes(page: str) -> None:
    """`NAME` (5 s) in a sentence, or | `NAME` | `5` | in a table: the worker's default."""
    found = 0
    body = unwrapped(page)
    for name, default in CONTRACT.worker_defaults.items():
        if not name.startswith("WORKER_"):  # (addresses: pages also show deployed values)
            continue
        said = re.findall(rf"`{name}` \((\d+)[ )]", body)
        said += re.findall(rf"\| `{name}` \| `([^`]*)` \|", text(page))
        for value in said:
            assert value == default, f"{page}: {name} is documented as {value}, the code says {default}"
        found += len(said)
    assert found, f"{page} states no worker default"


def test_time_ms_0_says_the_same_everywhere() -> None:
    seconds, longest = f"{DEFAULT_TIME_MS // 1000} s", f"{MAX_TIME_MS // 1000} s"
    assert f"when it is 0: {seconds}, or {longest} with `iterations`" in unwrapped(
        "reliability.md"
    )
    bots = unwrapped("bots.md")
    row = re.search(r"\| `time_ms` \|([^|]*)\|", bots)
    assert row is not None
    assert f"0 = none given: the bot's budget is then {seconds}, or {longest} with `iterations`" in (
        row.group(1)
    )
    assert f"plus the grace, {GRACE} s" in row.group(1)
    assert f"when it is 0, {seconds}, or {longest} with `iterations`" in bots  # Deadlines
    proto = (DOCS.parent / "proto" / "ascension" / "v1" / "engine.proto").read_text()
    assert f"within {seconds} ({longest} with iterations) plus" in re.sub(r"\s*//\s*", " ", proto)
    for page in (*PAGES, "../README.md", "clients.md", "configuration.md"):
        assert "0 = no time limit" not in text(page), page


def test_the_liveness_command_is_the_same_everywhere() -> None:
    parser = build_parser()
    assert parser.parse_args(["check", "--local"]).local  # the command exists as documented
    for page in PAGES:
        body = unwrapped(page)
        for sentence in re.split(r"(?<=[.:;])\s", body):
            if "liveness" in sentence.lower() and "ascension-worker check" in sentence:
                assert "ascension-worker check --local" in sentence, f"{page}: {sentence}"
    assert "`ascension-worker check --local`" in unwrapped("operations.md")
    assert "ascension-worker check --local" in unwrapped("bots.md")


def test_writing_a_bot_links_deadlines_grace_and_quarantine_with_figures() -> None:
    bots = text("bots.md")
    writing = bots.split("## Writing a bot (plugin)", 1)[1].split("\n## ", 1)[0]
    one_line = re.sub(r"\s+", " ", writing)
    assert "(#deadlines-grace-and-quarantine)" in writing and "(#fallback-moves)" in writing
    assert f"else {DEFAULT_TIME_MS // 1000} s) plus a grace of {GRACE} s" in one_line
    cfg = config.load({})
    assert (
        f"on {cfg.quarantine_failures} decisions in a row is not asked for "
        f"{cfg.quarantine_seconds:g} s" in one_line
    )
    for heading in ("## Develop a bot", "## Fallback moves", "## Deadlines, grace and quarantine"):
        assert f"\n{heading}\n" in bots

"""The bot author's reference cannot drift from the code: its table of actions is every kind
of the rules with its id, the fallback table of docs/bots.md has every reason a fallback move
is counted under, and the pages a bot author starts from lead to it."""

from __future__ import annotations

import re
from pathlib import Path

from ai_workers import metrics
from engine_service import rules

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "bot-reference.md"


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the first table after ``heading``, its header row and rule left out."""
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def test_the_action_table_is_every_kind_with_its_id() -> None:
    rows = table_rows(REFERENCE.read_text(), "## Actions")
    listed = {row[0].strip("`"): int(row[1]) for row in rows}
    assert listed == rules.KIND_IDS
    assert all(row[2] for row in rows), "every kind says what arg_of returns"


def test_every_fallback_reason_is_in_the_fallback_table() -> None:
    rows = table_rows((ROOT / "docs" / "bots.md").read_text(), "## Fallback moves")
    documented = set(re.findall(r"`([a-z_]+)[:`]", " ".join(row[0] for row in rows)))
    missing = set(metrics.FALLBACK_REASONS) - documented
    assert not missing, f"docs/bots.md's fallback table lacks {sorted(missing)}"


def test_the_reference_is_linked_from_where_bot_authors_start() -> None:
    assert "(bot-reference.md)" in (ROOT / "docs" / "bots.md").read_text()
    readme = (ROOT / "README.md").read_text()
    assert re.search(r"^\| \[docs/bot-reference\.md\]\(docs/bot-reference\.md\) \|", readme, re.M)
    plugin = (ROOT / "ai_workers" / "examples" / "bot-plugin" / "README.md").read_text()
    assert "where the engine is installed" in plugin and "pip install -e" in plugin

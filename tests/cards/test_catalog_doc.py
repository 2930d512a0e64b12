"""The generated catalog is up to date and shows every card."""

from __future__ import annotations

from pathlib import Path

from engine_service.cards import catalog_doc
from engine_service.cards.loader import default_catalog


def test_docs_cards_md_is_generated_from_the_current_data() -> None:
    assert catalog_doc.DOC_PATH.read_text(encoding="utf-8") == catalog_doc.render(), (
        "docs/cards.md is stale: run python -m engine_service.cards.catalog_doc"
    )


def test_the_catalog_names_every_card_and_its_origin() -> None:
    text = catalog_doc.render()
    for c in default_catalog().cards:
        assert f"**{c.name}**" in text, c.key
    assert "**Center deck: 118 cards**" in text
    assert "**Center deck: 99 cards**" in text
    assert "Cursed Treasure coins (36)" in text
    assert "| move | move your ship up to 2 spaces | 6 |" in text


def test_check_mode(tmp_path: Path) -> None:
    out = tmp_path / "cards.md"
    assert catalog_doc.main(["--out", str(out), "--check"]) == 1
    assert catalog_doc.main(["--out", str(out)]) == 0
    assert catalog_doc.main(["--out", str(out), "--check"]) == 0

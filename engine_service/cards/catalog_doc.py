"""Generate the human-readable card catalog (``docs/cards.md``) from the card data.

    python -m engine_service.cards.catalog_doc            # rewrite docs/cards.md
    python -m engine_service.cards.catalog_doc --check    # exit 1 if docs/cards.md is stale
    python -m engine_service.cards.catalog_doc --out -    # print to stdout

The catalog is generated, never edited by hand: change the TOML files, then run this.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from engine_service.cards import language as L
from engine_service.cards.loader import CardDef, Catalog, SetDef, default_catalog

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "cards.md"

TYPE_ORDER = (L.HERO, L.CONSTRUCT, L.MONSTER, L.TREASURE)
TYPE_TITLES = {
    L.HERO: "Heroes",
    L.CONSTRUCT: "Constructs",
    L.MONSTER: "Monsters",
    L.TREASURE: "Treasure cards",
}
COIN_PAIR = {
    "runes": "gain 2 Runes",
    "power": "gain 2 Power",
    "crew": "gain 2 Crew",
    "honor": "gain 2 Honor",
    "draw": "draw 2 cards",
    "move": "move your ship up to 2 spaces",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _faction(c: CardDef) -> str:
    return "" if c.faction == L.NONE else L.FACTION_NAMES[c.faction].capitalize()


def _origin(c: CardDef) -> str:
    return "rulebook" if c.origin == "rulebook" else "designed"


def _counts(cat: Catalog, ids: Iterable[int]) -> tuple[Counter[str], Counter[str], Counter[str]]:
    kinds: Counter[str] = Counter()
    factions: Counter[str] = Counter()
    origins: Counter[str] = Counter()
    for i in ids:
        c = cat[i]
        kinds[TYPE_TITLES[c.type]] += 1
        factions[_faction(c) or "none (Monsters, Treasure)"] += 1
        origins[_origin(c)] += 1
    return kinds, factions, origins


def _join(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counter.most_common())


def _card_table(cards: list[CardDef], monsters: bool) -> list[str]:
    cost = "Power" if monsters else "Cost"
    head = f"| Card | Faction | {cost} | Honor | Copies | Origin | Text |"
    out = [head, "|---|---|---:|---:|---:|---|---|"]
    for c in cards:
        honor = "" if c.type == L.MONSTER else str(c.honor)
        text = c.text
        if c.note:
            text += f" *({c.note})*"
        faction = _faction(c) or "-"
        out.append(
            f"| **{_cell(c.name)}** | {faction} | {c.cost} | {honor} | {c.copies} | {_origin(c)} | {_cell(text)} |"
        )
    return out


def _set_section(cat: Catalog, s: SetDef) -> list[str]:
    cards = [c for c in cat.cards if c.set == s.key]
    center = [c for c in cards if not (c.starting or c.always or c.special)]
    out = [f"## {s.name}", ""]
    kinds, factions, origins = _counts(cat, s.center)
    out.append(f"**Center deck: {len(s.center)} cards** ({_join(kinds)}).  ")
    out.append(f"By faction: {_join(factions)}.  ")
    out.append(f"By origin (copies): {_join(origins)}; distinct cards: {len(center)}.")
    out.append("")
    if s.starting:
        deck = ", ".join(f"{n} {cat[cat.id(k)].name}" for k, n in s.starting)
        out += [
            f"**Starting deck** (each player, {sum(n for _, n in s.starting)} cards): {deck}.",
            "",
        ]
    specials = [c for c in cards if c.special or c.starting]
    if specials:
        out += ["**Outside the center deck:**", ""]
        for c in specials:
            where = "starting deck" if c.starting else "special Monster, starts in The Deep"
            cost = f", {c.cost} Power" if c.special else ""
            note = f" *({c.note})*" if c.note else ""
            out.append(f"- **{c.name}** ({where}{cost}; {_origin(c)}): {c.text}{note}")
        out.append("")
    if s.coins:
        out += _coins_section(s)
    for t in TYPE_ORDER:
        group = sorted((c for c in center if c.type == t), key=lambda c: (c.cost, c.name))
        if not group:
            continue
        n = sum(c.copies for c in group)
        out += [f"### {TYPE_TITLES[t]} ({n} cards, {len(group)} different)", ""]
        out += _card_table(group, t == L.MONSTER)
        out.append("")
    return out


def _coins_section(s: SetDef) -> list[str]:
    icons, colors = s.coin_icons, s.coin_colors
    out = [
        f"### Cursed Treasure coins ({len(icons) * len(colors)})",
        "",
        "One coin of every icon in every color. A coin's color is the center-row space it is "
        "placed on when drawn from the Treasure Bag (spaces are numbered 1 to 6 along the center "
        "row; both ends, spaces 1 and 6, touch The Deep). Every coin is worth 2 Honor at the end of the "
        "game, face up or face down. On your turn, turn two face-up coins with the same icon "
        "face down to gain two of that icon's resource:",
        "",
        "| Icon | A pair gives | Coins |",
        "|---|---|---:|",
    ]
    for icon in icons:
        out.append(f"| {icon} | {COIN_PAIR.get(icon, icon)} | {len(colors)} |")
    out += ["", "| Color | Space |", "|---|---:|"]
    for i, color in enumerate(colors):
        out.append(f"| {color} | {i + 1} |")
    out.append("")
    return out


def render(cat: Catalog | None = None) -> str:
    cat = cat or default_catalog()
    core = [c for c in cat.cards if c.set == "core"]
    out = [
        "# Card catalog",
        "",
        "<!-- Generated by `python -m engine_service.cards.catalog_doc` from "
        "engine_service/cards/data/*.toml. Do not edit by hand. -->",
        "",
        f"Card data version `{cat.fingerprint}`. Every card says where it comes from: "
        "**rulebook** cards are named in the Skulls & Sails or Curse of the Golden Isles "
        "rulebooks and keep everything the rulebooks say of them (cost, Honor, faction, type, "
        "text); **designed** cards were designed for this engine, in the same mechanics, to "
        "complete each center deck to the rulebooks' count. A holder of the real cards can "
        "replace designed cards by editing the data files (see engine_service/cards/README.md). "
        "Card text is our own wording; names and numbers from the rulebooks are facts we use.",
        "",
        "Copies: each rarity dot on a real card is one copy in the center deck; here it is the "
        "`Copies` column. Cost is in Runes for Heroes and Constructs (Crew can pay it at your "
        "ship's space), in Power for Monsters.",
        "",
        "## Both sets: starting and always-available cards",
        "",
        "| Card | Where | Cost | Honor | Text |",
        "|---|---|---:|---:|---|",
    ]
    for c in core:
        where = "starting deck" if c.starting else f"always available ({c.copies})"
        cost = f"{c.cost} Power" if c.type == L.MONSTER else str(c.cost)
        out.append(f"| **{c.name}** | {where} | {cost} | {c.honor} | {_cell(c.text)} |")
    out += [
        "",
        "Curse of the Golden Isles' starting deck (with the Navigator) is used whenever that set "
        "is in the game; Skulls & Sails alone uses its own.",
        "",
    ]
    for key, s in cat.sets.items():
        if key == "core":
            continue
        out += _set_section(cat, s)
    out += [
        "## Keywords",
        "",
        "- **Anchor**: when you acquire or defeat this card in the center row with your ship on its space, gain the Anchor effect.",
        "- **Echo**: the extra effect happens if your discard pile holds a card of the same faction.",
        "- **Unite**: the extra effect happens when you play another Hero of the same faction this turn.",
        "- **Fate**: happens when the card enters the center row (resolved by the player whose turn it is).",
        "- **Ongoing**: after it is acquired or defeated, the card stays in front of you and keeps working.",
        "- **Plunder**: the effect happens if you have defeated a Monster in the center row this turn (Thukal does not count).",
        "- **Raid**: take a Treasure of your choice from an enemy ship on your space.",
        "",
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", default=str(DOC_PATH), help="where to write ('-' for stdout)")
    ap.add_argument("--check", action="store_true", help="only check that the file is up to date")
    args = ap.parse_args(argv)
    text = render()
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    path = Path(args.out)
    if args.check:
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            print(
                f"{path} is out of date: run python -m engine_service.cards.catalog_doc",
                file=sys.stderr,
            )
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Flat per-card tables built once from the catalog, for the hot path (ints over objects)."""

from __future__ import annotations

from dataclasses import dataclass

from engine_service.cards import language as L
from engine_service.cards.loader import Catalog, default_catalog

Trigger = tuple[int, int, int, bool, tuple[L.Op, ...]]  # (ability index, event, faction, once, ops)


@dataclass(frozen=True, slots=True)
class Tables:
    catalog: Catalog
    type: tuple[int, ...]
    faction: tuple[int, ...]
    cost: tuple[int, ...]
    honor: tuple[int, ...]
    play: tuple[tuple[L.Op, ...], ...]
    unite: tuple[tuple[L.Op, ...], ...]
    echo: tuple[tuple[L.Op, ...], ...]
    anchor: tuple[tuple[L.Op, ...], ...]
    fate: tuple[tuple[L.Op, ...], ...]
    reward: tuple[tuple[L.Op, ...], ...]
    ongoing: tuple[bool, ...]
    prevent: tuple[bool, ...]
    starting: tuple[bool, ...]
    activated: tuple[tuple[tuple[int, tuple[L.Op, ...]], ...], ...]  # ((ability index, ops), ...)
    triggers: tuple[tuple[Trigger, ...], ...]
    grants_anchor: tuple[tuple[L.Op, ...], ...]
    end_honor: tuple[tuple[int, int] | None, ...]
    mystic: int
    heavy: int
    cultist: int
    thukal: int
    names: tuple[str, ...]


def build_tables(cat: Catalog) -> Tables:
    cs = cat.cards
    return Tables(
        catalog=cat,
        type=tuple(c.type for c in cs),
        faction=tuple(c.faction for c in cs),
        cost=tuple(c.cost for c in cs),
        honor=tuple(c.honor for c in cs),
        play=tuple(c.play for c in cs),
        unite=tuple(c.unite for c in cs),
        echo=tuple(c.echo for c in cs),
        anchor=tuple(c.anchor for c in cs),
        fate=tuple(c.fate for c in cs),
        reward=tuple(c.reward for c in cs),
        ongoing=tuple(c.ongoing for c in cs),
        prevent=tuple(c.prevent_raid for c in cs),
        starting=tuple(c.starting for c in cs),
        activated=tuple(
            tuple((i, a.ops) for i, a in enumerate(c.abilities) if a.when[0][0] == L.WHEN_ACTIVATED)
            for c in cs
        ),
        triggers=tuple(
            tuple(
                (i, ev, fac, a.once, a.ops)
                for i, a in enumerate(c.abilities)
                for ev, fac in a.when
                if ev != L.WHEN_ACTIVATED
            )
            for c in cs
        ),
        grants_anchor=tuple(c.grants_anchor for c in cs),
        end_honor=tuple(c.end_honor for c in cs),
        mystic=cat.id("mystic"),
        heavy=cat.id("heavy_infantry"),
        cultist=cat.id("cultist"),
        thukal=cat.id("thukal"),
        names=tuple(c.name for c in cs),
    )


_DEFAULT: Tables | None = None


def default_tables() -> Tables:
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = build_tables(default_catalog())
    return _DEFAULT

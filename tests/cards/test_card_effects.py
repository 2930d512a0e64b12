"""Every card's effect, played through the rules and checked against its text.

``CASES`` maps each card key to a function that sets a bench up, plays the card (or
acquires / defeats it, or lets it flip into the center row for its Fate) and checks the
result. ``test_every_card_has_an_effect_test`` fails for a card added to the data without a
case here, so the table grows with the card files.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from engine_service.cards.loader import default_catalog
from engine_service.rules import actions as A
from engine_service.rules import score_breakdown
from engine_service.rules.state import DEEP
from tests.cards.bench import Bench, coin

CASES: dict[str, Callable[[], None]] = {}


def case(key: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def register(f: Callable[[], None]) -> Callable[[], None]:
        assert key not in CASES, f"two cases for {key}"
        CASES[key] = f
        return f

    return register


# ---- shared shapes ------------------------------------------------------------------------


def plain_monster(key: str, sets: str, honor: int, **extra: int) -> None:
    """A Monster whose reward is Honor (and maybe more): defeat it with exactly its cost."""
    b = Bench(sets)
    with b.expect(honor=honor, void=1, **extra):
        b.defeat_monster(key)
    assert b.cid(key) in b.s.void


def raid_setup(b: Bench, *gold: str) -> None:
    b.ships(me=2, enemy=2)
    b.treasures(b.enemy, *gold)


def prevents_raid(prevent_key: str) -> None:
    """The victim reveals the card from hand: the Raid fails and the card stays in hand."""
    b = Bench("ss")
    b.hand("talons_of_amaruk")
    b.enemy_hand(prevent_key)
    raid_setup(b, "gold")
    with b.expect(runes=2, pending=True):
        b.play("talons_of_amaruk")
        b.answer("raid_take")
    assert b.deciding() == "prevent_raid" and b.decider() == b.enemy
    with b.expect():
        b.answer("prevent_raid", prevent_key)
    assert b.s.hands[b.enemy] == [b.cid(prevent_key)]


def fate_moves_enemy(key: str) -> None:
    """Fate: when the card flips into the center row, the enemy ship moves towards Thukal."""
    b = Bench("ss")
    b.ships(me=0, enemy=3)
    b.on_top(key)
    with b.expect(honor=2, void=1, e_ship=4):
        b.defeat_monster("gullet_eel", sp=1)
    assert b.s.center[1] == b.cid(key)


# ---- core: starting and always-available cards --------------------------------------------


@case("apprentice")
def _apprentice() -> None:
    b = Bench()
    b.hand("apprentice")
    with b.expect(runes=1, hand=-1):
        b.play("apprentice")


@case("militia")
def _militia() -> None:
    b = Bench()
    b.hand("militia")
    with b.expect(power=1):
        b.play("militia")


@case("buccaneer")
def _buccaneer() -> None:
    b = Bench()
    b.hand("buccaneer")
    with b.expect(runes=1, crew=1):
        b.play("buccaneer")


@case("mystic")
def _mystic() -> None:
    b = Bench()
    b.hand("mystic")
    with b.expect(runes=2):
        b.play("mystic")
    b.s.runes = 3
    pile = b.s.piles[0]
    with b.expect(runes=-3, discard=1):
        b.act("acquire", A.T_MYSTIC)
    assert b.s.piles[0] == pile - 1 and b.s.discards[b.me] == [b.cid("mystic")]


@case("heavy_infantry")
def _heavy_infantry() -> None:
    b = Bench()
    b.hand("heavy_infantry")
    with b.expect(power=2):
        b.play("heavy_infantry")
    b.s.runes = 2
    with b.expect(runes=-2, discard=1):
        b.act("acquire", A.T_HEAVY)


@case("cultist")
def _cultist() -> None:
    b = Bench()
    b.s.power = 4
    with b.expect(power=-4, honor=2, void=0):
        b.act("defeat", A.T_CULTIST)
        b.act("defeat", A.T_CULTIST)  # always available, never banished


# ---- Skulls & Sails: named in the rulebook -------------------------------------------------


@case("thukal")
def _thukal() -> None:
    b = Bench("ss")
    gold = b.cid("gold")
    b.treasures(b.me, "gold")
    with b.expect(treasures=-1, ship=DEEP):  # moving into The Deep costs a Treasure
        b.act("move", DEEP)
    assert b.s.under[DEEP] == [gold]
    b.s.power = 9
    with b.expect(power=-9, honor=9, treasures=1, ongoing=1):  # and its defeater takes it
        b.act("defeat", DEEP)
    assert b.s.kraken == b.me and b.cid("thukal") in b.s.ongoing[b.me]
    b.ships(me=3, enemy=3)
    b.treasures(b.enemy, "gold")
    with b.expect(treasures=1, e_treasures=-1):  # You are The Kraken: once per turn, Raid
        b.use("thukal")
        b.answer("raid_take")
    assert not b.can_use("thukal")


@case("gold")
def _gold() -> None:
    b = Bench("ss")
    b.under(2, "gold")
    with b.expect(honor=2, treasures=1, void=1):
        b.defeat_monster("gullet_eel", sp=2)
    assert b.s.treasures[b.me] == [b.cid("gold")]
    assert score_breakdown(b.s, b.me)["treasure"] == 1


@case("talons_of_amaruk")
def _talons() -> None:
    b = Bench("ss")
    b.hand("talons_of_amaruk")
    raid_setup(b, "gold")
    with b.expect(runes=2, treasures=1, e_treasures=-1):
        b.play("talons_of_amaruk")
        b.answer("raid_take")


@case("hakua")
def _hakua() -> None:
    b = Bench("ss")
    b.hand("hakua", "reefborn_scout")
    with b.expect(constructs=1):
        b.play("hakua")
    with b.expect(runes=1):
        b.use("hakua")
    assert not b.can_use("hakua")
    with b.expect(runes=1, crew=1):  # Reefborn Scout's Rune, Hakua's Crew
        b.play("reefborn_scout")


@case("diamondbeaks")
def _diamondbeaks() -> None:
    plain_monster("diamondbeaks", "ss", honor=3)
    b = Bench("ss")
    b.treasures(b.me, "gold", "gold", "gold")
    with b.expect(honor=5, void=1):
        b.defeat_monster("diamondbeaks")


@case("shallownoose")
def _shallownoose() -> None:
    plain_monster("shallownoose", "ss", honor=2)
    b = Bench("ss")
    b.treasures(b.me, "gold", "gold", "gold")
    with b.expect(honor=2, crew=2, void=1):
        b.defeat_monster("shallownoose")


@case("wave_walkers")
def _wave_walkers() -> None:
    b = Bench("ss")
    b.hand("wave_walkers")
    with b.expect(runes=1, ship=1):
        b.play("wave_walkers")
        b.answer("move_ship", 1)


@case("tempest_turbine")
def _tempest_turbine() -> None:
    b = Bench("ss")
    b.hand("tempest_turbine")
    b.play("tempest_turbine")
    with b.expect(ship=1):
        b.use("tempest_turbine")
        b.answer("move_ship", 1)
    with b.expect(ship=2):  # the normal move is still there
        b.act("move", 2)


@case("indomitable_ironheart")
def _ironheart() -> None:
    b = Bench("ss")
    b.hand("indomitable_ironheart")
    with b.expect(power=3, ship=2):
        b.play("indomitable_ironheart")
        b.answer("move_ship", 1)
        b.answer("move_ship", 2)


@case("hurricane_shaman")
def _hurricane_shaman() -> None:
    b = Bench("ss")
    b.hand("hurricane_shaman")
    with b.expect(runes=2, ship=1, hand=-1):  # no Echo: nothing Enlightened in the discard
        b.play("hurricane_shaman")
        b.answer("move_ship", 1)
    b = Bench("ss")
    b.hand("hurricane_shaman")
    b.discard("wave_walkers")
    with b.expect(runes=2, hand=0, deck=-1):  # Echo: draw a card
        b.play("hurricane_shaman")
        b.answer("skip")


@case("call_of_the_deep")
def _call_of_the_deep() -> None:
    b = Bench("ss")
    b.hand("call_of_the_deep")
    b.ships(me=0, enemy=3)
    with b.expect(power=2, e_ship=4):  # one space towards The Deep
        b.play("call_of_the_deep")


@case("spawn_of_thukal")
def _spawn_of_thukal() -> None:
    fate_moves_enemy("spawn_of_thukal")
    plain_monster("spawn_of_thukal", "ss", honor=3)


@case("big_red_button")
def _big_red_button() -> None:
    b = Bench("ss")
    b.hand("big_red_button")
    b.play("big_red_button")
    b.center(1, "tempest_turbine")
    b.center(2, "hakua")
    b.ships(me=1)
    b.s.runes = 7
    with b.expect(runes=-3, crew=2, discard=1):  # a Mechana Construct at my ship: Anchor
        b.act("acquire", 1)
    b.ships(me=2)
    with b.expect(runes=-4, discard=1):  # a Lifebound Construct: nothing
        b.act("acquire", 2)


@case("naka_blackblade")
def _naka() -> None:
    b = Bench("ss")
    b.hand("naka_blackblade")
    b.s.void = [b.cid("diamondbeaks")]
    b.s.crew[b.me] = 4
    assert not b.legal("defeat_void", "diamondbeaks")
    with b.expect(power=2):
        b.play("naka_blackblade")
    with b.expect(crew=-4, honor=3):
        b.act("defeat_void", "diamondbeaks")
    assert b.s.void == [b.cid("diamondbeaks")]


@case("crystals_of_command")
def _crystals() -> None:
    b = Bench("ss")
    b.hand("crystals_of_command")
    b.play("crystals_of_command")
    with b.expect(runes=1):
        b.use("crystals_of_command")
    b.treasures(b.me, "gold", "gold", "pearl_strand")
    assert score_breakdown(b.s, b.me)["card_text"] == 3


@case("hais_waveblade")
def _hais_waveblade() -> None:
    b = Bench("ss")
    b.hand("hais_waveblade")
    b.play("hais_waveblade")
    with b.expect(power=1):
        b.use("hais_waveblade")
    prevents_raid("hais_waveblade")


@case("fleet_reinforcements")
def _fleet_reinforcements() -> None:
    b = Bench("ss")
    b.hand("fleet_reinforcements")
    with b.expect(crew=2):
        b.play("fleet_reinforcements")
    prevents_raid("fleet_reinforcements")


# ---- Skulls & Sails: designed --------------------------------------------------------------


@case("reefborn_scout")
def _reefborn_scout() -> None:
    b = Bench("ss")
    b.hand("reefborn_scout", "talons_of_amaruk")
    with b.expect(runes=1):
        b.play("reefborn_scout")
    with b.expect(runes=2, honor=1):  # Unite with another Lifebound Hero
        b.play("talons_of_amaruk")


@case("tidecaller_adept")
def _tidecaller_adept() -> None:
    b = Bench("ss")
    b.hand("tidecaller_adept")
    with b.expect(hand=0, deck=-1):
        b.play("tidecaller_adept")
    b.center(2, "tidecaller_adept")
    b.ships(me=2)
    b.s.runes = 3
    with b.expect(runes=-3 + 2, discard=1):  # Anchor: gain 2 Runes
        b.act("acquire", 2)


@case("void_corsair")
def _void_corsair() -> None:
    b = Bench("ss")
    b.hand("void_corsair")
    b.discard("apprentice")
    with b.expect(power=2, discard=-1, out=1):
        b.play("void_corsair")
        b.answer("banish_discard", "apprentice")
    b = Bench("ss")
    b.hand("void_corsair")
    b.defeat_monster("gullet_eel")
    with b.expect(power=2, honor=1):  # Plunder
        b.play("void_corsair")


@case("gearwright_mate")
def _gearwright_mate() -> None:
    for option, want in ((0, {"runes": 2}), (1, {"crew": 2})):
        b = Bench("ss")
        b.hand("gearwright_mate")
        with b.expect(**want):
            b.play("gearwright_mate")
            b.answer("choose", option)


@case("brine_hag")
def _brine_hag() -> None:
    b = Bench("ss")
    b.center(0, "hakua")
    with b.expect(honor=4, void=2):
        b.defeat_monster("brine_hag")
        b.answer("banish_center", 0)
    assert b.cid("hakua") in b.s.void


@case("rustclaw_marauders")
def _rustclaw() -> None:
    b = Bench("ss")
    b.in_play(b.enemy, "hakua")
    with b.expect(honor=4, void=1, e_constructs=-1, e_discard=1):
        b.defeat_monster("rustclaw_marauders")


@case("barnacle_colossus")
def _barnacle() -> None:
    b = Bench("ss")
    with b.expect(ongoing=1):
        b.defeat_monster("barnacle_colossus")
    b.end_round()
    assert b.s.crew[b.me] == 1


@case("corsair_cannon")
def _corsair_cannon() -> None:
    for option, want in ((0, {"runes": 1}), (1, {"power": 1})):
        b = Bench("ss")
        b.hand("corsair_cannon")
        b.play("corsair_cannon")
        with b.expect(**want):
            b.use("corsair_cannon")
            b.answer("choose", option)
    b = Bench("ss")
    b.center(3, "corsair_cannon")
    b.ships(me=3)
    b.s.runes = 4
    with b.expect(runes=-4, crew=1, discard=1):  # Anchor
        b.act("acquire", 3)


@case("sunken_oracle")
def _sunken_oracle() -> None:
    b = Bench("ss")
    b.hand("sunken_oracle", "tidecaller_adept")
    with b.expect(runes=2, deck=-1):
        b.play("sunken_oracle")
    with b.expect(deck=-2):  # Tidecaller's draw and the Unite draw
        b.play("tidecaller_adept")


@case("gullet_eel")
def _gullet_eel() -> None:
    plain_monster("gullet_eel", "ss", honor=2)


@case("storm_petrel")
def _storm_petrel() -> None:
    b = Bench("ss")
    b.hand("storm_petrel")
    b.discard("talons_of_amaruk")
    with b.expect(runes=2, crew=2):
        b.play("storm_petrel")


@case("drowned_reaver")
def _drowned_reaver() -> None:
    b = Bench("ss")
    b.hand("drowned_reaver")
    raid_setup(b, "gold", "pearl_strand")
    with b.expect(power=3, treasures=2, e_treasures=-2):
        b.play("drowned_reaver")
        b.answer("raid_take")
        b.answer("raid_take")


@case("salvage_drone")
def _salvage_drone() -> None:
    b = Bench("ss")
    b.hand("salvage_drone")
    b.play("salvage_drone")
    b.under(2, "gold", "gold")
    with b.expect(honor=2, treasures=2, void=1, power=1):  # once per turn: 1 Power, not 2
        b.defeat_monster("gullet_eel", sp=2)


@case("abyss_leviathan")
def _abyss_leviathan() -> None:
    plain_monster("abyss_leviathan", "ss", honor=5)
    b = Bench("ss")
    b.s.kraken = b.me
    b.s.ongoing[b.me] = [b.cid("thukal")]
    with b.expect(honor=7, void=1):
        b.defeat_monster("abyss_leviathan")


@case("lantern_angler")
def _lantern_angler() -> None:
    b = Bench("ss")
    b.center(4, "shallownoose")
    with b.expect(honor=3 + 2, void=2):
        b.defeat_monster("lantern_angler", sp=1)
        b.answer("take_free", 4)


@case("pearl_strand")
def _pearl_strand() -> None:
    b = Bench("ss")
    b.under(3, "pearl_strand")
    b.center(3, "hakua")
    b.s.runes = 4
    with b.expect(runes=-4, treasures=1, discard=1):
        b.act("acquire", 3)
    assert score_breakdown(b.s, b.me)["treasure"] == 2


@case("starglass_cartographer")
def _starglass() -> None:
    b = Bench("ss")
    b.hand("starglass_cartographer", "tidecaller_adept")
    with b.expect(deck=-1, hand=0):
        b.play("starglass_cartographer")
    with b.expect(deck=-1, ship=1):  # Unite: move
        b.play("tidecaller_adept")
        b.answer("move_ship", 1)


@case("glimmerfin_mystic")
def _glimmerfin() -> None:
    b = Bench("ss")
    b.hand("glimmerfin_mystic", "tidecaller_adept")
    with b.expect(runes=2):
        b.play("glimmerfin_mystic")
    with b.expect(runes=2, deck=-1):
        b.play("tidecaller_adept")


@case("windcaller_savant")
def _windcaller() -> None:
    b = Bench("ss")
    b.hand("windcaller_savant")
    with b.expect(runes=3, deck=-1, ship=1):
        b.play("windcaller_savant")
        b.answer("move_ship", 1)


@case("star_sextant")
def _star_sextant() -> None:
    b = Bench("ss")
    b.hand("star_sextant", "tidecaller_adept", "wave_walkers", "talons_of_amaruk")
    b.play("star_sextant")
    with b.expect(ship=1):
        b.use("star_sextant")
        b.answer("move_ship", 1)
    assert not b.can_use("star_sextant")
    with b.expect(runes=1, deck=-1):
        b.play("tidecaller_adept")
    with b.expect(runes=1 + 1):  # every Enlightened Hero
        b.play("wave_walkers")
        b.answer("skip")
    with b.expect(runes=2):  # not a Lifebound one
        b.play("talons_of_amaruk")


@case("kelp_warden")
def _kelp_warden() -> None:
    b = Bench("ss")
    b.hand("kelp_warden", "talons_of_amaruk")
    with b.expect(runes=1, honor=1):
        b.play("kelp_warden")
    with b.expect(runes=2, crew=1):
        b.play("talons_of_amaruk")


@case("mangrove_matron")
def _mangrove_matron() -> None:
    b = Bench("ss")
    b.hand("mangrove_matron", "talons_of_amaruk")
    with b.expect(runes=2, honor=1):
        b.play("mangrove_matron")
    with b.expect(runes=2, honor=2):
        b.play("talons_of_amaruk")


@case("elder_sea_turtle")
def _elder_sea_turtle() -> None:
    b = Bench("ss")
    b.hand("elder_sea_turtle")
    with b.expect(runes=3, crew=3):
        b.play("elder_sea_turtle")
    b = Bench("ss")
    b.hand("elder_sea_turtle")
    b.discard("kelp_warden")
    with b.expect(runes=3, crew=3, honor=2):
        b.play("elder_sea_turtle")


@case("verdant_figurehead")
def _verdant_figurehead() -> None:
    b = Bench("ss")
    b.hand("verdant_figurehead", "talons_of_amaruk", "reefborn_scout")
    b.play("verdant_figurehead")
    with b.expect(runes=2, honor=1):
        b.play("talons_of_amaruk")
    with b.expect(runes=1, honor=1):  # the Unite Honor only: the figurehead is once per turn
        b.play("reefborn_scout")


@case("boilerhand")
def _boilerhand() -> None:
    b = Bench("ss")
    b.hand("boilerhand", "fleet_reinforcements")
    with b.expect(power=1, crew=1):
        b.play("boilerhand")
    with b.expect(crew=2, power=1):
        b.play("fleet_reinforcements")


@case("cannoneer_automaton")
def _cannoneer() -> None:
    b = Bench("ss")
    b.hand("cannoneer_automaton", "fleet_reinforcements")
    raid_setup(b, "gold")
    with b.expect(power=2, crew=2):
        b.play("cannoneer_automaton")
    with b.expect(crew=2, treasures=1, e_treasures=-1):
        b.play("fleet_reinforcements")
        b.answer("raid_take")


@case("clockwork_helmsman")
def _clockwork_helmsman() -> None:
    b = Bench("ss")
    b.hand("clockwork_helmsman")
    b.play("clockwork_helmsman")
    with b.expect(crew=1, ship=1):
        b.use("clockwork_helmsman")
        b.answer("move_ship", 1)
    assert not b.can_use("clockwork_helmsman")


@case("bilge_ghoul")
def _bilge_ghoul() -> None:
    b = Bench("ss")
    b.hand("bilge_ghoul", "militia")
    with b.expect(power=1, hand=-2, out=1):
        b.play("bilge_ghoul")
        b.answer("banish_hand", "militia")


@case("abyssal_harpooner")
def _abyssal_harpooner() -> None:
    b = Bench("ss")
    b.hand("abyssal_harpooner")
    b.discard("call_of_the_deep")
    with b.expect(power=4):
        b.play("abyssal_harpooner")


@case("dreadmaw_captain")
def _dreadmaw_captain() -> None:
    b = Bench("ss")
    b.hand("dreadmaw_captain")
    b.center(5, "hakua")
    with b.expect(power=4, void=1):
        b.play("dreadmaw_captain")
        b.answer("banish_center", 5)
    b = Bench("ss")
    b.hand("dreadmaw_captain")
    b.defeat_monster("gullet_eel")
    with b.expect(power=4, honor=2):  # Plunder
        b.play("dreadmaw_captain")
        b.answer("skip")


@case("bone_cannon")
def _bone_cannon() -> None:
    b = Bench("ss")
    b.hand("bone_cannon")
    b.discard("apprentice")
    b.play("bone_cannon")
    with b.expect(power=1):
        b.use("bone_cannon")
    with b.expect(honor=2, void=1, out=1, discard=-1):
        b.defeat_monster("gullet_eel")
        b.answer("banish_discard", "apprentice")


@case("bilgerat_swarm")
def _bilgerat_swarm() -> None:
    plain_monster("bilgerat_swarm", "ss", honor=1, hand=1, deck=-1)


@case("reef_stalker")
def _reef_stalker() -> None:
    plain_monster("reef_stalker", "ss", honor=2)  # ship elsewhere: no Anchor
    b = Bench("ss")
    b.ships(me=2)
    with b.expect(honor=2, crew=2, void=1):
        b.defeat_monster("reef_stalker", sp=2)


@case("siren_of_the_shoals")
def _siren() -> None:
    b = Bench("ss")
    b.discard("militia")
    with b.expect(honor=3, void=1, discard=-1, out=1):
        b.defeat_monster("siren_of_the_shoals")
        b.answer("banish_discard", "militia")


@case("bound_sea_serpent")
def _bound_sea_serpent() -> None:
    b = Bench("ss")
    with b.expect(honor=1, ongoing=1):
        b.defeat_monster("bound_sea_serpent")
    with b.expect(power=1):
        b.use("bound_sea_serpent")
    assert not b.can_use("bound_sea_serpent")


@case("gilded_drake")
def _gilded_drake() -> None:
    plain_monster("gilded_drake", "ss", honor=4)
    b = Bench("ss")
    b.treasures(b.me, "gold", "gold", "gold")
    with b.expect(honor=5, void=1):
        b.defeat_monster("gilded_drake")


@case("maelstrom_wyrm")
def _maelstrom_wyrm() -> None:
    fate_moves_enemy("maelstrom_wyrm")
    plain_monster("maelstrom_wyrm", "ss", honor=5)


@case("dread_galleon")
def _dread_galleon() -> None:
    b = Bench("ss")
    raid_setup(b, "gold", "gold")
    with b.expect(honor=5, void=1, treasures=2, e_treasures=-2):
        b.defeat_monster("dread_galleon")
        b.answer("raid_take")
        b.answer("raid_take")


@case("abyssal_tyrant")
def _abyssal_tyrant() -> None:
    b = Bench("ss")
    b.in_play(b.enemy, "hakua", "tempest_turbine")
    with b.expect(honor=7, void=1, e_constructs=-1, e_discard=1):
        b.defeat_monster("abyssal_tyrant")
        assert b.deciding() == "destroy" and b.decider() == b.enemy
        b.answer("destroy", "tempest_turbine")
    assert b.s.constructs[b.enemy] == [b.cid("hakua")]


# ---- Curse of the Golden Isles: named in the rulebook ----------------------------------------


@case("navigator")
def _navigator() -> None:
    b = Bench("cotgi")
    b.hand("navigator")
    with b.expect(runes=1, ship=6):
        b.play("navigator")
        b.answer("move_ship", 6)


@case("scubot")
def _scubot() -> None:
    b = Bench("cotgi")
    b.hand("scubot")
    b.ships(me=2, enemy=2)
    b.coins(b.enemy, coin(1, 0))
    with b.expect(power=2, coins=1, e_coins=-1):
        b.play("scubot")
        b.answer("raid_take")


@case("piratron")
def _piratron() -> None:
    b = Bench("cotgi")
    b.hand("piratron", "clockwork_crewman")
    b.play("piratron")
    with b.expect(runes=1, constructs=1):  # a Mechana Construct played
        b.play("clockwork_crewman")
    with b.expect(honor=5, coins=1, void=1):  # a Treasure gained, but once per turn
        b.defeat_monster("enchanting_selkies")
    b.end_round()
    with b.expect(honor=5, coins=1, void=1, runes=1):  # next turn: gain a Treasure
        b.defeat_monster("enchanting_selkies")


@case("enchanting_selkies")
def _selkies() -> None:
    plain_monster("enchanting_selkies", "cotgi", honor=5, coins=1)


@case("cache_crab")
def _cache_crab() -> None:
    b = Bench("cotgi")
    b.hand("cache_crab")
    with b.expect(runes=2):
        b.play("cache_crab")
    b = Bench("cotgi")
    b.hand("cache_crab")
    b.coins(b.me, coin(0, 0), coin(1, 1), coin(2, 2))
    with b.expect(runes=3):
        b.play("cache_crab")


@case("abyssal_spear")
def _abyssal_spear() -> None:
    b = Bench("cotgi")
    b.hand("abyssal_spear")
    b.play("abyssal_spear")
    with b.expect(power=2):
        b.use("abyssal_spear", 0)
    b.center(1, "hollow_eyed_reaper")
    b.center(2, "isle_shaman")
    with b.expect(discard=1):
        b.use("abyssal_spear", 1)
        assert not b.legal("take_free", 2)  # Lifebound: not a Void card
        b.answer("take_free", 1)
    assert b.s.discards[b.me] == [b.cid("hollow_eyed_reaper")]


@case("moonstalkers")
def _moonstalkers() -> None:
    b = Bench("cotgi")
    b.discard("apprentice")
    b.s.discards[b.enemy] = [b.cid("militia")]
    b.on_top("moonstalkers")
    with b.expect(honor=2, void=1, discard=-1, e_discard=-1, out=2):
        b.defeat_monster("jade_serpent", sp=1)  # Moonstalkers flips in: Fate
        b.answer("banish_discard", "apprentice")
        assert b.decider() == b.enemy
        b.answer("banish_discard", "militia")
    b.discard("militia")
    with b.expect(honor=3, void=1, discard=-1, out=1):
        b.s.power = 4
        b.act("defeat", 1)
        b.answer("banish_discard", "militia")


@case("relentless_skipper")
def _relentless_skipper() -> None:
    b = Bench("cotgi")
    b.hand("relentless_skipper")
    b.discard("apprentice")
    b.center(2, "gilded_lookout")  # 1 Honor
    b.center(3, "isle_shaman")  # 3 Honor: too much
    with b.expect(out=1, discard=0):
        b.play("relentless_skipper")
        b.answer("banish_discard", "apprentice")
        assert not b.legal("take_free", 3)
        b.answer("take_free", 2)
    assert b.s.discards[b.me] == [b.cid("gilded_lookout")]


# ---- Curse of the Golden Isles: designed -----------------------------------------------------


@case("coin_diver")
def _coin_diver() -> None:
    b = Bench("cotgi")
    b.hand("coin_diver")
    with b.expect(runes=2):
        b.play("coin_diver")
    b = Bench("cotgi")
    b.hand("coin_diver")
    b.ships(me=DEEP)
    with b.expect(runes=2, coins=1):
        b.play("coin_diver")


@case("wailing_mists")
def _wailing_mists() -> None:
    b = Bench("cotgi")
    b.on_top("wailing_mists")
    with b.expect(honor=2, void=1, ghost=5):
        b.defeat_monster("jade_serpent", sp=1)
    plain_monster("wailing_mists", "cotgi", honor=2)


@case("gilded_lookout")
def _gilded_lookout() -> None:
    b = Bench("cotgi")
    b.hand("gilded_lookout")
    with b.expect(runes=1):
        b.play("gilded_lookout")
    b.center(0, "gilded_lookout")
    b.s.runes = 2
    with b.expect(runes=-2, coins=1, discard=1):  # Anchor (my ship is on space 0)
        b.act("acquire", 0)


@case("brass_quartermaster")
def _brass_quartermaster() -> None:
    b = Bench("cotgi")
    b.hand("brass_quartermaster", "scubot")
    with b.expect(runes=1, crew=2):
        b.play("brass_quartermaster")
    with b.expect(power=2 + 1):
        b.play("scubot")


@case("cursed_buccaneers")
def _cursed_buccaneers() -> None:
    b = Bench("cotgi")
    b.ships(me=2, enemy=2)
    b.coins(b.enemy, coin(3, 3))
    with b.expect(honor=3, void=1, coins=1, e_coins=-1):
        b.defeat_monster("cursed_buccaneers")
        b.answer("raid_take")


@case("mirewitch")
def _mirewitch() -> None:
    b = Bench("cotgi")
    b.hand("mirewitch")
    b.discard("relentless_skipper", "apprentice")
    with b.expect(power=2, out=1, discard=-1):
        b.play("mirewitch")
        b.answer("banish_discard", "apprentice")


@case("lighthouse_keeper")
def _lighthouse_keeper() -> None:
    b = Bench("cotgi")
    b.hand("lighthouse_keeper")
    b.play("lighthouse_keeper")
    with b.expect(hand=1, deck=-1):
        b.use("lighthouse_keeper")
    assert not b.can_use("lighthouse_keeper")


@case("treasure_golem")
def _treasure_golem() -> None:
    b = Bench("cotgi")
    with b.expect(honor=3, ongoing=1):
        b.defeat_monster("treasure_golem")
    with b.expect(honor=5 + 1, coins=1, void=1):
        b.defeat_monster("enchanting_selkies")


@case("jade_serpent")
def _jade_serpent() -> None:
    plain_monster("jade_serpent", "cotgi", honor=2)


@case("isle_shaman")
def _isle_shaman() -> None:
    b = Bench("cotgi")
    b.hand("isle_shaman", "cache_crab")
    with b.expect(runes=3):
        b.play("isle_shaman")
    with b.expect(runes=2, honor=1):
        b.play("cache_crab")


@case("skeleton_crew")
def _skeleton_crew() -> None:
    plain_monster("skeleton_crew", "cotgi", honor=4, crew=1)


@case("tide_scribe")
def _tide_scribe() -> None:
    b = Bench("cotgi")
    b.hand("tide_scribe")
    with b.expect(hand=0, deck=-1):
        b.play("tide_scribe")
    b = Bench("cotgi")
    b.hand("tide_scribe")
    b.discard("gilded_lookout")
    with b.expect(hand=0, deck=-1, runes=1):
        b.play("tide_scribe")


@case("moonlit_cartographer")
def _moonlit_cartographer() -> None:
    b = Bench("cotgi")
    b.hand("moonlit_cartographer")
    with b.expect(runes=2, ship=1):
        b.play("moonlit_cartographer")
        b.answer("move_ship", 1)


@case("gilded_seer")
def _gilded_seer() -> None:
    b = Bench("cotgi")
    b.hand("gilded_seer", "tide_scribe")
    with b.expect(runes=2, deck=-1):
        b.play("gilded_seer")
    with b.expect(deck=-1, coins=1):
        b.play("tide_scribe")


@case("archmage_of_the_isles")
def _archmage() -> None:
    b = Bench("cotgi")
    b.hand("archmage_of_the_isles")
    with b.expect(runes=3, hand=1, deck=-2):
        b.play("archmage_of_the_isles")


@case("brass_astrolabe")
def _brass_astrolabe() -> None:
    b = Bench("cotgi")
    b.hand("brass_astrolabe")
    b.play("brass_astrolabe")
    with b.expect(honor=5, coins=1, void=1, hand=1, deck=-1):
        b.defeat_monster("enchanting_selkies")


@case("palm_tender")
def _palm_tender() -> None:
    b = Bench("cotgi")
    b.hand("palm_tender")
    with b.expect(runes=1, crew=1):
        b.play("palm_tender")
    b = Bench("cotgi")
    b.hand("palm_tender")
    b.discard("cache_crab")
    with b.expect(runes=1, crew=1, honor=1):
        b.play("palm_tender")


@case("goldleaf_dryad")
def _goldleaf_dryad() -> None:
    b = Bench("cotgi")
    b.hand("goldleaf_dryad")
    b.coins(b.me, coin(0, 0), coin(1, 0))
    with b.expect(runes=2):
        b.play("goldleaf_dryad")
    b = Bench("cotgi")
    b.hand("goldleaf_dryad")
    b.coins(b.me, coin(0, 0), coin(1, 0), coin(2, 0))
    with b.expect(runes=2, honor=2):
        b.play("goldleaf_dryad")


@case("coral_totem")
def _coral_totem() -> None:
    b = Bench("cotgi")
    b.hand("coral_totem", "cache_crab", "palm_tender")
    b.play("coral_totem")
    with b.expect(runes=3):
        b.play("cache_crab")
    with b.expect(runes=1, crew=1):  # once per turn
        b.play("palm_tender")


@case("golden_idol")
def _golden_idol() -> None:
    b = Bench("cotgi")
    b.hand("golden_idol")
    b.play("golden_idol")
    with b.expect(runes=1):
        b.use("golden_idol")
    b.coins(b.me, coin(0, 0), coin(1, 1), coin(2, 2) | 64)  # face down counts too
    assert score_breakdown(b.s, b.me)["card_text"] == 3


@case("gyro_skiff_pilot")
def _gyro_skiff_pilot() -> None:
    b = Bench("cotgi")
    b.hand("gyro_skiff_pilot")
    with b.expect(power=1, crew=1, ship=1):
        b.play("gyro_skiff_pilot")
        b.answer("move_ship", 1)


@case("ironclad_bosun")
def _ironclad_bosun() -> None:
    b = Bench("cotgi")
    b.hand("ironclad_bosun", "scubot")
    b.ships(me=2, enemy=2)
    b.coins(b.enemy, coin(0, 1), coin(4, 4))
    with b.expect(power=3, crew=2):
        b.play("ironclad_bosun")
    with b.expect(power=2, coins=2, e_coins=-2):  # Scubot's Raid and the Unite Raid
        b.play("scubot")
        b.answer("raid_take")
        b.answer("raid_take")


@case("clockwork_crewman")
def _clockwork_crewman() -> None:
    b = Bench("cotgi")
    b.hand("clockwork_crewman")
    b.play("clockwork_crewman")
    with b.expect(crew=1):
        b.use("clockwork_crewman")


@case("steam_harpoon")
def _steam_harpoon() -> None:
    b = Bench("cotgi")
    b.hand("steam_harpoon")
    b.play("steam_harpoon")
    with b.expect(power=1, crew=1):
        b.use("steam_harpoon")


@case("treasure_hound")
def _treasure_hound() -> None:
    b = Bench("cotgi")
    b.hand("treasure_hound")
    b.play("treasure_hound")
    with b.expect(power=1):
        b.use("treasure_hound")
    b = Bench("cotgi")
    b.center(0, "treasure_hound")
    b.s.runes = 4
    with b.expect(runes=-4, coins=1, discard=1):
        b.act("acquire", 0)


@case("cursed_gunner")
def _cursed_gunner() -> None:
    b = Bench("cotgi")
    b.hand("cursed_gunner", "mirewitch")
    with b.expect(power=2):
        b.play("cursed_gunner")
    with b.expect(power=2 + 1):
        b.play("mirewitch")


@case("spectral_boarder")
def _spectral_boarder() -> None:
    b = Bench("cotgi")
    b.hand("spectral_boarder")
    b.ships(me=2, enemy=2)
    b.coins(b.enemy, coin(5, 5))
    b.discard("mirewitch")
    with b.expect(power=2, crew=1, coins=1, e_coins=-1):
        b.play("spectral_boarder")
        b.answer("raid_take")


@case("hollow_eyed_reaper")
def _hollow_eyed_reaper() -> None:
    b = Bench("cotgi")
    b.hand("hollow_eyed_reaper", "apprentice")
    with b.expect(power=3, hand=-2, out=1):
        b.play("hollow_eyed_reaper")
        b.answer("banish_hand", "apprentice")


@case("captain_of_the_damned")
def _captain_of_the_damned() -> None:
    b = Bench("cotgi")
    b.hand("captain_of_the_damned")
    with b.expect(power=4):
        b.play("captain_of_the_damned")
    b = Bench("cotgi")
    b.hand("captain_of_the_damned")
    b.defeat_monster("jade_serpent")
    with b.expect(power=4, coins=1):
        b.play("captain_of_the_damned")


@case("cursed_cutlass")
def _cursed_cutlass() -> None:
    b = Bench("cotgi")
    b.hand("cursed_cutlass", "mirewitch", "cursed_gunner")
    b.play("cursed_cutlass")
    with b.expect(power=1):
        b.use("cursed_cutlass")
    with b.expect(power=2 + 1):
        b.play("mirewitch")
    with b.expect(power=2 + 1):  # Gunner's Unite; the cutlass is spent this turn
        b.play("cursed_gunner")


@case("ghost_lantern")
def _ghost_lantern() -> None:
    b = Bench("cotgi")
    b.hand("ghost_lantern")
    b.play("ghost_lantern")
    with b.expect(power=1):
        b.use("ghost_lantern", 0)
    b.ships(enemy=4)
    b.s.crew[b.enemy] = 2
    with b.expect(ghost=4, e_crew=-1):  # it sails onto the enemy ship
        b.use("ghost_lantern", 1)


@case("drowned_deckhands")
def _drowned_deckhands() -> None:
    plain_monster("drowned_deckhands", "cotgi", honor=1, crew=1)


@case("hexed_parrots")
def _hexed_parrots() -> None:
    b = Bench("cotgi")
    b.on_top("hexed_parrots")
    with b.expect(honor=2, void=1, ghost=4):
        b.defeat_monster("jade_serpent", sp=1)
    plain_monster("hexed_parrots", "cotgi", honor=2, hand=1, deck=-1)


@case("gilded_skeletons")
def _gilded_skeletons() -> None:
    plain_monster("gilded_skeletons", "cotgi", honor=2)
    b = Bench("cotgi")
    b.ships(me=2)
    with b.expect(honor=2, coins=1, void=1):
        b.defeat_monster("gilded_skeletons", sp=2)


@case("marooned_wraith")
def _marooned_wraith() -> None:
    b = Bench("cotgi")
    b.center(5, "isle_shaman")
    with b.expect(honor=3, void=2):
        b.defeat_monster("marooned_wraith", sp=1)
        b.answer("banish_center", 5)
    assert b.cid("isle_shaman") in b.s.void


@case("haunted_figurehead")
def _haunted_figurehead() -> None:
    b = Bench("cotgi")
    with b.expect(honor=3, ongoing=1):
        b.defeat_monster("haunted_figurehead")
    with b.expect(ship=1):
        b.use("haunted_figurehead")
        b.answer("move_ship", 1)


@case("cursed_sea_witch")
def _cursed_sea_witch() -> None:
    b = Bench("cotgi")
    b.in_play(b.enemy, "clockwork_crewman")
    with b.expect(honor=4, void=1, e_constructs=-1, e_discard=1):
        b.defeat_monster("cursed_sea_witch")


@case("phantom_galleon")
def _phantom_galleon() -> None:
    b = Bench("cotgi")
    b.on_top("phantom_galleon")
    with b.expect(honor=2, void=1, ghost=5):
        b.defeat_monster("jade_serpent", sp=1)
    plain_monster("phantom_galleon", "cotgi", honor=4, coins=1)


@case("idol_guardian")
def _idol_guardian() -> None:
    plain_monster("idol_guardian", "cotgi", honor=4, coins=2)


@case("golden_colossus")
def _golden_colossus() -> None:
    plain_monster("golden_colossus", "cotgi", honor=6)
    b = Bench("cotgi")
    b.coins(b.me, coin(0, 0), coin(1, 0), coin(2, 0))
    with b.expect(honor=8, void=1):
        b.defeat_monster("golden_colossus")


# ---- the table covers the data --------------------------------------------------------------

ALL_KEYS = [c.key for c in default_catalog().cards]


@pytest.mark.parametrize("key", ALL_KEYS)
def test_card_effect(key: str) -> None:
    assert key in CASES, (
        f"no effect test for card {key!r}: add a case to tests/cards/test_card_effects.py"
    )
    CASES[key]()


def test_every_case_is_a_card() -> None:
    assert set(CASES) <= set(ALL_KEYS), set(CASES) - set(ALL_KEYS)

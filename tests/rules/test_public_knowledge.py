"""What the rules make public stays known; what they keep hidden stays hidden.

One test (or a pair) per card and rule that reveals, looks at, returns or places a card, as
listed in docs/rules-notes.md ("What becomes public"). For each:

- two games that differ only in what the rule revealed give every other seat (and a
  spectator) different views, and every world ``rules.determinize`` samples from such a view
  agrees with what was revealed; the views survive serialize;
- two games that differ only in a card the rule left hidden give them identical views.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from engine_service import rules
from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import COIN_DOWN, COIN_ITEM, DEEP, State
from engine_service.rules.view import view_bytes
from tests.rules.helpers import act, cid, end_turn, play

SAMPLES = 20
Fact = Callable[[State], bool]


def seen(s: State, seat: int) -> bytes:
    """What ``seat`` is sent: the service's bytes, which are the view's."""
    b = view_bytes(s, seat)
    assert b == rules.view(s, seat).serialize()
    return b


def observers(s: State, owner: int) -> list[int]:
    """Every seat but the owner of the cards in question, and a spectator."""
    return [q for q in (rules.SPECTATOR, *range(s.n)) if q != owner]


def worlds(s: State, seat: int) -> list[State]:
    vw = rules.view(s, seat)
    return [rules.determinize(vw, k) for k in range(SAMPLES)]


def revealed(a: State, b: State, owner: int, fact_a: Fact, fact_b: Fact) -> None:
    """``a`` and ``b`` differ only in what a rule revealed of ``owner``'s cards."""
    for seat in observers(a, owner):
        assert seen(a, seat) != seen(b, seat), f"seat {seat} cannot tell what was revealed"
        assert all(fact_a(w) for w in worlds(a, seat)), f"a world of seat {seat} denies what was revealed"
        assert all(fact_b(w) for w in worlds(b, seat)), f"a world of seat {seat} denies what was revealed"
    for s in (a, b):  # the knowledge is state: it survives serialize, so the store keeps it
        t = rules.deserialize(rules.serialize(s))
        assert t == s and t.known == s.known
        assert all(seen(t, seat) == seen(s, seat) for seat in observers(s, owner))


def hidden(a: State, b: State, owner: int) -> None:
    """``a`` and ``b`` differ only in a card of ``owner``'s the rules keep hidden."""
    assert a != b
    for seat in observers(a, owner):
        assert seen(a, seat) == seen(b, seat), f"seat {seat} sees a hidden card"


def holds(key: str, seat: int, n: int = 1) -> Fact:
    return lambda w: Counter(w.hands[seat])[cid(w, key)] >= n


# ---- Raid prevention (Skulls & Sails FAQ: "Return the cards to your hand after revealing them")


def raided(reveal: str | None, hand: list[str], deck: list[str] | None = None) -> State:
    """Seat 0 Raids seat 1, who reveals ``reveal`` from its hand (None: lets it happen)."""
    s = scenario(
        hand=["talons_of_amaruk", "militia"], ships=[2, 2], treasures={1: ["gold"]},
        hands={1: hand}, decks={1: deck if deck is not None else ["apprentice"] * 5},
    )  # fmt: skip
    play(s, "talons_of_amaruk")
    act(s, A.RAID_TAKE, A.raid_arg(1, cid(s, "gold")))
    act(s, A.PREVENT_RAID, cid(s, reveal)) if reveal else act(s, A.SKIP)
    return s


BOTH = ["hais_waveblade", "fleet_reinforcements", "apprentice"]


def test_the_card_revealed_to_prevent_a_raid_is_known_to_be_in_that_hand() -> None:
    a, b = raided("hais_waveblade", BOTH), raided("fleet_reinforcements", BOTH)
    assert a.known[1] == [cid(a, "hais_waveblade")] and b.known[1] == [cid(b, "fleet_reinforcements")]
    revealed(a, b, 1, holds("hais_waveblade", 1), holds("fleet_reinforcements", 1))
    # the rest of that hand stays hidden: which other card is there is not known
    c = raided("hais_waveblade", ["hais_waveblade", "fleet_reinforcements", "militia"], ["apprentice"] * 4 + ["apprentice"])
    d = raided("hais_waveblade", ["hais_waveblade", "apprentice", "militia"], ["apprentice"] * 4 + ["fleet_reinforcements"])
    hidden(c, d, 1)


def test_a_revealed_card_is_known_until_it_leaves_the_hand() -> None:
    s = raided("fleet_reinforcements", BOTH)
    act(s, A.END_TURN)  # the raider's turn ends; the victim's begins: still known
    assert s.active == 1 and s.known[1] == [cid(s, "fleet_reinforcements")]
    assert all(cid(w, "fleet_reinforcements") in w.hands[1] for w in worlds(s, 0))
    play(s, "fleet_reinforcements")
    assert s.known[1] == []
    end_turn(s)
    assert s.known[1] == []


def test_playing_one_of_two_copies_forgets_the_revealed_one() -> None:
    """Copies are indistinguishable: after one is played, no one knows whether the revealed
    copy is still there, so a hand with one copy and a hand with two look alike."""
    two = raided("fleet_reinforcements", ["fleet_reinforcements", "fleet_reinforcements", "apprentice"])
    one = raided("fleet_reinforcements", ["fleet_reinforcements", "apprentice", "apprentice"],
                 ["apprentice"] * 4 + ["fleet_reinforcements"])  # fmt: skip
    for s in (two, one):
        act(s, A.END_TURN)
        play(s, "fleet_reinforcements")
        assert s.known[1] == []
    hidden(two, one, 1)


def test_revealing_a_known_card_again_shows_no_second_copy() -> None:
    s = raided("fleet_reinforcements", ["fleet_reinforcements", "apprentice", "apprentice"])
    s.flags = 0  # a new turn's first Raid attempt (the same turn here, for brevity)
    s.hands[0].append(cid(s, "talons_of_amaruk"))
    s.treasures[1].append(cid(s, "gold"))
    play(s, "talons_of_amaruk")
    act(s, A.RAID_TAKE, A.raid_arg(1, cid(s, "gold")))
    act(s, A.PREVENT_RAID, cid(s, "fleet_reinforcements"))
    assert s.known[1] == [cid(s, "fleet_reinforcements")]


def test_letting_a_raid_happen_reveals_nothing() -> None:
    """The victim is asked whether or not it holds a prevention card (rules-notes, Raid)."""
    a = raided(None, ["fleet_reinforcements", "apprentice", "apprentice"])
    b = raided(None, ["apprentice", "apprentice", "apprentice"], ["apprentice"] * 4 + ["fleet_reinforcements"])
    assert a.known[1] == b.known[1] == []
    hidden(a, b, 1)


def test_the_kraken_holders_raid_can_be_prevented_and_reveals_the_card() -> None:
    """Open point: "You are The Kraken. Once per turn, you may Raid" is a player's Raid, which
    a prevention card answers ("When another player Raids you")."""

    def kraken_raid(reveal: str) -> State:
        s = scenario(ships=[2, 2], treasures={1: ["gold"]}, power=9, hands={1: BOTH})
        act(s, A.DEFEAT, DEEP)
        act(s, A.USE, cid(s, "thukal") * 8)
        act(s, A.RAID_TAKE, A.raid_arg(1, cid(s, "gold")))
        assert s.decision is not None and s.decision[0] == A.D_PREVENT
        act(s, A.PREVENT_RAID, cid(s, reveal))
        assert s.treasures[1] == [cid(s, "gold")]
        return s

    a, b = kraken_raid("hais_waveblade"), kraken_raid("fleet_reinforcements")
    revealed(a, b, 1, holds("hais_waveblade", 1), holds("fleet_reinforcements", 1))


# ---- drawing, and the deck running out


def ended_with(deck: list[str], discard: list[str], rng: int | None = None) -> State:
    """Seat 0 ends its turn with an empty hand and ``deck``: it draws those cards, then
    shuffles ``discard`` in and draws the rest of its five."""
    s = scenario(hand=[], deck=deck, discard=discard)
    if rng is not None:
        s.rng = rng
    act(s, A.END_TURN)
    return s


def test_the_cards_drawn_before_a_reshuffle_are_known_to_be_in_the_hand() -> None:
    """Every seat knows a hand and deck together; with the deck empty that is the hand."""
    a = ended_with(["militia", "militia"], ["apprentice"] * 6 + ["buccaneer"])
    b = ended_with(["apprentice", "buccaneer"], ["apprentice"] * 5 + ["militia"] * 2)
    assert a.known[0] == [cid(a, "militia")] * 2 and len(a.hands[0]) == 5
    revealed(a, b, 0, holds("militia", 0, 2), lambda w: holds("apprentice", 0)(w) and holds("buccaneer", 0)(w))


def test_the_cards_drawn_from_the_reshuffled_deck_stay_hidden() -> None:
    deck, discard = ["militia", "militia"], ["apprentice"] * 3 + ["buccaneer"] * 2 + ["militia"] * 2
    a, b = ended_with(deck, discard, rng=11), ended_with(deck, discard, rng=12345)
    assert sorted(a.hands[0]) != sorted(b.hands[0])
    hidden(a, b, 0)


def test_a_draw_that_empties_the_deck_mid_turn_makes_the_hand_known() -> None:
    """Tide Scribe's "draw a card" with an empty deck: the discard pile is shuffled in, and
    the hand as it was is known (the card drawn is not)."""

    def drew(hand: list[str], discard: list[str]) -> State:
        s = scenario(sets="cotgi", hand=["tide_scribe", *hand], deck=[], discard=discard)
        play(s, "tide_scribe")
        return s

    a = drew(["militia", "buccaneer"], ["apprentice"] * 4)
    b = drew(["apprentice", "apprentice"], ["apprentice"] * 2 + ["militia", "buccaneer"])
    assert len(a.hands[0]) == 3 and a.known[0] == sorted([cid(a, "militia"), cid(a, "buccaneer")])
    revealed(a, b, 0, lambda w: holds("militia", 0)(w) and holds("buccaneer", 0)(w), holds("apprentice", 0, 2))


def test_a_card_drawn_from_the_deck_stays_hidden() -> None:
    def drew(deck: list[str]) -> State:
        s = scenario(sets="cotgi", hand=["tide_scribe"], deck=deck)
        play(s, "tide_scribe")
        return s

    a, b = drew(["militia", "apprentice"]), drew(["apprentice", "militia"])
    assert a.hands[0] != b.hands[0]
    hidden(a, b, 0)
    assert seen(a, 0) != seen(b, 0)  # the drawer sees its card


# ---- cards leaving a hand: played, banished, discarded at the end of the turn


def test_a_played_card_is_public() -> None:
    a = scenario(hand=["militia", "buccaneer"])
    b = scenario(hand=["militia", "buccaneer"])
    play(a, "militia")
    play(b, "buccaneer")
    revealed(a, b, 0, lambda w: w.played[0] == [cid(w, "militia")], lambda w: w.played[0] == [cid(w, "buccaneer")])


def test_a_card_banished_from_hand_is_public_and_no_longer_known_there() -> None:
    """Void Corsair's banish: the card goes to The Void (a starting card leaves the game)."""

    def banished(key: str) -> State:
        s = scenario(hand=["void_corsair", "fleet_reinforcements", "hais_waveblade"])
        s.known[0] = sorted(cid(s, k) for k in ("fleet_reinforcements", "hais_waveblade"))
        play(s, "void_corsair")
        act(s, A.BANISH_HAND, cid(s, key))
        return s

    a, b = banished("fleet_reinforcements"), banished("hais_waveblade")
    assert a.known[0] == [cid(a, "hais_waveblade")] and b.known[0] == [cid(b, "fleet_reinforcements")]
    revealed(a, b, 0, lambda w: cid(w, "fleet_reinforcements") in w.void, lambda w: cid(w, "hais_waveblade") in w.void)


def test_each_player_banishing_from_hand_forgets_a_known_copy() -> None:
    """Moonstalkers' Fate, "each player may banish": the victim of a prevented Raid banishes
    the revealed card on another seat's turn."""
    s = raided("fleet_reinforcements", BOTH)
    s.center_deck.append(cid(s, "moonstalkers"))
    s.center[1] = cid(s, "wave_walkers")
    s.runes = 9
    act(s, A.ACQUIRE, 1)  # Moonstalkers enters: each seat, from seat 0, may banish
    act(s, A.SKIP)
    assert s.to_move() == 1
    act(s, A.BANISH_HAND, cid(s, "fleet_reinforcements"))
    assert s.known[1] == [] and cid(s, "fleet_reinforcements") in s.void


def test_the_hand_goes_face_up_to_the_discard_pile_at_the_end_of_the_turn() -> None:
    a = scenario(hand=["militia", "militia"], deck=["apprentice"] * 10)
    b = scenario(hand=["buccaneer", "militia"], deck=["apprentice"] * 10)
    for s in (a, b):
        s.known[0] = [cid(s, "militia")]
        act(s, A.END_TURN)
        assert s.known[0] == []
    revealed(a, b, 0, lambda w: w.discards[0].count(cid(w, "militia")) == 2, lambda w: cid(w, "buccaneer") in w.discards[0])


# ---- the center row, Treasure, coins, Thukal, the Ghost Pirate, Destroy


def refilled(top: list[str], below: list[str]) -> State:
    """Seat 0 acquires the card on space 1; the space is refilled from the center deck."""
    s = scenario(center={1: "wave_walkers"}, runes=9)
    s.center_deck = [cid(s, k) for k in below + top[::-1]]  # top = end
    act(s, A.ACQUIRE, 1)
    return s


def test_treasure_flipped_from_the_center_deck_is_public_under_the_next_card() -> None:
    a = refilled(["gold", "talons_of_amaruk"], ["militia"])
    b = refilled(["talons_of_amaruk", "gold"], ["militia"])
    assert a.under[1] == [cid(a, "gold")] and b.under[1] == []
    revealed(a, b, -2, lambda w: w.under[1] == [cid(w, "gold")], lambda w: w.under[1] == [] and cid(w, "gold") in w.center_deck)


def test_the_center_deck_below_the_cards_turned_over_stays_hidden() -> None:
    a = refilled(["talons_of_amaruk"], ["gold", "militia", "fleet_reinforcements"])
    b = refilled(["talons_of_amaruk"], ["fleet_reinforcements", "gold", "militia"])
    hidden(a, b, -2)


def coin_game(bag: list[int], rng: int) -> State:
    """Seat 0 acquires the card on the coin's space with its ship there: it takes the coin and
    a new one is drawn from the Treasure Bag (and the Ghost moves one space towards it)."""
    s = scenario(sets="cotgi", center={2: "tide_scribe"}, ships=[2, 4], runes=9, board_coin=2 * 6 + L.RUNES, ghost=DEEP)
    s.bag = list(bag)
    s.rng = rng
    act(s, A.ACQUIRE, 2)
    return s


def test_a_coin_drawn_from_the_bag_is_public_and_so_is_where_the_ghost_goes() -> None:
    bag = [0 * 6 + L.POWER, 5 * 6 + L.HONOR]
    games = {coin_game(bag, rng).board_coin: coin_game(bag, rng) for rng in range(1, 40)}
    assert len(games) == 2  # some RNG draws each coin
    a, b = games[bag[0]], games[bag[1]]
    assert (a.ghost, b.ghost) == (0, 5)  # one space from The Deep towards the coin

    def fact(c: int, g: int) -> Fact:
        return lambda w: w.board_coin == c and w.ghost == g and w.bag == [x for x in bag if x != c]

    revealed(a, b, -2, fact(bag[0], 0), fact(bag[1], 5))
    assert a.coins[0] == b.coins[0] == [2 * 6 + L.RUNES]


def test_the_coins_left_in_the_bag_stay_hidden() -> None:
    """A bag holds no order: only which coin came out shows (the view's bag is sorted)."""
    p, c, d = 0 * 6 + L.POWER, 3 * 6 + L.CREW, 4 * 6 + L.DRAW
    rng = next(r for r in range(1, 200) if coin_game([p, c, d], r).board_coin == p)
    a, b = coin_game([p, c, d], rng), coin_game([p, d, c], rng)  # the same coin drawn
    assert a.board_coin == b.board_coin == p and a.bag != b.bag
    hidden(a, b, -2)


def test_a_coin_turned_face_down_keeps_its_icon_in_every_view() -> None:
    a = scenario(sets="cotgi", coins={0: [L.CREW, 6 + L.CREW, 12 + L.DRAW]})
    b = scenario(sets="cotgi", coins={0: [L.CREW, 6 + L.CREW, 12 + L.POWER]})
    for s in (a, b):
        act(s, A.FLIP_COINS, L.CREW)
    assert a.coins[0][:2] == [L.CREW | COIN_DOWN, 6 + L.CREW | COIN_DOWN]
    revealed(a, b, 0, lambda w: w.coins[0] == a.coins[0], lambda w: w.coins[0] == b.coins[0])


def test_the_treasure_given_to_thukal_is_public() -> None:
    def tribute(coin: bool) -> State:
        s = scenario(sets="both", ships=[5, 0], treasures={0: ["gold"]}, coins={0: [7]})
        act(s, A.MOVE, DEEP)
        act(s, A.GIVE_TREASURE, COIN_ITEM + 7 if coin else cid(s, "gold"))
        return s

    a, b = tribute(True), tribute(False)
    assert a.kraken_coins == [7] and b.under[DEEP] == [cid(b, "gold")]
    revealed(a, b, 0, lambda w: w.kraken_coins == [7], lambda w: w.under[DEEP] == [cid(w, "gold")])


def test_a_destroyed_construct_goes_face_up_to_the_discard_pile() -> None:
    def destroyed(key: str) -> State:
        s = scenario(center={1: "rustclaw_marauders"}, power=9)
        s.constructs[1] = [cid(s, k) for k in ("hais_waveblade", "corsair_cannon")]
        act(s, A.DEFEAT, 1)
        act(s, A.DESTROY, cid(s, key))
        return s

    a, b = destroyed("hais_waveblade"), destroyed("corsair_cannon")
    revealed(a, b, 1, lambda w: w.discards[1][-1:] == [cid(w, "hais_waveblade")], lambda w: w.discards[1][-1:] == [cid(w, "corsair_cannon")])

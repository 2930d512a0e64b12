"""No leak of hidden cards, at every step of whole games.

For a seat (or a spectator), two states that differ only in what it may not know (the other
seats' hands, deck orders, the center deck, the Treasure Bag) must give it the same view and
the same events after every action: the public course of the game never depends on a hidden
card until a rule reveals that card.

At each step of a random game, and for every seat and a spectator, the hidden cards of the
real state are dealt again at random, and the step's action is applied to both deals. What
the action itself reveals is kept as it was, so that a difference can only come from a
leak: the cards the observer draws from its own deck, those the center deck turns over
(all of it if The Void is reshuffled), the Treasure Bag if a coin is drawn, the RNG (whose
shuffles are revealed by what is drawn after them), a card the acting seat shows from its
hand (played, banished, revealed), the cards every seat knows to be in a hand
(``State.known``), and the hand of a seat whose turn ends (it goes face up to the discard
pile). Everything else hidden is dealt again.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario
from engine_service.rules.state import State
from tests.rules.helpers import act, cid, play

CONFIGS = [("ss", 2), ("ss", 3), ("ss", 4), ("cotgi", 2), ("cotgi", 4), ("cotgi", 6), ("both", 2), ("both", 3), ("both", 5)]
END = A.encode(A.END_TURN)
SHOWN_FROM_HAND = (A.PLAY, A.BANISH_HAND, A.PREVENT_RAID)


def _keep_top(zone: list[int], k: int, rnd: random.Random) -> list[int]:
    """The zone (top = end) with its top k cards in place and the rest in a new order."""
    k = min(k, len(zone))
    rest = zone[: len(zone) - k]
    rnd.shuffle(rest)
    return rest + zone[len(zone) - k :]


def redeal(s: State, after: State, events: list[tuple[object, ...]], action: int, seat: int, rnd: random.Random) -> State:
    """``s`` with what ``seat`` may not know dealt again, except what ``action`` reveals
    (``after`` and ``events``: the real outcome of the action, which tells how much of each
    hidden zone it turned over)."""
    t = s.clone()
    actor = s.to_move()
    shown = action & 0xFFFF if action >> 16 in SHOWN_FROM_HAND else -1
    reshuffled = {e[1] for e in events if e[0] == "reshuffle"}
    turn_ended = {e[1] for e in events if e[0] == "turn_end"}
    for q in range(s.n):
        if q == seat:  # its hand is known; its deck order is not, but its draws reveal the top
            k = len(s.decks[q]) if q in reshuffled else len(s.decks[q]) - len(after.decks[q])
            t.decks[q] = _keep_top(s.decks[q], k, rnd)
            continue
        if q in turn_ended:  # the hand goes face up to the discard pile, in its order
            rnd.shuffle(t.decks[q])
            continue
        known = s.known[q]  # cards every seat knows to be in the hand stay there
        pool = s.hands[q] + s.decks[q]
        for c in known:
            pool.remove(c)
        rnd.shuffle(pool)
        k = len(s.hands[q]) - len(known)
        hand, deck = known + pool[:k], pool[k:]
        if q == actor and shown >= 0 and shown not in hand:  # the card the action shows
            i, j = deck.index(shown), len(known)
            deck[i], hand[j] = hand[j], shown
        t.hands[q], t.decks[q] = hand, deck
    void_reshuffled = any(e[0] == "void_reshuffled" for e in events)
    k = len(s.center_deck) if void_reshuffled else len(s.center_deck) - len(after.center_deck)
    t.center_deck = _keep_top(s.center_deck, k, rnd)
    if len(after.bag) == len(s.bag):  # no coin drawn: the bag's order is not revealed
        rnd.shuffle(t.bag)
    return t


def observed(s: State, seat: int) -> tuple[rules.View, list[int]]:
    """What ``seat`` is shown: its view, and its legal actions when it is to move."""
    legal = rules.legal_actions(s) if seat >= 0 and s.to_move() == seat else []
    return rules.view(s, seat), legal


def check_step(s: State, action: int, rnd: random.Random) -> State:
    """Apply ``action`` to ``s`` and to a new deal of it for every seat and a spectator."""
    after = s.clone()
    events = rules.apply(after, action)
    for seat in [rules.SPECTATOR, *range(s.n)]:
        alt = redeal(s, after, events, action, seat, rnd)
        assert observed(alt, seat) == observed(s, seat), "the new deal is not hidden from the seat"
        assert action in rules.legal_actions(alt), f"{rules.describe_action(s, action)} depends on a hidden card"
        alt_events = rules.apply(alt, action)
        what = f"seat {seat} after {rules.describe_action(s, action)}"
        assert alt_events == events, f"events differ with other hidden cards for {what}"
        assert observed(alt, seat) == observed(after, seat), f"views differ with other hidden cards for {what}"
    return after


def raid_cards(s: State) -> frozenset[int]:
    """Cards that Raid or prevent Raids (their text says so)."""
    return frozenset(c.id for c in s.T.catalog.cards if "raid" in c.text.lower())


def pick(s: State, rnd: random.Random, wanted: frozenset[int]) -> int:
    """Random play that ends the turn only when nothing else is legal (resources run out, so
    games end), leaning towards Raids so that prevention is often in question: raid cards
    are acquired, ships go where enemy ships are, and a Raid is taken when offered."""
    acts = rules.legal_actions(s)
    if rnd.random() < 0.7:
        p = s.to_move()
        others = {s.ship[q] for q in range(s.n) if q != p and s.ship[q] >= 0}
        leaning = [
            a for a in acts
            if (a >> 16 in (A.ACQUIRE, A.ACQUIRE_CREW) and (a & 0xFFFF) < 6 and s.center[a & 0xFFFF] in wanted)
            or (a >> 16 in (A.MOVE, A.MOVE_SHIP, A.PLACE_SHIP) and a & 0xFFFF in others)
            or a >> 16 == A.RAID_TAKE
        ]  # fmt: skip
        if leaning:
            return rnd.choice(leaning)
    if len(acts) > 1 and acts[0] == END:
        return rnd.choice(acts[1:])
    return rnd.choice(acts)


def raiders_table(s: State) -> State:
    """Each seat starts with a Gold in front of it and, instead of two Apprentices, Talons of
    Amaruk (Raid) and Fleet Reinforcements (prevents a Raid): Raids with prevention in
    question happen every few turns instead of every few games."""
    T = s.T
    swap = [T.catalog.id("talons_of_amaruk"), T.catalog.id("fleet_reinforcements")]
    apprentice = T.catalog.id("apprentice")
    for q in range(s.n):
        for c in swap:
            zone = next(z for z in (s.decks[q], s.hands[q]) if apprentice in z)
            zone[zone.index(apprentice)] = c
        s.treasures[q].append(T.catalog.id("gold"))
    return s


def play_checking_every_step(s: State, rnd: random.Random) -> None:
    wanted = raid_cards(s)
    steps = 0
    while not s.over and steps < 3000:
        s = check_step(s, pick(s, rnd, wanted), rnd)
        steps += 1
    assert s.over


@pytest.mark.parametrize(("sets", "players"), CONFIGS)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), choice_seed=st.integers(0, 2**31))
def test_no_hidden_card_changes_what_a_seat_sees(sets: str, players: int, seed: int, choice_seed: int) -> None:
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    play_checking_every_step(s, random.Random(choice_seed))


@pytest.mark.parametrize(("sets", "players"), [("ss", 2), ("both", 3), ("cotgi", 4)])
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), choice_seed=st.integers(0, 2**31))
def test_no_hidden_card_changes_what_a_seat_sees_at_a_raiders_table(
    sets: str, players: int, seed: int, choice_seed: int
) -> None:
    s = raiders_table(rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed)))
    play_checking_every_step(s, random.Random(choice_seed))


def test_a_raid_asks_the_victim_whether_or_not_a_prevention_card_is_in_hand() -> None:
    """A victim who owns Fleet Reinforcements, in hand in one deal and in its
    deck in the other. Both deals ask the victim; the raider and a spectator see the same."""
    deals = {"in hand": (["fleet_reinforcements", "apprentice"], ["militia"]),
             "in deck": (["militia", "apprentice"], ["fleet_reinforcements"])}  # fmt: skip
    seen = {}
    for name, (hand, deck) in deals.items():
        s = scenario(hand=["talons_of_amaruk"], ships=[2, 2], treasures={1: ["gold"]}, hands={1: hand}, decks={1: deck})
        play(s, "talons_of_amaruk")
        events = act(s, A.RAID_TAKE, A.raid_arg(1, cid(s, "gold")))
        assert s.decision is not None and s.decision[0] == A.D_PREVENT and s.to_move() == 1
        seen[name] = (events, rules.view(s, 0), rules.view(s))
    assert seen["in hand"] == seen["in deck"]

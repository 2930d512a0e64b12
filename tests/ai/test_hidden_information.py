"""ISMCTS cannot see hidden cards: two states that differ only in what the deciding seat cannot
see (the opponents' hands, every deck order, the center deck, the Treasure Bag and the RNG)
give the same view, byte for byte, and the same search, visit for visit, with the same seed."""

from __future__ import annotations

import random

import pytest

from ai_workers.bots import BotSettings
from ai_workers.bots.ismcts import search
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import forced_action, rollout_action
from engine_service import rules
from engine_service.rules.state import State
from tests.ai.positions import mid_game_states

SETTINGS = BotSettings(name="ismcts", iterations=150, seed=42)


def reshuffle_hidden(s: State, seat: int, seed: int) -> State:
    """The same game as ``seat`` knows it, with everything it cannot see dealt differently."""
    t = s.clone()
    rnd = random.Random(seed)
    for q in range(t.n):
        if q == seat:
            rnd.shuffle(t.decks[q])
            continue
        pool = t.hands[q] + t.decks[q]  # but the cards every seat knows to be in the hand
        for c in t.known[q]:
            pool.remove(c)
        rnd.shuffle(pool)
        k = len(t.hands[q]) - len(t.known[q])
        t.hands[q], t.decks[q] = t.known[q] + pool[:k], pool[k:]
    rnd.shuffle(t.center_deck)
    rnd.shuffle(t.bag)
    t.rng = rnd.getrandbits(63) | 1
    return t


def differs_in_hidden_cards(a: State, b: State, seat: int) -> bool:
    """Some opponent holds other cards (or, with an empty hand, draws in another order), and
    the center deck and the RNG differ."""
    others = [q for q in range(a.n) if q != seat]
    hands = any(sorted(a.hands[q]) != sorted(b.hands[q]) for q in others)
    decks = any(a.decks[q] != b.decks[q] for q in others)
    return (hands or decks) and a.center_deck != b.center_deck and a.rng != b.rng


def other_deal(s: State, seat: int, index: int) -> State:
    """A reshuffle of the hidden cards that changes some opponent's hand, if any can change."""
    for attempt in range(50):
        t = reshuffle_hidden(s, seat, seed=index * 100 + attempt)
        if any(sorted(s.hands[q]) != sorted(t.hands[q]) for q in range(s.n) if q != seat):
            return t
    return t


def answer_in_opponents_turn() -> State:
    """A position where a seat answers a choice during another seat's turn (a Fate banish,
    a Raid prevention...)."""
    for seed in range(200):
        s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=seed))
        K = knowledge(s.T)
        rnd = random.Random(seed)
        while not s.over:
            legal = rules.legal_actions(s)
            if s.to_move() != s.active and len(legal) > 1:
                return s
            rules.apply(s, rollout_action(s, legal, K, rnd, 0.2))
    raise AssertionError("no answer in an opponent's turn found")


POSITIONS = [*mid_game_states(5), answer_in_opponents_turn()]


@pytest.mark.parametrize("index", range(len(POSITIONS)))
def test_same_view_same_decision(index: int) -> None:
    s1 = POSITIONS[index]
    seat = s1.to_move()
    s2 = other_deal(s1, seat, index)
    assert s1 != s2 and differs_in_hidden_cards(s1, s2, seat)
    v1, v2 = rules.view(s1, seat), rules.view(s2, seat)
    assert v1.serialize() == v2.serialize()
    legal = rules.legal_actions(s1)
    assert legal == rules.legal_actions(s2) and len(legal) > 1
    assert forced_action(s1, legal, knowledge(s1.T)) is None  # a real search, not a shortcut
    r1, r2 = search(v1, legal, SETTINGS), search(v2, legal, SETTINGS)
    assert r1.iterations == r2.iterations == SETTINGS.iterations
    assert r1.action == r2.action
    assert r1.visits == r2.visits and r1.values == r2.values


def test_the_search_does_depend_on_its_seed() -> None:
    """So that equal searches above mean something: another seed, other samples, other
    statistics."""
    s = POSITIONS[0]
    v, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    a = search(v, legal, SETTINGS)
    b = search(v, legal, BotSettings(name="ismcts", iterations=150, seed=43))
    assert a.values != b.values


_SEARCH_IN_A_PROCESS = """
import sys
from ai_workers.bots import BotSettings
from ai_workers.bots.ismcts import search
from engine_service import rules
from tests.ai.positions import mid_game_states
out = []
states = mid_game_states(4)
# one without a pending choice: hash(None), the case that differed, is an address on 3.11
assert any(s.decision is None for s in states)
for s in states:
    seat = s.to_move()
    r = search(rules.view(s, seat), rules.legal_actions(s),
               BotSettings(name="ismcts", iterations=60, seed=42))
    out.append(sorted(r.visits.items()))
print(repr(out))
"""


def test_a_seeded_search_is_the_same_in_every_process() -> None:
    """The same seed and view give the same search in another process (a Celery worker's
    other pool process, a benchmark's next run), not only in this one: decision seeds do not
    depend on object addresses (hash(None) on Python 3.11) or on PYTHONHASHSEED."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    runs = []
    for hash_seed in ("0", "1", "random"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": root}
        done = subprocess.run([sys.executable, "-c", _SEARCH_IN_A_PROCESS], env=env, cwd=root,
                              capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
        runs.append(done.stdout)
    assert runs[0] and runs[0] == runs[1] == runs[2]


def test_the_searchs_samples_keep_the_cards_known_to_be_in_a_hand() -> None:
    """The raider's samples hold the card the victim revealed to prevent the Raid (it went
    back to the victim's hand), every time; without the knowledge, only now and then."""
    from ai_workers.bots.sampling import sample, without_hand_knowledge
    from tests.rules.test_public_knowledge import BOTH, raided

    s = raided("hais_waveblade", BOTH)
    waveblade, view = s.T.catalog.id("hais_waveblade"), rules.view(s, 0)
    assert all(waveblade in sample(view, k).hands[1] for k in range(50))
    forgot = [waveblade in sample(without_hand_knowledge(view), k).hands[1] for k in range(50)]
    assert any(forgot) and not all(forgot)

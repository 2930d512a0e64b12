"""Multi-player search: every seat in the tree plays for its own outcome (max^n).

The position (3 players, Skulls & Sails): seat 0 is to end its turn. All three ships share a
space. Seat 1 holds Talons of Amaruk ("Gain 2 Runes and Raid") and will Raid on its turn;
seat 0 (far ahead in Honor) has a Pearl Strand (2 Honor), seat 2 a Gold (1 Honor). For seat 1
the right Raid is seat 0's Pearl (more Honor, taken from the leader); for seat 0 the right
Raid by seat 1 is seat 2's Gold. A search from seat 0's view must expect seat 1 to take the
Pearl: its nodes are scored with seat 1's outcome, not seat 0's.
"""

from __future__ import annotations

from ai_workers.bots import BotSettings
from ai_workers.bots.evaluation import evaluate
from ai_workers.bots.ismcts import SEAT_SHIFT, SearchOptions, Tree, search
from ai_workers.bots.knowledge import knowledge
from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.scenario import scenario

END_TURN = A.encode(A.END_TURN)


def position() -> rules.State:
    s = scenario(
        sets="ss", players=3, seed=3, hand=[], deck=["apprentice"] * 10, discard=[],
        hands={1: ["talons_of_amaruk"] + ["apprentice"] * 4, 2: ["apprentice"] * 5},
        decks={1: [], 2: ["apprentice"] * 5},
        ships=[2, 2, 2], treasures={0: ["pearl_strand"], 2: ["gold"]},
    )  # fmt: skip
    s.tokens[:] = [22, 4, 8]
    return s


def seat1_raid_position(s: rules.State) -> rules.State:
    """Seat 0 ends its turn; seat 1 plays its cards up to the Raid."""
    t = s.clone()
    rules.apply(t, END_TURN)
    while not (t.decision is not None and t.decision[0] == A.D_RAID):
        legal = rules.legal_actions(t)
        rules.apply(t, next((a for a in legal if rules.kind_of(a) == A.PLAY), legal[0]))
    return t


def raid_visits(tree: Tree, start: int, seat: int) -> dict[int, int]:
    """Visits of ``seat``'s Raid choices in the subtree of ``start``, by victim."""
    out: dict[int, int] = {}
    stack = [start]
    while stack:
        node = stack.pop()
        for key, child in tree.kids[node].items():
            stack.append(child)
            action = key & ((1 << SEAT_SHIFT) - 1)
            if key >> SEAT_SHIFT == seat and rules.kind_of(action) == A.RAID_TAKE:
                victim = rules.arg_of(action) // 4096
                out[victim] = out.get(victim, 0) + tree.visits[child]
    return out


def test_the_right_raid_differs_between_seats() -> None:
    t = seat1_raid_position(position())
    K = knowledge(t.T)
    after = {}
    for a in rules.legal_actions(t):
        if rules.kind_of(a) == A.RAID_TAKE:
            u = t.clone()
            rules.apply(u, a)
            after[rules.arg_of(a) // 4096] = evaluate(u, K)
    assert set(after) == {0, 2}
    assert after[0][1] > after[2][1]  # seat 1 gains more by taking seat 0's Pearl
    assert after[2][0] > after[0][0]  # seat 0 would rather seat 1 took seat 2's Gold


def test_search_expects_each_seat_to_play_for_itself() -> None:
    s = position()
    result = search(rules.view(s, 0), rules.legal_actions(s), BotSettings(iterations=400, seed=1),
                    SearchOptions(backup="maxn"))  # fmt: skip
    assert result.tree is not None
    end = result.child(END_TURN, 0)
    assert end is not None
    seen = raid_visits(result.tree, end, seat=1)
    assert seen.get(0, 0) > 1.5 * seen.get(2, 0) > 0, seen

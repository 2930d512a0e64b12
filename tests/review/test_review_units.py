"""The review's parts in process: which decisions it rates (the bots' own rule), the labels,
the replay of a game's log, and that a decision's rating reads nothing the seat could not see."""

from __future__ import annotations

import base64
import random

from ai_workers.analysis import analyse_payload
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import FORCED_KINDS, forced_action, rollout_action
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.server import review
from engine_service.server.analysis import ANALYSIS_SEED, _answer_of_result
from engine_service.server.meta import GameMeta
from tests.ai.test_hidden_information import differs_in_hidden_cards, other_deal
from tests.review.support import ITERATIONS


def played(
    seed: int, sets: str = "ss", turns: int = 99
) -> tuple[rules.State, list[tuple[int, int]]]:
    """Heuristic self-play (with some noise) until the game ends or ``turns`` have begun."""
    s = rules.new_game(rules.GameConfig(sets=sets, players=2, seed=seed))
    K = knowledge(s.T)
    rnd = random.Random(seed)
    log = []
    while not s.over and s.turn <= turns:
        a = rollout_action(s, rules.legal_actions(s), K, rnd, 0.2)
        log.append((s.to_move(), a))
        rules.apply(s, a)
    return s, log


def meta(seed: int, sets: str = "ss") -> GameMeta:
    return GameMeta(sets, 2, seed, (), ("", ""), "", 0)


def test_order_free_kinds_are_the_bots_forced_kinds() -> None:
    assert frozenset(FORCED_KINDS) == review.ORDER_FREE_KINDS


def test_a_review_rates_exactly_the_decisions_a_bot_would_search() -> None:
    """For the policy's own moves (the bots', which play forced moves first), a decision is
    rated exactly when a bot would have searched it."""
    searched = rated = 0
    for seed in (1, 2):
        s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=seed))
        K = knowledge(s.T)
        rnd = random.Random(seed)
        while not s.over:
            legal = rules.legal_actions(s)
            f = forced_action(s, legal, K)
            a = rollout_action(s, legal, K, rnd, 0.0)
            bot_searches = len(legal) > 1 and f is None
            assert review.real_choice(s, legal, a) == bot_searches
            searched += bot_searches
            rated += review.real_choice(s, legal, a)
            rules.apply(s, a)
    assert searched > 50


def test_buying_before_playing_the_hand_is_rated() -> None:
    """A seat that leaves order-free plays for later made a real choice."""
    s, _ = played(3, turns=3)
    while s.decision is not None or not s.hands[s.active]:
        rules.apply(s, rules.legal_actions(s)[0])
    legal = rules.legal_actions(s)
    plays = [a for a in legal if a >> 16 in review.ORDER_FREE_KINDS]
    others = [a for a in legal if a >> 16 not in review.ORDER_FREE_KINDS]
    assert plays and others
    assert not review.real_choice(s, legal, plays[0])
    assert review.real_choice(s, legal, others[0])


def test_labels_follow_the_drop() -> None:
    assert review.label(5, 5, 0.1, 0.9) == epb.REVIEW_LABEL_BEST  # the search's own choice
    assert review.label(5, 6, 0.6, 0.5) == epb.REVIEW_LABEL_BEST  # no worse than it
    cuts = (review.GOOD_BELOW, review.INACCURACY_BELOW, review.MISTAKE_BELOW)
    assert 0 < cuts[0] < cuts[1] < cuts[2] < 1
    expect = [
        (cuts[0] / 2, epb.REVIEW_LABEL_GOOD),
        ((cuts[0] + cuts[1]) / 2, epb.REVIEW_LABEL_INACCURACY),
        ((cuts[1] + cuts[2]) / 2, epb.REVIEW_LABEL_MISTAKE),
        (cuts[2] + 0.01, epb.REVIEW_LABEL_BLUNDER),
    ]
    for drop, want in expect:
        assert review.label(5, 6, 0.8 - drop, 0.8) == want, drop


def test_the_replay_gives_the_seats_decisions_and_checks_the_stored_state() -> None:
    s, log = played(4, turns=6)
    found = review.decisions(meta(4), log, 0, s)
    assert found and all(log[d.version - 1] == (0, d.action) for d in found)
    assert [d.version for d in found] == sorted(d.version for d in found)
    other = review.decisions(meta(4), log, 1, s)
    assert other and not {d.version for d in found} & {d.version for d in other}
    # a log that does not end on the stored state (another seed): no review
    assert review.decisions(meta(5), log, 0, s) is None


def rating(state: rules.State, d: review.Decision) -> epb.DecisionReview:
    """A decision rated as the engine has it rated: the payload the server sends (built from
    ``state``, here perhaps with the hidden cards dealt again), the worker's search, the
    server's label."""
    seat = d.view.seat
    view = base64.b64encode(rules.view(state, seat).serialize()).decode()
    out = analyse_payload(view=view, legal=d.legal, budget_ms=60_000, iterations=ITERATIONS,
                          seed=ANALYSIS_SEED)  # fmt: skip
    r = review.rated(d, _answer_of_result(out), seat, 60_000)
    focus = review.to_focus(r)
    if focus is None:
        return r
    again = analyse_payload(view=view, legal=focus, budget_ms=60_000, iterations=ITERATIONS,
                            seed=ANALYSIS_SEED)  # fmt: skip
    return review.rated(d, _answer_of_result(out), seat, 60_000, _answer_of_result(again))


def test_a_rating_is_the_same_with_every_hidden_card_dealt_again() -> None:
    s, log = played(6, sets="both", turns=8)
    found = review.decisions(meta(6, "both"), log, 1, s)
    assert found is not None and len(found) >= 4
    replay = rules.new_game(rules.GameConfig(sets="both", players=2, seed=6))
    states = {}
    for version, (_, action) in enumerate(log, start=1):
        states[version] = replay.clone()
        rules.apply(replay, action)
    checked = 0
    for i, d in enumerate(found[-4:]):
        real = states[d.version]
        alt = other_deal(real, 1, i)
        if not differs_in_hidden_cards(real, alt, 1):
            continue
        assert rules.view(alt, 1) == d.view
        first, again = rating(real, d), rating(alt, d)
        assert first == again
        assert 0.0 <= first.win_probability <= 1.0 and len(first.win_probabilities) == 2
        checked += 1
    assert checked >= 3

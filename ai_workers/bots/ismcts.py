"""``ismcts``: single-observer information-set Monte Carlo tree search.

The tree is over the deciding seat's *information*: nodes are reached by action ids, never by
hidden cards. Each iteration samples one full state consistent with the seat's view
(``rules.determinize``: opponents' hands, every deck order, the center deck, the Treasure Bag
and the RNG), walks down the tree choosing among the actions legal in that sample (UCB1 with
availability counts: a child's exploration term uses how often it *could* have been chosen),
expands one untried action (the policy's favourite first), plays a heuristic rollout to the end
of the turn after the current one (so that what a move leaves to the next seat counts), scores
the position with the evaluation function and backs the reward up from the point of view of
the seat that chose each action. Other seats' choices (a Fate banish, a Raid prevention, the
next seat's turn) are nodes of theirs, played from the same sample.

The answer is the root action with the most visits. A decision with one legal action takes no
search, and neither does playing the cards in hand, using once-per-turn abilities and flipping
coin pairs: they only ever add resources, so they come first in the policy's order (inside the
tree too), and the search is over what to do with the resources: what to buy or defeat, where
to sail, and how to answer choices. The search only ever reads ``view``: two states that look
the same to the seat give the same decision for the same seed.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass

from ai_workers.bots.evaluation import evaluate
from ai_workers.bots.knowledge import Knowledge, knowledge
from ai_workers.bots.policy import best_action, forced_action, rollout_action
from ai_workers.bots.seeding import decision_seed
from ai_workers.bots.settings import BotSettings
from engine_service import rules
from engine_service.rules.engine import apply_unchecked, legal_actions
from engine_service.rules.view import determinize

CLOCK_EVERY = 8  # iterations between looks at the clock
ROLLOUT_EPS = 0.1  # chance of a random (non end-turn) rollout move
HORIZON_TURNS = 2  # the current turn and the next seat's: what it leaves to the others counts


@dataclass(frozen=True, slots=True)
class SearchResult:
    action: int
    iterations: int
    seconds: float
    visits: dict[int, int]  # root action -> visits
    values: dict[int, float]  # root action -> mean reward of the deciding seat

    @property
    def iterations_per_second(self) -> float:
        return self.iterations / self.seconds if self.seconds > 0 else 0.0


def search(
    view: rules.View,
    legal: list[int],
    settings: BotSettings,
    *,
    horizon_turns: int = HORIZON_TURNS,
    rollout_eps: float = ROLLOUT_EPS,
) -> SearchResult:
    """Run ISMCTS from ``view`` (whose seat must choose among ``legal``) within the budget."""
    start = time.perf_counter()
    K: Knowledge = knowledge(view.state.T)
    f = forced_action(view.state, legal, K)
    if f is not None or len(legal) == 1:
        action = legal[0] if f is None else f
        return SearchResult(action, 0, time.perf_counter() - start, {}, {})
    rnd = random.Random(decision_seed(view, settings.seed))
    max_iter = settings.iterations or (1 << 62)
    deadline = start + settings.budget_ms / 1000.0
    c_explore = settings.exploration
    stop_turn = view.state.turn + horizon_turns

    kids: list[dict[int, int]] = [{}]
    visits = [0]
    total = [0.0]
    avail = [0]
    actor = [-1]
    log, sqrt = math.log, math.sqrt

    it = 0
    while it < max_iter:
        if it % CLOCK_EVERY == 0 and it and time.perf_counter() >= deadline:
            break
        s = determinize(view, rnd.getrandbits(63))
        node = 0
        path = [0]
        acts = legal
        # selection / expansion
        while not s.over and s.turn < stop_turn:
            if node:
                f = forced_action(s, acts, K)
                if f is not None:
                    apply_unchecked(s, f)
                    acts = legal_actions(s)
                    continue
            ch = kids[node]
            untried: list[int] = []
            for a in acts:
                c = ch.get(a)
                if c is None:
                    untried.append(a)
                else:
                    avail[c] += 1
            who = s.to_move()
            if untried:
                a = untried[0] if len(untried) == 1 else best_action(s, untried, K)
                c = len(visits)
                ch[a] = c
                kids.append({})
                visits.append(0)
                total.append(0.0)
                avail.append(1)
                actor.append(who)
                apply_unchecked(s, a)
                path.append(c)
                break
            best_c, best_u = -1, -1.0
            for a in acts:
                c = ch[a]
                n = visits[c]
                u = total[c] / n + c_explore * sqrt(log(avail[c]) / n)
                if u > best_u:
                    best_c, best_u, best_a = c, u, a
            apply_unchecked(s, best_a)
            node = best_c
            path.append(best_c)
            acts = legal_actions(s)
        # rollout to the horizon
        while not s.over and s.turn < stop_turn:
            acts = legal_actions(s)
            apply_unchecked(s, rollout_action(s, acts, K, rnd, rollout_eps))
        r = evaluate(s, K)
        visits[0] += 1
        for c in path[1:]:
            visits[c] += 1
            total[c] += r[actor[c]]
        it += 1

    root = kids[0]
    vis = {a: visits[c] for a, c in root.items()}
    vals = {a: total[c] / visits[c] for a, c in root.items() if visits[c]}
    action = max(legal, key=lambda a: (vis.get(a, 0), vals.get(a, 0.0)))
    return SearchResult(action, it, time.perf_counter() - start, vis, vals)


class ISMCTSBot:
    """The search as a bot; ``last`` holds the last search (for metrics and benchmarks)."""

    def __init__(self) -> None:
        self.last: SearchResult | None = None

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        result = search(view, legal, settings)
        self.last = result if result.iterations else None
        return result.action

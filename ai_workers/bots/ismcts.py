"""``ismcts``: information-set Monte Carlo tree search, for any number of seats.

The tree is over the deciding seat's *information*: nodes are reached by (seat, action id)
pairs, never by hidden cards. Each iteration samples one full state consistent with the seat's
view (``rules.determinize``: opponents' hands, every deck order, the center deck, the Treasure
Bag and the RNG), walks down the tree choosing among the actions legal in that sample (UCB1
with availability counts: a child's exploration term uses how often it *could* have been
chosen), expands one untried action (the policy's favourite first), plays a heuristic rollout
to the end of the turn after the current one (so that what a move leaves to the next seat
counts), and scores the position with the evaluation function: one win probability per seat.

Multi-player backups (``SearchOptions.backup``):

- ``maxn`` (the default): every node adds the reward *of the seat that chose it*, so each seat
  in the tree (the next seat's turn, another seat's Fate banish or Raid prevention) is played
  to maximise its own outcome;
- ``paranoid``: the other seats' nodes add one minus the deciding seat's reward, as if they
  all played against it.

Nodes exist only where someone has a real choice: a single legal action, playing a card,
using a once-per-turn ability or flipping a coin pair are applied on the way down (these only
ever add resources; every "may" in them is asked separately), in the policy's order. At the
root they take no search either. The search is spent on what to buy and defeat, where to sail
and how to answer choices.

Options, off by default (docs/bots.md gives what each measured against the defaults):
progressive widening of main-phase nodes (``widening``: a node with n visits may have about
``widening * n ** widening_exp`` children, best-scored by the policy first; ending the turn is
always among them), keeping the tree between the decisions of one turn (``reuse``, in
:class:`ISMCTSBot`: the next search of the same seat in the same turn starts from the node of
the action chosen last, with its statistics), and ``tree_turns``: how many turns of the horizon
the tree covers (the rest is played by the rollout policy).

The answer is the root action with the most visits. The search only ever reads ``view``: two
states that look the same to the seat give the same decision for the same seed.
"""

from __future__ import annotations

import math
import random
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ai_workers.bots import root_parallel
from ai_workers.bots.evaluation import WEIGHT_SETS, evaluate, evaluate_projection
from ai_workers.bots.knowledge import Knowledge, knowledge
from ai_workers.bots.policy import best_action, forced_action, rollout_action
from ai_workers.bots.sampling import sample, without_hand_knowledge
from ai_workers.bots.seeding import decision_seed
from ai_workers.bots.settings import BotSettings
from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.engine import apply_unchecked, legal_actions
from engine_service.rules.state import State
from engine_service.rules.view import determinize

CLOCK_EVERY = 8  # iterations between looks at the clock
ROLLOUT_EPS = 0.1  # chance of a random (non end-turn) rollout move
HORIZON_TURNS = 2  # the current turn and the next seat's: what it leaves to the others counts
SEAT_SHIFT = 24  # a child's key: action | seat << SEAT_SHIFT (action ids are below 2**21)
END_TURN = A.END_TURN << 16
BACKUPS = ("maxn", "paranoid")
EVALUATIONS = ("lead", "softmax", "projection")
KEPT_TREES = 32  # trees kept for reuse by one bot instance (one per game seat in progress)


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """How the search plays (docs/bots.md says what has been measured)."""

    backup: str = "maxn"
    widening: float = 0.0  # 0 = off
    widening_exp: float = 0.5
    reuse: bool = False
    horizon_turns: int = HORIZON_TURNS
    tree_turns: int = HORIZON_TURNS  # turns the tree covers; later ones are rollout only
    rollout_eps: float = ROLLOUT_EPS
    # "lead" (logistic of the lead), "softmax" (shares that sum to 1) or "projection"
    # (logistic of the lead in projected end-of-game Honor: evaluation.Projection)
    evaluation: str = "lead"
    fast: bool = True  # sample only the top of the center deck; play cards without listing
    weights: str = "value"  # the evaluation's weight set (evaluation.WEIGHT_SETS)
    workers: int = 1  # processes searching each decision (root parallelism: root_parallel.py)
    # sample the other hands keeping the cards every seat knows to be there (State.known);
    # False: as if nothing were known of them (to measure what the knowledge is worth)
    hand_knowledge: bool = True

    def __post_init__(self) -> None:
        if self.backup not in BACKUPS:
            raise ValueError(f"backup must be one of {BACKUPS}, got {self.backup!r}")
        if self.evaluation not in EVALUATIONS:
            raise ValueError(f"evaluation must be one of {EVALUATIONS}, got {self.evaluation!r}")
        if self.weights not in WEIGHT_SETS:
            raise ValueError(f"weights must be one of {sorted(WEIGHT_SETS)}, got {self.weights!r}")
        if self.widening < 0 or self.horizon_turns < 1 or self.tree_turns < 1:
            raise ValueError("widening must be >= 0, horizon_turns and tree_turns >= 1")
        if not 1 <= self.workers <= 64 or (self.reuse and self.workers > 1):
            raise ValueError("workers must be 1..64, and 1 with reuse")

    def __reduce__(self) -> tuple[Any, ...]:
        # (for root parallelism's processes: compiled by mypyc, a frozen dataclass would be
        # unpickled by setting its fields, which frozen forbids)
        return (SearchOptions, tuple(getattr(self, f) for f in self.__dataclass_fields__))


DEFAULT_OPTIONS = SearchOptions()


class Tree:
    """Flat arrays, one entry per node (node 0 is the first root)."""

    __slots__ = ("actor", "avail", "kids", "total", "visits")

    def __init__(self) -> None:
        self.kids: list[dict[int, int]] = [{}]
        self.visits = [0]
        self.total = [0.0]
        self.avail = [0]
        self.actor = [-1]

    def __len__(self) -> int:
        return len(self.visits)

    def children(self, node: int, seat: int) -> dict[int, int]:
        """The node's children for ``seat``'s actions: action -> node."""
        mask = (1 << SEAT_SHIFT) - 1
        return {k & mask: c for k, c in self.kids[node].items() if k >> SEAT_SHIFT == seat}


@dataclass(frozen=True, slots=True)
class SearchResult:
    action: int
    iterations: int
    seconds: float
    visits: dict[int, int]  # root action -> visits
    values: dict[int, float]  # root action -> mean reward of the deciding seat
    tree: Tree | None = field(default=None, repr=False, compare=False)
    root: int = 0
    # analyse only: root action -> every seat's mean reward after it (a game review's chart)
    seat_values: dict[int, tuple[float, ...]] = field(default_factory=dict, compare=False)
    # analyse only: root action -> the standard error of its mean reward (a review's noise)
    value_se: dict[int, float] = field(default_factory=dict, compare=False)

    @property
    def iterations_per_second(self) -> float:
        return self.iterations / self.seconds if self.seconds > 0 else 0.0

    def child(self, action: int, seat: int) -> int | None:
        """The tree node reached by ``seat`` playing ``action`` at the root."""
        if self.tree is None:
            return None
        return self.tree.kids[self.root].get(action | seat << SEAT_SHIFT)


def search(
    view: rules.View,
    legal: list[int],
    settings: BotSettings,
    options: SearchOptions = DEFAULT_OPTIONS,
    *,
    tree: Tree | None = None,
    root: int = 0,
    analyse: bool = False,
    deal: Callable[[rules.View, int], State] | None = None,
) -> SearchResult:
    """Run ISMCTS from ``view`` (whose seat must choose among ``legal``) within the budget.

    ``tree`` and ``root`` continue an earlier search (the node where this decision is);
    ``analyse`` searches even a forced play or a single legal action (for per-action figures);
    ``deal`` draws each iteration's full state from the view and a seed (default: a sample of
    what the seat cannot see; ``benchmarks/clairvoyant.py`` gives the true state instead).
    """
    start = time.perf_counter()
    K: Knowledge = knowledge(view.state.T)
    if not analyse:
        f = forced_action(view.state, legal, K)
        if f is not None or len(legal) == 1:
            action = legal[0] if f is None else f
            return SearchResult(action, 0, time.perf_counter() - start, {}, {})
    if not options.hand_knowledge:
        view = without_hand_knowledge(view)
    rnd = random.Random(decision_seed(view, settings.seed))
    max_iter = settings.iterations or (1 << 62)
    deadline = start + settings.budget_ms / 1000.0
    c_explore = settings.exploration
    stop_turn = view.state.turn + options.horizon_turns
    tree_stop = view.state.turn + min(options.tree_turns, options.horizon_turns)
    paranoid = options.backup == "paranoid"
    softmax = options.evaluation == "softmax"
    project = options.evaluation == "projection"
    weights = WEIGHT_SETS[options.weights]
    widen = options.widening
    widen_exp = options.widening_exp
    eps = options.rollout_eps
    me = view.seat
    fast = options.fast
    if deal is None:
        deal = sample if fast else determinize
    rank = K.play_rank
    PLAY = A.PLAY << 16

    if tree is None:
        tree, root = Tree(), 0
    # analyse: every seat's summed reward per root child (the tree keeps the chooser's only)
    seat_sums: dict[int, list[float]] | None = {} if analyse else None
    # analyse: the chooser's summed squared reward per root child (its standard error)
    sq_sums: dict[int, float] = {}
    kids, visits, total, avail, actor = tree.kids, tree.visits, tree.total, tree.avail, tree.actor
    log, sqrt = math.log, math.sqrt

    it = 0
    while it < max_iter:
        if it % CLOCK_EVERY == 0 and it and time.perf_counter() >= deadline:
            break
        s = deal(view, rnd.getrandbits(63))
        node = root
        path = [root]
        # the actions legal here; None: not listed since the last action (listed when needed)
        acts: list[int] | None = legal
        at_root = True
        # selection / expansion
        while not s.over and s.turn < tree_stop:
            if not at_root and fast and s.decision is None and s.hands[s.active]:
                apply_unchecked(s, PLAY | _first_best(s.hands[s.active], rank))
                acts = None
                continue
            if acts is None:
                acts = legal_actions(s)
            if not at_root:
                if len(acts) == 1:
                    apply_unchecked(s, acts[0])
                    acts = None
                    continue
                f = forced_action(s, acts, K)
                if f is not None:
                    apply_unchecked(s, f)
                    acts = None
                    continue
            at_root = False
            who = s.to_move()
            sh = who << SEAT_SHIFT
            ch = kids[node]
            untried: list[int] = []
            for a in acts:
                c = ch.get(a | sh)
                if c is None:
                    untried.append(a)
                else:
                    avail[c] += 1
            # progressive widening (main phase): a new child only when the visits allow one
            if (
                untried
                and widen
                and s.decision is None
                and len(untried) < len(acts)
                and len(ch) >= widen * (visits[node] + 1) ** widen_exp
            ):
                untried = [END_TURN] if END_TURN in untried else []
            if untried:
                a = untried[0] if len(untried) == 1 else best_action(s, untried, K)
                c = len(visits)
                ch[a | sh] = c
                kids.append({})
                visits.append(0)
                total.append(0.0)
                avail.append(1)
                actor.append(who)
                apply_unchecked(s, a)
                path.append(c)
                break
            best_c, best_u, best_a = -1, -1.0, acts[0]
            for a in acts:
                c = ch.get(a | sh)
                if c is None:
                    continue
                n = visits[c]
                u = total[c] / n + c_explore * sqrt(log(avail[c]) / n)
                if u > best_u:
                    best_c, best_u, best_a = c, u, a
            apply_unchecked(s, best_a)
            node = best_c
            path.append(best_c)
            acts = None
        # rollout to the horizon
        while not s.over and s.turn < stop_turn:
            if fast and s.decision is None and s.hands[s.active]:
                apply_unchecked(s, PLAY | _first_best(s.hands[s.active], rank))
                continue
            acts = legal_actions(s)
            apply_unchecked(s, rollout_action(s, acts, K, rnd, eps))
        r = evaluate_projection(s, K) if project else evaluate(s, K, softmax, weights)
        visits[root] += 1
        if seat_sums is not None and len(path) > 1:
            acc = seat_sums.get(path[1])
            sq_sums[path[1]] = sq_sums.get(path[1], 0.0) + r[me] * r[me]
            if acc is None:
                seat_sums[path[1]] = list(r)
            else:
                for q in range(len(acc)):
                    acc[q] += r[q]
        if paranoid:
            mine = r[me]
            for c in path[1:]:
                visits[c] += 1
                total[c] += mine if actor[c] == me else 1.0 - mine
        else:
            for c in path[1:]:
                visits[c] += 1
                total[c] += r[actor[c]]
        it += 1

    mine_kids = tree.children(root, me)
    vis = {a: visits[c] for a, c in mine_kids.items() if a in legal}
    vals = {a: total[c] / visits[c] for a, c in mine_kids.items() if visits[c] and a in legal}
    action = max(legal, key=lambda a: (vis.get(a, 0), vals.get(a, 0.0)))
    per_seat: dict[int, tuple[float, ...]] = {}
    se: dict[int, float] = {}
    if seat_sums is not None:
        for a, c in mine_kids.items():
            acc = seat_sums.get(c)
            if acc is not None and a in legal:
                n = visits[c]
                per_seat[a] = tuple(x / n for x in acc)
                mean = total[c] / n
                se[a] = sqrt(max(0.0, sq_sums.get(c, 0.0) / n - mean * mean) / n)
    return SearchResult(
        action, it, time.perf_counter() - start, vis, vals, tree, root, per_seat, se
    )


def _first_best(hand: list[int], rank: tuple[float, ...]) -> int:
    """The card the policy plays first: the highest play rank, the first of equals (as
    ``forced_action`` would choose, without listing every legal action)."""
    best = hand[0]
    br = rank[best]
    for c in hand:
        if rank[c] > br:
            best, br = c, rank[c]
    return best


@dataclass(frozen=True, slots=True)
class Candidate:
    """One legal action as the search sees it: for hints to human players."""

    action: int
    visits: int
    win_probability: float  # the seat's mean evaluated chance of winning after this action
    description: str
    # every seat's mean evaluated chance after this action, as this seat's search sees it
    # (empty when the action was not visited)
    seat_win_probabilities: tuple[float, ...] = ()
    # the standard error of win_probability (0 when the action got fewer than two visits)
    standard_error: float = 0.0


def analyse(
    view: rules.View,
    legal: list[int],
    settings: BotSettings,
    options: SearchOptions = DEFAULT_OPTIONS,
) -> list[Candidate]:
    """Every legal action with its visits and win probability from one search on the seat's
    view, best first (most visits, then the higher win probability). Unvisited actions come
    last with the win probability of the worst visited one (the search found them no better)."""
    result = search(view, legal, settings, options, analyse=True)
    floor = min(result.values.values(), default=0.0)
    cands = [
        Candidate(
            a,
            result.visits.get(a, 0),
            min(1.0, max(0.0, result.values.get(a, floor))),
            rules.describe_action(view.state, a),
            tuple(min(1.0, max(0.0, x)) for x in result.seat_values.get(a, ())),
            result.value_se.get(a, 0.0),
        )
        for a in legal
    ]
    cands.sort(key=lambda c: (-c.visits, -c.win_probability, c.action))
    return cands


def parallel_search(
    view: rules.View, legal: list[int], settings: BotSettings, options: SearchOptions
) -> SearchResult:
    """Search with ``options.workers`` processes (this one included) and merge their roots
    (``root_parallel.py``)."""
    start = time.perf_counter()
    shares = options.workers
    one = replace(options, workers=1)
    forced = forced_action(view.state, legal, knowledge(view.state.T)) is not None
    if shares <= 1 or len(legal) == 1 or forced:
        return search(view, legal, settings, one)  # answers at once, without a search
    visits, values, iterations = root_parallel.merged_roots(
        search, view, legal, settings, one, shares
    )
    action = max(legal, key=lambda a: (visits.get(a, 0), values.get(a, 0.0)))
    return SearchResult(action, iterations, time.perf_counter() - start, visits, values)


def _option_value(key: str, raw: object) -> object:
    kind = type(getattr(DEFAULT_OPTIONS, key))
    if kind is bool and isinstance(raw, str):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return kind(raw)


def parse_options(raw: dict[str, object]) -> SearchOptions:
    """Options from strings or values (benchmarks' ``ismcts:backup=paranoid:reuse=1``)."""
    known = set(SearchOptions.__dataclass_fields__)
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"unknown ismcts option(s) {unknown}; known: {sorted(known)}")
    values: dict[str, Any] = {k: _option_value(k, v) for k, v in raw.items()}
    return replace(DEFAULT_OPTIONS, **values)


class ISMCTSBot:
    """The search as a bot; ``last`` holds the last search (for metrics and benchmarks).

    With ``options.reuse`` the bot keeps, per (game, seat, turn), the tree of its last search
    and the node its chosen action leads to; the next search of that seat in the same turn
    starts there. Keys hold the game's configuration (which includes its seed), so games
    served one after another by a worker process do not mix.
    """

    def __init__(self, options: SearchOptions | None = None, **raw: object) -> None:
        self.options = options if options is not None else parse_options(raw)
        self.last: SearchResult | None = None
        self._kept: OrderedDict[tuple[object, ...], tuple[Tree, int]] = OrderedDict()

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        tree, root = None, 0
        key: tuple[object, ...] = ()
        if self.options.reuse:
            st = view.state
            key = (st.config, view.seat, st.turn, st.active)
            kept = self._kept.pop(key, None)
            if kept is not None and kept[0].children(kept[1], view.seat):
                tree, root = kept
        if self.options.workers > 1:
            result = parallel_search(view, legal, settings, self.options)
        else:
            result = search(view, legal, settings, self.options, tree=tree, root=root)
        self.last = result if result.iterations else None
        if self.options.reuse and result.iterations:
            child = result.child(result.action, view.seat)
            if child is not None and result.tree is not None:
                self._kept[key] = (result.tree, child)
                while len(self._kept) > KEPT_TREES:
                    self._kept.popitem(last=False)
        elif self.options.reuse and tree is not None:
            self._kept[key] = (tree, root)  # a forced play: the next search starts here
        return result.action

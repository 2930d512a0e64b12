"""``ReviewGame``: a seat's past decisions, each rated by one search of what that seat knew.

The game is replayed from its seed and its log (every game is a replay: the same seed and the
same actions rebuild every version exactly; the replay must end on the stored state). At each
version where the reviewed seat acted with a real choice, the seat's rules view of that
version (``rules.view``: its own hand, the public board, every hidden zone as a multiset) and
its legal actions go to the AI workers as a hint's do (:meth:`Analyses.search`: Celery with
deadlines, or the embedded engine's local pool). Nothing the seat could not see then reaches
the search, so a review never tells what the other seats held.

A decision has a real choice unless it had a single legal action, or it was an order-free
play: playing a card, using a once-per-turn ability or flipping a coin pair while no choice is
pending. Those only ever add to what the seat has (every "may" in them is asked separately),
so the bots play them first without searching, and a review skips them too. A seat that did
something else while such plays were left (bought before playing its hand) made a real choice,
and it is rated.

Each rated decision is labelled from the drop in the seat's estimated chance to win between
its action and the search's best one (:func:`label`; the thresholds are in docs/bots.md,
"Game review", with the benchmark they come from). It is kept in the store for as long as
the game (``engine_service/store/reviews``), so asking again is answered from there; a review
with a larger budget rates the decision again and replaces it.

Limits, per server process like the hints': ``ENGINE_REVIEW_PER_CALLER`` reviews in flight per
caller (a seat, a game's admin token, an operator key: ``REVIEW_IN_PROGRESS``), and the search
time the reviews in flight still need (decisions left x budget) at most
``ENGINE_REVIEW_MAX_TOTAL_MS`` (``REVIEW_CAPACITY``); ``budget_ms`` is capped at
``ENGINE_REVIEW_MAX_BUDGET_MS`` (0 turns reviews off).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.rules import actions as A
from engine_service.server import convert, errors, tokens, validate
from engine_service.server.analysis import Analyses, Answer
from engine_service.server.auth import Access, bearer
from engine_service.server.errors import Code, ServiceError, invalid, refused
from engine_service.server.meta import GameMeta
from engine_service.store import StoreError, UnreadableData
from engine_service.store.reviews import ReviewStore, field, review_store

log = logging.getLogger("ascension.engine.review")

# Playing a card, using a once-per-turn ability and flipping a coin pair: order-free plays
# (the bots' forced kinds, ai_workers/bots/policy.py; a test checks they agree).
ORDER_FREE_KINDS = frozenset((A.PLAY, A.USE, A.FLIP_COINS))

# The drop in the seat's chance to win (best action's minus the chosen one's) below which a
# decision is GOOD, an INACCURACY, a MISTAKE; at or above the last, a BLUNDER. Chosen from
# the bots' own decisions (benchmarks/review_thresholds.py; docs/bots.md, "Game review").
GOOD_BELOW = 0.02
INACCURACY_BELOW = 0.05
MISTAKE_BELOW = 0.10

RETRIES = 2  # times a decision's search is asked again when no worker answered in time

BEST, GOOD, INACCURACY, MISTAKE, BLUNDER = (
    epb.REVIEW_LABEL_BEST,
    epb.REVIEW_LABEL_GOOD,
    epb.REVIEW_LABEL_INACCURACY,
    epb.REVIEW_LABEL_MISTAKE,
    epb.REVIEW_LABEL_BLUNDER,
)


@dataclass(frozen=True, slots=True)
class ReviewSettings:
    max_budget_ms: int = 1000  # the cap of a request's budget_ms (per decision); 0 = no reviews
    budget_ms: int = 250  # the budget of a request that gives none
    per_caller: int = 1  # reviews in flight per caller; 0 = no limit
    max_total_ms: int = 600_000  # search time the reviews in flight may still need; 0 = no cap
    parallel: int = 2  # decisions of one review searched at once


def real_choice(s: rules.State, legal: list[int], action: int) -> bool:
    """Whether playing ``action`` among ``legal`` in ``s`` was a decision worth rating: not
    the only legal action, not an order-free play (see the module's docstring)."""
    if len(legal) < 2:
        return False
    return s.decision is not None or action >> 16 not in ORDER_FREE_KINDS


def label(action: int, best: int, p: float, p_best: float) -> int:
    """The label of playing ``action`` (chance ``p``) where the search prefers ``best``
    (``p_best``)."""
    if action == best or p >= p_best:
        return BEST
    drop = p_best - p
    if drop < GOOD_BELOW:
        return GOOD
    if drop < INACCURACY_BELOW:
        return INACCURACY
    if drop < MISTAKE_BELOW:
        return MISTAKE
    return BLUNDER


@dataclass(frozen=True, slots=True)
class Decision:
    """A decision of the reviewed seat: at ``version`` it played ``action`` among ``legal``."""

    version: int
    turn: int
    action: int
    legal: list[int]
    view: rules.View  # what the seat could see then
    descriptions: dict[int, str]  # of every legal action, at that version
    state: rules.State  # the whole state then (for the seat's GameView, never for the search)


def decisions(meta: GameMeta, entries: list[tuple[int, int]], seat: int,
              final_state: rules.State) -> list[Decision] | None:  # fmt: skip
    """The seat's decisions with a real choice, from a replay of the game's log; None when the
    replay does not end on ``final_state`` (the stored one)."""
    s = rules.new_game(rules.GameConfig(sets=meta.sets, players=meta.players, seed=meta.seed))
    out = []
    try:
        for i, (who, action) in enumerate(entries):
            if who == seat:
                legal = rules.legal_actions(s)
                if real_choice(s, legal, action):
                    described = {a: rules.describe_action(s, a) for a in legal}
                    view = rules.view(s, seat)
                    out.append(
                        Decision(i + 1, s.turn, action, legal, view, described, s.clone())
                    )
            rules.apply(s, action)
    except (rules.RulesError, ValueError, KeyError, IndexError) as e:
        log.warning("a game's log does not replay (%s): no review", e)
        return None
    return out if s == final_state else None


def rated(d: Decision, answer: Answer, seat: int, budget_ms: int) -> epb.DecisionReview:
    """The review of ``d`` from the search's ``answer`` (candidates best first)."""
    allowed = set(d.legal)
    cands = [c for c in answer.candidates if c.action in allowed]
    if not cands:
        raise refused(Code.UNAVAILABLE, "ANALYSIS_UNAVAILABLE",
                      "no analysis: the AI worker rated none of the legal actions; try again")  # fmt: skip
    best = cands[0]
    mine = next((c for c in cands if c.action == d.action), None)
    p_best = _probability(best.win_probability)
    # (an action the search never tried counts as its worst one, as hints show it)
    p = (
        _probability(mine.win_probability)
        if mine is not None
        else min(_probability(c.win_probability) for c in cands)
    )
    shares = mine.seat_win_probabilities if mine is not None else ()
    return epb.DecisionReview(
        version=d.version,
        action=d.action,
        description=d.descriptions[d.action],
        best_action=best.action,
        best_description=d.descriptions[best.action],
        win_probability=p,
        best_win_probability=p_best,
        label=label(d.action, best.action, p, p_best),  # type: ignore[arg-type]
        seat=seat,
        turn=d.turn,
        win_probabilities=[_probability(x) for x in shares],
        budget_ms=budget_ms,
        iterations=answer.iterations,
    )


def _probability(p: float) -> float:
    return min(1.0, max(0.0, p)) if p == p else 0.0


def _stored(raw: bytes | None, budget_ms: int) -> epb.DecisionReview | None:
    """A kept review, if it searched at least ``budget_ms`` (else rated again)."""
    if raw is None:
        return None
    try:
        r = epb.DecisionReview.FromString(raw)
    except Exception:
        return None  # damaged: rated again (and replaced)
    return r if r.budget_ms >= budget_ms else None


def disabled(why: str) -> ServiceError:
    return refused(
        Code.FAILED_PRECONDITION, "REVIEW_DISABLED", f"this server gives no reviews: {why}"
    )


class Reviews:
    def __init__(
        self,
        analyses: Analyses,
        settings: ReviewSettings | None = None,
        access: Access | None = None,
        store: ReviewStore | None = None,
    ) -> None:
        self.analyses = analyses
        self.games = analyses.games
        self.settings = settings or ReviewSettings()
        self.access = access or Access()
        self.store = store or review_store(self.games.store)
        self._callers: dict[str, int] = {}  # caller -> reviews in flight
        self._reserved_ms = 0  # search time the reviews in flight still need

    # ---- who asks -----------------------------------------------------------------------

    def _caller(
        self, req: epb.ReviewGameRequest, meta: GameMeta, over: bool, context: Any
    ) -> tuple[str, int]:
        """(the caller, for its limit; the seat reviewed), or the refusal."""
        wanted = req.seat if req.HasField("seat") else None
        if wanted is not None and not 0 <= wanted < meta.players:
            raise invalid("seat", f"must be 0..{meta.players - 1} (this game's seats)")
        token = req.token
        if token and not tokens.is_ai_credential(token):
            seat = tokens.seat_of(token, meta.token_digests)
            if seat is not None:
                if wanted is not None and wanted != seat:
                    raise refused(
                        Code.PERMISSION_DENIED,
                        "REVIEW_OTHER_SEAT",
                        f"a seat token reviews its own seat ({seat}) only: another seat's "
                        "review needs the game's admin token or an operator key, once the "
                        "game is over",
                        seat=seat,
                    )
                return f"{req.game_id}/{seat}", seat
            if tokens.matches(token, meta.admin_digest):
                return f"{req.game_id}/admin", self._any_seat(wanted, over, "the admin token")
        if token:
            raise errors.unknown_token("token matches no seat of this game, nor its admin token")
        operator = self.access.operator(context, "ReviewGame", required=False)
        if not operator:
            raise errors.token_required(
                "token",
                "a seat token (or the admin token, or an operator key, once the game is over)",
            )
        key = bearer(context.invocation_metadata()) or ""
        who = "operator:" + hashlib.sha256(key.encode()).hexdigest()[:16]
        return who, self._any_seat(wanted, over, "an operator key")

    @staticmethod
    def _any_seat(wanted: int | None, over: bool, what: str) -> int:
        if not over:
            raise refused(
                Code.FAILED_PRECONDITION,
                "GAME_NOT_OVER",
                f"{what} reviews a seat once the game is over (before, a review would show "
                "what that seat held); a seat's own token reviews it at any time",
            )
        if wanted is None:
            raise invalid("seat", f"is required with {what} (which seat to review)")
        return wanted

    # ---- ReviewGame ---------------------------------------------------------------------

    async def review(
        self, req: epb.ReviewGameRequest, context: Any
    ) -> AsyncIterator[epb.DecisionReview]:
        st = self.settings
        validate.game_id(req.game_id)
        validate.token(req.token)
        if req.budget_ms < 0:
            raise invalid(
                "budget_ms", f"must be 0 (the server's default, {st.budget_ms} ms) or more"
            )
        if st.max_budget_ms <= 0:
            raise disabled("ENGINE_REVIEW_MAX_BUDGET_MS is 0")
        if self.games.dispatcher.name == "off":
            raise disabled("it runs no AI (ENGINE_AI_DISPATCH=off)")
        rec, meta = await self.games._load(req.game_id)
        caller, seat = self._caller(req, meta, rec.over, context)
        budget = min(req.budget_ms or st.budget_ms, st.max_budget_ms)
        limit = st.per_caller
        if limit and self._callers.get(caller, 0) >= limit:
            raise refused(
                Code.RESOURCE_EXHAUSTED,
                "REVIEW_IN_PROGRESS",
                f"limit ENGINE_REVIEW_PER_CALLER: {limit} review(s) in flight per caller; wait "
                "for the one running to end (or cancel it)",
                limit="ENGINE_REVIEW_PER_CALLER",
                cap=limit,
            )
        try:
            entries = await self.games.store.action_log(req.game_id)
        except UnreadableData as e:
            raise errors.unreadable_game(req.game_id, f"its log is damaged ({e})") from e
        final = self.games._state(rec)
        # (in a thread: a long game's replay would hold the event loop for a while)
        found = await asyncio.to_thread(decisions, meta, entries[: rec.version - 1], seat, final)
        if found is None:
            raise errors.unreadable_game(req.game_id, "its log does not replay to its stored state")
        names = [field(seat, d.version) for d in found]
        kept = await self.store.get(req.game_id, names)
        done = [_stored(kept.get(n), budget) for n in names]
        need = budget * sum(1 for r in done if r is None)
        cap = st.max_total_ms
        if cap and need > cap:
            raise invalid("budget_ms", f"{len(found)} decisions at {budget} ms need more search "
                          f"time than this server gives reviews (ENGINE_REVIEW_MAX_TOTAL_MS, {cap} ms): "
                          "ask with a smaller budget")  # fmt: skip
        if cap and need and self._reserved_ms + need > cap:
            raise refused(
                Code.RESOURCE_EXHAUSTED,
                "REVIEW_CAPACITY",
                f"limit ENGINE_REVIEW_MAX_TOTAL_MS reached: the reviews in flight need "
                f"{self._reserved_ms} ms of search and this one {need} ms more, above {cap} ms; "
                "try again in a moment, or with a smaller budget",
                limit="ENGINE_REVIEW_MAX_TOTAL_MS",
                cap=cap,
            )
        self._callers[caller] = self._callers.get(caller, 0) + 1
        self._reserved_ms += need
        try:
            async for i, r in self._rate(req.game_id, rec.version, seat, budget, found, done):
                if not r.stored:
                    need -= budget
                    self._reserved_ms -= budget
                if req.with_views:
                    d = found[i]
                    convert.fill_game_view(r.view, req.game_id, d.version, d.state, meta, seat)
                    r.view.rules_view = b""  # (large, and of no use beside the board)
                yield r
        finally:
            self._reserved_ms -= need
            left = self._callers.get(caller, 1) - 1
            if left:
                self._callers[caller] = left
            else:
                self._callers.pop(caller, None)

    async def _rate(
        self,
        game_id: str,
        version: int,
        seat: int,
        budget: int,
        found: list[Decision],
        done: list[epb.DecisionReview | None],
    ) -> AsyncIterator[tuple[int, epb.DecisionReview]]:
        """(index in ``found``, review) in version order: kept ones at once, the others as
        their searches end (``parallel`` at a time)."""
        total = len(found)
        todo = [i for i, r in enumerate(done) if r is None]
        tasks: dict[int, asyncio.Task[epb.DecisionReview]] = {}
        nxt = 0

        def start_more() -> None:
            nonlocal nxt
            while nxt < len(todo) and len(tasks) < max(1, self.settings.parallel):
                i = todo[nxt]
                tasks[i] = asyncio.ensure_future(self._one(game_id, seat, budget, found[i]))
                nxt += 1

        try:
            start_more()
            for i in range(total):
                r = done[i]
                if r is None:
                    r = await tasks.pop(i)
                    start_more()
                else:
                    r.stored = True
                r.index, r.total = i + 1, total
                yield i, r
        finally:
            for t in tasks.values():
                t.cancel()
        log.info("game %s seat %d reviewed at v%d: %d decisions, %d searched at %d ms",
                 game_id, seat, version, total, len(todo), budget)  # fmt: skip

    async def _one(self, game_id: str, seat: int, budget: int, d: Decision) -> epb.DecisionReview:
        for attempt in range(RETRIES + 1):
            try:
                answer, _ = await self.analyses.search(game_id, d.version, d.view, d.legal, budget)
                break
            except ServiceError as e:
                # (a cold local pool, workers busy with moves: a review is long, so one
                # late answer does not end it)
                if (
                    e.reason not in ("ANALYSIS_TIMEOUT", "ANALYSIS_UNAVAILABLE")
                    or attempt == RETRIES
                ):
                    raise
                log.info(
                    "game %s: the review of v%d asked again (%s)", game_id, d.version, e.reason
                )
        r = rated(d, answer, seat, budget)
        try:
            await self.store.put(game_id, field(seat, d.version), r.SerializeToString())
        except StoreError as e:  # the rating stands; only asking again will cost a search
            log.warning("game %s: a review of v%d not kept: %s", game_id, d.version, e)
        return r

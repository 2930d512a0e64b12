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
"Game review", with the benchmark they come from). A drop within the search's own noise (the
standard errors of both chances) is no drop: the move is BEST, "as good as best". A move that
gave up an affordable acquire or defeat for nothing is never BEST or GOOD unless the search
chose it too. Mistakes and blunders carry why in words (:mod:`engine_service.server.explain`). It is kept in the store for as long as
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
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.rules import actions as A
from engine_service.server import convert, errors, explain, seats, tokens, validate
from engine_service.server.analysis import Analyses, Answer
from engine_service.server.auth import Access, bearer
from engine_service.server.errors import Code, ServiceError, invalid, refused
from engine_service.server.limits import RateLimit, refuse_after_pause
from engine_service.server.meta import GameMeta
from engine_service.store import StoreError, UnreadableData
from engine_service.store.reviews import ReviewStore, review_store
from engine_service.store.reviews import field as field_name

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

# A drop counts only beyond this many standard errors of the difference (about 95%).
NOISE_Z = 2.0
# Fewer visits than this on the played or the best action: the decision is marked
# ``undersearched`` (its chances are too rough to tell the two apart).
MIN_VISITS = 20

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
    per_minute: int = 10  # review starts per caller per minute; 0 = no limit
    refusal_pause: float = 1.0  # seconds before a refusal by the caller's own limits
    max_total_ms: int = 600_000  # search time the reviews in flight may still need; 0 = no cap
    parallel: int = 2  # decisions of one review searched at once


def real_choice(s: rules.State, legal: list[int], action: int) -> bool:
    """Whether playing ``action`` among ``legal`` in ``s`` was a decision worth rating: not
    the only legal action, not an order-free play (see the module's docstring)."""
    if len(legal) < 2:
        return False
    return s.decision is not None or action >> 16 not in ORDER_FREE_KINDS


def label(
    action: int,
    best: int,
    p: float,
    p_best: float,
    se: float = 0.0,
    se_best: float = 0.0,
    wasted: bool = False,
) -> int:
    """The label of playing ``action`` (chance ``p``, standard error ``se``) where the search
    prefers ``best`` (``p_best``, ``se_best``). A drop within ``NOISE_Z`` standard errors of
    the difference is BEST. ``wasted``: the action gave up an affordable acquire or defeat
    for nothing (:func:`explain.wasted`): at least a MISTAKE unless the search chose it too."""
    if action == best:
        return BEST
    drop = p_best - p
    noise = NOISE_Z * math.hypot(se, se_best)
    if wasted:
        return max(MISTAKE, _by_drop(drop))
    if drop <= 0 or drop <= noise:
        return BEST
    return _by_drop(drop)


def _by_drop(drop: float) -> int:
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
    out = []
    try:
        s = meta.first_state()
        for i, (who, action) in enumerate(entries):
            if seats.is_table_action(action):  # (a resignation, a seat handed over: no cards)
                continue
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


def rated(
    d: Decision, answer: Answer, seat: int, budget_ms: int, focus: Answer | None = None
) -> epb.DecisionReview:
    """The review of ``d`` from the search's ``answer`` (candidates best first); ``focus``: a
    second search of only the played and the best action (:func:`to_focus`), whose chances
    for those two replace the first's."""
    allowed = set(d.legal)
    cands = [c for c in answer.candidates if c.action in allowed]
    if not cands:
        raise refused(Code.UNAVAILABLE, "ANALYSIS_UNAVAILABLE",
                      "no analysis: the AI worker rated none of the legal actions; try again")  # fmt: skip
    iterations = answer.iterations
    if focus is not None:
        again = sorted((c for c in focus.candidates if c.action in allowed),
                       key=lambda c: -c.win_probability)  # fmt: skip
        if len(again) == 2:  # (else the second search failed to rate both: the first stands)
            two = {c.action for c in again}
            cands = again + [c for c in cands if c.action not in two]
            iterations += focus.iterations
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
    se = _probability(mine.standard_error) if mine is not None else 0.0
    se_best = _probability(best.standard_error)
    visits = mine.visits if mine is not None else 0
    waste = explain.wasted(d.state, d.legal, d.action)
    lab = label(d.action, best.action, p, p_best, se, se_best, waste is not None)
    why = ""
    if lab in (MISTAKE, BLUNDER) or (waste is not None and d.action != best.action):
        why = explain.explain(d.state, seat, d.legal, d.action, best.action)
    r = epb.DecisionReview(
        version=d.version,
        action=d.action,
        description=d.descriptions[d.action],
        best_action=best.action,
        best_description=d.descriptions[best.action],
        win_probability=p,
        best_win_probability=p_best,
        label=lab,  # type: ignore[arg-type]
        seat=seat,
        turn=d.turn,
        win_probabilities=[_probability(x) for x in shares],
        budget_ms=budget_ms,
        iterations=iterations,
        visits=visits,
        best_visits=best.visits,
        standard_error=se,
        best_standard_error=se_best,
        undersearched=min(visits, best.visits) < MIN_VISITS,
        explanation=why,
    )
    for c in cands:
        r.candidates.add(
            action=c.action,
            visits=c.visits,
            win_probability=_probability(c.win_probability),
            description=d.descriptions[c.action],
            standard_error=_probability(c.standard_error),
        )
    return r


def to_focus(r: epb.DecisionReview) -> list[int] | None:
    """The actions to search again, alone, when ``r`` is undersearched (the played one or
    the best got too few visits to tell them apart: a search spends little on what its first
    samples rated low, and the few samples it has rate it too low): [best, played]; None when
    the two are one action or both were searched enough."""
    if not r.undersearched or r.action == r.best_action:
        return None
    return [r.best_action, r.action]


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


@dataclass(eq=False)
class Flight:
    """A caller's review in flight: from its start until its stream has ended and every search
    it started has ended too. A review cut short (cancelled, a dropped connection) leaves its
    searches running: each is kept as it ends (a restart finds it), and its time stays
    counted against the caller and the server's cap until then. A restart of the same review
    (same caller, game and seat) takes the flight over and waits for those searches instead
    of asking again."""

    caller: str
    game_id: str
    seat: int
    open: bool = True  # a stream is reading it
    planned_ms: int = 0  # search time of the decisions its stream has still to start
    # (version, budget) -> the search rating that decision, until it ends
    searches: dict[tuple[int, int], asyncio.Task[epb.DecisionReview]] = field(
        default_factory=dict
    )

    def reserved_ms(self) -> int:
        return self.planned_ms + sum(b for _, b in self.searches)

    def running(self) -> int:
        return sum(not t.done() for t in self.searches.values())

    def search_of(self, version: int, budget: int) -> asyncio.Task[epb.DecisionReview] | None:
        """The search of the decision at ``version`` with at least ``budget``, running or just
        ended with a rating (not one that failed)."""
        return next(
            (
                t
                for (v, b), t in self.searches.items()
                if v == version
                and b >= budget
                and not (t.done() and (t.cancelled() or t.exception() is not None))
            ),
            None,
        )


# ---- who asks (a review, a practice game: the same permission) -----------------------------


def who_asks(
    game_id: str,
    token: str,
    wanted: int | None,
    meta: GameMeta,
    over: bool,
    context: Any,
    access: Access,
    verb: str,
) -> tuple[str, int]:
    """(the caller, for its limits; the seat asked about), or the refusal. A seat's token asks
    about its own seat at any time and about another once the game is over; the admin token
    and an operator key about any seat once the game is over. ``verb``: "review",
    "practice" (for the messages; REVIEW_OTHER_SEAT, PRACTICE_OTHER_SEAT)."""
    if wanted is not None and not 0 <= wanted < meta.players:
        raise invalid("seat", f"must be 0..{meta.players - 1} (this game's seats)")
    if token and not tokens.is_ai_credential(token):
        seat = tokens.seat_of(token, meta.token_digests)
        if seat is not None:
            if wanted is not None and wanted != seat:
                # (the opponent's decisions: only once nothing they show can still be of use
                # in the game)
                if over:
                    return f"{game_id}/{seat}", wanted
                raise refused(
                    Code.PERMISSION_DENIED,
                    f"{verb.upper()}_OTHER_SEAT",
                    f"a seat token may {verb} its own seat ({seat}) while the game goes on; "
                    "another seat's decisions once the game is over",
                    seat=seat,
                )
            return f"{game_id}/{seat}", seat
        if tokens.matches(token, meta.admin_digest):
            return f"{game_id}/admin", _any_seat(wanted, over, "the admin token", verb)
    if token:
        raise errors.unknown_token("token matches no seat of this game, nor its admin token")
    operator = access.operator(context, "ReviewGame" if verb == "review" else "PracticeFromHere",
                               required=False)  # fmt: skip
    if not operator:
        raise errors.token_required(
            "token",
            "a seat token (or the admin token, or an operator key, once the game is over)",
        )
    key = bearer(context.invocation_metadata()) or ""
    who = "operator:" + hashlib.sha256(key.encode()).hexdigest()[:16]
    return who, _any_seat(wanted, over, "an operator key", verb)


def _any_seat(wanted: int | None, over: bool, what: str, verb: str) -> int:
    if not over:
        raise refused(
            Code.FAILED_PRECONDITION,
            "GAME_NOT_OVER",
            f"{what} may {verb} a seat once the game is over (before, it would show what "
            f"that seat held); a seat's own token may {verb} it at any time",
        )
    if wanted is None:
        raise invalid("seat", f"is required with {what} (which seat to {verb})")
    return wanted


class Reviews:
    def __init__(
        self,
        analyses: Analyses,
        settings: ReviewSettings | None = None,
        access: Access | None = None,
        store: ReviewStore | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.analyses = analyses
        self.games = analyses.games
        self.settings = settings or ReviewSettings()
        self.access = access or Access()
        self.store = store or review_store(self.games.store)
        n = self.settings.per_minute
        self._starts = (
            RateLimit(
                "ENGINE_REVIEW_PER_MINUTE",
                f"{n} ReviewGame starts per minute per caller",
                n / 60.0,
                float(n),
                clock,
            )
            if n > 0
            else None
        )
        self._flights: dict[str, list[Flight]] = {}  # caller -> its reviews in flight

    def reserved_ms(self) -> int:
        """Search time the reviews in flight on this process still need or are using."""
        return sum(f.reserved_ms() for flights in self._flights.values() for f in flights)

    def _adoptable(self, caller: str, game_id: str, seat: int) -> Flight | None:
        """The caller's review of this seat cut short whose searches still run, if any."""
        return next(
            (
                f
                for f in self._flights.get(caller, ())
                if not f.open and f.game_id == game_id and f.seat == seat
            ),
            None,
        )

    def _check_per_caller(self, caller: str, adopt: Flight | None) -> None:
        limit = self.settings.per_caller
        if not limit or adopt is not None or len(self._flights.get(caller, ())) < limit:
            return
        raise refused(
            Code.RESOURCE_EXHAUSTED,
            "REVIEW_IN_PROGRESS",
            f"limit ENGINE_REVIEW_PER_CALLER: {limit} review(s) in flight per caller; wait "
            "for the one running to end (a review cut short counts until the searches it "
            "started have ended: at most its budget plus ENGINE_ANALYSIS_GRACE_SECONDS)",
            limit="ENGINE_REVIEW_PER_CALLER",
            cap=limit,
        )

    def _settle(self, flight: Flight) -> None:
        """Forget ``flight`` once nothing reads it and none of its searches runs."""
        if flight.open or flight.searches:
            return
        flights = self._flights.get(flight.caller)
        if flights is not None and flight in flights:
            flights.remove(flight)
            if not flights:
                del self._flights[flight.caller]

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
        wanted = req.seat if req.HasField("seat") else None
        caller, seat = who_asks(req.game_id, req.token, wanted, meta, rec.over, context,
                                self.access, "review")  # fmt: skip
        budget = min(req.budget_ms or st.budget_ms, st.max_budget_ms)
        try:
            self._check_per_caller(caller, self._adoptable(caller, req.game_id, seat))
            # Every start that gets this far costs a replay: counted, whatever follows.
            if self._starts is not None:
                self._starts.take(caller)
        except ServiceError as e:
            await refuse_after_pause(e, st.refusal_pause)
        try:
            entries = await self.games.store.action_log(req.game_id)
        except UnreadableData as e:
            raise errors.unreadable_game(req.game_id, f"its log is damaged ({e})") from e
        final = self.games._state(rec)
        # (in a thread: a long game's replay would hold the event loop for a while)
        found = await asyncio.to_thread(decisions, meta, entries[: rec.version - 1], seat, final)
        if found is None:
            raise errors.unreadable_game(req.game_id, "its log does not replay to its stored state")
        run = self.games._table(rec).clock
        if run is not None and run.timed_out:  # moves played for a seat out of time: not its
            played_for = set(run.timed_out)
            found = [d for d in found if d.version + 1 not in played_for]
        names = [field_name(seat, d.version) for d in found]
        kept = await self.store.get(req.game_id, names)
        done = [_stored(kept.get(n), budget) for n in names]
        # From here to the flight's registration nothing awaits: the checks hold when it starts.
        adopt = self._adoptable(caller, req.game_id, seat)
        self._check_per_caller(caller, adopt)
        todo = [i for i, r in enumerate(done) if r is None]
        running = {
            i: t
            for i in todo
            if adopt is not None and (t := adopt.search_of(found[i].version, budget)) is not None
        }
        need = budget * (len(todo) - len(running))
        cap = st.max_total_ms
        if cap and budget * len(todo) > cap:
            raise invalid("budget_ms", f"{len(found)} decisions at {budget} ms need more search "
                          f"time than this server gives reviews (ENGINE_REVIEW_MAX_TOTAL_MS, {cap} ms): "
                          "ask with a smaller budget")  # fmt: skip
        reserved = self.reserved_ms()
        if cap and need and reserved + need > cap:
            raise refused(
                Code.RESOURCE_EXHAUSTED,
                "REVIEW_CAPACITY",
                f"limit ENGINE_REVIEW_MAX_TOTAL_MS reached: the reviews in flight need "
                f"{reserved} ms of search and this one {need} ms more, above {cap} ms; "
                "try again in a moment, or with a smaller budget",
                limit="ENGINE_REVIEW_MAX_TOTAL_MS",
                cap=cap,
            )
        flight = adopt or Flight(caller, req.game_id, seat)
        if adopt is None:
            self._flights.setdefault(caller, []).append(flight)
        flight.open, flight.planned_ms = True, need
        try:
            async for i, r in self._stream(flight, rec.version, budget, found, done, running):
                if req.with_views:
                    d = found[i]
                    convert.fill_game_view(r.view, req.game_id, d.version, d.state, meta, seat)
                    r.view.rules_view = b""  # (large, and of no use beside the board)
                yield r
        finally:
            flight.open, flight.planned_ms = False, 0
            self._settle(flight)

    async def _stream(
        self,
        flight: Flight,
        version: int,
        budget: int,
        found: list[Decision],
        done: list[epb.DecisionReview | None],
        running: dict[int, asyncio.Task[epb.DecisionReview]],
    ) -> AsyncIterator[tuple[int, epb.DecisionReview]]:
        """(index in ``found``, review) in version order: kept ones at once, the others as
        their searches end. ``running``: searches of a review cut short that this one waits
        for; the flight runs ``parallel`` searches at a time, those included. The stream's
        end (a cancel) stops no search: each is kept when it ends."""
        total = len(found)
        fresh = [i for i, r in enumerate(done) if r is None and i not in running]
        searches = dict(running)
        nxt = 0

        def start_more() -> None:
            nonlocal nxt
            while nxt < len(fresh) and flight.running() < max(1, self.settings.parallel):
                i = fresh[nxt]
                searches[i] = self._start(flight, budget, found[i])
                flight.planned_ms = max(0, flight.planned_ms - budget)
                nxt += 1

        start_more()  # (while the kept ones are read)
        for i in range(total):
            r = done[i]
            if r is None:
                while i not in searches:  # the flight's searches are all busy: wait for one
                    busy = [t for t in flight.searches.values() if not t.done()]
                    await asyncio.wait(busy, return_when=asyncio.FIRST_COMPLETED)
                    start_more()
                rated_now = await asyncio.shield(searches.pop(i))
                r = epb.DecisionReview()
                r.CopyFrom(rated_now)  # (another stream may read the same search's answer)
                start_more()
            else:
                r.stored = True
            r.index, r.total = i + 1, total
            r.chance_is_guess = explain.chance_is_guess(found[i].state)
            yield i, r
        log.info("game %s seat %d reviewed at v%d: %d decisions, %d searched at %d ms",
                 flight.game_id, flight.seat, version, total, len(fresh) + len(running),
                 budget)  # fmt: skip

    def _start(self, flight: Flight, budget: int, d: Decision) -> asyncio.Task[epb.DecisionReview]:
        """The search of ``d``, run to its end whoever still reads the review."""
        key = (d.version, budget)
        task = asyncio.ensure_future(self._one(flight, budget, d))
        flight.searches[key] = task

        def ended(t: asyncio.Task[epb.DecisionReview]) -> None:
            if flight.searches.get(key) is t:
                del flight.searches[key]
            if not t.cancelled():
                t.exception()  # (retrieved: nobody may wait for it any more)
            self._settle(flight)

        task.add_done_callback(ended)
        return task

    async def _one(self, flight: Flight, budget: int, d: Decision) -> epb.DecisionReview:
        game_id, seat = flight.game_id, flight.seat
        for attempt in range(RETRIES + 1):
            try:
                answer, _ = await self.analyses.search(
                    game_id, d.version, d.view, d.legal, budget, batch=True
                )
                break
            except ServiceError as e:
                # (a cold local pool, workers busy with moves: a review is long, so one
                # late answer does not end it; a review nobody reads any more is not asked
                # again)
                if (
                    e.reason not in ("ANALYSIS_TIMEOUT", "ANALYSIS_UNAVAILABLE")
                    or attempt == RETRIES
                    or not flight.open
                ):
                    raise
                log.info(
                    "game %s: the review of v%d asked again (%s)", game_id, d.version, e.reason
                )
        r = rated(d, answer, seat, budget)
        focus = to_focus(r)
        if focus is not None:  # searched again, the two alone (a failure keeps the first)
            try:
                again, _ = await self.analyses.search(
                    game_id, d.version, d.view, focus, budget, batch=True
                )
                r = rated(d, answer, seat, budget, again)
            except ServiceError as e:
                log.info("game %s: v%d not searched again (%s)", game_id, d.version, e.reason)
        try:
            await self.store.put(game_id, field_name(seat, d.version), r.SerializeToString())
        except StoreError as e:  # the rating stands; only asking again will cost a search
            log.warning("game %s: a review of v%d not kept: %s", game_id, d.version, e)
        return r

"""``AnalyzePosition``: hints for the seat to move, from one search of what that seat may know.

The engine never searches. It checks the seat's token and turn and the limits, then hands the
seat's rules view (``rules.view``: its own hand, the public board, every hidden zone as a
multiset) and its legal actions to the AI workers, and waits up to the budget plus
``ENGINE_ANALYSIS_GRACE_SECONDS`` for the answer:

- the local pool (``ENGINE_AI_DISPATCH=local``): the search runs in a pool process and its
  return value is the answer;
- Celery: the task ``ascension.analyze_position`` runs it on a worker, which hands the answer
  back over gRPC (``SubmitAnalysis``) with a credential minted for that one analysis, as it
  submits moves. The call may reach any replica: the one waiting takes it at once; another
  leaves it in the store (``Store.put_reply``, a short TTL) for the waiting replica, which
  looks there every ``POLL_SECONDS``. Workers thus need nothing but the engine's gRPC port.

Limits, counted per replica like the other rate limits (docs/security.md): one analysis in
flight per seat (``ANALYSIS_IN_PROGRESS``), ``ENGINE_ANALYSIS_PER_MINUTE`` per seat
(``RATE_LIMITED``), ``ENGINE_ANALYSIS_MAX_IN_FLIGHT`` per replica (``ANALYSIS_CAPACITY``), and
a budget capped at ``ENGINE_ANALYSIS_MAX_BUDGET_MS`` (0 turns hints off).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.server import errors, explain, validate
from engine_service.server.dispatch import AnalysisUnavailable
from engine_service.server.errors import Code, ServiceError, invalid, refused
from engine_service.server.games import Games, require_turn
from engine_service.server.limits import RateLimit, refuse_after_pause

log = logging.getLogger("ascension.engine.analysis")

# A search must start this long before the engine's wait ends (the reply's way back, the
# process's start-up): one that cannot is dropped unsearched by the worker.
START_MARGIN_SECONDS = 0.5
POLL_SECONDS = 0.1  # how often a replica waiting for a relayed answer looks in the store
REPLY_KEY = "an:"  # store reply keys: an:<analysis id>
MAX_CANDIDATES = 4096  # more than any position has legal actions
ANALYSIS_ID = re.compile(r"[0-9a-f]{16}", re.ASCII)
# The search's seed: fixed, so the answer depends on the seat's view alone (and on how many
# iterations fit in the budget); ``decision_seed`` mixes in where the game is.
ANALYSIS_SEED = 0


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    max_budget_ms: int = 2000  # the cap of a request's budget_ms; 0 = no hints
    per_minute: int = 6  # analyses per seat per minute; 0 = no limit
    max_in_flight: int = 32  # analyses waited for at once by one replica; 0 = no cap
    max_iterations: int = 0  # search iterations; 0 = the budget alone bounds the search
    grace_seconds: float = 5.0  # waited beyond the budget (queueing, transfer) before giving up
    refusal_pause: float = 1.0  # seconds before a refusal by the seat's own limits


@dataclass(frozen=True, slots=True)
class Candidate:
    action: int
    visits: int
    win_probability: float
    seat_win_probabilities: tuple[float, ...] = ()  # every seat's, as the seat's search sees it
    standard_error: float = 0.0  # of win_probability


@dataclass(frozen=True, slots=True)
class Answer:
    candidates: list[Candidate]
    iterations: int
    error: str = ""


def _answer_of_reply(data: bytes) -> Answer:
    r = epb.SubmitAnalysisRequest.FromString(data)
    cands = [
        Candidate(
            c.action,
            c.visits,
            c.win_probability,
            tuple(c.seat_win_probabilities),
            c.standard_error,
        )
        for c in r.candidates
    ]
    return Answer(cands, r.iterations, r.error)


def _answer_of_result(result: object) -> Answer:
    """What the local pool's ``ai_workers.analysis:analyse_payload`` returned."""
    if not isinstance(result, dict):
        raise TypeError(f"an analysis result is a dict, not {type(result).__name__}")
    cands = [
        Candidate(
            int(a),
            int(v),
            float(p),
            tuple(float(x) for x in (rest[0] if rest else ())),
            float(rest[1]) if len(rest) > 1 else 0.0,
        )
        for a, v, p, *rest in result.get("candidates", [])
    ]
    return Answer(cands, int(result.get("iterations", 0)), str(result.get("error", "")))


def disabled(why: str) -> ServiceError:
    return refused(Code.FAILED_PRECONDITION, "ANALYSIS_DISABLED", f"this server gives no hints: {why}")


def unavailable(why: str) -> ServiceError:
    return refused(Code.UNAVAILABLE, "ANALYSIS_UNAVAILABLE", f"no analysis: {why}; try again")


class Analyses:
    def __init__(
        self,
        games: Games,
        settings: AnalysisSettings | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.games = games
        self.settings = settings or AnalysisSettings()
        n = self.settings.per_minute
        self._rate = (
            RateLimit(
                "ENGINE_ANALYSIS_PER_MINUTE",
                f"{n} AnalyzePosition calls per minute per seat",
                n / 60.0,
                float(n),
                clock,
            )
            if n > 0
            else None
        )
        self._running: set[str] = set()  # "<game>/<seat>" of the analyses in flight
        self._waiting: dict[str, asyncio.Future[bytes]] = {}  # analysis id -> its answer

    # ---- AnalyzePosition ----------------------------------------------------------------

    async def analyze(self, req: epb.AnalyzePositionRequest) -> epb.AnalyzePositionResponse:
        cap = self.settings.max_budget_ms
        if req.budget_ms < 0:
            raise invalid("budget_ms", f"must be 0 (the server's cap, {cap} ms) or more")
        validate.game_id(req.game_id)
        validate.token(req.token)
        if not req.token:
            raise errors.token_required()
        if cap <= 0:
            raise disabled("ENGINE_ANALYSIS_MAX_BUDGET_MS is 0")
        if self.games.dispatcher.name == "off":
            raise disabled("it runs no AI (ENGINE_AI_DISPATCH=off)")
        version, state, seat = await self.games.position(req.game_id, req.token)
        require_turn(state, seat, "; hints are for the seat to move")
        seat_key = f"{req.game_id}/{seat}"
        if seat_key in self._running:
            await refuse_after_pause(
                refused(
                    Code.RESOURCE_EXHAUSTED,
                    "ANALYSIS_IN_PROGRESS",
                    f"an analysis of seat {seat} is still running: wait for its answer "
                    "(one at a time per seat)",
                    seat=seat,
                ),
                self.settings.refusal_pause,
            )
        limit = self.settings.max_in_flight
        if limit and len(self._running) >= limit:
            raise refused(
                Code.RESOURCE_EXHAUSTED,
                "ANALYSIS_CAPACITY",
                f"limit ENGINE_ANALYSIS_MAX_IN_FLIGHT reached: this server runs {limit} "
                "analyses at once; try again in a moment",
                limit="ENGINE_ANALYSIS_MAX_IN_FLIGHT",
                cap=limit,
            )
        if self._rate is not None:  # last: a call refused above does not count
            try:
                self._rate.take(f"game {req.game_id} seat {seat}")
            except ServiceError as e:
                await refuse_after_pause(e, self.settings.refusal_pause)
        budget = min(req.budget_ms or cap, cap)
        legal = rules.legal_actions(state)
        view = rules.view(state, seat)
        # The seat's one analysis lasts as long as its search, whether or not the caller
        # still waits for it: a cancelled call does not free the seat to ask again while its
        # search is queued or running.
        search = asyncio.ensure_future(self.search(req.game_id, version, view, legal, budget))
        self._running.add(seat_key)

        def ended(t: asyncio.Future[tuple[Answer, float]]) -> None:
            self._running.discard(seat_key)
            if not t.cancelled():
                t.exception()  # (retrieved: the caller may have gone)

        search.add_done_callback(ended)
        answer, waited = await asyncio.shield(search)
        return self._response(version, seat, budget, state, legal, answer, waited)

    async def search(
        self,
        game_id: str,
        version: int,
        view: rules.View,
        legal: list[int],
        budget_ms: int,
        iterations: int | None = None,
        batch: bool = False,
    ) -> tuple[Answer, float]:
        """One search of ``view`` (what its seat may know at ``version``) on the AI workers,
        within ``budget_ms`` (and ``iterations``: default, this server's analysis setting);
        the answer and the seconds waited. ``batch``: nobody waits at a table for it (a
        review's): the workers take hints first. Raises the ServiceError to answer with when no
        worker answers in time, or the search failed.

        A worker starts the search only while it can still answer before the engine stops
        waiting (``expires_at``: the grace less ``START_MARGIN_SECONDS``); later, it drops it
        unsearched. So a search never runs past the wait that counts it (a hint's seat, a
        review's caller, the caps)."""
        seat = view.seat
        analysis_id = secrets.token_hex(8)
        grace = self.settings.grace_seconds
        seconds = budget_ms / 1000 + grace
        now = time.time()
        payload = {
            "analysis_id": analysis_id,
            "game_id": game_id,
            "seat": seat,
            "version": version,
            # the seat's information set, nothing more: the search samples the rest from it
            "view": base64.b64encode(view.serialize()).decode(),
            "legal": legal,
            "budget_ms": budget_ms,
            "iterations": self.settings.max_iterations if iterations is None else iterations,
            "seed": ANALYSIS_SEED,
            "engine_address": self.games.engine_address,
            "enqueued_at": now,
            "expires_at": now + max(grace / 2, grace - START_MARGIN_SECONDS),
            "reply_seconds": seconds,
            "batch": batch,
        }
        loop = asyncio.get_running_loop()
        started = loop.time()
        reply: asyncio.Future[bytes] = loop.create_future()
        self._waiting[analysis_id] = reply
        try:
            try:
                local = await self.games.dispatcher.analyse(payload)
            except AnalysisUnavailable as e:
                raise disabled(str(e)) from None
            except Exception as e:
                raise unavailable(f"it could not be handed to the AI workers ({e})") from None
            answer = await self._wait(game_id, analysis_id, local, reply, seconds)
        finally:
            self._waiting.pop(analysis_id, None)
        waited = loop.time() - started
        if answer is None:
            log.info("analysis %s of game %s: no answer in %.1fs", analysis_id, game_id, waited)
            raise ServiceError(
                Code.DEADLINE_EXCEEDED,
                f"no AI worker answered the analysis within {seconds:.1f}s (budget "
                f"{budget_ms} ms + ENGINE_ANALYSIS_GRACE_SECONDS); are the workers running "
                "and keeping up?",
                reason="ANALYSIS_TIMEOUT",
                metadata={"waited_ms": str(int(waited * 1000)), "budget_ms": str(budget_ms)},
            )
        if answer.error:
            log.warning("analysis %s of game %s failed: %s", analysis_id, game_id, answer.error)
            raise unavailable(f"the AI worker failed it ({answer.error[:200]})")
        return answer, waited

    async def _wait(
        self,
        game_id: str,
        analysis_id: str,
        local: asyncio.Future[dict[str, object]] | None,
        reply: asyncio.Future[bytes],
        seconds: float,
    ) -> Answer | None:
        if local is not None:
            try:
                return _answer_of_result(await asyncio.wait_for(local, seconds))
            except TimeoutError:
                return None
            except Exception as e:
                log.warning("local analysis %s failed: %s: %s", analysis_id, type(e).__name__, e)
                return Answer([], 0, f"{type(e).__name__}: {e}")
        data = await self._wait_reply(game_id, analysis_id, reply, seconds)
        return None if data is None else _answer_of_reply(data)

    async def _wait_reply(
        self, game_id: str, analysis_id: str, reply: asyncio.Future[bytes], seconds: float
    ) -> bytes | None:
        """The worker's answer, whichever replica it reached; None after ``seconds``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        shared = self.games.store.kind != "memory"  # other replicas may hold the answer
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            try:
                step = min(POLL_SECONDS, remaining) if shared else remaining
                return await asyncio.wait_for(asyncio.shield(reply), step)
            except TimeoutError:
                pass
            if shared:
                data = await self.games.store.take_reply(game_id, REPLY_KEY + analysis_id)
                if data is not None:
                    return data

    def _response(
        self,
        version: int,
        seat: int,
        budget_ms: int,
        state: rules.State,
        legal: list[int],
        answer: Answer,
        waited: float,
    ) -> epb.AnalyzePositionResponse:
        """Only legal actions, once each, best first; descriptions are the engine's own."""
        allowed = set(legal)
        seen: set[int] = set()
        rows = []
        for c in answer.candidates:
            action, visits, p = c.action, c.visits, c.win_probability
            if action in allowed and action not in seen:
                seen.add(action)
                se = c.standard_error if c.standard_error == c.standard_error else 0.0
                rows.append(
                    (action, max(0, visits), min(1.0, max(0.0, p)) if p == p else 0.0, se)
                )
        rows.sort(key=lambda r: (-r[1], -r[2], r[0]))
        resp = epb.AnalyzePositionResponse(
            version=version,
            seat=seat,
            budget_ms=budget_ms,
            iterations=answer.iterations,
            chance_is_guess=explain.chance_is_guess(state),
        )
        for action, visits, p, se in rows:
            resp.candidates.add(
                action=action,
                visits=visits,
                win_probability=p,
                standard_error=min(1.0, max(0.0, se)),
                description=rules.describe_action(state, action),
            )
        log.debug("analysis of v%d seat %d: %d candidates in %.2fs", version, seat, len(rows), waited)
        return resp

    # ---- SubmitAnalysis (from the workers) ----------------------------------------------

    async def deliver(self, req: epb.SubmitAnalysisRequest) -> None:
        """A worker's answer: to the waiting call if it is on this replica, else to the store
        for the replica that waits."""
        validate.game_id(req.game_id)
        if not ANALYSIS_ID.fullmatch(req.analysis_id):
            raise invalid("analysis_id", "is not an analysis id (16 hex digits, as dispatched)")
        validate.token(req.token)
        if not req.token:
            raise errors.token_required("token", "the credential the analysis came with")
        if len(req.candidates) > MAX_CANDIDATES:
            raise invalid("candidates", f"at most {MAX_CANDIDATES}")
        if len(req.error) > 1000:
            raise invalid("error", "at most 1000 characters")
        self.games.ai_credentials.check_reply(req.token, req.game_id, req.analysis_id)
        kept = epb.SubmitAnalysisRequest()
        kept.CopyFrom(req)
        kept.token = ""  # the credential is not kept anywhere
        data = kept.SerializeToString()
        waiter = self._waiting.get(req.analysis_id)
        if waiter is not None:
            if not waiter.done():
                waiter.set_result(data)
            return
        await self.games.store.put_reply(
            req.game_id, REPLY_KEY + req.analysis_id, data, self.settings.grace_seconds + 30.0
        )

"""Housekeeping of one server: re-dispatch AI moves that waited too long, play the engine's
own fallback for moves nobody answers, refresh the gauges.

Several replicas may sweep the same store: a re-dispatch is claimed with a compare-and-set on
the pending record, so one replica sends it. A duplicate would be harmless anyway: a worker
submits with the version it planned on and an idempotency key.

The pending record's payload counts its dispatches (``attempt``, 1 for the first). A move
dispatched ``max_dispatches`` times and still unanswered after the stall time is played by
the engine itself (the backstop for bots and workers that never answer): the first legal
action of the AI seat, which is ending the turn or declining where that is allowed, submitted
through ``Games.submit`` with a credential minted for that move (the engine never imports
bot code), counted (``ascension_ai_fallback_moves_total``), logged at WARNING and stored with
the game as the seat's fallback move (reason ``unanswered``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from typing import Any, Protocol

from engine_service import telemetry
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.server.dispatch import Dispatcher, trace_attributes
from engine_service.server.errors import Code, ServiceError
from engine_service.server.metrics import Metrics
from engine_service.server.tokens import AiCredentials
from engine_service.store import PendingAI, Store, StoreError

log = logging.getLogger("ascension.engine.sweeper")
UNANSWERED = "unanswered"  # the reason of the engine's own fallback moves (SeatInfo)
GAUGE_SECONDS = 5.0
BATCH = 200


class MovePlayer(Protocol):
    """What the sweeper needs of ``Games`` to play a fallback move: the AI seats' credentials
    (a move's credential is minted as it is needed; stored payloads hold none)."""

    ai_credentials: AiCredentials

    async def legal_actions(self, game_id: str, token: str) -> epb.ListLegalActionsResponse: ...

    async def submit(self, req: epb.SubmitActionRequest) -> epb.SubmitActionResponse: ...

    async def time_out(self, game_id: str) -> int: ...


def encode_payload(payload: dict[str, object]) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


def fallback_key(game_id: str, seat: int, version: int) -> str:
    return f"ai-fallback:{game_id}:{seat}:{version}"


class Sweeper:
    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        metrics: Metrics,
        sweep_seconds: float,
        stall_seconds: float,
        games: MovePlayer | None = None,
        max_dispatches: int = 0,
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.sweep_seconds = sweep_seconds
        self.stall_seconds = stall_seconds
        self.games = games
        self.max_dispatches = max_dispatches  # 0: re-dispatch for ever, never play a fallback

    async def sweep_once(self) -> int:
        """Re-dispatch every AI move whose last dispatch is older than the stall time (or play
        its fallback); returns how many moves were sent or played."""
        now = time.time()
        sent = 0
        for p in await self.store.stalled_ai(now - self.stall_seconds, BATCH):
            try:
                payload = json.loads(p.payload)
                enqueued_at = float(payload.get("enqueued_at", 0))
                attempt = int(payload.get("attempt", 1) or 1)
            except (ValueError, TypeError, AttributeError) as e:
                # Damaged in the store: skipped, so that the other stalled moves are swept.
                log.warning("game %s: its pending AI move does not decode (%s): not swept", p.game_id, e)
                continue
            if now - enqueued_at < self.stall_seconds:
                continue
            give_up = (
                self.games is not None and self.max_dispatches > 0 and attempt >= self.max_dispatches
            )
            payload["enqueued_at"] = now
            if not give_up:
                payload["attempt"] = attempt + 1
            if not await self.store.claim_redispatch(p.game_id, p.payload, encode_payload(payload)):
                continue
            if give_up:
                sent += await self._play_fallback(p, payload, attempt)
                continue
            log.info(
                "re-dispatching the AI move of game %s seat %s (version %s, dispatch %d), "
                "waiting %.0fs",
                p.game_id,
                payload.get("seat"),
                p.version,
                attempt + 1,
                now - p.first_enqueued,
            )
            try:
                with telemetry.new_trace("ascension.ai_move", trace_attributes(payload)):
                    await self.dispatcher.dispatch(payload)
            except Exception:
                continue
            self.metrics.ai_enqueued.labels("sweep").inc()
            sent += 1
        return sent

    async def _play_fallback(self, p: PendingAI, payload: dict[str, Any], attempts: int) -> int:
        """Submit the AI seat's first legal action at the pending version; 1 if it was played."""
        assert self.games is not None
        seat = int(payload.get("seat", -1))
        token = self.games.ai_credentials.mint(p.game_id, seat, p.version)
        try:
            legal = await self.games.legal_actions(p.game_id, token)
            if legal.version != p.version or legal.to_move != seat or not legal.actions:
                return 0  # the game moved on meanwhile
            action = legal.actions[0]
            await self.games.submit(
                epb.SubmitActionRequest(
                    game_id=p.game_id,
                    token=token,
                    expected_version=p.version,
                    action=action.id,
                    idempotency_key=fallback_key(p.game_id, seat, p.version),
                    view_detail=epb.VIEW_DETAIL_LEGAL_ACTIONS,
                    fallback_reason=f"{UNANSWERED}: no worker answered in {attempts} dispatches",
                )
            )
        except ServiceError as e:
            if e.code in (Code.ABORTED, Code.FAILED_PRECONDITION, Code.NOT_FOUND):
                return 0  # answered, or the game is gone, since the sweep began
            log.warning("the engine's fallback move for game %s failed: %s", p.game_id, e)
            return 0
        self.metrics.ai_fallback_moves.inc()
        log.warning(
            "AI move of game %s seat %s (version %s, bot %r) unanswered after %d dispatches "
            "over %.0fs: the engine played the first legal action (%s)",
            p.game_id,
            seat,
            p.version,
            (payload.get("bot") or {}).get("name"),
            attempts,
            time.time() - p.first_enqueued,
            action.kind,
        )
        return 1

    async def enforce_clocks(self) -> int:
        """Play for each seat whose time ran out what its game's policy says (``Games.
        time_out``); returns how many moves were played or handed to a bot."""
        if self.games is None:
            return 0
        done = 0
        for game_id in await self.store.due_clocks(int(time.time() * 1000), BATCH):
            try:
                done += await self.games.time_out(game_id)
            except ServiceError as e:
                if e.code is not Code.NOT_FOUND:
                    log.warning("the clock of game %s could not be enforced: %s", game_id, e)
        return done

    async def run_clocks(self, stop: asyncio.Event, every: float) -> None:
        """Enforce the clocks every ``every`` seconds until ``stop`` (a loop of its own: a
        seat's time must run out within about that, whatever the other sweeps cost)."""
        while not stop.is_set():
            try:
                await self.enforce_clocks()
            except StoreError as e:
                log.warning("clock sweep skipped: %s", e)
            except Exception:
                log.exception("clock sweep failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every)

    async def refresh_gauges(self) -> None:
        oldest = await self.store.oldest_ai_wait_start()
        self.metrics.ai_wait.set(max(0.0, time.time() - oldest) if oldest is not None else 0.0)
        self.metrics.games_active.set(await self.store.active_games())

    async def run(self, stop: asyncio.Event) -> None:
        next_sweep = time.monotonic() + (self.sweep_seconds or 0)
        while not stop.is_set():
            try:
                await self.refresh_gauges()
                if self.sweep_seconds > 0 and time.monotonic() >= next_sweep:
                    next_sweep = time.monotonic() + self.sweep_seconds
                    await self.sweep_once()
            except StoreError as e:
                log.warning("housekeeping skipped: %s", e)
            except Exception:
                log.exception("housekeeping failed")
            wait = (
                GAUGE_SECONDS if self.sweep_seconds <= 0 else min(GAUGE_SECONDS, self.sweep_seconds)
            )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)

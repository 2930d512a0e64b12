"""Housekeeping of one server: re-dispatch AI moves that waited too long, refresh the gauges.

Several replicas may sweep the same store: a re-dispatch is claimed with a compare-and-set on
the pending record, so one replica sends it. A duplicate would be harmless anyway: a worker
submits with the version it planned on and an idempotency key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time

from engine_service.server.dispatch import Dispatcher
from engine_service.server.metrics import Metrics
from engine_service.store import Store, StoreError

log = logging.getLogger("ascension.engine.sweeper")
GAUGE_SECONDS = 5.0
BATCH = 200


def encode_payload(payload: dict[str, object]) -> bytes:
    return json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()


class Sweeper:
    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        metrics: Metrics,
        sweep_seconds: float,
        stall_seconds: float,
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.sweep_seconds = sweep_seconds
        self.stall_seconds = stall_seconds

    async def sweep_once(self) -> int:
        """Re-dispatch every AI move whose last dispatch is older than the stall time."""
        now = time.time()
        sent = 0
        for p in await self.store.stalled_ai(now - self.stall_seconds, BATCH):
            payload = json.loads(p.payload)
            if now - float(payload.get("enqueued_at", 0)) < self.stall_seconds:
                continue
            payload["enqueued_at"] = now
            if not await self.store.claim_redispatch(p.game_id, p.payload, encode_payload(payload)):
                continue
            log.info(
                "re-dispatching the AI move of game %s seat %s (version %s), waiting %.0fs",
                p.game_id,
                payload.get("seat"),
                p.version,
                now - p.first_enqueued,
            )
            try:
                await self.dispatcher.dispatch(payload)
            except Exception:
                continue
            self.metrics.ai_enqueued.labels("sweep").inc()
            sent += 1
        return sent

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

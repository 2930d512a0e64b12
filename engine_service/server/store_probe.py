"""The engine's own view of its store: a PING every few seconds, exported as the gauge
``ascension_store_up`` (1 answered, 0 not). It does not depend on a Redis exporter or on the
traffic of the moment, so the alert AscensionRedisDown sees a store that went away even when
the exporter went with it (the exporter is a sidecar of the Redis pod) or when no player is
calling."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from prometheus_client import Gauge

from engine_service.store.base import Store, StoreError

log = logging.getLogger("ascension.engine.store")


async def probe_store(
    store: Store, up: Gauge, stop: asyncio.Event, seconds: float, timeout: float
) -> None:
    """Until ``stop``: PING the store every ``seconds`` (ENGINE_STORE_PROBE_SECONDS), set ``up``
    to 1 if it answered within ``timeout``, else 0; each change is logged once."""
    last: bool | None = None
    while not stop.is_set():
        try:
            await asyncio.wait_for(store.ping(), timeout)
            answered, why = True, ""
        except (StoreError, TimeoutError) as e:
            answered, why = False, str(e) or f"no answer within {timeout:g}s"
        except Exception as e:  # a bug of ours must not stop the probe
            log.exception("the store's health probe failed")
            answered, why = False, repr(e)
        up.set(1 if answered else 0)
        if last is not None and answered != last:
            if answered:
                log.info("the store answers its health probe again")
            else:
                log.warning("the store does not answer its health probe: %s", why)
        last = answered
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)

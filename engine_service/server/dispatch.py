"""Handing an AI seat's move to whoever plays it: Celery workers, or local processes.

The server never imports bot code. Celery: the task is sent by name to the queue the workers
consume (moves to ``ascension.moves``), through an app made from the broker URL only. Each
message

- has a deterministic task id, ``{game}:{version}:{attempt}`` (``attempt`` counts the
  dispatches of that move: the sweeper's re-dispatches add one);
- expires ``message_ttl`` seconds after it was sent (``expires_at`` in its kwargs, which the
  worker checks before anything else, and the AMQP ``expiration`` property, with which
  RabbitMQ drops it unread). The sweeper sends a move again only after the TTL plus a margin,
  so at most one copy of a (game, version) move can still be delivered (docs/reliability.md);
- shows no seat token outside its body: ``argsrepr``/``kwargsrepr`` are set here, without it.

Local (the embedded default): a pool of spawned processes (``ENGINE_LOCAL_AI_PROCESSES``) runs
the function named by ``ENGINE_LOCAL_AI_TARGET`` ("module:function", imported inside the child)
with the payload as keyword arguments; that function connects to ``engine_address`` and
submits the move like any client. The pools' processes (and the bot hosts they start) end
with the engine, whatever they are doing: closing the dispatcher kills them, and each dies
with its parent (``engine_service/lifeline.py``) if the engine is killed.

Analyses (``AnalyzePosition``, hints for a seat, and ``ReviewGame``'s searches) go the same
ways with :meth:`Dispatcher.analyse`: as the Celery task ``ascension.analyze_position`` on the
queue ``ascension.analyses`` (the worker hands the result back with ``SubmitAnalysis``;
nothing is answered here), or to a local pool of their own (``ENGINE_LOCAL_ANALYSIS_PROCESSES``,
at a lower CPU priority) running ``ai_workers.analysis:analyse_payload``, whose return value is
the result.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import contextlib
import contextvars
import importlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from datetime import UTC, datetime
from typing import Any

from engine_service import lifeline, redis_urls

log = logging.getLogger("ascension.engine.dispatch")

TASK_NAME = "ascension.choose_move"
ANALYSIS_TASK_NAME = "ascension.analyze_position"
QUEUE = "ascension.moves"
# Analyses (hints, review searches) have a queue of their own, consumed by worker processes
# of their own: an AI move never waits behind one (ai_workers/cli.py).
ANALYSIS_QUEUE = "ascension.analyses"
# A review's searches (``batch`` in the payload) are sent at this priority, hints at the
# default (0): kombu's Redis transport keeps a list per priority step and its consumers take
# the 0 list first, so a player's hint never waits behind a review's searches. (RabbitMQ
# needs queues declared with x-max-priority for this; without, both keep their order.)
BATCH_PRIORITY = 9
LOCAL_ANALYSIS_TARGET = "ai_workers.analysis:analyse_payload"

Payload = dict[str, Any]
AnalysisFuture = asyncio.Future[Payload]


class AnalysisUnavailable(Exception):
    """This dispatcher runs no analyses (AI dispatch off)."""


def message_ttl(stall_seconds: float) -> float:
    """How long a dispatched move may wait to be delivered: the stall time less a margin for
    clocks that disagree (a quarter of it, at most 5 s); 0 = no expiry."""
    return max(0.0, stall_seconds - min(5.0, stall_seconds / 4))


def task_id(payload: Payload) -> str:
    return f"{payload['game_id']}:{payload['version']}:{payload.get('attempt', 1)}"


def describe(payload: Payload) -> str:
    """The payload as task headers and logs may show it: never the token."""
    bot = payload.get("bot")
    name = bot.get("name") if isinstance(bot, dict) else bot
    shown: dict[str, Any] = {
        k: payload[k] for k in ("game_id", "seat", "version", "attempt") if k in payload
    }
    return repr({**shown, "bot": name})


def trace_attributes(payload: Payload) -> dict[str, str | int]:
    """The move's span attributes (telemetry.new_trace): never the token."""
    bot = payload.get("bot")
    return {
        "ascension.game_id": str(payload["game_id"]),
        "ascension.seat": int(payload["seat"]),
        "ascension.version": int(payload["version"]),
        "ascension.attempt": int(payload.get("attempt", 1)),
        "ascension.bot": str(bot.get("name", "") if isinstance(bot, dict) else bot or ""),
    }


def describe_analysis(payload: Payload) -> str:
    """An analysis payload as task headers and logs may show it: no token, no view."""
    return repr({k: payload[k] for k in ("analysis_id", "game_id", "seat", "version") if k in payload})


class Dispatcher(abc.ABC):
    name = "abstract"

    @abc.abstractmethod
    async def dispatch(self, payload: Payload) -> None:
        """Hand the move over (do not wait for it to be played)."""

    async def analyse(self, payload: Payload) -> AnalysisFuture | None:
        """Hand an analysis over: a future of its result when this process will get it (the
        local pool), else None (Celery: the worker answers with ``SubmitAnalysis``)."""
        raise AnalysisUnavailable(f"AI dispatch {self.name!r} runs no analyses")

    async def close(self) -> None:
        return None


class NoDispatcher(Dispatcher):
    """ENGINE_AI_DISPATCH=off: pending AI moves are recorded, not sent (an external sweeper or
    worker picks them up)."""

    name = "off"

    async def dispatch(self, payload: Payload) -> None:
        log.debug(
            "AI move of game %s seat %s not dispatched (dispatch off)",
            payload["game_id"],
            payload["seat"],
        )


class CeleryDispatcher(Dispatcher):
    name = "celery"

    def __init__(self, broker_url: str, message_ttl: float = 0.0) -> None:
        from celery import Celery

        self.message_ttl = message_ttl
        kombu_url, broker_conf = redis_urls.celery_broker(broker_url)  # (redis+sentinel://)
        self.app = Celery("ascension-engine", broker=kombu_url, set_as_current=False)
        self.app.conf.update(broker_conf)
        self.app.conf.broker_connection_retry_on_startup = True
        self.app.conf.task_default_queue = QUEUE
        # One thread sends: a Celery producer is not shared across threads.
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="celery-send"
        )

    def _send(self, payload: Payload) -> None:
        kwargs = payload
        options: dict[str, Any] = {}
        if self.message_ttl > 0:
            sent = float(payload.get("enqueued_at") or time.time())
            kwargs = {**payload, "expires_at": sent + self.message_ttl}
            options["expiration"] = self.message_ttl  # AMQP brokers drop it unread
        self.app.send_task(
            TASK_NAME,
            kwargs=kwargs,
            queue=QUEUE,
            task_id=task_id(payload),
            argsrepr="()",
            kwargsrepr=describe(payload),
            **options,
        )

    async def dispatch(self, payload: Payload) -> None:
        loop = asyncio.get_running_loop()
        try:
            # In the caller's context: a trace (when tracing is on) continues into the
            # task's headers.
            context = contextvars.copy_context()
            await loop.run_in_executor(self._pool, context.run, self._send, payload)
        except Exception as e:  # the sweeper will send it again
            log.warning(
                "could not send the AI move of game %s to Celery: %s", payload["game_id"], e
            )
            raise

    def _send_analysis(self, payload: Payload) -> None:
        # Not started once it could not answer before the engine stops waiting (``expires``:
        # the worker drops it unsearched).
        self.app.send_task(
            ANALYSIS_TASK_NAME,
            kwargs=payload,
            queue=ANALYSIS_QUEUE,
            task_id=f"analysis:{payload['analysis_id']}",
            expires=datetime.fromtimestamp(float(payload["expires_at"]), tz=UTC),
            priority=BATCH_PRIORITY if payload.get("batch") else 0,
            argsrepr="()",
            kwargsrepr=describe_analysis(payload),
        )

    async def analyse(self, payload: Payload) -> AnalysisFuture | None:
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()
        try:
            await loop.run_in_executor(self._pool, context.run, self._send_analysis, payload)
        except Exception as e:
            log.warning("could not send analysis %s to Celery: %s", payload["analysis_id"], e)
            raise
        return None

    async def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _kill_pool(pool: concurrent.futures.ProcessPoolExecutor, seconds: float = 10.0) -> None:
    """Shut the pool down and kill its processes now, busy or not (a search, a stuck bot):
    nothing they hold is worth waiting for once the engine stops (a move not played is
    dispatched again by the sweeper); their bot hosts die with them. Waits, at most
    ``seconds``, until they are gone."""
    # concurrent.futures has no public way to end busy workers before Python 3.14's
    # kill_workers(): its process table is read instead.
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        with contextlib.suppress(Exception):  # (exited already)
            p.kill()
    left = [p.sentinel for p in procs]
    deadline = time.monotonic() + seconds
    while left and time.monotonic() < deadline:
        done = multiprocessing.connection.wait(left, deadline - time.monotonic())
        left = [s for s in left if s not in done]


def run_target(target: str, payload: Payload) -> object:
    """In the child process: import ``module:function`` and call it with the payload."""
    module, _, func = target.partition(":")
    fn = getattr(importlib.import_module(module), func)
    return fn(**payload)


MOVES, ANALYSES = "moves", "analyses"  # the local dispatcher's two pools
ANALYSIS_NICE = 10  # the local analyses' CPU priority below the server's and the moves'


def _start_child(parent: int, analyses: bool) -> None:
    """In a local pool's process as it starts: it dies with the engine (lifeline.py), and an
    analysis process runs below the moves' CPU priority."""
    lifeline.die_with_parent(parent)
    if analyses:
        os.nice(ANALYSIS_NICE)


class LocalDispatcher(Dispatcher):
    """Two pools of spawned processes: ``processes`` for moves, ``analysis_processes`` (at a
    lower CPU priority) for analyses, so that a move never waits behind a hint or a review's
    search (the Celery workers' two nodes alike, ai_workers/analysis_node.py)."""

    name = "local"

    def __init__(
        self,
        target: str,
        processes: int,
        analysis_target: str = LOCAL_ANALYSIS_TARGET,
        analysis_processes: int = 1,
    ) -> None:
        self.target = target
        self.analysis_target = analysis_target
        self.processes = processes
        self.analysis_processes = analysis_processes
        self._lock = threading.Lock()
        self._pools: dict[str, concurrent.futures.ProcessPoolExecutor] = {}
        self._closed = False

    def _executor(self, kind: str) -> concurrent.futures.ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("the local AI pool is closed: the engine is stopping")
            pool = self._pools.get(kind)
            if pool is None:
                # spawn, not fork: the server has threads (gRPC, metrics) a fork would not
                # carry. Each process dies with this one, even killed (lifeline.py).
                ctx = multiprocessing.get_context("spawn")
                pool = concurrent.futures.ProcessPoolExecutor(
                    self.analysis_processes if kind == ANALYSES else self.processes,
                    mp_context=ctx,
                    initializer=_start_child,
                    initargs=(os.getpid(), kind == ANALYSES),
                )
                self._pools[kind] = pool
            return pool

    def _forget(self, kind: str, pool: concurrent.futures.ProcessPoolExecutor) -> None:
        """A child of ``pool`` died: a fresh pool is started next time."""
        with self._lock:
            if self._pools.get(kind) is pool:
                del self._pools[kind]

    def _done(
        self,
        kind: str,
        pool: concurrent.futures.ProcessPoolExecutor,
        payload: Payload,
        fut: concurrent.futures.Future[object],
    ) -> None:
        if fut.cancelled() or self._closed:  # (closing kills what is still running)
            return
        e = fut.exception()
        if e is None:
            return
        log.warning(
            "local AI target %s failed for game %s seat %s: %s: %s",
            self.analysis_target if kind == ANALYSES else self.target,
            payload["game_id"],
            payload["seat"],
            type(e).__name__,
            e,
        )
        if isinstance(e, concurrent.futures.process.BrokenProcessPool):
            self._forget(kind, pool)

    def _submit(self, kind: str, payload: Payload) -> concurrent.futures.Future[object]:
        target = self.analysis_target if kind == ANALYSES else self.target
        pool = self._executor(kind)
        try:
            fut = pool.submit(run_target, target, payload)
        except (RuntimeError, concurrent.futures.process.BrokenProcessPool):
            self._forget(kind, pool)
            pool = self._executor(kind)
            fut = pool.submit(run_target, target, payload)
        fut.add_done_callback(lambda f: self._done(kind, pool, payload, f))
        return fut

    async def dispatch(self, payload: Payload) -> None:
        self._submit(MOVES, payload)

    async def analyse(self, payload: Payload) -> AnalysisFuture | None:
        # The search runs in a pool process (never in the server's event loop or threads);
        # the caller awaits the result with its own deadline.
        fut = self._submit(ANALYSES, payload)
        return asyncio.wrap_future(fut)  # type: ignore[arg-type]

    async def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
            self._closed = True
        for pool in pools:
            await asyncio.to_thread(_kill_pool, pool)


def make_dispatcher(
    mode: str,
    broker_url: str,
    target: str,
    processes: int,
    message_ttl: float = 0.0,
    analysis_processes: int = 1,
) -> Dispatcher:
    if mode == "celery":
        return CeleryDispatcher(broker_url, message_ttl)
    if mode == "local":
        return LocalDispatcher(target, processes, analysis_processes=analysis_processes)
    return NoDispatcher()

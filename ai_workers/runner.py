"""One AI move, start to finish: the function the Celery task and the engine's embedded
process pool both run (``ai_workers.runner:play_move``).

0. Drop the request if it expired (``expires_at``, set by the engine's dispatcher): the
   engine sends the move again after that, so an older copy must not be played.
1. Read the seat's view with its token (``GetGame``).
2. Drop the move if it is stale: the game moved on (another version) or the seat is not the
   one to move any more.
3. Let the seat's bot choose on the rules view, in the process's supervised bot host and
   within the seat's budget plus the grace (``ai_workers/supervisor.py``), with a legal
   fallback if the bot fails, overruns, or is quarantined on this node for misbehaving
   (``ai_workers/slots.py``). A dead-lettered move (``fallback_only``) plays the fallback
   without asking the bot. The decision holds one of the bot's slots of this worker;
   :class:`BotBusy` when it has none left.
4. ``SubmitAction`` with the version the bot planned on and the idempotency key
   ``ai:{game}:{seat}:{version}``: a lost race (``ABORTED``/``FAILED_PRECONDITION``) is
   dropped, never retried, and a repeated submit is never applied twice. A fallback move says
   why in ``fallback_reason``: the engine stores it with the game (the seat's fallback count
   and latest reason, in every view's seat info).

An unreachable engine raises :class:`TransientEngineError` (the Celery task retries it; the
engine's sweeper re-dispatches moves that waited too long).
"""

from __future__ import annotations

import functools
import logging
import os
import time
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from ai_workers import config, metrics, slots, supervisor
from ai_workers import engine_client as ec
from ai_workers.bots.decide import Decision, fallback_action
from ai_workers.bots.settings import BotSettings, BotSettingsError
from ai_workers.supervisor import supervised_decide
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2

log = logging.getLogger("ascension.worker.runner")
DEFAULT_ENGINE_ADDRESS = "localhost:50051"

PLAYED, STALE, LOST_RACE, REPLAYED, GONE = "played", "stale", "lost_race", "replayed", "gone"
EXPIRED = "expired"
DEFERRED = "deferred"  # ai_workers.tasks: the bot held its share of the worker's slots
QUARANTINED, DEAD_LETTER = metrics.FALLBACK_QUARANTINED, metrics.FALLBACK_DEAD_LETTER


@functools.cache
def worker_config() -> config.WorkerConfig:
    """The worker settings of this process (the defaults if the environment is unusable: the
    engine's embedded AI process reads the same variables)."""
    try:
        return config.load()
    except ValueError as e:
        log.error("worker settings: %s; using the defaults", e)
        return config.load({})


class BotBusy(Exception):
    """The bot holds all the slots of this worker it may: the move must wait (the Celery task
    sends it back to the queue with a short delay)."""

    def __init__(self, bot: str, cap: int) -> None:
        super().__init__(f"bot {bot!r} holds its {cap} slot(s) of this worker")
        self.bot = bot


def bot_records() -> slots.BotRecords:
    cfg = worker_config()
    return slots.records(
        cfg.bot_slots, cfg.quarantine_failures, cfg.quarantine_seconds, cfg.concurrency
    )


def describe(payload: dict[str, Any]) -> str:
    """The payload as logs and task headers may show it: never the token."""
    bot = payload.get("bot")
    name = bot.get("name") if isinstance(bot, dict) else bot
    shown: dict[str, Any] = {
        k: payload[k] for k in ("game_id", "seat", "version", "attempt") if k in payload
    }
    return repr({**shown, "bot": name})


def idempotency_key(game_id: str, seat: int, version: int) -> str:
    return f"ai:{game_id}:{seat}:{version}"


def _settings(bot: Any, game_id: str, seat: int) -> BotSettings:
    raw = dict(bot or {})
    if not raw.get("exploration"):
        raw.pop("exploration", None)  # 0 = the bot's default
    try:
        return BotSettings.from_payload(raw)
    except BotSettingsError as e:
        log.error("game %s seat %s: bad bot settings (%s); the heuristic plays", game_id, seat, e)
        return BotSettings(name="heuristic", seed=int(raw.get("seed", 0) or 0) % 2**64)


def _done(outcome: str) -> str:
    metrics.outcomes.labels(outcome).inc()
    return outcome


def play_move(
    game_id: str,
    seat: int,
    version: int,
    token: str,
    bot: dict[str, Any],
    engine_address: str = "",
    enqueued_at: float = 0.0,
    attempt: int = 1,
    expires_at: float = 0.0,
    fallback_only: bool = False,
    **extra: Any,
) -> str:
    """Play the AI move the engine asked for; returns what became of it: ``played``,
    ``replayed`` (an earlier attempt had already submitted it), ``stale``, ``lost_race``,
    ``gone`` (the game no longer exists) or ``expired`` (the engine sends it again)."""
    if extra:
        log.debug("ignoring unknown payload keys %s", sorted(extra))
    if expires_at and time.time() > expires_at:
        log.info(
            "move of game %s seat %s v%s (dispatch %s) expired %.1fs ago unplayed; dropped",
            game_id,
            seat,
            version,
            attempt,
            time.time() - expires_at,
        )
        return _done(EXPIRED)
    if enqueued_at:
        metrics.queue_wait.observe(max(0.0, time.time() - enqueued_at))
    address = engine_address or os.environ.get("ENGINE_ADDRESS", DEFAULT_ENGINE_ADDRESS)
    settings = _settings(bot, game_id, seat)
    stub = ec.stub(address)
    try:
        gv = stub.GetGame(
            engine_pb2.GetGameRequest(game_id=game_id, token=token), timeout=ec.CALL_TIMEOUT
        )
    except Exception as e:
        if ec.is_gone(e):
            log.info("game %s is gone; dropping the move of seat %s", game_id, seat)
            return _done(GONE)
        if ec.is_transient(e):
            raise ec.TransientEngineError(f"GetGame {game_id}: {ec.status_name(e)}") from None
        raise
    if gv.over or gv.version != version or gv.to_move != seat or not gv.legal_actions:
        log.info(
            "stale move of game %s seat %s: planned on version %s, game at %s, to move %s",
            game_id,
            seat,
            version,
            gv.version,
            gv.to_move,
        )
        return _done(STALE)
    legal = [a.id for a in gv.legal_actions]
    if len(legal) == 1:
        # Nothing to choose (e.g. a Raid the seat holds no card to prevent, which every
        # victim is asked so that the question reveals nothing): submitted at once, no bot runs.
        d = Decision(legal[0], settings.name, 0.0)
    else:
        try:
            view: rules.View | None = rules.View.deserialize(gv.rules_view)
        except Exception as e:
            log.error("game %s seat %s: unreadable rules view (%s)", game_id, seat, e)
            view = None
        d = _decide(game_id, seat, version, view, gv.rules_view, legal, settings, fallback_only)
    metrics.decision_seconds.labels(settings.name).observe(d.seconds)
    if d.fallback:
        metrics.fallbacks.labels(settings.name, metrics.fallback_reason(d.fallback)).inc()
    if d.iterations and d.search_seconds > 0:
        ips = d.iterations / d.search_seconds
        metrics.mcts_ips.set(ips)
        metrics.mcts_ips_hist.observe(ips)
    req = engine_pb2.SubmitActionRequest(
        game_id=game_id,
        token=token,
        expected_version=version,
        action=d.action,
        idempotency_key=idempotency_key(game_id, seat, version),
        view_detail=engine_pb2.VIEW_DETAIL_LEGAL_ACTIONS,
        fallback_reason=d.fallback_text,  # stored with the game: the seat's fallback moves
    )
    try:
        resp = stub.SubmitAction(req, timeout=ec.CALL_TIMEOUT)
    except Exception as e:
        if ec.is_lost_race(e):
            log.info(
                "game %s seat %s: lost the race at version %s (%s)",
                game_id,
                seat,
                version,
                ec.status_name(e),
            )
            return _done(LOST_RACE)
        if ec.is_gone(e):
            return _done(GONE)
        if ec.is_transient(e):
            raise ec.TransientEngineError(f"SubmitAction {game_id}: {ec.status_name(e)}") from None
        raise
    if resp.replayed:
        return _done(REPLAYED)
    metrics.moves.labels(settings.name).inc()
    log.info(
        "game %s seat %s v%s: %s chose action %s in %.3fs%s",
        game_id,
        seat,
        version,
        settings.name,
        d.action,
        d.seconds,
        f" (fallback: {d.fallback_text})" if d.fallback else "",
    )
    return _done(PLAYED)


def _decide(
    game_id: str,
    seat: int,
    version: int,
    view: rules.View | None,
    rules_view: bytes,
    legal: list[int],
    settings: BotSettings,
    fallback_only: bool,
) -> Decision:
    """The bot's decision under supervision, or the fallback where the bot is not to be asked;
    a bot's overrun or death is recorded against it on this node."""
    cfg = worker_config()
    records = bot_records()
    if fallback_only:
        start = time.perf_counter()
        action = fallback_action(view, legal)
        return Decision(action, settings.name, time.perf_counter() - start, DEAD_LETTER)
    quarantined = supervisor.quarantine_fallback(records, view, legal, settings)
    if quarantined is not None:
        return quarantined
    # The slot is held for the decision only: the submit that follows may bring the next
    # move of the same bot at once, on another process, which must find the slot free.
    slot = records.acquire(settings.name)
    if slot is None:
        raise BotBusy(settings.name, records.cap(settings.name))
    host = supervisor.host(cfg.bot_load_seconds, cfg.log_level)
    where = f"game {game_id} seat {seat} v{version}"
    start = time.perf_counter()
    with slot:
        try:
            d = supervised_decide(
                view, rules_view, legal, settings, host, cfg.decision_grace, where
            )
        except SoftTimeLimitExceeded:  # the task's own limit struck first (a long load + budget)
            log.warning("bot %r %s: the task's soft time limit struck; playing a fallback move",
                        settings.name, where)  # fmt: skip
            action = fallback_action(view, legal)
            d = Decision(action, settings.name, time.perf_counter() - start, supervisor.DEADLINE)
    supervisor.record_outcome(records, d)
    return d

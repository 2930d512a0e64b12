"""Bots against bots, for benchmarks (``benchmarks/strength.py``, ``benchmarks/ladder.py``).

A player is named by a spec, ``name[@budget][:option=value]...`` (``ai_workers/bots/specs.py``).
Every seat sees only its view; a decision with one legal action is played without asking the
bot, as the AI runner does, and is not counted as the bot's.

A bot is asked as the workers ask it, with the same fallback moves and reasons
(docs/bots.md, "Fallback moves"): each decision has the workers' deadline, the seat's budget
plus ``WORKER_DECISION_GRACE_SECONDS``, and a bot that misbehaves
``WORKER_BOT_QUARANTINE_FAILURES`` times in a row is not asked for
``WORKER_BOT_QUARANTINE_SECONDS`` (per benchmark process: ``ai_workers/supervisor.py``).

- A plug-in (any bot but the built-ins under their own names) runs in a bot host, a child
  process of the benchmark's (``supervisor.BotHost``), one instance per spec serving every
  game of the process, as in a worker: one that overruns is killed at the deadline, one that
  exits is replaced, and the benchmark goes on.
- The built-ins run in this process, a fresh instance per seat and game (a bot host's round
  trip would cost more than their whole decision): they stop within their budget by
  themselves, and one that answered after the deadline gets the fallback move all the same,
  as a worker would have played it.

Fallback moves are counted per seat: a game with fallback moves is not its bot's own play.
"""

from __future__ import annotations

import functools
import logging
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ai_workers import config, slots, supervisor
from ai_workers.bots.base import Bot
from ai_workers.bots.decide import Decision, ask, fallback_action
from ai_workers.bots.registry import UnknownBotError, available_bots, unknown_bot_message
from ai_workers.bots.settings import DEFAULT_EXPLORATION, BotSettings
from ai_workers.bots.specs import BotSpec, make_bot, options_key, parse_spec
from engine_service import rules

Z95 = 1.959964
log = logging.getLogger("ascension.arena")


@dataclass(frozen=True, slots=True)
class SeatStats:
    decisions: int = 0  # decisions asked of the bot (more than one legal action)
    think_s: float = 0.0
    searches: int = 0  # decisions that ran a search
    iterations: int = 0
    search_s: float = 0.0
    fallbacks: int = 0  # decisions where the bot failed and the fallback move was played
    last_fallback: str = ""  # the latest one's reason


@dataclass(frozen=True, slots=True)
class GameRecord:
    seed: int
    labels: tuple[str, ...]  # per seat
    first: int  # the seat that started
    winner: int
    scores: tuple[int, ...]
    turns: int
    stats: tuple[SeatStats, ...]


@functools.cache
def _config() -> config.WorkerConfig:
    """The workers' deadline and quarantine settings (their defaults if unusable here)."""
    try:
        return config.load()
    except ValueError as e:
        log.error("worker settings: %s; using the defaults", e)
        return config.load({})


def _records() -> slots.BotRecords:
    cfg = _config()
    return slots.records(0, cfg.quarantine_failures, cfg.quarantine_seconds)


_host: supervisor.BotHost | None = None


def _bot_host() -> supervisor.BotHost:
    """This process's bot host for plug-ins (killed when the process exits)."""
    global _host
    if _host is None:
        cfg = _config()
        _host = supervisor.BotHost(cfg.bot_load_seconds, cfg.log_level, specs=True)
        import atexit

        atexit.register(_host.close)
    return _host


def reset() -> None:
    """Forget this process's bot host, settings and bot records (read again when next needed:
    for tests that change the environment)."""
    global _host
    if _host is not None:
        _host.close()
    _host = None
    _config.cache_clear()
    slots.forget_records()


def check_specs(texts: list[str]) -> None:
    """Fail early on a malformed spec or a bot that is not installed, without importing any
    plug-in (its code runs in a bot host only)."""
    names = available_bots()
    for text in texts:
        spec = parse_spec(text)
        if spec.name not in names:
            raise UnknownBotError(unknown_bot_message(spec.name, names))


class _Seat:
    """How one seat's bot is asked: in this process (a built-in), or in the bot host."""

    def __init__(self, spec: BotSpec) -> None:
        self.hosted = not slots.is_builtin(spec.name)
        self.bot: Bot | None = None if self.hosted else make_bot(spec)
        self.key = options_key(spec)
        self._seen: object = None

    def decide(self, view: rules.View, legal: list[int], settings: BotSettings) -> Decision:
        """The bot's decision (``settings.name`` is :attr:`key`), or the fallback."""
        records = _records()
        d = supervisor.quarantine_fallback(records, view, legal, settings)
        if d is None:
            d = self._hosted(view, legal, settings) if self.hosted else self._here(
                view, legal, settings)  # fmt: skip
            supervisor.record_outcome(records, d, "in this benchmark process")
        return d

    def _hosted(self, view: rules.View, legal: list[int], settings: BotSettings) -> Decision:
        grace = _config().decision_grace
        return supervisor.supervised_decide(view, view.serialize(), legal, settings,
                                            _bot_host(), grace)  # fmt: skip

    def _here(self, view: rules.View, legal: list[int], settings: BotSettings) -> Decision:
        assert self.bot is not None
        limit = supervisor.deadline_seconds(settings, _config().decision_grace)
        t0 = time.perf_counter()
        a, why, detail = ask(self.bot, view, legal, settings)
        seconds = time.perf_counter() - t0
        if not why and seconds > limit:
            log.warning("bot %r answered after %.1fs, past its deadline of %.1fs; playing a "
                        "fallback move", settings.name, seconds, limit)  # fmt: skip
            a, why, detail = fallback_action(view, legal), supervisor.DEADLINE, (
                f"no answer within {limit:.1f}s")  # fmt: skip
        iterations, search_s = 0, 0.0
        last: Any = getattr(self.bot, "last", None)  # a search bot's report of its last search
        if not why and last is not None and last is not self._seen:
            self._seen = last
            iterations = int(getattr(last, "iterations", 0) or 0)
            search_s = float(getattr(last, "seconds", 0.0) or 0.0)
        return Decision(a, settings.name, seconds, why, iterations, search_s, detail)


def play_game(
    specs: list[BotSpec],
    seed: int,
    sets: str = "both",
    budget_ms: int = 100,
    exploration: float = DEFAULT_EXPLORATION,
    replay: int = 0,
) -> GameRecord:
    """One game of the deal ``seed``; ``replay`` > 0 gives the bots other seeds (the same deal
    played again by other searches)."""
    n = len(specs)
    seats = [_Seat(sp) for sp in specs]
    settings = [
        BotSettings(
            name=seats[q].key,  # the bot and its options: how records and bot hosts know it
            iterations=sp.iterations,
            time_ms=0 if sp.iterations else sp.time_ms if sp.time_ms is not None else budget_ms,
            seed=seed * 8 + q + (replay << 40),
            exploration=exploration,
        )
        for q, sp in enumerate(specs)
    ]
    s = rules.new_game(rules.GameConfig(sets=sets, players=n, seed=seed))
    first = s.first
    dec = [0] * n
    think = [0.0] * n
    searches = [0] * n
    iters = [0] * n
    search_s = [0.0] * n
    fallbacks = [0] * n
    last_fallback = [""] * n
    while not s.over:
        p = s.to_move()
        legal = rules.legal_actions(s)
        if len(legal) == 1:
            rules.apply(s, legal[0])
            continue
        t0 = time.perf_counter()
        d = seats[p].decide(rules.view(s, p), legal, settings[p])
        think[p] += time.perf_counter() - t0
        dec[p] += 1
        if d.fallback:
            fallbacks[p] += 1
            last_fallback[p] = d.fallback_text
        if d.iterations:
            searches[p] += 1
            iters[p] += d.iterations
            search_s[p] += d.search_seconds
        rules.apply(s, d.action)
    stats = tuple(
        SeatStats(
            dec[q], think[q], searches[q], iters[q], search_s[q], fallbacks[q], last_fallback[q]
        )
        for q in range(n)
    )
    return GameRecord(seed, tuple(sp.label for sp in specs), first, rules.winner(s),
                      tuple(rules.scores(s)), s.turn, stats)  # fmt: skip


def wilson(wins: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(max(0.0, p * (1 - p) / n + z * z / (4 * n * n))) / d
    return max(0.0, centre - half), min(1.0, centre + half)


# ---- tournaments: many games in parallel, bounded in time ---------------------------------


@dataclass(frozen=True, slots=True)
class Match:
    """One game of a tournament: A (a spec) in seat ``a_seat``, B in every other seat."""

    a: str
    b: str
    seed: int
    a_seat: int
    players: int = 2
    sets: str = "both"
    budget_ms: int = 100
    exploration: float = DEFAULT_EXPLORATION
    replay: int = 0  # > 0: the same game with other bot seeds


Result = tuple[Match, GameRecord]


def play_match(m: Match) -> Result:
    specs = [parse_spec(m.b)] * m.players
    specs[m.a_seat] = parse_spec(m.a)
    return m, play_game(specs, m.seed, m.sets, m.budget_ms, m.exploration, m.replay)


def matches(
    pairs: list[tuple[str, str]],
    deals: int,
    *,
    players: int = 2,
    first_seed: int = 1,
    sets: str = "both",
    budget_ms: int = 100,
    exploration: float = DEFAULT_EXPLORATION,
    replays: int = 1,
) -> list[Match]:
    """Deal by deal, every pair and every seat of a deal together (``replays`` times each,
    with other bot seeds), so that a run stopped early has played every pair on the same
    deals from every seat."""
    return [
        Match(a, b, first_seed + k, seat, players, sets, budget_ms, exploration, r)
        for k in range(deals)
        for a, b in pairs
        for seat in range(players)
        for r in range(replays)
    ]


def complete_deals(results: list[Result], todo: list[Match]) -> list[Result]:
    """Only the deals of which every game in ``todo`` was played."""
    want = Counter(m.seed for m in todo)
    have = Counter(m.seed for m, _ in results)
    return [(m, g) for m, g in results if have[m.seed] == want[m.seed]]


def run_matches(
    todo: list[Match],
    workers: int,
    *,
    max_minutes: float = 0.0,
    progress_s: float = 60.0,
    progress: Callable[[list[Result]], str] | None = None,
) -> list[Result]:
    """Play the matches on ``workers`` processes, printing a progress line to stderr every
    ``progress_s`` seconds. With ``max_minutes``, no match starts after that long; the games
    of deals left incomplete are dropped (see :func:`complete_deals`)."""
    results: list[Result] = []
    t0 = time.time()
    stop_at = t0 + max_minutes * 60 if max_minutes else float("inf")
    queue = iter(todo)
    pending: set[Future[Result]] = set()
    last = t0
    with ProcessPoolExecutor(workers) as ex:
        while True:
            while len(pending) < 2 * workers and time.time() < stop_at:
                m = next(queue, None)
                if m is None:
                    break
                pending.add(ex.submit(play_match, m))
            if not pending:
                break
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            results.extend(f.result() for f in done)
            now = time.time()
            if now - last >= progress_s or not pending:
                last = now
                extra = f"; {progress(results)}" if progress else ""
                print(f"[{(now - t0) / 60:5.1f} min] {len(results)}/{len(todo)} games{extra}",
                      file=sys.stderr, flush=True)  # fmt: skip
    if len(results) < len(todo):
        kept = complete_deals(results, todo)
        print(f"stopped after {max_minutes} min: {len(results)} of {len(todo)} games played, "
              f"{len(kept)} in complete deals kept", file=sys.stderr)  # fmt: skip
        return kept
    return results

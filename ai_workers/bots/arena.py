"""Bots against bots, for benchmarks (``benchmarks/strength.py``, ``benchmarks/ladder.py``).

A player is named by a *spec*: ``name[@budget][:option=value]...``, for example ``heuristic``,
``ismcts@1s``, ``ismcts@250ms:backup=paranoid:reuse=1``, ``ismcts@3000it``. The budget (``ms``
or ``s``) is the bot's thinking time per decision (else the tournament's); ``it`` gives a search
a fixed number of iterations instead, with no time limit, so that comparisons do not depend on
the machine's load; options are passed to the bot's
class (``ISMCTSBot(**options)``), so variants of one bot can meet in one run. Every seat gets
a fresh bot instance per game and sees only its view; a decision with one legal action is
played without asking the bot, as the AI runner does. A bot that raises or answers an
illegal action gets the workers' fallback move (``ai_workers.bots.decide.ask``), counted per seat:
a game with fallback moves is not its bot's own play.
"""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from ai_workers.bots.base import Bot
from ai_workers.bots.decide import ask
from ai_workers.bots.registry import load_bot
from ai_workers.bots.settings import DEFAULT_EXPLORATION, BotSettings
from engine_service import rules

Z95 = 1.959964


@dataclass(frozen=True, slots=True)
class BotSpec:
    label: str  # the spec as written: how results name this player
    name: str  # the registered bot
    time_ms: int | None  # None: the tournament's budget
    options: tuple[tuple[str, str], ...] = ()
    iterations: int = 0  # > 0: this many search iterations per decision, no time limit


def parse_spec(text: str) -> BotSpec:
    label = text.strip()
    head, *opts = label.split(":")
    name, _, budget = head.partition("@")
    time_ms: int | None = None
    iterations = 0
    if budget:
        b = budget.strip().lower()
        if b.endswith("it"):
            iterations = int(b[:-2])
            if iterations <= 0:
                raise ValueError(f"bot spec {text!r}: iterations must be > 0")
        elif b.endswith("ms"):
            time_ms = int(float(b[:-2]))
        elif b.endswith("s"):
            time_ms = int(float(b[:-1]) * 1000)
        else:
            time_ms = int(float(b))
    options = []
    for o in opts:
        k, eq, v = o.partition("=")
        if not eq or not k.strip():
            raise ValueError(f"bot spec {text!r}: option {o!r} is not key=value")
        options.append((k.strip(), v.strip()))
    if not name.strip():
        raise ValueError(f"bot spec {text!r} names no bot")
    return BotSpec(label, name.strip(), time_ms, tuple(options), iterations)


def make_bot(spec: BotSpec) -> Bot:
    """A fresh instance of the spec's bot (load_bot checks the name and caches a prototype)."""
    cls = type(load_bot(spec.name))
    return cls(**dict(spec.options)) if spec.options else cls()


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
    bots = [make_bot(sp) for sp in specs]
    settings = [
        BotSettings(
            name=sp.name,
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
    seen: list[object] = [None] * n
    while not s.over:
        p = s.to_move()
        legal = rules.legal_actions(s)
        if len(legal) == 1:
            rules.apply(s, legal[0])
            continue
        bot = bots[p]
        t0 = time.perf_counter()
        a, why, detail = ask(bot, rules.view(s, p), legal, settings[p])
        think[p] += time.perf_counter() - t0
        dec[p] += 1
        if why:
            fallbacks[p] += 1
            last_fallback[p] = f"{why}: {detail}" if detail else why
        last: Any = getattr(bot, "last", None)  # a search bot's report of its last search
        if last is not None and last is not seen[p] and int(getattr(last, "iterations", 0) or 0):
            seen[p] = last
            searches[p] += 1
            iters[p] += int(last.iterations)
            search_s[p] += float(last.seconds)
        rules.apply(s, a)
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

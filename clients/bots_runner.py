"""``ascension bots``: bot-vs-bot games through the engine service, and a results table.

Every seat of each game is an AI seat; the bots take turns in the seats (game i seats bot
``(i + j) % len(bots)`` in seat j) so that no bot always sits in the same place. Games run
concurrently (``parallel``); each is followed with WatchGame until it ends.

A seat's fallback moves (its bot failed and the worker, or the engine, played a legal move
instead: ``SeatInfo.fallback_moves``) are counted per bot, against the bot's decisions: its
moves less the forced ones (``GameUpdate.forced``: the only legal action, which no bot is asked
for). A bot with any gets a line saying that its results are not its own strength
(:func:`fallback_note`, which ``benchmarks/strength.py`` prints too), and its win rate is
marked in its row, or not shown when most of its decisions were fallback moves
(:func:`win_rate_text`).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

from rich.table import Table

from clients.sdk import AscensionError, Client, bot


@dataclass(frozen=True, slots=True)
class BotsConfig:
    bots: tuple[str, ...]
    games: int = 10
    players: int = 2
    sets: str = "ss"
    budget_ms: int = 300
    seed: int | None = None
    parallel: int = 2
    game_timeout_s: float = 900.0  # a game longer than this is abandoned
    stall_timeout_s: float = 120.0  # so is a game where nobody moves for this long

    def seating(self, game: int) -> list[str]:
        return [self.bots[(game + j) % len(self.bots)] for j in range(self.players)]


@dataclass(slots=True)
class GameResult:
    index: int
    game_id: str
    seats: list[str]  # the bot in each seat
    scores: list[int] = field(default_factory=list)
    winner: int = -1
    updates: int = 0  # actions applied
    turns: int = 0
    seconds: float = 0.0
    error: str = ""
    moves: list[int] = field(default_factory=list)  # actions of each seat
    forced: list[int] = field(default_factory=list)  # of them, its only legal action
    fallbacks: list[int] = field(default_factory=list)  # fallback moves of each seat
    last_fallback: list[str] = field(default_factory=list)  # the latest one's reason

    @property
    def ok(self) -> bool:
        return not self.error and self.winner >= 0


def play_one(client: Client, cfg: BotsConfig, index: int) -> GameResult:
    """Create one all-bot game and wait for its end."""
    seating = cfg.seating(index)
    seed = None if cfg.seed is None else cfg.seed + index
    bot_seed = random.randrange(2**40) if seed is None else seed * 8
    seats = [
        bot(name, time_ms=cfg.budget_ms, seed=bot_seed + j, display_name=f"{name} #{j + 1}")
        for j, name in enumerate(seating)
    ]
    t0 = time.monotonic()
    try:
        game = client.create_game(seats, sets=cfg.sets, seed=seed)
    except AscensionError as e:
        return GameResult(index, "", seating, error=str(e))
    result = GameResult(index, game.game_id, seating, moves=[0] * len(seating),
                        forced=[0] * len(seating))  # fmt: skip
    watch = client.watch(game.game_id, after_version=0)
    dog = _Watchdog(watch.cancel, cfg.game_timeout_s, cfg.stall_timeout_s)
    try:
        for update in watch:
            dog.progress()
            result.updates = update.version - 1
            if 0 <= update.seat < len(seating):
                result.moves[update.seat] += 1
                result.forced[update.seat] += update.forced
            if update.over:
                break
        view = client.get_view(game.game_id)
    except AscensionError as e:
        result.error = str(e)
        return result
    finally:
        dog.stop()
        watch.cancel()
        result.seconds = time.monotonic() - t0
    if not view.over:
        result.error = f"{dog.reason or 'the game did not end'} (at version {view.version})"
        return result
    result.turns = view.board.turn
    by_seat = {s.seat: s.total for s in view.scores}
    result.scores = [by_seat.get(j, 0) for j in range(len(seating))]
    info = {s.seat: s for s in view.seat_info}
    result.fallbacks = [info[j].fallback_moves if j in info else 0 for j in range(len(seating))]
    result.last_fallback = [info[j].last_fallback_reason if j in info else ""
                            for j in range(len(seating))]  # fmt: skip
    result.winner = view.winner
    return result


class _Watchdog:
    """Calls ``cancel`` once the game has run ``total`` seconds, or ``stall`` without a move."""

    def __init__(self, cancel: Callable[[], None], total: float, stall: float) -> None:
        self._cancel, self._total, self._stall = cancel, total, stall
        self._start = self._last = time.monotonic()
        self._done = threading.Event()
        self.reason = ""
        threading.Thread(target=self._run, daemon=True).start()

    def progress(self) -> None:
        self._last = time.monotonic()

    def stop(self) -> None:
        self._done.set()

    def _run(self) -> None:
        while not self._done.wait(0.5):
            now = time.monotonic()
            if now - self._start > self._total:
                self.reason = f"not over after {self._total:.0f} s"
            elif now - self._last > self._stall:
                self.reason = f"no move for {self._stall:.0f} s (are the AI workers running?)"
            else:
                continue
            self._cancel()
            return


def run(
    client: Client,
    cfg: BotsConfig,
    on_done: Callable[[GameResult], None] | None = None,
) -> list[GameResult]:
    """Play ``cfg.games`` games, ``cfg.parallel`` at a time; results in game order."""
    results: list[GameResult] = []
    with ThreadPoolExecutor(max_workers=max(1, cfg.parallel)) as pool:
        futures = [pool.submit(play_one, client, cfg, i) for i in range(cfg.games)]
        for fut in as_completed(futures):
            res = fut.result()
            results.append(res)
            if on_done is not None:
                on_done(res)
    return sorted(results, key=lambda r: r.index)


@dataclass(slots=True)
class BotStats:
    name: str
    seats: int = 0
    wins: int = 0
    honor: int = 0
    margin: int = 0  # own score minus the best other score, summed
    moves: int = 0
    forced: int = 0  # moves that were the seat's only legal action: not the bot's decisions
    fallbacks: int = 0  # moves played by the fallback instead of the bot
    last_fallback: str = ""

    @property
    def win_rate(self) -> float:
        return self.wins / self.seats if self.seats else 0.0

    @property
    def decisions(self) -> int:
        """Moves the bot was asked for (or the fallback played instead)."""
        return self.moves - self.forced


def mostly_fallbacks(fallbacks: int, decisions: int) -> bool:
    """Most of a bot's decisions were fallback moves: its results are the fallback's."""
    return fallbacks > 0 and 2 * fallbacks >= decisions


def win_rate_text(rate: str, fallbacks: int, decisions: int) -> str:
    """A results table's win rate cell: a dash when most of the bot's decisions were fallback
    moves, the rate marked "(!)" when some were (the note under the table says how many)."""
    if mostly_fallbacks(fallbacks, decisions):
        return "—"
    return f"{rate} (!)" if fallbacks else rate


def fallback_note(
    bot: str, fallbacks: int, decisions: int, latest: str, withheld: str = "win rate"
) -> str:
    """The line a bot with fallback moves gets under a results table (here, in
    benchmarks/strength.py and, ``withheld`` "rating", in benchmarks/ladder.py)."""
    share = fallbacks / decisions if decisions else 1.0
    no_rate = f"; no {withheld} is shown for it" if mostly_fallbacks(fallbacks, decisions) else ""
    return (
        f"{bot}: {fallbacks} of its {decisions} decisions ({share:.0%}) were fallback moves "
        f"(latest: {latest}), played because the bot failed: these results are not {bot}'s "
        f"own strength{no_rate}"
    )


def stats(results: Sequence[GameResult]) -> list[BotStats]:
    by_bot: dict[str, BotStats] = {}
    for r in results:
        if not r.ok:
            continue
        for seat, name in enumerate(r.seats):
            st = by_bot.setdefault(name, BotStats(name))
            st.seats += 1
            st.wins += int(seat == r.winner)
            st.honor += r.scores[seat]
            others = [s for j, s in enumerate(r.scores) if j != seat]
            st.margin += r.scores[seat] - (max(others) if others else 0)
            st.moves += r.moves[seat] if seat < len(r.moves) else 0
            st.forced += r.forced[seat] if seat < len(r.forced) else 0
            if seat < len(r.fallbacks) and r.fallbacks[seat]:
                st.fallbacks += r.fallbacks[seat]
                st.last_fallback = r.last_fallback[seat]
    return sorted(by_bot.values(), key=lambda s: (-s.win_rate, s.name))


def fallback_notes(results: Sequence[GameResult]) -> list[str]:
    """One line per bot that played fallback moves (none when every move was the bots')."""
    return [
        fallback_note(st.name, st.fallbacks, st.decisions, st.last_fallback)
        for st in stats(results)
        if st.fallbacks
    ]


def results_table(cfg: BotsConfig, results: Sequence[GameResult]) -> Table:
    done = [r for r in results if r.ok]
    title = (
        f"{len(done)}/{len(results)} games · {cfg.players} players · sets {cfg.sets} · "
        f"{cfg.budget_ms} ms per move"
    )
    table = Table(title=title, title_style="bold")
    for col in ("Bot", "Seats", "Wins", "Win rate", "Mean Honor", "Mean margin", "Fallbacks"):
        table.add_column(col, justify="left" if col == "Bot" else "right")
    for st in stats(results):
        n = max(st.seats, 1)
        table.add_row(
            st.name + (" (!)" if st.fallbacks else ""), str(st.seats), str(st.wins),
            win_rate_text(f"{st.win_rate:.0%}", st.fallbacks, st.decisions),
            f"{st.honor / n:.1f}", f"{st.margin / n:+.1f}", f"{st.fallbacks}/{st.decisions}",
        )  # fmt: skip
    if done:
        turns = sum(r.turns for r in done) / len(done)
        secs = sum(r.seconds for r in done) / len(done)
        table.caption = f"mean game: {turns:.0f} turns, {secs:.1f} s"
    return table

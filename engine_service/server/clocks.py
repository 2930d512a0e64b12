"""The human seats' turn clocks: how much time a seat has and when it runs out.

A game's settings are chosen at CreateGame and kept in its metadata (``GameMeta.clock``);
where the clocks stand (``ClockRun``) is kept with the state, in the record behind it
(fallbacks.py), so that every move writes the clocks in the same compare-and-set as the move
and every replica reads the same deadline. Each commit also indexes the running clock's
deadline in the store; the sweeper plays, for a seat whose time ran out, what the game's
policy says (``Games.time_out``): exactly once across replicas, since that move is a commit
on the version it read like any other.

A seat's time for a turn is its allowance (``turn_ms``), then its bank: time beyond the
allowance comes out of the bank, which gains ``increment_ms`` after each of the seat's turns.
The allowance is per turn, not per answer: a seat answering several choices during another
seat's turn spends one allowance. A seat whose time is out stays out for the rest of that
turn (the forced moves or the bot go on until its part of the turn is over).

When every human seat's time has run out ``ABANDONED`` times in a row without a move of its
own, the table is empty: the clocks stop (no deadline), so that nobody's game is played on by
the engine for ever; the game then waits, and expires as a game without clocks does, unless
a player comes back and moves (the clocks go on from there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from engine_service import rules
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.rules import actions as A

FORCED_MOVE, BOT, FORFEIT = "forced_move", "bot", "forfeit"
POLICIES = {pb.TIMEOUT_POLICY_UNSPECIFIED: FORCED_MOVE, pb.TIMEOUT_POLICY_FORCED_MOVE: FORCED_MOVE,
            pb.TIMEOUT_POLICY_BOT: BOT, pb.TIMEOUT_POLICY_FORFEIT: FORFEIT}  # fmt: skip
_POLICY_IDS = {FORCED_MOVE: pb.TIMEOUT_POLICY_FORCED_MOVE, BOT: pb.TIMEOUT_POLICY_BOT,
               FORFEIT: pb.TIMEOUT_POLICY_FORFEIT}  # fmt: skip
DEFAULT_BOT = "normal"
ABANDONED = 2


@dataclass(frozen=True, slots=True)
class ClockSettings:
    turn_ms: int  # the allowance per turn, 0 = none
    bank_ms: int  # each human seat's bank at the start
    increment_ms: int  # added to the bank after each of the seat's turns
    policy: str  # FORCED_MOVE, BOT or FORFEIT
    bot_difficulty: str  # BOT: the level that plays the rest of the turn

    def as_payload(self) -> dict[str, Any]:
        return {"turn_ms": self.turn_ms, "bank_ms": self.bank_ms,
                "increment_ms": self.increment_ms, "policy": self.policy,
                "bot": self.bot_difficulty}  # fmt: skip

    @staticmethod
    def from_payload(d: dict[str, Any]) -> ClockSettings:
        return ClockSettings(
            int(d["turn_ms"]), int(d["bank_ms"]), int(d["increment_ms"]), str(d["policy"]),
            str(d["bot"]),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ClockRun:
    """Where the clocks stand after a version."""

    seat: int  # whose clock runs; -1: none (an AI seat to move, the game over)
    started_ms: int  # when it started (the version's time)
    turn: tuple[int, int]  # (turn number, active seat): the turn the allowances belong to
    turn_left: tuple[int, ...]  # each seat's allowance left in that turn
    bank: tuple[int, ...]  # each seat's bank, the running seat's as at ``started_ms``
    timeouts: tuple[int, ...]  # how many times each seat's time ran out
    timed_out: tuple[int, ...]  # versions made by moves no player chose (time had run out)
    away: tuple[int, ...] = ()  # each seat's timeouts since its last own move

    def seats_away(self, seat: int) -> int:
        return self.away[seat] if seat < len(self.away) else 0

    def deadline_ms(self) -> int:
        """When the running seat's time runs out; 0 when no clock runs."""
        if self.seat < 0:
            return 0
        return self.started_ms + self.turn_left[self.seat] + self.bank[self.seat]

    def ran_out(self, seat: int, now_ms: int) -> bool:
        """Whether ``seat`` is to move with its time run out at ``now_ms``."""
        return seat == self.seat >= 0 and now_ms >= self.deadline_ms()

    def as_payload(self) -> list[Any]:
        return [self.seat, self.started_ms, list(self.turn), list(self.turn_left),
                list(self.bank), list(self.timeouts), list(self.timed_out),
                list(self.away)]  # fmt: skip

    @staticmethod
    def from_payload(p: list[Any]) -> ClockRun:
        seat, started, turn, left, bank, timeouts, timed_out, away = p
        return ClockRun(
            int(seat), int(started), (int(turn[0]), int(turn[1])),
            tuple(int(x) for x in left), tuple(int(x) for x in bank),
            tuple(int(x) for x in timeouts), tuple(int(x) for x in timed_out),
            tuple(int(x) for x in away),
        )  # fmt: skip


def _running(s: rules.State, human: Sequence[bool]) -> int:
    q = s.to_move()
    return q if q >= 0 and human[q] else -1


def start(c: ClockSettings, s: rules.State, human: Sequence[bool], now_ms: int) -> ClockRun:
    """The clocks of a new game ``s`` (``human[i]``: whether seat i has a clock)."""
    n = len(human)
    return ClockRun(
        seat=_running(s, human),
        started_ms=now_ms,
        turn=(s.turn, s.active),
        turn_left=(c.turn_ms,) * n,
        bank=tuple(c.bank_ms if h else 0 for h in human),
        timeouts=(0,) * n,
        timed_out=(),
        away=(0,) * n,
    )


def advance(
    c: ClockSettings,
    run: ClockRun,
    s: rules.State,
    human: Sequence[bool],
    now_ms: int,
    version: int,
    actor: int,
    *,
    timed_out: bool,
) -> ClockRun:
    """The clocks after ``actor``'s move made ``version`` at ``now_ms`` (``s``: the state it
    made; ``timed_out``: the move was played for the seat, its time having run out)."""
    left, bank, timeouts = list(run.turn_left), list(run.bank), list(run.timeouts)
    away = [run.seats_away(i) for i in range(len(human))]
    q = run.seat
    if q >= 0:
        spent = max(0, now_ms - run.started_ms)
        from_turn = min(spent, left[q])
        had = left[q] + bank[q]
        left[q] -= from_turn
        bank[q] = max(0, bank[q] - (spent - from_turn))
        if timed_out and had > 0:  # (the first forced move of a stretch counts the timeout)
            timeouts[q] += 1
            away[q] += 1
    if not timed_out and 0 <= actor < len(away):
        away[actor] = 0  # (a move of its own: the seat is here)
    turn = (s.turn, s.active)
    if turn != run.turn:  # a turn ended: its seat's increment, everyone's new allowance
        ended = run.turn[1]
        if 0 <= ended < len(bank) and human[ended]:
            bank[ended] += c.increment_ms
        left = [c.turn_ms] * len(left)
    empty = all(a >= ABANDONED for a, h in zip(away, human, strict=True) if h)
    return ClockRun(
        seat=-1 if empty else _running(s, human),
        started_ms=now_ms,
        turn=turn,
        turn_left=tuple(left),
        bank=tuple(bank),
        timeouts=tuple(timeouts),
        timed_out=(*run.timed_out, version) if timed_out else run.timed_out,
        away=tuple(away),
    )


def seated(c: ClockSettings, run: ClockRun, seat: int) -> ClockRun:
    """``run`` with a new player at ``seat``: a whole allowance and the starting bank."""
    def put(values: tuple[int, ...], value: int) -> tuple[int, ...]:
        return (*values[:seat], value, *values[seat + 1 :])

    away = run.away or (0,) * len(run.bank)
    return replace(run, turn_left=put(run.turn_left, c.turn_ms), bank=put(run.bank, c.bank_ms),
                   away=put(away, 0))  # fmt: skip


def fill(out: pb.ClockState, c: ClockSettings, run: ClockRun) -> None:
    """The wire form of the clocks into ``out`` (a ClockState of a view or an update)."""
    st = out.settings
    st.turn_seconds, st.bank_seconds = c.turn_ms // 1000, c.bank_ms // 1000
    st.increment_seconds = c.increment_ms // 1000
    st.on_timeout = _POLICY_IDS[c.policy]
    if c.policy == BOT:
        st.bot_difficulty = c.bot_difficulty
    out.seat = run.seat
    out.deadline_unix_ms = run.deadline_ms()
    out.started_unix_ms = run.started_ms
    out.bank_ms.extend(run.bank)
    out.turn_ms.extend(run.turn_left)
    out.timeouts.extend(run.timeouts)


def forced_move(s: rules.State, legal: Sequence[int]) -> int:
    """The move the engine plays for a seat whose time ran out: decline a choice that may be
    declined, else take its first option; in the main phase, end the turn."""
    end_turn, skip = A.END_TURN << 16, A.SKIP << 16
    if s.decision is None and end_turn in legal:
        return end_turn
    return skip if skip in legal else legal[0]

"""A game's updates, made once when each version is committed and again, for a watcher, when
the store's window no longer holds them.

The store keeps a short window of recent updates per game (ENGINE_STREAM_MAXLEN) and, for the
whole game, what a replay needs: the seed, the log of (seat, action) and the state. A watcher
that asks for older versions (a spectator arriving late, a stream that fell behind a fast
game) gets them rebuilt by replaying the log from the seed with the code that made them the
first time (``created`` and ``played``). A rebuilt history is given only if the replay ends on
the stored state (every field equal): a game written under another card catalog, or a log that
changed under the replay (a store rollback), has no history to give.

Rebuilt updates are the spectator's updates as first sent, except that they carry no time
(``time_unix_ms`` 0) and no clocks (``clock``, ``timeout``: kept with the state for the
latest version only). Their commit ids are computed along the log (``chained_commit_id``), once
per replay; when they end on the stored version's, a watcher's last commit id is checked
against the history it continues (DATA_LOSS if the store holds another). A game whose ids are
not chained (written by an earlier version of the engine) gets them only on the last update.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import replace

from engine_service import rules
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import convert, fallbacks, seats
from engine_service.server.meta import GameMeta
from engine_service.store import (
    GameRecord,
    Store,
    StoredUpdate,
    UnreadableData,
    chained_commit_id,
    first_commit_id,
)

log = logging.getLogger("ascension.engine.history")


def created(game_id: str, s: rules.State) -> pb.GameUpdate:
    """Version 1's update: the game as dealt."""
    return convert.update(game_id, 1, -1, 0, "Game created", s, [])


def played(
    u: pb.GameUpdate,
    game_id: str,
    version: int,
    seat: int,
    action: int,
    s: rules.State,
    choices: int | None = None,
) -> None:
    """Play ``action`` (legal: checked by the caller) on ``s`` and fill the empty update ``u``
    with what ``version`` did; ``choices``: how many legal actions the seat had (counted here
    when not given)."""
    if choices is None:
        choices = len(rules.legal_actions(s))
    description = rules.describe_action(s, action)
    evs = rules.apply_unchecked(s, action)
    convert.fill_update(u, game_id, version, seat, action, description, s, evs)
    if choices == 1:
        u.forced = True


def table_event(
    u: pb.GameUpdate, game_id: str, version: int, seat: int, action: int, s: rules.State,
    over: bool,
) -> None:  # fmt: skip
    """Fill the empty update ``u`` with the table event ``action`` of ``seat`` (seats.py): no
    card moves; ``over``: it ended the game."""
    convert.fill_update(u, game_id, version, seat, action, seats.describe(seat, action), s, [])
    u.action_kind = seats.kind_name(action)
    if over:
        u.over, u.to_move = True, -1


class _Replay:
    """A game replayed up to some version: kept so that the next watcher of the same game
    (or the same watcher, later) goes on from there instead of from the seed."""

    __slots__ = ("commit_ids", "entries", "meta", "resigned", "state", "updates")

    def __init__(self, state: rules.State, first: bytes, first_id: str, meta: GameMeta) -> None:
        self.entries: list[tuple[int, int]] = []  # the log entries replayed
        self.state = state  # after them
        self.updates: list[bytes] = [first]  # updates[i] is version i + 1's, with chained ids
        self.commit_ids: list[str] = [first_id]  # commit_ids[i]: version i + 1's
        self.meta = meta  # the seats' kinds as the table events left them
        self.resigned: list[int] = []


class History:
    """Rebuilds the updates of any version a game's replay log reaches."""

    def __init__(self, store: Store, games: int = 32) -> None:
        self.store = store
        self._replays: collections.OrderedDict[str, _Replay] = collections.OrderedDict()
        self._size = games

    async def since(self, game_id: str, after: int) -> list[StoredUpdate] | None:
        """The updates after version ``after`` up to the game's stored version, rebuilt; None
        if the game is gone or its log does not replay to its stored state."""
        rec = await self.store.load(game_id)
        if rec is None or after >= rec.version:
            return None
        try:
            entries = await self.store.action_log(game_id)
        except UnreadableData as e:
            log.warning("game %s: its log is damaged (%s): no history to rebuild", game_id, e)
            return None
        if len(entries) < rec.version - 1:
            return None  # the log is behind the record: it changed under us (a rollback)
        replay = self._replayed(rec, entries[: rec.version - 1])
        if replay is None:
            return None
        ids = replay.commit_ids
        versions = range(after + 1, rec.version + 1)
        if ids[rec.version - 1] == rec.commit_id:  # the updates carry the store's ids
            out = [
                StoredUpdate(v, ids[v - 1], ids[v - 2] if v > 1 else "", replay.updates[v - 1])
                for v in versions
            ]
        else:  # not chained: ids only on the last, the stored version's
            out = [StoredUpdate(v, "", "", _without_ids(replay.updates[v - 1])) for v in versions]
            out[-1] = StoredUpdate(rec.version, rec.commit_id, "",
                                   _with_ids(out[-1].update, rec.commit_id, ""))  # fmt: skip
        out[-1] = replace(out[-1], over=rec.over)
        return out

    def _replayed(self, rec: GameRecord, entries: list[tuple[int, int]]) -> _Replay | None:
        game_id = rec.game_id
        replay = self._replays.pop(game_id, None)
        if replay is not None and entries[: len(replay.entries)] != replay.entries:
            replay = None  # another history than the one replayed before: start again
        try:
            if replay is None:
                meta = GameMeta.decode(rec.meta)
                s = meta.first_state()
                first_id = first_commit_id(game_id)
                first = created(game_id, s)
                first.commit_id = first_id
                replay = _Replay(s, _untimed(first), first_id, meta)
            s = replay.state
            for seat, action in entries[len(replay.entries) :]:
                version = len(replay.updates) + 1
                u = pb.GameUpdate()
                if seats.is_table_action(action):
                    if action == seats.RESIGN:
                        replay.resigned.append(seat)
                    replay.meta = seats.after(replay.meta, seat, action)
                    ended = seats.ended(replay.meta, replay.resigned)
                    table_event(u, game_id, version, seat, action, s, ended)
                else:
                    played(u, game_id, version, seat, action, s)
                u.parent_commit_id = replay.commit_ids[-1]
                u.commit_id = chained_commit_id(u.parent_commit_id, seat, action)
                replay.updates.append(_untimed(u))
                replay.entries.append((seat, action))
                replay.commit_ids.append(u.commit_id)
            stored = rules.deserialize(fallbacks.split(rec.state)[0])
            same = s == stored  # (field by field: not the bytes)
        except (rules.RulesError, ValueError, KeyError, IndexError) as e:
            log.warning("game %s: its log does not replay (%s): no history to rebuild", game_id, e)
            return None
        if not same:
            log.warning("game %s: its log does not replay to its stored state", game_id)
            return None
        self._replays[game_id] = replay
        while len(self._replays) > self._size:
            self._replays.popitem(last=False)
        return replay


def _untimed(u: pb.GameUpdate) -> bytes:
    u.time_unix_ms = 0
    return u.SerializeToString()


def _with_ids(raw: bytes, commit_id: str, parent_id: str) -> bytes:
    u = pb.GameUpdate.FromString(raw)
    u.commit_id, u.parent_commit_id = commit_id, parent_id
    return u.SerializeToString()


def _without_ids(raw: bytes) -> bytes:
    return _with_ids(raw, "", "")

"""The store's interface: where games live, written only by compare-and-set.

A game is one record (state bytes, version, commit id, static metadata) plus, written in the
same atomic step as each new version: its update (a serialized ``GameUpdate``) appended to a
short window of recent updates, the action appended to the action log, the idempotency key
(its fingerprint and version; the update itself is read back from the window) and the pending
AI move (if an AI seat is to move next).

Every commit writes a commit id that names the history up to it (``chained_commit_id``), and
the compare-and-set checks the commit id of the version it builds on as well as the number: a
store that lost versions (a snapshot restore, a failover to a lagging replica) and was played
on differently holds the same version numbers with other commit ids, so nothing ever builds
on, or serves, a history the store no longer holds. Implementations: Redis (production;
standalone or Cluster) and in process (the embedded default), both behind
:class:`CachingStore` in a server. Both behave the same; the service tests run on both.
"""

from __future__ import annotations

import abc
import enum
import hashlib
import os
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# How many recent updates (and idempotency keys) a live game keeps: enough for watchers that
# fall a little behind and for retries of recent submits; a watcher further behind gets
# OUT_OF_RANGE and reads the game again. A finished game keeps its window a few minutes (for
# watchers behind at the end), then only what replay needs: its record, log and last key.
DEFAULT_WINDOW = 8  # (most of a live game's memory: see benchmarks/footprint.py)
DEFAULT_FINISHED_TTL = 86_400  # seconds a finished game is kept for GetGame/GetReplay
DEFAULT_IDLE_TTL = 7 * 86_400  # seconds an unfinished game is kept after its last move
DEFAULT_FINISHED_WINDOW_TTL = 300  # seconds a finished game keeps its window of updates


# Ids that must differ, not be secret (the engine alone writes commits): a generator seeded
# from the OS, seeded again in a forked child, instead of a system call per submit.
_ids = random.Random()
os.register_at_fork(after_in_child=_ids.seed)


def new_commit_id() -> str:
    """16 hex digits at random: a Commit's attempt id (and any id that names no history)."""
    return f"{_ids.getrandbits(64):016x}"


# A game's commit ids name its whole history: version 1's is a hash of the game id, each
# later one a hash of its parent's id and the (seat, action) played. The same history has the
# same ids and any other history other ids (a store rollback played on differently), and a
# history rebuilt from the replay log gets the ids it was first sent with, so a watcher's last
# commit id can be checked however far behind the store's window it is.


def first_commit_id(game_id: str) -> str:
    """Version 1's commit id (16 hex digits)."""
    return hashlib.blake2b(b"created:" + game_id.encode(), digest_size=8).hexdigest()


def chained_commit_id(parent_id: str, seat: int, action: int) -> str:
    """The commit id of the version that ``seat`` playing ``action`` makes of ``parent_id``'s."""
    data = f"{parent_id}:{seat}:{action}".encode()
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def chain_ids(game_id: str, log: Sequence[tuple[int, int]]) -> list[str]:
    """The commit ids of a game's history from its action log: ``[i]`` is version i + 1's."""
    ids = [first_commit_id(game_id)]
    for seat, action in log:
        ids.append(chained_commit_id(ids[-1], seat, action))
    return ids


@dataclass(frozen=True, slots=True)
class StoreSettings:
    window: int = DEFAULT_WINDOW
    finished_ttl: int = DEFAULT_FINISHED_TTL
    idle_ttl: int = DEFAULT_IDLE_TTL
    finished_window_ttl: int = DEFAULT_FINISHED_WINDOW_TTL


@dataclass(frozen=True, slots=True)
class GameRecord:
    game_id: str
    version: int
    commit_id: str
    state: bytes
    meta: bytes  # JSON written at creation, never changed
    over: bool


@dataclass(frozen=True, slots=True)
class StoredUpdate:
    """One version's update as kept in the game's window."""

    version: int
    commit_id: str
    parent_id: str  # the commit id of ``version - 1`` ("" for version 1)
    update: bytes
    over: bool = False  # the game ended with this version


@dataclass(frozen=True, slots=True)
class GameSummaryRecord:
    game_id: str
    version: int
    meta: bytes
    over: bool
    to_move: int
    updated_ms: int


@dataclass(frozen=True, slots=True)
class PendingAI:
    """An AI move that was dispatched and not yet answered by a new version."""

    game_id: str
    version: int
    payload: bytes  # JSON: the dispatch payload (its ``enqueued_at`` is the last dispatch)
    first_enqueued: float  # when this AI turn started waiting (unix time)


@dataclass(frozen=True, slots=True)
class NewGame:
    game_id: str
    commit_id: str
    state: bytes
    meta: bytes
    update: bytes  # the creation's GameUpdate (version 1)
    to_move: int
    created_ms: int
    ai_pending: bytes | None  # payload, if an AI seat moves first
    enqueued_at: float
    clock_deadline_ms: int = 0  # when the first seat's clock runs out (0: no clock runs)


@dataclass(slots=True)  # not frozen: a frozen one's __init__ costs 5x (one made per submit)
class Commit:
    """Write version ``expected_version + 1`` (with ``commit_id``) if the game is still at
    ``expected_version`` with ``expected_commit_id``. Not changed once made."""

    game_id: str
    expected_version: int
    expected_commit_id: str
    commit_id: str
    state: bytes
    update: bytes  # serialized GameUpdate of the new version
    seat: int  # who acted and what: the replay log's entry
    action: int
    idem_key: str  # "" for none
    fingerprint: bytes  # what a retry with idem_key must match
    over: bool
    to_move: int
    updated_ms: int
    ai_pending: bytes | None  # the next AI move's payload, or None (clears any pending one)
    enqueued_at: float
    # When the next seat's clock runs out (unix ms), indexed for the sweeper; 0: no clock runs
    # (clears the game's entry)
    clock_deadline_ms: int = 0
    # This write's own random id: the store answers OK to this same Commit sent again (a lost
    # reply), never to another request that makes the same commit id (the same action).
    attempt: str = field(default_factory=new_commit_id)


class CommitStatus(enum.Enum):
    OK = "ok"
    CONFLICT = "conflict"  # the game is not at (expected version, commit id): nothing written
    DUPLICATE = "duplicate"  # the idempotency key was used already: nothing written
    MISSING = "missing"  # no such game


@dataclass(frozen=True, slots=True)
class IdempotentRecord:
    version: int  # the version the keyed request wrote
    fingerprint: bytes


@dataclass(frozen=True, slots=True)
class CommitResult:
    status: CommitStatus
    version: int  # the new version (OK) or the current one (CONFLICT, DUPLICATE)
    commit_id: str = ""  # the commit id of that version
    prior: IdempotentRecord | None = None  # DUPLICATE: what the key wrote


WHOLE_GAME = "game"  # what ``Store.claim_loss`` calls the loss of a whole game


class StoreError(Exception):
    """The store could not be reached or answered nonsense (maps to UNAVAILABLE)."""


class UnreadableData(ValueError):
    """Bytes of a game in the store that are not what the engine wrote there (damaged): its
    record's fields, a window entry (left out: the window only keeps updates) or its replay
    log. The service answers UNREADABLE_GAME for the game (``game_id``, when known)."""

    def __init__(self, why: str, game_id: str = "") -> None:
        super().__init__(why)
        self.game_id = game_id


class Store(abc.ABC):
    """Every method is a coroutine; implementations are safe to share between tasks."""

    kind: str = "abstract"
    settings: StoreSettings = StoreSettings()
    # Watchers are served by one reader per group: games of different groups cannot be read
    # in one call (a Redis Cluster's slots); see ``read_updates``.
    groups: int = 1

    def group_of(self, game_id: str) -> int:
        return 0

    @abc.abstractmethod
    async def create(self, game: NewGame) -> None: ...

    @abc.abstractmethod
    async def load(self, game_id: str, *, fresh: bool = True) -> GameRecord | None:
        """The game as the store holds it. ``fresh=False`` lets a cache answer without asking
        the store: only for a caller whose writes are compare-and-set on the record's commit
        id and who judges again after a fresh load whatever it refuses."""

    async def load_if_changed(
        self, game_id: str, known_commit_id: str, want_meta: bool
    ) -> tuple[int, str, bool, bytes | None, bytes | None] | None:
        """(version, commit id, over, state, meta) of the game as the store holds it, with the
        state left out (None) when its commit id is ``known_commit_id`` and the meta left out
        unless asked for; None when there is no such game. A store may answer it in one small
        round trip."""
        rec = await self.load(game_id)
        if rec is None:
            return None
        if rec.commit_id == known_commit_id:
            return rec.version, rec.commit_id, rec.over, None, None
        return rec.version, rec.commit_id, rec.over, rec.state, rec.meta if want_meta else None

    @abc.abstractmethod
    async def commit(self, c: Commit) -> CommitResult: ...

    @abc.abstractmethod
    async def idempotent(self, game_id: str, key: str) -> IdempotentRecord | None:
        """What the keyed request wrote, while its version is in the game's window."""

    @abc.abstractmethod
    async def update_at(self, game_id: str, version: int) -> StoredUpdate | None:
        """That version's update, if the window still holds it."""

    @abc.abstractmethod
    async def read_updates(
        self,
        cursors: Mapping[str, int],
        block_ms: int,
        position: dict[str, Any] | None = None,
    ) -> dict[str, list[StoredUpdate]]:
        """For games of one group: updates above each game's cursor, oldest first (at most a
        window's worth per game). When there are none, wait up to ``block_ms`` for one (0: do
        not wait). Games without news are left out. ``position``: a dict the caller keeps
        between its calls (empty at first), where a store may note what it has read so far so
        as to read only what changed next time. ``cursors`` may change while the call waits
        (the watch hub adds games and moves cursors): a store reads each game from its cursor
        as it is when the game's news comes."""

    @abc.abstractmethod
    async def heads(self, game_ids: list[str]) -> dict[str, tuple[int, str]]:
        """(version, commit id) of each game that exists."""

    @abc.abstractmethod
    async def first_update_version(self, game_id: str) -> int | None:
        """The oldest version still kept in the game's window (None if no game)."""

    @abc.abstractmethod
    async def action_log(self, game_id: str) -> list[tuple[int, int]]:
        """(seat, action) of every version after the first, in order."""

    @abc.abstractmethod
    async def list_games(
        self, before_id: str, limit: int, active_only: bool
    ) -> list[GameSummaryRecord]:
        """Games with an id below ``before_id`` ("" = from the newest), newest first."""

    @abc.abstractmethod
    async def delete(self, game_id: str) -> bool: ...

    @abc.abstractmethod
    async def stalled_ai(self, waited_since: float, limit: int) -> list[PendingAI]:
        """Pending AI moves whose turn started before ``waited_since``."""

    @abc.abstractmethod
    async def claim_redispatch(self, game_id: str, old_payload: bytes, new_payload: bytes) -> bool:
        """Replace a pending AI move's payload if it is still ``old_payload`` (one replica wins)."""

    @abc.abstractmethod
    async def oldest_ai_wait_start(self) -> float | None: ...

    @abc.abstractmethod
    async def due_clocks(self, now_ms: int, limit: int) -> list[str]:
        """Ids of games whose running clock ran out at or before ``now_ms``, earliest first."""

    @abc.abstractmethod
    async def claim_clock_bot(
        self, game_id: str, version: int, commit_id: str, payload: bytes, enqueued_at: float
    ) -> bool:
        """Hand the move at ``version`` (with ``commit_id``) to a bot: the game's clock entry
        is replaced by a pending AI move with ``payload``, if the game is still there (one
        replica wins; the sweeper re-dispatches it as any AI move)."""

    @abc.abstractmethod
    async def active_games(self) -> int: ...

    @abc.abstractmethod
    async def presence(
        self,
        game_id: str,
        holder: str,
        held: Sequence[int],
        let_go: Sequence[int],
        now_ms: int,
        ttl_ms: int,
    ) -> set[int]:
        """Who is here: mark the seats ``held`` present on behalf of ``holder`` (a replica
        with a watch stream of each open) until ``ttl_ms`` from ``now_ms`` unless renewed,
        and ``let_go`` no longer; returns the seats some holder keeps present."""

    @abc.abstractmethod
    async def put_reply(self, game_id: str, key: str, data: bytes, ttl_seconds: float) -> None:
        """Leave ``data`` for whichever replica waits for ``key`` (an analysis's answer that
        reached another replica than the one waiting); it expires after ``ttl_seconds``."""

    @abc.abstractmethod
    async def take_reply(self, game_id: str, key: str) -> bytes | None:
        """The data left for ``key``, removed as it is read (None if there is none)."""

    @abc.abstractmethod
    async def peek_reply(self, game_id: str, key: str) -> bytes | None:
        """The data left for ``key``, left in place (None if there is none or it expired)."""

    @abc.abstractmethod
    async def claim_loss(self, game_id: str, loss: str, ttl_seconds: float) -> bool:
        """One count per loss, however many replicas notice it: True for the first caller to
        claim ``loss`` of the game (``WHOLE_GAME``, or a name of the versions lost), False for
        every later one until ``ttl_seconds`` pass. The whole game's loss is not claimed while
        the store holds the game. The claim lives in the store, so a later loss (another
        flush, another restore) takes earlier claims with it."""

    async def tidy(self, limit: int) -> int:
        """Drop index entries of games that expired (idle or finished); at most about
        ``limit`` entries looked at. Returns how many were dropped."""
        return 0

    @abc.abstractmethod
    async def ping(self) -> None: ...

    async def close(self) -> None:
        return None

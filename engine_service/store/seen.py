"""What this replica saw of the games it served lately: enough to tell when the store lost
versions (or a whole game), and exactly which.

For each of the last ``games`` games it read, wrote or watched, it keeps the commit ids (32
bits of each) of the last ``depth`` versions it saw, the highest version and when a move of
the game is known to have happened. Every answer of the store is an observation of one version
and its commit id. The store lost versions when an observation

- names a version this replica saw with another commit id (two histories: ordering does not
  matter, the store holds one commit per version unless it went back), or
- names a lower version than the highest this replica had seen *before the request was sent*
  (a ``Mark`` taken then). Comparing with what was seen by the time the answer arrives would
  take a read that was overtaken by a commit of this same replica for a rollback.

The history that was lost is kept (``Lost``): which versions were lost is worked out against
the store's own chain of commit ids (the replay log, ``settle``), so that callers are told the
versions exactly, as far as this replica saw them.
"""

from __future__ import annotations

import time
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

DEPTH = 256  # versions remembered per game (about a third of a two-player game)
GAMES = 4096  # games remembered (the replica's record cache holds as many)
RECENT_SECONDS = 86_400  # a game missing from the store counts as lost if seen this recently
# How long a loss's claim (``Store.claim_loss``) stays: as long as a replica may find it, and
# an hour more (replicas that notice it later count it again)
CLAIM_SECONDS = RECENT_SECONDS + 3600


def short_id(commit_id: str) -> int:
    """32 bits of a commit id (16 hex digits), never 0 (0: not seen)."""
    try:
        return int(commit_id[:8], 16) or 1
    except ValueError:
        return zlib.crc32(commit_id.encode()) or 1


@dataclass(frozen=True, slots=True)
class Mark:
    """What was seen of a game when a request was sent."""

    epoch: int
    head: int


class Lost:
    """A history of a game that the store no longer holds, as this replica saw it."""

    __slots__ = (
        "_ids",
        "common",
        "first",
        "head",
        "head_id",
        "settled",
        "store_id",
        "store_version",
    )  # fmt: skip

    def __init__(
        self, head: int, head_id: str, ids: array[int], store_version: int, store_id: str
    ) -> None:
        self.head = head  # the highest version of the lost history this replica saw
        self.head_id = head_id
        self._ids = ids  # (a copy of the ring it was seen with)
        self.store_version = store_version  # what the store held when the loss was seen
        self.store_id = store_id
        # The last version both histories share for certain, and the first version certainly
        # lost: exact when ``first == common + 1`` (see ``settle``).
        self.common = 0
        self.first = head + 1
        self.settled = False

    def id_at(self, version: int) -> int:
        """32 bits of the lost history's commit id of ``version`` (0: not seen)."""
        if version > self.head or version <= self.head - DEPTH or version < 1:
            return 0
        return self._ids[version % DEPTH]

    @property
    def exact(self) -> bool:
        return self.first == self.common + 1

    def settle(self, store_ids: Sequence[str] | None) -> None:
        """Work out which versions were lost from the store's commit ids (``store_ids[v - 1]``
        is version v's; None when they are not known: only the store's head is used)."""
        known: dict[int, int] = {self.store_version: short_id(self.store_id)}
        top = min(self.head, self.store_version)
        low = max(1, self.head - DEPTH + 1)
        if store_ids is not None:
            for v in range(low, top + 1):
                known[v] = short_id(store_ids[v - 1])
        common = 1  # version 1's id is the game id's: shared by every history of the game
        for v in range(top, low - 1, -1):
            mine = self.id_at(v)
            if mine and known.get(v) == mine:
                common = v
                break
        # Every version above the store's was lost, seen here or not; below it, those seen
        # here with another id than the store's.
        first = self.store_version + 1
        for v in range(common + 1, min(self.head, self.store_version) + 1):
            mine = self.id_at(v)
            theirs = known.get(v)
            if mine and theirs is not None and theirs != mine:
                first = v
                break
        self.common, self.first, self.settled = common, first, True

    def versions_for(self, version: int, commit_id: str) -> tuple[int, int, bool] | None:
        """(first, last, exact): the versions lost of a caller who has ``version`` with
        ``commit_id`` ("" if not named), when that is this history; else None."""
        if version < self.first or version > self.head:
            return None
        mine = self.id_at(version)
        if commit_id and mine and mine != short_id(commit_id):
            return None
        return self.first, version, self.exact


class _Seen:
    __slots__ = (
        "epoch",
        "gone_reported",
        "head",
        "head_id",
        "ids",
        "lost",
        "moved_after",
        "over",
        "seen_at",
    )  # fmt: skip

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.head = 0
        self.head_id = ""
        self.ids = array("I", bytes(4 * DEPTH))
        self.over: bool | None = False  # (None: not known)
        self.seen_at = 0.0  # (wall clock) when it was last seen in the store
        self.moved_after = 0.0  # a move of the game happened after this (0: not known)
        self.lost: Lost | None = None
        self.gone_reported = False

    def put(self, version: int, commit_id: str) -> None:
        if version > self.head:
            if version - self.head >= DEPTH:
                self.ids = array("I", bytes(4 * DEPTH))
            else:
                for v in range(self.head + 1, version):
                    self.ids[v % DEPTH] = 0
            self.head, self.head_id = version, commit_id
        if version > self.head - DEPTH:
            self.ids[version % DEPTH] = short_id(commit_id)

    def id_at(self, version: int) -> int:
        if version > self.head or version <= self.head - DEPTH or version < 1:
            return 0
        return self.ids[version % DEPTH]


@dataclass(frozen=True, slots=True)
class Gone:
    """A game this replica served lately that the store no longer holds."""

    version: int  # the last version this replica saw
    commit_id: str
    seen_at: float  # (wall clock)
    first_report: bool  # the first time this replica finds it gone (count it once)


class SeenGames:
    def __init__(
        self,
        games: int = GAMES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._size = games
        self._clock = clock
        self._games: OrderedDict[str, _Seen] = OrderedDict()
        self._epochs = 0  # (epochs are never reused, even by a game forgotten and seen again)

    def _epoch(self) -> int:
        self._epochs += 1
        return self._epochs

    def _entry(self, game_id: str) -> _Seen:
        s = self._games.get(game_id)
        if s is None:
            s = self._games[game_id] = _Seen(self._epoch())
            if len(self._games) > self._size:
                self._games.popitem(last=False)
        else:
            self._games.move_to_end(game_id)
        return s

    def mark(self, game_id: str) -> Mark | None:
        """Take before sending a request whose answer is to be observed."""
        s = self._games.get(game_id)
        return None if s is None else Mark(s.epoch, s.head)

    def current(self, game_id: str, mark: Mark | None) -> bool:
        """False when a loss of the game was found since ``mark`` was taken."""
        s = self._games.get(game_id)
        return mark is None or s is None or s.epoch == mark.epoch

    def head(self, game_id: str) -> tuple[int, str] | None:
        s = self._games.get(game_id)
        return None if s is None or not s.head else (s.head, s.head_id)

    def observe(
        self,
        game_id: str,
        version: int,
        commit_id: str,
        over: bool | None,
        mark: Mark | None = None,
        *,
        moved_at: float = 0.0,
    ) -> Lost | None:
        """The store holds (or held) ``version`` with ``commit_id``. ``mark``: taken when the
        request that found it was sent (None: a read whose ordering is not known: only a
        commit id that differs counts then). ``moved_at``: a move of the game happened at or
        after that time (this replica's own commit). Returns the history the store lost when
        this shows one (once: the game is then followed from the store's version). ``over``:
        whether the game is over at that version (None: not known)."""
        if not commit_id:
            return None  # (a game stored before commit ids named its history)
        s = self._entry(game_id)
        if mark is not None and mark.epoch != s.epoch:
            return None  # sent before a loss was found: its answer says nothing more
        now = self._clock()
        mine = s.id_at(version)
        if (mine and mine != short_id(commit_id)) or (mark is not None and version < mark.head):
            lost = Lost(s.head, s.head_id, array("I", s.ids), version, commit_id)
            s.lost, s.epoch = lost, self._epoch()
            s.ids = array("I", bytes(4 * DEPTH))
            s.head = 0
            s.put(version, commit_id)
            s.over, s.seen_at = over, now
            s.moved_after = max(s.moved_after, moved_at)
            return lost
        if version > s.head and s.head:
            s.moved_after = max(s.moved_after, s.seen_at)  # (moved since it was last seen)
        if version > s.head or (version == s.head and over is not None):
            s.over = over
        s.put(version, commit_id)
        s.seen_at = now
        s.moved_after = max(s.moved_after, moved_at)
        s.gone_reported = False
        return None

    def lost(self, game_id: str) -> Lost | None:
        """The last history of the game the store was found to have lost, if any."""
        s = self._games.get(game_id)
        return None if s is None else s.lost

    def forget(self, game_id: str) -> None:
        """The game was deleted: its absence is no loss."""
        self._games.pop(game_id, None)

    def gone(self, game_id: str, idle_ttl: float, finished_ttl: float) -> Gone | None:
        """The store does not hold the game: was it lost? Only for a game seen lately
        (``RECENT_SECONDS``) that cannot have expired: a move is known to have happened less
        than its time to live ago (idle, or finished if it was over), with a margin. A
        deletion is the caller's to rule out (the store's tombstone)."""
        s = self._games.get(game_id)
        if s is None or not s.head or not s.moved_after:
            return None
        now = self._clock()
        if s.over is None:
            ttl = min(idle_ttl, finished_ttl)
        else:
            ttl = finished_ttl if s.over else idle_ttl
        if now - s.seen_at > RECENT_SECONDS or now >= s.moved_after + ttl * 0.99 - 1.0:
            return None
        first = not s.gone_reported
        s.gone_reported = True
        return Gone(s.head, s.head_id, s.seen_at, first)

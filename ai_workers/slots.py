"""What one worker node knows of each bot: the slots it holds and whether it misbehaves.

A node is one ``ascension-worker run``: its ``WORKER_CONCURRENCY`` pool processes share a
directory (``ASCENSION_WORKER_STATE_DIR``, a fresh one made by ``run``) where

- each plug-in bot name has ``WORKER_SLOTS_PER_BOT`` slot files (all slots but one by
  default); its decisions run only while they hold one (an exclusive ``flock``, released by
  the kernel even when the process dies), so one plug-in cannot take every slot of the node.
  The built-in bots (our code, registered under their own names) may use every slot;
- each bot name has a record of its misbehaviour: decisions that overran their deadline,
  killed the bot process, raised, failed to load or answered an illegal action
  (``supervisor.MISBEHAVIOUR``). A bot that misbehaved in the last
  ``WORKER_BOT_QUARANTINE_SECONDS`` may hold one slot only; after
  ``WORKER_BOT_QUARANTINE_FAILURES`` in a row it is not asked at all for that long (its seats
  get the fallback move at once), then tried again. One good answer clears the count.

Without the directory (the engine's embedded AI process) the record is kept in the process
and slots are not limited.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

STATE_DIR_ENV = "ASCENSION_WORKER_STATE_DIR"


@dataclass(frozen=True, slots=True)
class Record:
    failures: int = 0  # misbehaviours in a row
    last: float = 0.0  # wall-clock time of the latest one
    cause: str = ""  # the latest one's fallback reason ("deadline: no answer within 6.0s")


class Slot:
    """A held slot; ``release`` (or leaving the ``with`` block) gives it back."""

    def __init__(self, fd: int | None) -> None:
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing drops the flock

    def __enter__(self) -> Slot:
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


class BotRecords:
    def __init__(
        self,
        directory: Path | None,
        slots_per_bot: int,
        quarantine_failures: int,
        quarantine_seconds: float,
        all_slots: int = 0,
    ) -> None:
        self.directory = directory
        self.slots_per_bot = slots_per_bot  # a plug-in's
        self.all_slots = max(all_slots, slots_per_bot)  # a built-in's
        self.quarantine_failures = quarantine_failures
        self.quarantine_seconds = quarantine_seconds
        self.settings = (slots_per_bot, quarantine_failures, quarantine_seconds, all_slots)
        self._memory: dict[str, Record] = {}
        if directory is not None:
            directory.mkdir(parents=True, exist_ok=True)

    @staticmethod
    def _key(bot: str) -> str:
        return hashlib.sha256(bot.encode()).hexdigest()[:24]

    # ---- misbehaviour ----------------------------------------------------------------------

    def record(self, bot: str) -> Record:
        if self.directory is None:
            return self._memory.get(bot, Record())
        try:
            raw = json.loads((self.directory / f"{self._key(bot)}.json").read_text())
            return Record(int(raw["failures"]), float(raw["last"]), str(raw.get("cause", "")))
        except (OSError, ValueError, KeyError, TypeError):
            return Record()

    def _update(self, bot: str, misbehaved: bool, cause: str = "") -> Record:
        now = time.time()
        if self.directory is None:
            old = self._memory.get(bot, Record())
            new = Record(old.failures + 1, now, cause) if misbehaved else Record(0, old.last)
            self._memory[bot] = new
            return new
        key = self._key(bot)
        lock = os.open(self.directory / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            old = self.record(bot)
            new = Record(old.failures + 1, now, cause) if misbehaved else Record(0, old.last)
            if new != old:
                tmp = self.directory / f"{key}.json.{os.getpid()}"
                tmp.write_text(
                    json.dumps({"failures": new.failures, "last": new.last, "cause": new.cause})
                )
                tmp.replace(self.directory / f"{key}.json")
            return new
        finally:
            os.close(lock)

    def misbehaved(self, bot: str, cause: str = "") -> Record:
        """One more misbehaviour of ``bot`` in a row; ``cause`` is its fallback reason (the
        reason a quarantine gives with it)."""
        return self._update(bot, True, cause)

    def behaved(self, bot: str) -> None:
        if self.record(bot).failures:
            self._update(bot, False)

    def penalized(self, bot: str, now: float | None = None) -> bool:
        """Misbehaved within the quarantine period: one slot only."""
        r = self.record(bot)
        now = time.time() if now is None else now
        return r.last > 0 and now - r.last < self.quarantine_seconds

    def quarantined(self, bot: str, now: float | None = None) -> bool:
        """Misbehaved too often in a row, lately: not asked at all."""
        r = self.record(bot)
        return (
            self.quarantine_failures > 0
            and r.failures >= self.quarantine_failures
            and self.penalized(bot, now)
        )

    # ---- slots -----------------------------------------------------------------------------

    def cap(self, bot: str) -> int:
        if self.penalized(bot):
            return 1
        return self.all_slots if is_builtin(bot) else self.slots_per_bot

    def acquire(self, bot: str) -> Slot | None:
        """One of the bot's slots on this node, or None when it holds all it may."""
        if self.directory is None:
            return Slot(None)
        key = self._key(bot)
        for i in range(max(1, self.cap(bot))):
            fd = os.open(self.directory / f"{key}.slot{i}", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return Slot(fd)
        return None

    def in_use(self, bot: str) -> int:
        """Slots of ``bot`` held right now (for tests and diagnostics)."""
        if self.directory is None:
            return 0
        held = 0
        key = self._key(bot)
        for path in self.directory.glob(f"{key}.slot*"):
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                held += 1
            else:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        return held


@functools.cache
def is_builtin(bot: str) -> bool:
    """One of our bots under its own name (an entry point may put other code under it)."""
    from ai_workers.bots.registry import BUILTINS, _registered

    return bot in BUILTINS and _registered().get(bot) == BUILTINS[bot]


_records: BotRecords | None = None


def records(
    slots_per_bot: int, quarantine_failures: int, quarantine_seconds: float, all_slots: int = 0
) -> BotRecords:
    """This process's view of the node's records (the directory from the environment)."""
    global _records
    raw = os.environ.get(STATE_DIR_ENV, "").strip()
    directory = Path(raw) if raw else None
    wanted = (slots_per_bot, quarantine_failures, quarantine_seconds, all_slots)
    r = _records
    if r is None or r.directory != directory or r.settings != wanted:
        with contextlib.suppress(OSError):
            r = _records = BotRecords(directory, *wanted)
    if r is None:  # the directory cannot be made: keep records in the process
        r = _records = BotRecords(None, *wanted)
    return r


def forget_records() -> None:
    """Drop this process's records (kept in the process when there is no directory)."""
    global _records
    _records = None

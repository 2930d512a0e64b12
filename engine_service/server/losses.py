"""What a caller is told when the store lost what it saw or decided on: versions of a game
(DATA_LOSS, naming them) or a whole game (DATA_LOSS, reason GAME_LOST), never "another action
was applied first" nor "no such game".

Versions: a caller names the version (and commit id) it has; the store holds a lower version,
or another history at that version. The versions lost are worked out from what this replica
saw of the game (``store/seen.py``): exact when it saw the lost history around the point where
the two part, else a lower bound, said as such ("at least").

Games: a game this replica served lately that the store no longer holds is lost, unless it
was deleted (``DeleteGame`` leaves a tombstone beside it for as long as a replica may remember
the game) or may have expired (a move of it is known to have happened less than its time to
live ago). Each lost game is counted once in ``ascension_store_games_lost_total`` summed over
the replicas, by the first replica to find it gone (its claim in the store wins), and logged by
each replica that finds it; an id never served here stays NOT_FOUND.
"""

from __future__ import annotations

import logging
import time

from engine_service.server.errors import Code, ServiceError, not_found, refused
from engine_service.server.limits import LogLimiter
from engine_service.server.metrics import Metrics
from engine_service.store import WHOLE_GAME, CachingStore, Store
from engine_service.store.seen import RECENT_SECONDS, Lost, Mark

log = logging.getLogger("ascension.engine.store")
gone_log = LogLimiter(log)

TOMBSTONE = "deleted"  # the reply key a deletion leaves beside the game
TOMBSTONE_SECONDS = RECENT_SECONDS + 3600


def span(first: int, last: int, exact: bool) -> str:
    """``versions 11-20`` (``at least`` when only a lower bound is known)."""
    what = f"version {first}" if first == last else f"versions {first}-{last}"
    return what if exact else f"{what} at least"


def describe(game_id: str, lost: Lost) -> str:
    """The versions a replica saw and the store lost, for the log."""
    return (
        f"game {game_id}: the store lost versions: {span(lost.first, lost.head, lost.exact)} "
        f"this replica saw (up to version {lost.head}, commit {lost.head_id}); the store "
        f"holds version {lost.store_version} (commit {lost.store_id})"
    )


class Losses:
    def __init__(self, store: Store, metrics: Metrics) -> None:
        self.store = store
        self.metrics = metrics
        # What this replica saw (none on a bare store: tests that build services by hand)
        self.cache = store if isinstance(store, CachingStore) else None

    def mark(self, game_id: str) -> Mark | None:
        return None if self.cache is None else self.cache.seen.mark(game_id)

    async def observe(
        self,
        game_id: str,
        version: int,
        commit_id: str,
        over: bool | None,
        mark: Mark | None = None,
    ) -> Lost | None:
        """A version read elsewhere than through the store's own calls (the watch hub)."""
        if self.cache is None:
            return None
        return await self.cache.observe(game_id, version, commit_id, over, mark)

    def note(self, game_id: str, version: int, commit_id: str, over: bool | None) -> Lost | None:
        """As ``observe``, without waiting: a loss found is for the caller to ``report``."""
        if self.cache is None:
            return None
        return self.cache.seen.observe(game_id, version, commit_id, over)

    async def report(self, game_id: str, lost: Lost) -> None:
        if self.cache is not None:
            await self.cache.report(game_id, lost)

    async def versions(
        self, game_id: str, version: int, commit_id: str, holds: int
    ) -> tuple[int, int, bool]:
        """(first, last, exact): the versions lost of a caller who has ``version`` (with
        ``commit_id``, "" if not named) when the store holds ``holds``."""
        lost = None if self.cache is None else self.cache.seen.lost(game_id)
        if self.cache is not None and lost is not None:
            if not lost.settled:  # (found a moment ago, by a call still reading the log)
                await self.cache.settle(game_id, lost)
            hit = lost.versions_for(version, commit_id)
            if hit is not None:
                return hit
        if version > holds:
            return holds + 1, version, False
        return version, version, False

    async def data_loss(
        self,
        game_id: str,
        version: int,
        commit_id: str,
        holds: int,
        holds_id: str,
        *,
        watching: bool,
    ) -> ServiceError:
        """DATA_LOSS for a caller who has ``version`` of the game: which versions it had that
        the store lost, and what the store holds."""
        first, last, exact = await self.versions(game_id, version, commit_id, holds)
        if watching:
            had, then = "you received", "watch from its version"
        else:
            had, then = "your request was decided on", "decide anew"
        return ServiceError(
            Code.DATA_LOSS,
            f"the store lost {span(first, last, exact)} of game {game_id}, which {had} (a "
            f"store rollback: a restart that lost its last writes, an older snapshot restored, "
            f"or a failover); it holds version {holds} (commit {holds_id}): read the game "
            f"again (GetGame) and {then}",
            (("current-version", str(holds)),),
            reason="DATA_LOSS",
            metadata={
                "current_version": str(holds),
                "commit_id": holds_id,
                "first_lost_version": str(first),
                "last_lost_version": str(last),
                "exact": "true" if exact else "false",
            },
        )

    async def missing(self, game_id: str) -> ServiceError:
        """What to answer for a game the store does not hold: GAME_LOST when this replica
        served it lately and it was neither deleted nor can have expired; else NOT_FOUND."""
        if self.cache is None:
            return not_found(game_id)
        settings = self.store.settings
        gone = self.cache.seen.gone(game_id, settings.idle_ttl, settings.finished_ttl)
        if gone is None:
            return not_found(game_id)
        if await self.store.peek_reply(game_id, TOMBSTONE) is not None:
            self.cache.seen.forget(game_id)
            return not_found(game_id)
        ago = max(0.0, time.time() - gone.seen_at)
        if gone.first_report:
            counted = await self.cache.claim(game_id, WHOLE_GAME)
            if counted:
                self.metrics.games_lost.inc()
            gone_log.warning(
                "game %s: the store lost the whole game: this replica saw version %d (commit "
                "%s) %.0fs ago; it was not deleted and cannot have expired%s",
                game_id,
                gone.version,
                gone.commit_id,
                ago,
                "" if counted else " (counted by another replica)",
            )
        return refused(
            Code.DATA_LOSS,
            "GAME_LOST",
            f"game {game_id} is no longer in the store, though this server served it at "
            f"version {gone.version} {ago:.0f}s ago and it was neither deleted nor can have "
            "expired: the store lost it (a restart without its data, an older snapshot "
            "restored, or a failover); it cannot go on",
            game_id=game_id,
            last_version=gone.version,
        )

    async def deleting(self, game_id: str) -> None:
        """Before a game is deleted: its absence is then no loss, on any replica."""
        await self.store.put_reply(game_id, TOMBSTONE, b"", TOMBSTONE_SECONDS)

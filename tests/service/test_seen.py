"""What a replica remembers of the games it served (engine_service/store/seen.py): when an
answer of the store shows a loss, which versions were lost, and when a missing game counts as
lost (recent, cannot have expired)."""

from __future__ import annotations

from engine_service.store import chain_ids, chained_commit_id
from engine_service.store.seen import DEPTH, RECENT_SECONDS, SeenGames

GAME = "01m8yh7dd5dn32ay6yf485"


def history(n: int, seed: int = 0) -> list[str]:
    """Commit ids of versions 1..n (``[v - 1]``), chained as the engine chains them."""
    return chain_ids(GAME, [(v % 2, seed * 1000 + v) for v in range(1, n)])


def branch(ids: list[str], after: int, n: int, seed: int) -> list[str]:
    """``ids`` up to version ``after``, then another history up to version ``n``."""
    out = ids[:after]
    for v in range(after + 1, n + 1):
        out.append(chained_commit_id(out[-1], v % 2, seed * 1000 + v))
    return out


def test_a_lower_version_than_seen_before_the_request_is_a_loss_and_one_after_is_not() -> None:
    seen = SeenGames()
    ids = history(20)
    for v in range(1, 21):
        seen.observe(GAME, v, ids[v - 1], False)
    before = seen.mark(GAME)
    assert seen.observe(GAME, 18, ids[17], False) is None  # (no mark: only ids are compared)
    lost = seen.observe(GAME, 15, ids[14], False, before)
    assert lost is not None and (lost.head, lost.store_version) == (20, 15)
    lost.settle(ids[:15])
    assert (lost.first, lost.exact) == (16, True)
    assert lost.versions_for(18, ids[17]) == (16, 18, True)
    # The same loss is not found again, and an answer to a request sent before it says nothing.
    assert seen.observe(GAME, 15, ids[14], False) is None
    assert seen.observe(GAME, 12, ids[11], False, before) is None


def test_another_commit_id_at_a_version_seen_is_a_loss_whatever_the_order() -> None:
    seen = SeenGames()
    mine = history(30)
    theirs = branch(mine, 22, 30, seed=7)
    for v in range(1, 31):
        seen.observe(GAME, v, mine[v - 1], False)
    lost = seen.observe(GAME, 26, theirs[25], None)
    assert lost is not None
    lost.settle(theirs[:26])  # the store's chain, from its log
    assert (lost.common, lost.first, lost.exact) == (22, 23, True)
    assert lost.versions_for(30, mine[29]) == (23, 30, True)
    assert lost.versions_for(25, theirs[24]) is None  # (the store's own history)


def test_without_the_store_chain_or_past_what_was_remembered_the_versions_are_a_lower_bound() -> (
    None
):
    seen = SeenGames()
    mine = history(DEPTH + 100)
    theirs = branch(mine, 50, DEPTH + 80, seed=3)
    for v in range(1, DEPTH + 101):
        seen.observe(GAME, v, mine[v - 1], False)
    lost = seen.observe(GAME, DEPTH + 80, theirs[-1], None)
    assert lost is not None
    lost.settle(theirs)  # parted at 50, before the 256 versions remembered
    assert not lost.exact and lost.first == 101  # (the oldest remembered: 101..356)
    again = SeenGames()
    for v in range(1, 41):
        again.observe(GAME, v, mine[v - 1], False)
    lost = again.observe(GAME, 30, branch(mine, 25, 30, seed=9)[-1], None)
    assert lost is not None
    lost.settle(None)  # the store's log could not be read: only its head is known
    assert (lost.first, lost.exact) == (30, False)
    assert lost.versions_for(40, mine[39]) == (30, 40, False)


def test_a_missing_game_is_lost_only_if_it_moved_lately_and_cannot_have_expired() -> None:
    now = [1000.0]
    seen = SeenGames(clock=lambda: now[0])
    ids = history(5)
    seen.observe(GAME, 1, ids[0], False, moved_at=now[0])  # created here
    for v in range(2, 5):
        seen.observe(GAME, v, ids[v - 1], False)
    now[0] += 10
    gone = seen.gone(GAME, idle_ttl=60, finished_ttl=30)
    assert gone is not None and gone.version == 4 and gone.first_report
    assert seen.gone(GAME, idle_ttl=60, finished_ttl=30).first_report is False  # type: ignore[union-attr]
    assert seen.gone(GAME, idle_ttl=5, finished_ttl=5) is None  # (may have expired)
    seen.observe(GAME, 5, ids[4], True)  # over: the finished time to live applies
    now[0] += 35
    assert seen.gone(GAME, idle_ttl=3600, finished_ttl=30) is None
    assert seen.gone(GAME, idle_ttl=3600, finished_ttl=3600) is not None
    now[0] += RECENT_SECONDS
    assert seen.gone(GAME, idle_ttl=10**9, finished_ttl=10**9) is None  # (not seen lately)
    # Seen at one version only, never moving: nothing says it has not expired.
    other = SeenGames(clock=lambda: now[0])
    other.observe(GAME, 7, "a" * 16, False)
    assert other.gone(GAME, idle_ttl=10**9, finished_ttl=10**9) is None
    # Deleted: forgotten.
    seen.forget(GAME)
    assert seen.gone(GAME, idle_ttl=10**9, finished_ttl=10**9) is None


def test_memory_is_bounded() -> None:
    seen = SeenGames(games=3)
    for i in range(10):
        seen.observe(f"g{i}", 1, "0123456789abcdef", False)
    assert [g for g in (f"g{i}" for i in range(10)) if seen.head(g)] == ["g7", "g8", "g9"]

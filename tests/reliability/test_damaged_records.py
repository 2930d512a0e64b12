"""Damaged bytes in the store: a game whose record fields, window entries (or only the update
one holds), replay log or idempotency records were overwritten with garbage (seeded) gets statuses that say what is
wrong (UNREADABLE_GAME, OUT_OF_RANGE, ...), never INTERNAL, UNKNOWN or "store unavailable";
the listing and the other games go on as ever.

Its own Redis (a local redis-server on a free port) and engine: the test writes into Redis
directly."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.store import keys
from tests.service import support
from tests.service.support import CALL_TIMEOUT

TRIALS = 48
FIELDS = ["state", "version", "cid", "meta", "over", "to_move", "updated", "ai"]
BAD = (grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN, grpc.StatusCode.UNAVAILABLE)


@pytest.fixture(scope="module")
def engine() -> Iterator[support.Engine]:
    with support.redis_server() as url:
        e = support.start_engine(url)
        yield e
        e.stop()


def garbage(rng: random.Random) -> bytes:
    n = rng.choice([0, 1, 2, 3, 5, 8, 20, 60, 300])
    kind = rng.random()
    if kind < 0.3:
        return bytes(n)
    if kind < 0.5:
        return bytes([rng.choice(b"0123456789-|x{}")]) * n
    return rng.randbytes(n)


def damage(r: Any, game_id: str, rng: random.Random) -> str:
    """Overwrite one stored part of the game; what was damaged."""
    record, window, log, idem = keys.game_keys(game_id)
    what = rng.choice(["field", "field", "window", "update", "log", "idem"])
    if what == "window" and r.llen(window):
        i = rng.randrange(r.llen(window))
        r.lset(window, i, garbage(rng))
        return f"window entry {i}"
    if what == "update" and r.llen(window):  # the entry whole, its update's bytes not
        i = rng.randrange(r.llen(window))
        version, over, cid, parent, attempt, _ = keys.unpack_window_entry_attempt(r.lindex(window, i))
        r.lset(window, i, keys.pack_window_entry(version, over, cid, parent, b"\xff" + garbage(rng), attempt))
        return f"update of window entry {i}"
    if what == "log":
        r.set(log, garbage(rng))
        return "log"
    if what == "idem" and r.hkeys(idem):
        r.hset(idem, rng.choice(r.hkeys(idem)), garbage(rng))
        return "idempotency record"
    field = rng.choice(FIELDS)
    r.hset(record, field, garbage(rng))
    return f"record field {field}"


def probe(stub: Any, game: epb.CreateGameResponse, final: Any, last: Any) -> list[tuple[str, str]]:
    """Every call on the game: (call, status) of those answered INTERNAL, UNKNOWN or
    UNAVAILABLE."""
    gid, v = game.game_id, final.version
    token = game.seat_tokens[max(final.to_move, 0)]
    action = final.legal_actions[0].id if final.legal_actions else 1

    def watch() -> None:
        for u in stub.WatchGame(epb.WatchGameRequest(game_id=gid), timeout=CALL_TIMEOUT):
            if u.version >= v:
                return

    calls: dict[str, Callable[[], Any]] = {
        "GetGame": lambda: stub.GetGame(epb.GetGameRequest(game_id=gid, token=token), timeout=CALL_TIMEOUT),
        "ListLegalActions": lambda: stub.ListLegalActions(
            epb.ListLegalActionsRequest(game_id=gid, token=token), timeout=CALL_TIMEOUT),
        "SubmitAction": lambda: stub.SubmitAction(epb.SubmitActionRequest(
            game_id=gid, token=token, expected_version=v, action=action), timeout=CALL_TIMEOUT),
        "SubmitAction (a retry)": lambda: stub.SubmitAction(epb.SubmitActionRequest(
            game_id=gid, token=game.seat_tokens[last.seat], expected_version=v - 1, action=last.action,
            idempotency_key=f"{gid}-{v - 1}"), timeout=CALL_TIMEOUT),
        "GetReplay": lambda: stub.GetReplay(epb.GetReplayRequest(game_id=gid), timeout=CALL_TIMEOUT),
        "WatchGame": watch,
        "ListGames": lambda: stub.ListGames(epb.ListGamesRequest(page_size=100), timeout=CALL_TIMEOUT),
    }  # fmt: skip
    bad = []
    for name, call in calls.items():
        try:
            call()
        except grpc.RpcError as e:
            if e.code() in BAD:
                bad.append((name, f"{e.code().name}: {e.details()}"))
    return bad


def test_damaged_records_are_refused_saying_why(engine: support.Engine) -> None:
    stub = engine.stub()
    r: Any = redis.Redis.from_url(engine.redis_url)
    rng = random.Random(7)
    bad: list[tuple[str, str, str]] = []
    for trial in range(TRIALS):
        game = support.create(stub, seed=trial)
        final, sent = support.play_to_end(stub, game, seed=trial, max_actions=rng.choice([2, 9, 30, 400]))
        what = damage(r, game.game_id, rng)
        bad += [(what, call, status) for call, status in probe(stub, game, final, sent[-1].update)]
    assert not bad, bad
    assert "internal error" not in engine.log()
    good = support.create(stub, seed=99)
    final, _ = support.play_to_end(stub, good, seed=1, max_actions=30)
    assert final.version == 31
    r.close()

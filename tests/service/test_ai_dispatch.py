"""AI seats: the server hands each AI move over (local processes or Celery), and re-dispatches
moves that waited too long."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from prometheus_client import CollectorRegistry

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.dispatch import Dispatcher
from engine_service.server.ids import new_game_id
from engine_service.server.metrics import Metrics
from engine_service.server.sweeper import Sweeper
from engine_service.store import NewGame, StoreSettings, keys, new_commit_id
from engine_service.store.redis_store import RedisStore
from tests.service import support
from tests.service.support import CALL_TIMEOUT

QUEUE = "ascension.moves"


def _ai_seat(seed: int) -> epb.SeatConfig:
    return epb.SeatConfig(kind=pb.SeatInfo.AI, name=f"bot{seed}",
                          bot=epb.BotSettings(name="random", iterations=10, seed=seed, exploration=1.2))  # fmt: skip


def _metrics(engine: support.Engine) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{engine.metrics_port}/metrics", timeout=5) as r:
        text: str = r.read().decode()
    return text


def _value(text: str, name: str) -> float:
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.split("{")[0].split(" ")[0] == name)


@pytest.fixture(scope="module")
def local_ai_engine() -> Iterator[support.Engine]:
    """The embedded default (no Redis, no broker): AI moves run in a local process."""
    e = support.start_engine(ENGINE_AI_DISPATCH="auto", ENGINE_LOCAL_AI_TARGET="tests.service.ai_target:play_move",
                             ENGINE_LOCAL_AI_PROCESSES="1")  # fmt: skip
    yield e
    e.stop()


def test_ai_against_ai_plays_to_the_end_in_process(local_ai_engine: support.Engine) -> None:
    stub = local_ai_engine.stub()
    game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seats=[_ai_seat(1), _ai_seat(2)], seed=4),
                           timeout=CALL_TIMEOUT)  # fmt: skip
    assert [s.kind for s in game.view.seat_info] == [pb.SeatInfo.AI, pb.SeatInfo.AI]
    assert game.view.seat_info[0].bot_name == "random"
    deadline = time.monotonic() + 90
    for u in stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id), timeout=90):
        if u.over or time.monotonic() > deadline:
            break
    final = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
    assert final.over, local_ai_engine.log()[-3000:]
    text = _metrics(local_ai_engine)
    assert _value(text, "ascension_ai_moves_enqueued_total") >= final.version - 1


def test_human_move_then_ai_answers(local_ai_engine: support.Engine) -> None:
    stub = local_ai_engine.stub()
    game = stub.CreateGame(epb.CreateGameRequest(seats=[epb.SeatConfig(name="me"), _ai_seat(3)], seed=1),
                           timeout=CALL_TIMEOUT)  # fmt: skip
    human_turns = 0
    ai_moves = 0
    for u in stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id), timeout=60):
        ai_moves += u.seat == 1
        if u.to_move == 0:
            if human_turns == 3:
                break
            view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[0]),
                                timeout=CALL_TIMEOUT)  # fmt: skip
            end = [a.id for a in view.legal_actions if a.kind in ("end_turn", "place_ship", "skip")]
            stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[0],
                                                      expected_version=view.version,
                                                      action=end[0] if end else view.legal_actions[0].id),
                              timeout=CALL_TIMEOUT)  # fmt: skip
            human_turns += 1
    assert human_turns == 3 and ai_moves >= 2  # the AI seat played its turns and handed them back


def _queued(r: redis.Redis, game_id: str) -> list[dict[str, Any]]:
    out = []
    for raw in r.lrange(QUEUE, 0, -1):
        msg = json.loads(raw)
        assert msg["headers"]["task"] == "ascension.choose_move"
        _args, kwargs, _embed = json.loads(base64.b64decode(msg["body"]))
        if kwargs["game_id"] == game_id:
            out.append(kwargs)
    return out


def test_celery_dispatch_and_sweeper(redis_url: str) -> None:
    """With REDIS_URL the move goes to Celery (task by name, queue ascension.moves); a move
    nobody answers is sent again after ENGINE_AI_STALL_SECONDS."""
    engine = support.start_engine(redis_url, ENGINE_AI_DISPATCH="auto", ENGINE_AI_SWEEP_SECONDS="1",
                                  ENGINE_AI_STALL_SECONDS="1")  # fmt: skip
    r = redis.Redis.from_url(redis_url)
    try:
        stub = engine.stub()
        game = stub.CreateGame(epb.CreateGameRequest(seats=[_ai_seat(5), _ai_seat(6)], seed=2), timeout=CALL_TIMEOUT)
        seat = game.view.to_move
        first = _queued(r, game.game_id)
        assert len(first) == 1
        p = first[0]
        assert (p["seat"], p["version"]) == (seat, 1)
        assert p["token"].startswith("ai1.") and p["token"] != game.seat_tokens[seat]  # per-move credential
        assert p["bot"] == {"name": "random", "iterations": 10, "time_ms": 0, "seed": 5 + seat,
                            "exploration": 1.2}  # fmt: skip
        assert p["engine_address"] == engine.address and abs(p["enqueued_at"] - time.time()) < 30
        deadline = time.monotonic() + 15
        while len(_queued(r, game.game_id)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        again = _queued(r, game.game_id)
        assert len(again) >= 2, engine.log()
        assert all(q["version"] == 1 and q["seat"] == seat for q in again)
        assert max(q["enqueued_at"] for q in again) > p["enqueued_at"]
        text = _metrics(engine)
        assert _value(text, "ascension_ai_moves_enqueued_total") >= 2
        assert _value(text, "ascension_ai_seat_wait_seconds") > 0
        assert _value(text, "ascension_games_active") >= 1  # refreshed each sweep period
        # the move is answered (here by hand, with the seat token the worker got): no more sends
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=p["token"]), timeout=CALL_TIMEOUT)
        resp = stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=p["token"], expected_version=1,
                                                         action=view.legal_actions[0].id), timeout=CALL_TIMEOUT)  # fmt: skip
        nxt = [q for q in _queued(r, game.game_id) if q["version"] == 2]
        assert len(nxt) == 1 and nxt[0]["seat"] == resp.view.to_move
    finally:
        r.delete(QUEUE)
        r.close()
        engine.stop()


class _Recorder(Dispatcher):
    """Keeps what it is handed (the boundary to Celery; the store and sweeper are real)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def dispatch(self, payload: dict[str, Any]) -> None:
        self.sent.append(payload)


def test_a_damaged_pending_move_does_not_stop_the_sweep(redis_url: str) -> None:
    """A game whose pending AI move is damaged in the store (its framing, or its JSON) is
    skipped; the other stalled moves are sent again. Once, one such game failed every sweep,
    and no stalled AI move anywhere was sent again."""

    async def main() -> None:
        store = RedisStore(redis_url, StoreSettings(), timeout=2.0)
        r: Any = redis.Redis.from_url(redis_url)
        try:
            old = time.time() - 86_400  # (older than any other game of the session)
            ids = [new_game_id() for _ in range(3)]
            for gid in ids:
                payload = json.dumps({"game_id": gid, "seat": 0, "version": 1, "enqueued_at": old})
                await store.create(NewGame(gid, new_commit_id(), b"state", b'{"m":1}', b"u", 0, 1,
                                           payload.encode(), old))  # fmt: skip
            r.hset(keys.game_keys(ids[0])[0], "ai", b"not a version|{}")
            r.hset(keys.game_keys(ids[1])[0], "ai", b"1|{not json")
            recorder = _Recorder()
            sweeper = Sweeper(store, recorder, Metrics(CollectorRegistry()), 1.0, 60.0)
            assert await sweeper.sweep_once() >= 1
            assert ids[2] in {p["game_id"] for p in recorder.sent}
            assert not {ids[0], ids[1]} & {p["game_id"] for p in recorder.sent}
        finally:
            for gid in ids:
                await store.delete(gid)
            r.close()
            await store.close()

    asyncio.run(main())

"""Several engine replicas on one Redis: an AI move dispatched by one replica is played through
another. A worker's submit reaches whichever replica its connection lands on, so every replica
must check the move's credential with the key that signed it: compose and the chart give them
one ENGINE_AI_TOKEN_KEYS (tests/deploy/test_deploy_engine_secrets.py); here, real processes
show what that buys, and what happens without it (each process draws its own key).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from clients.sdk.errors import from_rpc_error
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support

SHARED_KEY = "the-key-every-replica-of-this-deployment-shares"
QUEUE = "ascension.moves"  # the Celery queue, here in the same Redis as the games


@pytest.fixture(scope="module")
def replicas() -> Iterator[tuple[support.Engine, support.Engine, support.Engine]]:
    """Two replicas configured alike (one key), and a third without ENGINE_AI_TOKEN_KEYS, as
    every replica was before the deployments set it. All dispatch to Celery (nobody consumes
    the queue: the test plays the worker) and never re-dispatch."""
    with support.redis_server() as url:
        common = {"ENGINE_AI_DISPATCH": "celery", "ENGINE_AI_SWEEP_SECONDS": "0"}
        started: list[support.Engine] = []
        try:
            for key in (SHARED_KEY, SHARED_KEY, None):
                env = dict(common, **({"ENGINE_AI_TOKEN_KEYS": key} if key else {}))
                started.append(support.start_engine(url, **env))
            yield started[0], started[1], started[2]
        finally:
            for engine in started:
                engine.stop()


def dispatched_move(redis_url: str, game_id: str) -> dict[str, object]:
    """The move task's keyword arguments as a worker receives them (the Celery message the
    engine published: its body is base64 JSON [args, kwargs, embed])."""
    r = redis.Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for raw in r.lrange(QUEUE, 0, -1):
                kwargs: dict[str, object] = json.loads(base64.b64decode(json.loads(raw)["body"]))[1]
                if kwargs["game_id"] == game_id:
                    return kwargs
            time.sleep(0.1)
    finally:
        r.close()
    raise AssertionError(f"no move of {game_id} in {QUEUE}")


def test_a_move_dispatched_by_one_replica_is_played_through_another(
    replicas: tuple[support.Engine, support.Engine, support.Engine],
) -> None:
    dispatcher, same_key, own_key = replicas
    ai = epb.SeatConfig(kind=pb.SeatInfo.AI, bot=epb.BotSettings(name="random", seed=1))
    game = dispatcher.stub().CreateGame(epb.CreateGameRequest(seats=[ai, ai]), timeout=10)
    move = dispatched_move(dispatcher.redis_url, game.game_id)  # an AI seat moves first
    token, version = str(move["token"]), int(str(move["version"]))
    seat_view = dispatcher.stub().GetGame(
        epb.GetGameRequest(game_id=game.game_id, token=token), timeout=10
    )
    assert seat_view.seat == game.view.to_move and seat_view.version == version

    def submit(engine: support.Engine) -> epb.SubmitActionResponse:
        request = epb.SubmitActionRequest(
            game_id=game.game_id,
            token=token,
            expected_version=version,
            action=seat_view.legal_actions[0].id,
            idempotency_key=f"{game.game_id}-{version}",
        )
        response: epb.SubmitActionResponse = engine.stub().SubmitAction(request, timeout=10)
        return response

    # A replica with a key of its own does not know the credential: the move is refused and
    # the game waits (until the sweeper sends it again, to the same fate half of the time).
    with pytest.raises(grpc.RpcError) as refused:
        submit(own_key)
    error = from_rpc_error(refused.value)
    assert (error.code, error.reason) == ("UNAUTHENTICATED", "UNKNOWN_TOKEN"), error
    assert (
        own_key.stub().GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=10).version
        == version
    )
    # A replica with the shared key plays it.
    assert submit(same_key).view.version == version + 1

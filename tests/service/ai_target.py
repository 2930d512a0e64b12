"""A real local AI target for the tests (ENGINE_LOCAL_AI_TARGET=tests.service.ai_target:play_move):
it is called in the engine's AI process with the dispatch payload, and plays like any client."""

from __future__ import annotations

import random
from typing import Any

import grpc  # type: ignore[import-untyped]

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.service import support


def play_move(game_id: str, seat: int, version: int, token: str, bot: dict[str, Any], engine_address: str,
              enqueued_at: float, **_: Any) -> str:  # fmt: skip  (re-dispatches add ``attempt``)
    with grpc.insecure_channel(engine_address) as channel:
        stub = rpc.EngineStub(channel)
        view = stub.GetGame(epb.GetGameRequest(game_id=game_id, token=token), timeout=10)
        if view.version != version or view.to_move != seat:
            return "stale"
        action = support.pick(view, random.Random(f"{bot['seed']}-{version}"))
        req = epb.SubmitActionRequest(game_id=game_id, token=token, expected_version=version, action=action,
                                      idempotency_key=f"ai-{game_id}-{version}")  # fmt: skip
        stub.SubmitAction(req, timeout=10)
    return "played"

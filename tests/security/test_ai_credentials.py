"""AI seats play with per-move credentials: nothing a worker uses is in the store, and a
credential acts for one version of one game, until it expires."""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Callable

import pytest
import redis

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import tokens
from engine_service.server.errors import ServiceError
from engine_service.server.tokens import AiCredentials
from engine_service.store.keys import game_keys, unpack_meta
from tests.service import support

KEY, NEW_KEY = "k" * 32, "n" * 32


def test_credentials_name_one_game_seat_and_version() -> None:
    clock = [1000.0]
    creds = AiCredentials([KEY], 60, lambda: clock[0])
    tok = creds.mint("game-a", 1, 7)
    assert tok.startswith("ai1.") and creds.seat(tok, "game-a", 7, acting=True) == 1
    assert creds.seat(tok, "game-a", 8, acting=False) is None  # a read at another version
    checks: list[Callable[[], object]] = [
        lambda: creds.seat(tok, "game-b", 7, acting=True),  # another game
        lambda: creds.seat(tok, "game-a", 8, acting=True),  # a submit at another version
        lambda: creds.seat(tok.replace("ai1.1.", "ai1.0."), "game-a", 7, acting=True),  # seat
        lambda: creds.seat(tok[:-2] + "AA", "game-a", 7, acting=True),  # forged MAC
        lambda: creds.seat("ai1.garbage", "game-a", 7, acting=True),
        lambda: creds.seat(tok[: -len(tok.split(".")[-1])] + "é" * 32, "game-a", 7, acting=True),
        lambda: creds.seat(tok.replace("ai1.1.", "ai1.01."), "game-a", 7, acting=True),
        lambda: AiCredentials(["x" * 32], 60, lambda: clock[0]).seat(tok, "game-a", 7, acting=True),
    ]
    for bad in checks:
        with pytest.raises(ServiceError) as info:
            bad()
        assert info.value.code.value == "UNAUTHENTICATED" and info.value.reason == "UNKNOWN_TOKEN"
    clock[0] += 61
    with pytest.raises(ServiceError) as info:
        creds.seat(tok, "game-a", 7, acting=True)
    assert info.value.reason == "AI_CREDENTIAL_EXPIRED"


def test_key_rotation() -> None:
    old = AiCredentials([KEY], 60)
    both = AiCredentials([NEW_KEY, KEY], 60)  # the new key signs, the old one still verifies
    assert both.seat(old.mint("g", 0, 1), "g", 1, acting=True) == 0
    assert both.seat(both.mint("g", 0, 1), "g", 1, acting=True) == 0
    with pytest.raises(ServiceError):
        old.seat(both.mint("g", 0, 1), "g", 1, acting=True)


def _dispatched(r: redis.Redis, game_id: str) -> list[dict[str, object]]:
    out = []
    for raw in r.lrange("ascension.moves", 0, -1):
        kwargs = json.loads(base64.b64decode(json.loads(raw)["body"]))[1]
        if kwargs["game_id"] == game_id:
            out.append(kwargs)
    return out


def test_the_store_holds_no_ai_credential_and_one_acts_once(security_redis: str) -> None:
    engine = support.start_engine(
        security_redis, ENGINE_AI_DISPATCH="celery", ENGINE_AI_SWEEP_SECONDS="0",
        ENGINE_AI_TOKEN_KEYS=f"{KEY},{NEW_KEY}",
    )  # fmt: skip
    r = redis.Redis.from_url(security_redis)
    try:
        stub = engine.stub()
        ai = epb.SeatConfig(kind=pb.SeatInfo.AI, bot=epb.BotSettings(name="random", seed=1))
        game = stub.CreateGame(epb.CreateGameRequest(seats=[epb.SeatConfig(name="me"), ai]),
                               timeout=10)  # fmt: skip
        ai_seat = 1
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[0]), timeout=10)
        while view.to_move != ai_seat:  # the person plays until the AI seat is to move
            resp = stub.SubmitAction(epb.SubmitActionRequest(
                game_id=game.game_id, token=game.seat_tokens[0], expected_version=view.version,
                action=view.legal_actions[-1].id), timeout=10)  # fmt: skip
            view = resp.view
        deadline = time.monotonic() + 10
        while not (sent := _dispatched(r, game.game_id)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sent, engine.log()
        token = str(sent[-1]["token"])
        version = int(str(sent[-1]["version"]))
        # nothing in the store holds it, nor any raw seat token (the broker's queue, here in
        # the same Redis, carries the move's credential to the worker: that is its job)
        for key in r.scan_iter("asc:*"):  # every key of the store (engine_service/store/keys.py)
            kind = r.type(key)
            blob = repr(r.dump(key)) if kind != b"none" else ""
            values = (
                r.hgetall(key) if kind == b"hash" else {} if kind != b"string" else {b"v": r.get(key)}
            )
            if b"meta" in values:  # kept compressed (engine_service/store/keys.py)
                raw_meta = values[b"meta"]
                assert isinstance(raw_meta, bytes)
                values[b"meta"] = unpack_meta(raw_meta)
            text = blob + repr(values)
            assert token not in text and token.split(".")[-1] not in text, key
            for t in game.seat_tokens:
                assert t not in text, key
        game_key = game_keys(game.game_id)[0]
        raw_meta = r.hget(game_key, "meta")
        assert isinstance(raw_meta, bytes)
        meta = json.loads(unpack_meta(raw_meta))
        assert meta["seats"] and "ai_tokens" not in meta
        # it reads the AI seat's view at its version, and plays that one move
        mine = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=token), timeout=10)
        assert mine.seat == ai_seat and mine.version == version
        stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=token,
                          expected_version=version, action=mine.legal_actions[0].id), timeout=10)  # fmt: skip
        # afterwards: a spectator's view, and no second move
        later = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=token), timeout=10)
        assert later.seat == -1 and later.version == version + 1 and not later.legal_actions
        err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
            game_id=game.game_id, token=token, expected_version=version + 1, action=1))  # fmt: skip
        assert err.code().name == "UNAUTHENTICATED"
        assert token not in engine.log()
    finally:
        r.delete("ascension.moves")
        r.close()
        engine.stop()


def test_seat_tokens_never_start_with_a_dash() -> None:
    """A token is pasted into command lines (``ascension play --token T``): a leading "-" would
    read as an option (1 token in 64 did). Still 32 URL-safe characters, all different."""
    drawn = [tokens.new_token() for _ in range(3000)]
    assert not [t for t in drawn if t.startswith("-")]
    assert {len(t) for t in drawn} == {32} and len(set(drawn)) == len(drawn)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", t) for t in drawn)

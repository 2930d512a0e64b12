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

from clients.sdk.errors import rich_status
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
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
            for t in filter(None, game.seat_tokens):  # (none for the AI seat)
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


def _refusal(stub: rpc.EngineStub, req: epb.SubmitActionRequest) -> tuple[str, str, str]:
    err = support.rpc_error(stub.SubmitAction, req)
    return err.code().name, rich_status(err).reason, err.details()


def test_the_creators_tokens_cannot_play_an_ai_seat(security_redis: str) -> None:
    """Whoever created a game holds every token CreateGame returned: none plays the AI seat's
    move, nor marks one as a fallback. A game created when AI seats still had a stored token
    (its digest in the metadata) refuses that token too, while the seat is AI."""
    a = support.start_engine(security_redis, ENGINE_AI_DISPATCH="off")  # (the AI seat waits)
    b = support.start_engine(security_redis, ENGINE_AI_DISPATCH="off")
    r = redis.Redis.from_url(security_redis)
    try:
        stub = a.stub()
        ai = epb.SeatConfig(kind=pb.SeatInfo.AI, bot=epb.BotSettings(name="random", seed=1))
        game = stub.CreateGame(epb.CreateGameRequest(seats=[epb.SeatConfig(name="me"), ai],
                                                     seed=17), timeout=10)  # fmt: skip
        assert game.seat_tokens[0] and game.seat_tokens[1] == ""  # no token for the AI seat
        s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=17))  # (what it holds)
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[0]), timeout=10)
        while view.to_move != 1:
            act = view.legal_actions[-1].id
            view = stub.SubmitAction(epb.SubmitActionRequest(
                game_id=game.game_id, token=game.seat_tokens[0], expected_version=view.version,
                action=act), timeout=10).view  # fmt: skip
            rules.apply(s, act)
        assert s.to_move() == 1
        actions = rules.legal_actions(s)[:2]  # what the AI seat may play now
        spectator = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=10)
        everything = [*game.seat_tokens, game.admin_token]

        def attempts(token: str) -> list[epb.SubmitActionRequest]:
            return [
                epb.SubmitActionRequest(
                    game_id=game.game_id, token=token, expected_version=view.version,
                    expected_commit_id=spectator.commit_id, action=act, fallback_reason=why,
                    seat_tokens=held, idempotency_key=key,
                )
                for act in actions
                for why in ("", "deadline", "bot_raised: ValueError")
                for held in ((), everything)
                for key in ("", f"ai:{game.game_id}:1:{view.version}")
            ]

        told = set()  # the fresh game: no stored token is the AI seat's; each is refused
        for token in everything:
            for req in attempts(token):
                code, reason, _ = _refusal(stub, req)
                told.add((code, reason))
        assert told <= {("FAILED_PRECONDITION", "NOT_YOUR_TURN"), ("INVALID_ARGUMENT", "INVALID_FIELD"),
                        ("UNAUTHENTICATED", "TOKEN_REQUIRED"), ("UNAUTHENTICATED", "UNKNOWN_TOKEN")}, told

        # The same game as one created when the AI seat had a stored token: its digest in the
        # metadata (read by replica B, which has not cached it).
        stored = tokens.new_token()
        key = game_keys(game.game_id)[0]
        raw_meta = r.hget(key, "meta")
        assert isinstance(raw_meta, bytes)
        meta = json.loads(unpack_meta(raw_meta))
        meta["tokens"][1] = tokens.digest(stored)
        r.hset(key, "meta", json.dumps(meta, separators=(",", ":")).encode())
        old_view = b.stub().GetGame(epb.GetGameRequest(game_id=game.game_id, token=stored), timeout=10)
        assert old_view.seat == 1 and old_view.legal_actions  # it still reads the seat's view ...
        for req in attempts(stored):  # ... and plays nothing, whatever it claims
            code, reason, details = _refusal(b.stub(), req)
            assert (code, reason) == ("PERMISSION_DENIED", "AI_SEAT_PLAYED_BY_WORKER"), details
            assert "seat 1 is an AI seat: it is played by its worker" in details

        for stub_ in (a.stub(), b.stub()):  # nothing was played, and no fallback is recorded
            after = stub_.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=10)
            assert after.version == view.version and after.to_move == 1
            info = next(i for i in after.seat_info if i.seat == 1)
            assert info.fallback_moves == 0 and not info.last_fallback_reason
    finally:
        r.close()
        a.stop()
        b.stop()


def test_seat_tokens_never_start_with_a_dash() -> None:
    """A token is pasted into command lines (``ascension play --token T``): a leading "-" would
    read as an option (1 token in 64 did). Still 32 URL-safe characters, all different."""
    drawn = [tokens.new_token() for _ in range(3000)]
    assert not [t for t in drawn if t.startswith("-")]
    assert {len(t) for t in drawn} == {32} and len(set(drawn)) == len(drawn)
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", t) for t in drawn)

"""Limits per caller behind a proxy: a real nginx in front of the engine (nginx_proxy.py), two
clients reaching it from two addresses (127.0.0.1 and ::1), every call reaching the engine from
the proxy's one address.

With ``ENGINE_TRUSTED_PROXIES`` naming the proxy, a client that floods (watch streams, watch
histories rebuilt, creates, submits) is refused and counted while the other is served; what a
client writes in ``x-forwarded-for`` itself does not get it a fresh count; an operator key and
a seat token count as themselves. Without it, both clients are the proxy: one locks the other
out (what the setting is for)."""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk.errors import rich_status
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.server.callers import Callers, parse_networks
from tests.reliability.nginx_proxy import NginxProxy
from tests.reliability.test_rollback import play
from tests.service import support
from tests.service.support import CALL_TIMEOUT

OPERATOR_KEY = "operator-key-of-the-callers-test"
LIMITS = {
    "ENGINE_WATCH_MAX_STREAMS_PER_PEER": "4",
    "ENGINE_WATCH_REBUILDS_PER_MINUTE": "3",
    "ENGINE_LIMIT_CREATE_PER_MINUTE": "5",
    "ENGINE_LIMIT_SUBMIT_PER_SECOND": "3",
    "ENGINE_STREAM_MAXLEN": "4",  # (a short window: watching from version 0 rebuilds)
    "ENGINE_OPERATOR_KEYS": OPERATOR_KEY,
    "ENGINE_PUBLIC_CREATE": "true",
}


@contextlib.contextmanager
def behind_nginx(tmp: Path, **env: str) -> Iterator[tuple[support.Engine, NginxProxy]]:
    engine = support.start_engine("", **LIMITS, **env)
    proxy = NginxProxy(tmp / "nginx", engine.address, source="127.0.0.2")
    try:
        yield engine, proxy
    finally:
        proxy.stop()
        engine.stop()


def refusal(fn: object, *args: object, **kwargs: object) -> tuple[str, str]:
    """(reason, limit) of a call's RESOURCE_EXHAUSTED; fails if it was not refused so."""
    try:
        result = fn(*args, timeout=CALL_TIMEOUT, **kwargs)  # type: ignore[operator]
        if hasattr(result, "__next__"):
            next(result)  # (a stream is refused at its first read)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, e
        rich = rich_status(e)
        return rich.reason, (rich.metadata or {}).get("limit", "")
    raise AssertionError("the call was not refused")


def open_streams(
    stub: rpc.EngineStub, game_id: str, n: int, metadata: tuple[tuple[str, str], ...] = ()
) -> list[object]:
    """``n`` open WatchGame streams (each has its first update, so it is open on the engine;
    from the game's last version: nothing to rebuild)."""
    last = stub.GetGame(epb.GetGameRequest(game_id=game_id), timeout=CALL_TIMEOUT).version
    streams: list[object] = []
    for _ in range(n):
        s = stub.WatchGame(
            epb.WatchGameRequest(game_id=game_id, after_version=last - 1), metadata=metadata
        )
        next(s)
        streams.append(s)
    return streams


def played_game(stub: rpc.EngineStub, moves: int = 6) -> epb.CreateGameResponse:
    """A game past the window (watching it from version 0 rebuilds its history), played
    within its submit limit (3 a second)."""
    game = stub.CreateGame(
        epb.CreateGameRequest(sets="ss", seats=support.human_seats(2)), timeout=CALL_TIMEOUT
    )
    for i in range(moves):
        time.sleep(0.35)
        play(stub, game, 1, seed=i)
    return game


def test_one_flooding_client_behind_the_proxy_does_not_lock_out_another(tmp_path: Path) -> None:
    with behind_nginx(tmp_path, ENGINE_TRUSTED_PROXIES="127.0.0.2/32") as (engine, proxy):
        flood = rpc.EngineStub(grpc.insecure_channel(proxy.v6))
        other = rpc.EngineStub(grpc.insecure_channel(proxy.v4))
        operator = (("authorization", f"Bearer {OPERATOR_KEY}"),)
        game = played_game(flood)

        # Watch streams: 4 per caller. Writing an address of its own does not help the flood.
        held = open_streams(flood, game.game_id, 4)
        assert refusal(flood.WatchGame, epb.WatchGameRequest(game_id=game.game_id)) == (
            "STREAM_LIMIT", "ENGINE_WATCH_MAX_STREAMS_PER_PEER")  # fmt: skip
        forged = (("x-forwarded-for", "198.51.100.7"),)
        assert (
            refusal(flood.WatchGame, epb.WatchGameRequest(game_id=game.game_id), metadata=forged)[0]
            == "STREAM_LIMIT"
        )
        held += open_streams(other, game.game_id, 4)  # the other client: its own count
        held += open_streams(flood, game.game_id, 2, operator)  # an operator: counted as itself

        # Histories rebuilt from the log (watching from version 0, behind the window): 3 a
        # minute per caller. (Streams of the other client: its stream limit is used up.)
        for s in held:
            s.cancel()  # type: ignore[attr-defined]
        for _ in range(3):
            next(flood.WatchGame(epb.WatchGameRequest(game_id=game.game_id, after_version=0)))
        assert refusal(flood.WatchGame, epb.WatchGameRequest(game_id=game.game_id, after_version=0)) == (
            "RATE_LIMITED", "ENGINE_WATCH_REBUILDS_PER_MINUTE")  # fmt: skip
        update = next(other.WatchGame(epb.WatchGameRequest(game_id=game.game_id, after_version=0)))
        assert update.version == 1

        # Creates: 5 a minute per caller (the flood has made one already).
        for _ in range(4):
            flood.CreateGame(
                epb.CreateGameRequest(sets="ss", seats=support.human_seats(2)), timeout=CALL_TIMEOUT
            )
        assert refusal(flood.CreateGame, epb.CreateGameRequest(sets="ss", seats=support.human_seats(2))) == (
            "RATE_LIMITED", "ENGINE_LIMIT_CREATE_PER_MINUTE")  # fmt: skip
        mine = other.CreateGame(
            epb.CreateGameRequest(sets="ss", seats=support.human_seats(2)), timeout=CALL_TIMEOUT
        )

        # Submits: 3 a second per caller; a seat's submits count as its game, wherever from.
        seat = other.GetGame(epb.GetGameRequest(game_id=mine.game_id), timeout=CALL_TIMEOUT).to_move
        view = other.GetGame(
            epb.GetGameRequest(game_id=mine.game_id, token=mine.seat_tokens[seat]),
            timeout=CALL_TIMEOUT,
        )
        time.sleep(1.0)  # (the game's bucket full again since it was played)
        for _ in range(3):
            stale = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[0],
                                            expected_version=1, action=65536)  # fmt: skip
            with pytest.raises(grpc.RpcError):
                flood.SubmitAction(stale, timeout=CALL_TIMEOUT)  # (refused, but counted)
        assert refusal(flood.SubmitAction, stale) == (
            "RATE_LIMITED",
            "ENGINE_LIMIT_SUBMIT_PER_SECOND",
        )
        rng = random.Random(1)
        flood.SubmitAction(epb.SubmitActionRequest(  # another game's seat, from the same address
            game_id=mine.game_id, token=mine.seat_tokens[seat], expected_version=view.version,
            action=support.pick(view, rng)), timeout=CALL_TIMEOUT)  # fmt: skip

        # Every refusal is counted, by reason.
        assert support.metric(engine, 'ascension_watch_refused_total{limit="per_peer"}') == 2
        assert support.metric(engine, 'ascension_watch_refused_total{limit="rebuilds"}') == 1
        for limit in ("ENGINE_WATCH_REBUILDS_PER_MINUTE", "ENGINE_LIMIT_CREATE_PER_MINUTE",
                      "ENGINE_LIMIT_SUBMIT_PER_SECOND"):  # fmt: skip
            name = f'ascension_limit_refusals_total{{limit="{limit}",reason="RATE_LIMITED"}}'
            assert support.metric(engine, name) == 1, _metrics(engine)
        name = 'ascension_limit_refusals_total{limit="ENGINE_WATCH_MAX_STREAMS_PER_PEER",reason="STREAM_LIMIT"}'
        assert support.metric(engine, name) == 2

        # Straight to the engine, the header is not believed: the caller is its own address.
        direct = rpc.EngineStub(grpc.insecure_channel(engine.address))
        held = open_streams(direct, game.game_id, 4, forged)  # (held: a stream let go is cancelled)
        assert (
            refusal(direct.WatchGame, epb.WatchGameRequest(game_id=game.game_id), metadata=forged)[
                0
            ]
            == "STREAM_LIMIT"
        )


def _metrics(engine: support.Engine) -> str:
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{engine.metrics_port}/metrics", timeout=5) as r:
        return "\n".join(line for line in r.read().decode().splitlines() if "refus" in line)


def test_without_trusted_proxies_every_client_behind_the_proxy_is_the_proxy(tmp_path: Path) -> None:
    with behind_nginx(tmp_path) as (_, proxy):
        flood = rpc.EngineStub(grpc.insecure_channel(proxy.v6))
        other = rpc.EngineStub(grpc.insecure_channel(proxy.v4))
        game = played_game(flood, moves=1)
        held = open_streams(flood, game.game_id, 4)
        assert (
            refusal(other.WatchGame, epb.WatchGameRequest(game_id=game.game_id))[0]
            == "STREAM_LIMIT"
        )
        assert len(held) == 4


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("203.0.113.9", "ipv4:203.0.113.9"),
        ("198.51.100.7, 203.0.113.9", "ipv4:203.0.113.9"),  # (the left one: the client's own)
        ("203.0.113.9, 10.1.2.3", "ipv4:203.0.113.9"),  # (a trusted proxy's hop skipped)
        ("203.0.113.9:5123", "ipv4:203.0.113.9"),
        ("2001:db8::7", "ipv6:2001:db8::/64"),
        ("[2001:db8::7]:443", "ipv6:2001:db8::/64"),
        ("::ffff:203.0.113.9", "ipv4:203.0.113.9"),
        ('for=203.0.113.9;proto=https, for="[2001:db8::7]:443"', "ipv6:2001:db8::/64"),
        ("10.1.2.3, 10.1.2.4", "ipv4:10.0.0.5"),  # only proxies: the peer
        ("", "ipv4:10.0.0.5"),
    ],
)
def test_the_caller_behind_trusted_proxies(header: str, expected: str) -> None:
    callers = Callers(parse_networks("10.0.0.0/8"))

    class Context:
        def __init__(self, peer: str) -> None:
            self._peer = peer

        def peer(self) -> str:
            return self._peer

        def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
            return (("x-forwarded-for", header),) if header else ()

    assert callers.key(Context("ipv4:10.0.0.5:4711")) == expected
    forwarded = header.startswith("for=")
    if forwarded:
        callers = Callers(parse_networks("10.0.0.0/8"), "forwarded")

        class Forwarded(Context):
            def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
                return (("forwarded", header),)

        assert callers.key(Forwarded("ipv4:10.0.0.5:4711")) == expected
    # An untrusted peer is itself, whatever it sends.
    assert callers.key(Context("ipv4:192.0.2.1:4711")) == "ipv4:192.0.2.1"
    with pytest.raises(ValueError):
        parse_networks("10.0.0.0/8, not-a-network")


KEY = "a-gateway-key-of-the-unit-test"


@pytest.mark.parametrize(
    ("keys", "metadata", "expected"),
    [
        ((KEY,), (("ascension-gateway-key", KEY), ("ascension-client-address", "203.0.113.9")), "ipv4:203.0.113.9"),
        ((KEY,), (("ascension-gateway-key", KEY), ("ascension-client-address", "2001:db8::7")), "ipv6:2001:db8::/64"),
        ((KEY,), (("ascension-gateway-key", KEY), ("ascension-client-address", "_hidden")), "name:_hidden"),
        # One address only (the gateway writes one); none: the gateway itself.
        ((KEY,), (("ascension-gateway-key", KEY), ("ascension-client-address", "203.0.113.9"),
                  ("ascension-client-address", "198.51.100.1")), "ipv4:192.0.2.1"),
        ((KEY,), (("ascension-gateway-key", KEY),), "ipv4:192.0.2.1"),
        # Without the key, or on an engine without gateway keys: not believed.
        ((KEY,), (("ascension-client-address", "203.0.113.9"),), "ipv4:192.0.2.1"),
        ((), (("ascension-gateway-key", KEY), ("ascension-client-address", "203.0.113.9")), "ipv4:192.0.2.1"),
        # The gateway's key does not make the engine read x-forwarded-for.
        ((KEY,), (("ascension-gateway-key", KEY), ("x-forwarded-for", "203.0.113.9")), "ipv4:192.0.2.1"),
    ],
)  # fmt: skip
def test_the_caller_a_gateway_names(
    keys: tuple[str, ...], metadata: tuple[tuple[str, str], ...], expected: str
) -> None:
    callers = Callers(gateway_keys=keys)

    class Context:
        def peer(self) -> str:
            return "ipv4:192.0.2.1:4711"

        def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
            return metadata

    assert callers.key(Context()) == expected


def test_a_wrong_gateway_key_is_refused() -> None:
    from engine_service.server.errors import ServiceError

    callers = Callers(gateway_keys=(KEY, "another-gateway-key-listed"))
    assert callers.gateway((("ascension-gateway-key", "another-gateway-key-listed"),))
    assert not callers.gateway((("authorization", "Bearer x"),))
    for sent in (("not-" + KEY,), (KEY, KEY), ("",)):
        with pytest.raises(ServiceError) as refused:
            callers.gateway(tuple(("ascension-gateway-key", k) for k in sent))
        assert refused.value.reason == "UNKNOWN_GATEWAY_KEY"
        assert KEY not in refused.value.message

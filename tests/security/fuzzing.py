"""Fuzzing the Engine API: an in-process server on the real pieces (store, Games, the gRPC
service with its registration, health, reflection), request strategies made from the proto
descriptors, and the checks every answer must pass. Used by tests/security/test_fuzz.py (a few
thousand cases, deterministic) and benchmarks/fuzz.py (longer, random, bounded in time).

Invariants: every answer is a status the API documents (never UNKNOWN or INTERNAL), nothing is
logged at ERROR and no traceback at all, a game changes only by an accepted SubmitAction (or
goes by an accepted DeleteGame; CreateGame and PracticeFromHere add one), and every game replays
from its seed (or a practice game's first state) and action log to the state the store holds.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc  # type: ignore[import-untyped]
from grpc_health.v1 import health_pb2_grpc
from grpc_health.v1.health import aio as health_aio
from hypothesis import strategies as st
from hypothesis.strategies import DrawFn

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.rules.serialize import to_primitive
from engine_service.server import seats
from engine_service.server.auth import SEEDS_ANYONE, Access
from engine_service.server.dispatch import NoDispatcher
from engine_service.server.games import Games
from engine_service.server.limits import CallLimits
from engine_service.server.meta import GameMeta
from engine_service.server.metrics import Metrics
from engine_service.server.service import EngineService, GuardedServer, add_to_server
from engine_service.server.tokens import AiCredentials, CredentialedDispatcher
from engine_service.store import MemoryStore, Store

SERVICE = epb.DESCRIPTOR.services_by_name["Engine"]
METHODS = {m.name: m for m in SERVICE.methods}
# Answers the API documents for a request it refuses (DEADLINE_EXCEEDED: a watch of a live
# game outlives the short deadline the fuzzer gives it; DATA_LOSS: a watcher that claims to
# have seen versions or a commit the store does not hold is told they were lost).
DEFINED = {
    "OK", "INVALID_ARGUMENT", "NOT_FOUND", "UNAUTHENTICATED", "PERMISSION_DENIED",
    "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "RESOURCE_EXHAUSTED", "DATA_LOSS",
}  # fmt: skip
WATCH_DEADLINE = 0.15


class LogWatch(logging.Handler):
    """Every record at WARNING or above, from every logger of the process."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def problems(self) -> list[str]:
        return [
            f"{r.name} {r.levelname}: {r.getMessage()}"
            for r in self.records
            if r.exc_info or r.levelno >= logging.ERROR or "Traceback" in r.getMessage()
        ]


class Harness:
    """The engine service in a thread of its own, on a free loopback port."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store or MemoryStore()
        self.loop = asyncio.new_event_loop()
        self.address = ""
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.logs = LogWatch()

    def __enter__(self) -> Harness:
        logging.getLogger().addHandler(self.logs)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the fuzz server did not start")
        self.channel = grpc.insecure_channel(self.address)
        self.stub = rpc.EngineStub(self.channel)
        return self

    def __exit__(self, *exc: object) -> None:
        self.channel.close()
        assert self._stop is not None
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        logging.getLogger().removeHandler(self.logs)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        creds = AiCredentials.generate()
        metrics = Metrics()
        games = Games(self.store, CredentialedDispatcher(NoDispatcher(), creds), metrics,
                      "127.0.0.1:0", None, creds)  # fmt: skip
        server = grpc.aio.server()
        # seeds allowed: the setup's games are the same deals on every run
        access = Access(caller_seeds=SEEDS_ANYONE)
        add_to_server(EngineService(games, metrics, access, CallLimits(max_live_games=0)), server)
        health_pb2_grpc.add_HealthServicer_to_server(health_aio.HealthServicer(), GuardedServer(server))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        self.address = f"127.0.0.1:{port}"
        self._ready.set()
        await self._stop.wait()
        await server.stop(1)

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def versions(self) -> dict[str, int]:
        rows = self.run(self.store.list_games("", 10_000, False))
        return {r.game_id: r.version for r in rows}

    def replays(self, game_id: str) -> bool:
        """The stored state is the one the seed and the action log give."""
        rec = self.run(self.store.load(game_id))
        if rec is None:
            return True  # deleted meanwhile
        log = self.run(self.store.action_log(game_id))
        meta = GameMeta.decode(rec.meta)
        s = meta.first_state()  # (a practice game's is kept in its metadata)
        for _seat, action in log:
            if not seats.is_table_action(action):  # (a resignation, a hand-over: no cards)
                rules.apply(s, action)
        # compared as plain data: marshal's bytes depend on object sharing, not only values
        same = to_primitive(s) == to_primitive(rules.deserialize(rec.state))
        return bool(same) and len(log) + 1 == rec.version


@dataclass
class Known:
    """Values a fuzzed request may borrow, so that it gets past the first checks: real game ids,
    tokens, versions and legal action ids (kept current as games move)."""

    game_ids: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)
    versions: list[int] = field(default_factory=lambda: [0, 1, 2])
    actions: list[int] = field(default_factory=lambda: [0, 1])

    def learn_game(self, resp: epb.CreateGameResponse, *, deletable: bool = True) -> None:
        self.game_ids.append(resp.game_id)
        self.tokens.extend(resp.seat_tokens)
        if deletable:  # the setup's games stay: the fuzz aims at them to the end
            self.tokens.append(resp.admin_token)

    def learn_view(self, view: pb.GameView) -> None:
        self.versions.append(view.version)
        self.actions.extend(a.id for a in view.legal_actions)
        del self.versions[:-50], self.actions[:-200]


def _pick(values: Callable[[], list[Any]], other: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A known value (read when drawn: the lists grow as the fuzz goes), or ``other``."""
    index = st.integers(0, 10_000).map(lambda i: values()[i % len(values())] if values() else None)
    return st.one_of(index.filter(lambda v: v is not None), other)


TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=80)
ODD_TEXT = st.one_of(
    TEXT,
    st.text(max_size=5, alphabet="\x00\t\n\u202e\ufeff𝕏").map(lambda t: t * 70),
    st.sampled_from(["", " ", "ss", "cotgi", "both", "0" * 22, "ai1.0.1.9999999999.AAAA",
                     "ai1.", "ai1.-1.-1.-1.x", "..", "Bearer x"]),
)  # fmt: skip
# Shaped like AI move credentials (ai1.<seat>.<version>.<expiry>.<mac>), parts gone wrong
AI_LIKE = st.tuples(
    st.integers(-2, 9), st.integers(-2, 2**64), st.integers(-2, 2**41),
    st.text(st.characters(exclude_characters=".", exclude_categories=["Cs"]), min_size=1, max_size=40),
    st.sampled_from(["", "0", "01", "1_0", " 1", "١"]),
).map(lambda t: f"ai1.{t[4] or t[0]}.{t[1]}.{t[2]}.{t[3]}")  # fmt: skip
INT_RANGES = {
    pb.Card.DESCRIPTOR.fields[0].TYPE_INT32: (-(2**31), 2**31 - 1),
    pb.Card.DESCRIPTOR.fields[0].TYPE_INT64: (-(2**63), 2**63 - 1),
    pb.Card.DESCRIPTOR.fields[0].TYPE_UINT32: (0, 2**32 - 1),
    pb.Card.DESCRIPTOR.fields[0].TYPE_UINT64: (0, 2**64 - 1),
}


def _scalar(f: Any, known: Known) -> st.SearchStrategy[Any]:
    t = f.type
    if t == f.TYPE_STRING:
        if f.name == "game_id" or f.name == "page_token":
            return _pick(lambda: known.game_ids, ODD_TEXT)
        if "token" in f.name:
            return st.one_of(_pick(lambda: known.tokens, ODD_TEXT), AI_LIKE)
        return ODD_TEXT
    if t == f.TYPE_BOOL:
        return st.booleans()
    if t in (f.TYPE_DOUBLE, f.TYPE_FLOAT):
        return st.floats(width=64 if t == f.TYPE_DOUBLE else 32)
    if t == f.TYPE_ENUM:
        return st.one_of(st.sampled_from([v.number for v in f.enum_type.values]),
                         st.integers(-(2**31), 2**31 - 1))  # fmt: skip
    if t == f.TYPE_BYTES:
        return st.binary(max_size=64)
    lo, hi = INT_RANGES[t]
    small = st.integers(max(lo, -3), min(hi, 600))
    if f.name in ("expected_version", "after_version"):
        return _pick(lambda: known.versions, st.one_of(small, st.integers(lo, hi)))
    if f.name == "action":
        return _pick(lambda: known.actions, st.integers(lo, hi))
    return st.one_of(small, st.integers(lo, hi))


@st.composite
def message(draw: DrawFn, desc: Any, known: Known, depth: int = 0) -> Any:
    """A message of type ``desc``: each field unset or a drawn value (nested up to 3 deep)."""
    cls = _class(desc.name)
    msg = cls()
    for f in desc.fields:
        if not draw(st.booleans()):
            continue
        repeated = f.is_repeated
        if f.message_type is not None:
            if depth >= 3:
                continue
            sub = message(f.message_type, known, depth + 1)
            if repeated:
                for m in draw(st.lists(sub, max_size=7)):
                    getattr(msg, f.name).add().CopyFrom(m)
            else:
                getattr(msg, f.name).CopyFrom(draw(sub))
            continue
        value = _scalar(f, known)
        if repeated:
            getattr(msg, f.name).extend(draw(st.lists(value, max_size=5)))
        else:
            setattr(msg, f.name, draw(value))
    return msg


def _class(name: str) -> Any:
    return getattr(epb, name, None) or getattr(pb, name)


def request(method: str, known: Known) -> st.SearchStrategy[Any]:
    desc = METHODS[method].input_type
    if not desc.fields:  # nothing to draw (ListCardsRequest)
        return st.just(_class(desc.name)())
    return message(desc, known)


def raw_bytes(method: str, known: Known) -> st.SearchStrategy[bytes]:
    """Random bytes, and real requests with bytes cut off, flipped or spliced in."""
    valid = request(method, known).map(lambda m: m.SerializeToString())

    @st.composite
    def mutated(draw: DrawFn) -> bytes:
        b = bytearray(draw(valid))
        for _ in range(draw(st.integers(1, 4))):
            op = draw(st.sampled_from(["cut", "flip", "insert"]))
            at = draw(st.integers(0, len(b)))
            if op == "cut":
                del b[at:]
            elif op == "flip" and at < len(b):
                b[at] ^= draw(st.integers(1, 255))
            else:
                b[at:at] = draw(st.binary(min_size=1, max_size=6))
        return bytes(b)

    return st.one_of(st.binary(max_size=200), mutated())


@dataclass
class Checker:
    """Calls the server and checks each answer; tracks which changes were accepted."""

    h: Harness
    known: Known
    expected: dict[str, int] = field(default_factory=dict)
    answers: dict[str, int] = field(default_factory=dict)
    cases: int = 0

    def setup(self, games: int = 3) -> None:
        """A few games to aim at: new, a few moves in, and finished."""
        for i in range(games):
            seats = [epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name=f"p{j}") for j in range(2)]
            req = epb.CreateGameRequest(sets="ss", seats=seats, seed=100 + i)
            resp = self.h.stub.CreateGame(req, timeout=10)
            self.known.learn_game(resp, deletable=False)
            self._play(resp, moves=[0, 12, 100_000][i % 3])
        self.expected = self.h.versions()

    def _play(self, game: epb.CreateGameResponse, moves: int) -> None:
        view = game.view
        for _ in range(moves):
            if view.over:
                break
            tok = game.seat_tokens[view.to_move]
            view = self.h.stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=tok), timeout=10)
            self.known.learn_view(view)
            kinds = [a for a in view.legal_actions if a.kind != "end_turn"] or list(view.legal_actions)
            buy = [a for a in kinds if a.kind in ("acquire", "defeat", "play")]
            act = (buy or kinds)[0]
            view = self.h.stub.SubmitAction(epb.SubmitActionRequest(
                game_id=game.game_id, token=tok, expected_version=view.version, action=act.id), timeout=10).view  # fmt: skip

    def call(self, method: str, req: Any) -> None:
        m = METHODS[method]
        code, result = "OK", None
        try:
            if m.server_streaming:
                stream = self.h.stub.WatchGame(req, timeout=WATCH_DEADLINE)
                try:
                    next(stream, None)
                finally:
                    stream.cancel()
            else:
                result = getattr(self.h.stub, method)(req, timeout=10)
        except grpc.RpcError as e:
            code = e.code().name
        self._answer(method, code, m.server_streaming)
        if code == "OK":
            self._accepted(method, req, result)
        self._unchanged()

    def call_raw(self, method: str, payload: bytes) -> None:
        m = METHODS[method]
        path = f"/{SERVICE.full_name}/{method}"
        code = "OK"
        try:
            if m.server_streaming:
                stream = self.h.channel.unary_stream(path)(payload, timeout=WATCH_DEADLINE)
                try:
                    next(stream, None)
                finally:
                    stream.cancel()
            else:
                raw = self.h.channel.unary_unary(path)(payload, timeout=10)
                if method in ("CreateGame", "SubmitAction", "DeleteGame", "Resign", "HandOverSeat",
                              "PracticeFromHere"):  # fmt: skip
                    self._accepted(method, _class(m.input_type.name).FromString(payload),
                                   _class(m.output_type.name).FromString(raw))  # fmt: skip
        except grpc.RpcError as e:
            code = e.code().name
        self._answer(method, code, m.server_streaming)
        self._unchanged()

    def _answer(self, method: str, code: str, streaming: bool) -> None:
        self.cases += 1
        self.answers[code] = self.answers.get(code, 0) + 1
        allowed = DEFINED | ({"DEADLINE_EXCEEDED", "CANCELLED"} if streaming else set())
        assert code in allowed, f"{method} answered {code}"
        problems = self.h.logs.problems()
        assert not problems, problems

    def _accepted(self, method: str, req: Any, resp: Any) -> None:
        if method == "CreateGame":
            self.known.learn_game(resp)
            self.expected[resp.game_id] = 1
        elif method == "PracticeFromHere":  # (a new game, from another's decision)
            self.known.game_ids.append(resp.game_id)
            self.known.tokens.extend((resp.seat_token, resp.admin_token))
            self.expected[resp.game_id] = 1
        elif method == "SubmitAction":
            self.expected[req.game_id] = resp.view.version
            self.known.learn_view(resp.view)
        elif method in ("Resign", "HandOverSeat"):  # (a version of its own: a table event)
            self.expected[req.game_id] = resp.view.version
        elif method == "DeleteGame":
            self.expected.pop(req.game_id, None)

    def _unchanged(self) -> None:
        now = self.h.versions()
        assert now == self.expected, {
            g: (self.expected.get(g), now.get(g))
            for g in set(now) | set(self.expected)
            if now.get(g) != self.expected.get(g)
        }

    def all_replay(self) -> Iterator[str]:
        """Ids of the games that do not replay from their log (should be none)."""
        for gid in self.h.versions():
            if not self.h.replays(gid):
                yield gid

"""Bots are untrusted code with a deadline (docs/reliability.md).

Real processes on loopback: a ``redis-server`` on a free port (broker and store), an
``ascension-engine serve`` dispatching AI moves to Celery, and ``ascension-worker run`` with
two pool processes. The bad bots (tests/ai/bad_bots.py) are plugins registered through a
``*.dist-info`` on PYTHONPATH, like any separately installed package.

Stated bounds (generous on purpose: this machine is shared; the point is the order of
magnitude, a bad bot used to cost 75 s per move and a worker process per crash):

- a game whose seat is played by a bot that hangs, swallows every signal, exits its process
  or kills its worker process is over within ``GAME_BOUND`` seconds;
- meanwhile no AI move of an unrelated game takes more than ``LATENCY_BOUND`` seconds;
- an AI move nobody answers is played by the engine after ``ENGINE_AI_MAX_DISPATCHES``
  dispatches, and at most one deliverable copy of a move is ever in the queue;
- seat tokens and AI move credentials appear in no log line (engine and worker at DEBUG)
  and in no task header.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.ai.bad_bots import install_entry_points
from tests.ai.test_celery_integration import Worker, ai, metrics, start_worker
from tests.service import support

CALL = support.CALL_TIMEOUT
GRACE = 1.0  # WORKER_DECISION_GRACE_SECONDS of these tests
BAD_TIME_MS = 200  # the bad bots' budget: a decision of theirs ends within 1.2 s
GAME_BOUND = 240.0
LATENCY_BOUND = 20.0
QUEUE = "ascension.moves"


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    directory = install_entry_points(tmp_path_factory.mktemp("bad-bots"))
    return f"{support.ROOT}:{directory}"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def engine(redis_url: str, plugin_path: str) -> Iterator[support.Engine]:
    e = support.start_engine(
        redis_url,
        ENGINE_AI_DISPATCH="celery",
        CELERY_BROKER_URL=redis_url,
        ENGINE_AI_SWEEP_SECONDS="1",
        ENGINE_AI_STALL_SECONDS="20",
        PYTHONPATH=plugin_path,
        LOG_LEVEL="DEBUG",
    )
    yield e
    e.stop()


def worker_env() -> dict[str, str]:
    return {"WORKER_DECISION_GRACE_SECONDS": str(GRACE), "LOG_LEVEL": "DEBUG"}


class MoveClock:
    """Watches a game and notes when each update arrives."""

    def __init__(self, engine: support.Engine, game_id: str) -> None:
        self.times: list[tuple[float, int]] = [(time.monotonic(), 1)]
        self.channel = engine.new_channel()
        stub = rpc.EngineStub(self.channel)
        self.stream = stub.WatchGame(epb.WatchGameRequest(game_id=game_id), timeout=GAME_BOUND)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for u in self.stream:
                self.times.append((time.monotonic(), u.version))
                if u.over:
                    return
        except grpc.RpcError:
            return

    def latencies(self, until: float = float("inf")) -> list[float]:
        """Seconds each move took (from the previous version), for moves that began before
        ``until``."""
        t = self.times
        return [b[0] - a[0] for a, b in itertools.pairwise(t) if a[0] < until]

    def close(self) -> None:
        self.stream.cancel()
        self.channel.close()


def create(
    engine: support.Engine, seats: list[epb.SeatConfig], seed: int
) -> epb.CreateGameResponse:
    resp: epb.CreateGameResponse = engine.stub().CreateGame(
        epb.CreateGameRequest(sets="ss", seed=seed, seats=seats), timeout=CALL
    )
    return resp


def wait_all_over(engine: support.Engine, game_ids: list[str], seconds: float) -> dict[str, float]:
    """When each game ended (monotonic), failing if one is not over within ``seconds``."""
    deadline = time.monotonic() + seconds
    ended: dict[str, float] = {}
    stub = engine.stub()
    while len(ended) < len(game_ids):
        for gid in game_ids:
            if gid not in ended:
                view = stub.GetGame(epb.GetGameRequest(game_id=gid), timeout=CALL)
                if view.over:
                    ended[gid] = time.monotonic()
        if time.monotonic() > deadline:
            raise AssertionError(f"games not over after {seconds}s: {set(game_ids) - set(ended)}")
        time.sleep(0.25)
    return ended


def tokens_of(*games: epb.CreateGameResponse) -> list[str]:
    """Every token CreateGame gave (none for an AI seat: "")."""
    return [t for g in games for t in (*g.seat_tokens, g.admin_token) if t]


def series(m: dict[str, float], name: str, **labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include ``labels``."""
    total = 0.0
    for key, value in m.items():
        base, _, rest = key.partition("{")
        if base != name:
            continue
        have = dict(re.findall(r'(\w+)="([^"]*)"', rest))
        if all(have.get(k) == v for k, v in labels.items()):
            total += value
    return total


@pytest.fixture
def worker(
    redis_url: str, plugin_path: str, tmp_path: Path, engine: support.Engine
) -> Iterator[Worker]:
    w = start_worker(redis_url, plugin_path, tmp_path, "bad-bots", **worker_env())
    yield w
    w.stop()


def test_bad_bots_finish_their_games_and_do_not_starve_a_healthy_one(
    engine: support.Engine, worker: Worker
) -> None:
    bad = {
        name: create(engine, [ai(name, time_ms=BAD_TIME_MS, seed=1), ai("heuristic", seed=2)], i)
        for i, name in enumerate(("sleeper", "stubborn", "exiter"), start=1)
    }
    # a game of two sleepers: its first move is a sleeper's, at the time the other sleeper
    # game's first ones are; a plug-in holds one slot of two: a sleeper move is deferred
    second = create(engine, [ai("sleeper", time_ms=BAD_TIME_MS, seed=5),
                             ai("sleeper", time_ms=BAD_TIME_MS, seed=6)], 7)  # fmt: skip
    healthy = create(engine, [ai("heuristic", seed=3), ai("heuristic", seed=4)], 9)
    clock = MoveClock(engine, healthy.game_id)
    start = time.monotonic()
    try:
        ended = wait_all_over(engine, [g.game_id for g in (*bad.values(), second)], GAME_BOUND)
        bad_over = max(ended.values())
        wait_all_over(engine, [healthy.game_id], GAME_BOUND)
    finally:
        clock.close()
    during = clock.latencies(until=bad_over)
    assert len(during) >= 3, "the healthy game did not play while the bad bots did"
    assert max(during) < LATENCY_BOUND, sorted(during)[-5:]
    print(f"bad games over after {bad_over - start:.1f}s; healthy moves meanwhile: {len(during)},"
          f" max {max(during):.2f}s, median {sorted(during)[len(during) // 2]:.3f}s")  # fmt: skip

    # Through the API: each bad seat's latest fallback says why its bot is quarantined
    causes = {
        "sleeper": f"deadline: no answer within {BAD_TIME_MS / 1000 + GRACE:.1f}s",
        "stubborn": f"deadline: no answer within {BAD_TIME_MS / 1000 + GRACE:.1f}s",
        "exiter": "bot_died: the bot process exited (status 3)",
    }
    for name, g in bad.items():
        view = engine.stub().GetGame(epb.GetGameRequest(game_id=g.game_id), timeout=CALL)
        (info,) = [s for s in view.seat_info if s.bot_name == name]
        assert info.fallback_moves > 3, (name, info)
        assert info.last_fallback_reason == f"quarantined: {causes[name]}", (name, info)

    m = metrics(worker.metrics_port)
    fallback = "ascension_worker_fallback_moves_total"
    assert series(m, fallback, bot="sleeper", reason="deadline") >= 1
    assert series(m, fallback, bot="stubborn", reason="deadline") >= 1
    assert series(m, fallback, bot="exiter", reason="bot_died") >= 1
    for name in bad:  # after 3 misbehaviours in a row the bot is not asked any more
        assert series(m, fallback, bot=name, reason="quarantined") >= 1, name
    assert series(m, "ascension_worker_dead_letters_total") == 0  # no pool process was lost
    # the sleeper's moves waited for its one slot instead of taking the healthy game's
    assert series(m, "ascension_worker_move_outcomes_total", outcome="deferred") >= 1
    log = worker.log()
    for name in bad:
        assert re.search(
            rf"WARNING/\S+\] bot '{name}' game \S+ seat 0 .*playing a fallback move", log
        )
        assert re.search(
            rf"WARNING/\S+\] bot '{name}' misbehaved 3 times in a row: quarantined", log
        )
    assert "WorkerLostError" not in log and "Hard time limit" not in log
    assert "Soft time limit" not in log
    assert_no_token(tokens_of(*bad.values(), second, healthy), log, engine.log())


def test_a_bot_that_kills_its_worker_process_is_dead_lettered(
    engine: support.Engine, worker: Worker
) -> None:
    game = create(
        engine, [ai("worker-killer", time_ms=BAD_TIME_MS, seed=1), ai("heuristic", seed=2)], 4
    )
    wait_all_over(engine, [game.game_id], GAME_BOUND)
    m = metrics(worker.metrics_port)
    lost = series(m, "ascension_worker_dead_letters_total", reason="worker_lost")
    # each loss is dead-lettered, never redelivered; after 3 the bot is quarantined
    assert 1 <= lost <= 3 + 2, lost
    fallback = "ascension_worker_fallback_moves_total"
    assert series(m, fallback, bot="worker-killer", reason="dead_letter") >= 1
    assert series(m, fallback, bot="worker-killer", reason="quarantined") >= 1
    log = worker.log()
    assert re.search(r"WARNING/MainProcess\] move \S+ of game \S+ seat 0 v\d+ \(bot 'worker-killer'\) dead-lettered "
                     r"\(worker_lost\): not delivered again; the fallback move plays instead", log)  # fmt: skip
    assert worker.check().returncode == 0  # the worker lives on
    assert_no_token(tokens_of(game), log, engine.log())


def test_a_raising_bot_is_quarantined_and_its_fallbacks_are_reported(
    engine: support.Engine, worker: Worker
) -> None:
    """``ascension bots`` against the engine and the worker: the raising bot's games end, its
    seats' fallback moves are stored with the games, its results are marked, the bot is
    quarantined after 3 raises in a row, and each bot process logs its traceback once."""
    ascension = Path(sys.executable).with_name("ascension")
    out = subprocess.run(
        [str(ascension), "bots", "--address", engine.address, "--bots", "raiser,heuristic",
         "--games", "2", "--budget-ms", "200", "--parallel", "2", "--seed", "3"],
        capture_output=True, text=True, timeout=GAME_BOUND, env={**os.environ, "COLUMNS": "250"},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    # the table's row: no win rate of its own, its fallback moves of its decisions
    assert re.search(r"raiser \(!\) .* — .* (\d+)/\1 ", out.stdout), out.stdout
    (note,) = [line for line in out.stdout.splitlines() if line.startswith("(!) raiser")]
    assert f"(!) Why the bots failed (their tracebacks): the log of the workers of the engine at {engine.address}" in out.stdout
    assert note.startswith("(!) raiser: ") and note.endswith("no win rate is shown for it"), note
    assert "(latest: quarantined: bot_raised: ValueError)" in note
    games = engine.stub().ListGames(epb.ListGamesRequest(page_size=50), timeout=CALL).games
    mine = [g for g in games if {s.bot_name for s in g.seats} == {"raiser", "heuristic"}][:2]
    for g in mine:
        view = engine.stub().GetGame(epb.GetGameRequest(game_id=g.game_id), timeout=CALL)
        assert view.over
        for s in view.seat_info:
            if s.bot_name == "heuristic":
                assert s.fallback_moves == 0
            else:  # every decision of the raiser: its own raise, then the quarantine, with
                # what the bot is quarantined for
                assert s.fallback_moves > 10
                assert s.last_fallback_reason == "quarantined: bot_raised: ValueError"
                assert s.last_fallback_version > 1
    m = metrics(worker.metrics_port)
    fallback = "ascension_worker_fallback_moves_total"
    raised = series(m, fallback, bot="raiser", reason="bot_raised")
    assert 3 <= raised <= 4, raised  # (two pool processes may both be deciding at the third)
    assert series(m, fallback, bot="raiser", reason="quarantined") > 10
    log = worker.log()
    assert re.search(r"WARNING/\S+\] bot 'raiser' misbehaved 3 times in a row: quarantined", log)
    assert "a bug, on a hand of" in log  # the bot's message: in the log, not in the views
    assert log.count("Traceback") <= 2 < raised  # once per bot process (there are two)


def test_an_illegal_answer_is_quarantined_and_the_api_says_so(
    engine: support.Engine, worker: Worker
) -> None:
    game = create(engine, [ai("cheater", time_ms=BAD_TIME_MS, seed=1), ai("heuristic", seed=2)], 6)
    wait_all_over(engine, [game.game_id], GAME_BOUND)
    view = engine.stub().GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL)
    cheater, heuristic = view.seat_info
    assert cheater.fallback_moves > 3 and heuristic.fallback_moves == 0
    assert cheater.last_fallback_reason == "quarantined: illegal_action"


# What an AI move credential looks like (engine_service/server/tokens.py): the workers get
# one per move, minted as it is sent, so a test cannot know them all in advance.
CREDENTIAL = re.compile(r"ai1\.\d+\.\d+\.\d+\.[A-Za-z0-9_-]{8,}")


def assert_no_token(tokens: list[str], *logs: str) -> None:
    assert tokens
    for text in logs:
        assert "DEBUG" in text  # the logs were taken at DEBUG
        for t in tokens:
            assert t not in text
        assert not CREDENTIAL.search(text), CREDENTIAL.search(text)


# ---- the engine's backstop and the one-copy rule -----------------------------------------


def queued(r: redis.Redis) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(headers, kwargs) of every message in the queue, as the broker holds them."""
    out = []
    for raw in r.lrange(QUEUE, 0, -1):
        msg = json.loads(raw)
        _args, kwargs, _embed = json.loads(base64.b64decode(msg["body"]))
        out.append((msg["headers"], kwargs))
    return out


@pytest.fixture
def own_redis() -> Iterator[str]:
    """A Redis of the test's own: the module's engine sweeps the AI moves of its store too,
    and would play some of the fallbacks this test counts."""
    with support.redis_server() as url:
        yield url


def test_a_move_nobody_answers_is_played_by_the_engine_and_never_queued_twice(
    own_redis: str, plugin_path: str
) -> None:
    """No worker consumes this broker (its own Redis database): every move is re-dispatched
    until ENGINE_AI_MAX_DISPATCHES, then the engine plays the first legal action itself.
    Meanwhile the queue never holds two copies of one move that a worker could still run."""
    redis_url = own_redis
    broker = redis_url.rsplit("/", 1)[0] + "/7"
    e = support.start_engine(redis_url, ENGINE_AI_DISPATCH="celery", CELERY_BROKER_URL=broker,
                             ENGINE_AI_SWEEP_SECONDS="0.3", ENGINE_AI_STALL_SECONDS="1",
                             ENGINE_AI_MAX_DISPATCHES="3", PYTHONPATH=plugin_path,
                             LOG_LEVEL="DEBUG")  # fmt: skip
    r = redis.Redis.from_url(broker)
    try:
        game = create(e, [ai("heuristic", seed=1), ai("sleeper", time_ms=100, seed=2)], 5)
        stub = e.stub()
        deadline = time.monotonic() + 60
        most_alive = 0
        sent: set[str] = set()
        while time.monotonic() < deadline:
            now = time.time()
            alive: dict[tuple[str, int], int] = {}
            for headers, kwargs in queued(r):
                # the move's credential is in the body (the worker needs it), never in a header
                assert CREDENTIAL.fullmatch(kwargs["token"]), kwargs["token"]
                sent.add(kwargs["token"])
                assert kwargs["token"] not in json.dumps(headers)
                assert headers["argsrepr"] == "()" and game.game_id in headers["kwargsrepr"]
                assert (
                    headers["id"]
                    == f"{game.game_id}:{kwargs['version']}:{kwargs.get('attempt', 1)}"
                )
                if kwargs["expires_at"] > now:
                    key = (kwargs["game_id"], kwargs["version"])
                    alive[key] = alive.get(key, 0) + 1
            most_alive = max([most_alive, *alive.values()])
            assert all(n <= 1 for n in alive.values()), alive
            if stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL).version >= 4:
                break
            time.sleep(0.05)
        view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=CALL)
        assert view.version >= 4, e.log()[-3000:]
        assert most_alive == 1
        raw = b"".join(m if isinstance(m, bytes) else m.encode() for m in r.lrange(QUEUE, 0, -1))
        assert raw and len(sent) >= 3
        assert not any(t.encode() in raw for t in sent)  # the body is encoded, headers plain
        copies = [k for _, k in queued(r) if k["version"] == 1]
        assert sorted(k.get("attempt", 1) for k in copies) == [1, 2, 3]  # then the engine played
        text = urlopen_metrics(e)
        played = re.search(r"^ascension_ai_fallback_moves_total (\S+)$", text, re.M)
        assert played is not None and float(played[1]) >= 3
        log = e.log()
        assert re.search(rf"WARNING ascension.engine.sweeper: AI move of game {game.game_id} seat "
                         r"\d \(version 1, bot '\w+'\) unanswered after 3 dispatches", log)  # fmt: skip
        assert_no_token([*tokens_of(game), *sent], log)
    finally:
        r.delete(QUEUE)
        r.close()
        e.stop()


def urlopen_metrics(e: support.Engine) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{e.metrics_port}/metrics", timeout=5) as resp:
        text: str = resp.read().decode()
    return text

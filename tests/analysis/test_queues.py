"""AI moves and analyses on queues of their own, with a real Redis broker, a real engine and a
real ``ascension-worker run``: a move goes to ``ascension.moves``, a hint's search to
``ascension.analyses``; a worker whose analysis queue holds half a minute of a review's
searches plays AI moves at once while they wait, and takes a player's hint before them; its
analyses node is started again when it dies, and dies with it."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from clients.sdk import Client, UnavailableError, bot, human
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.ai.test_celery_integration import ai, start_worker
from tests.service import support

KEYS = "q" * 40
MOVES, ANALYSES = "ascension.moves", "ascension.analyses"


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


@pytest.fixture(scope="module")
def engine(redis_url: str) -> Iterator[support.Engine]:
    e = support.start_engine(
        redis_url,
        ENGINE_AI_DISPATCH="celery",
        CELERY_BROKER_URL=redis_url,
        ENGINE_AI_TOKEN_KEYS=KEYS,
        ENGINE_ANALYSIS_GRACE_SECONDS="1",
    )
    yield e
    e.stop()


def tasks_in(r: redis.Redis, queue: str) -> list[str]:
    """The task names of the messages waiting in a Celery queue on Redis."""
    return [json.loads(m)["headers"]["task"] for m in r.lrange(queue, 0, -1)]


def test_moves_and_analyses_are_sent_to_their_own_queues(
    engine: support.Engine, redis_url: str
) -> None:
    r = redis.Redis.from_url(redis_url)
    with Client(engine.address, timeout=30.0) as c:
        c.create_game([bot("random", seed=1), human("B")], seed=5)  # (no worker yet)
        g = c.create_game([human("A"), human("B")], seed=6)
        with pytest.raises(UnavailableError) as late:
            c.analyze(g.game_id, g.token(g.view.to_move), 100)
    assert late.value.reason == "ANALYSIS_TIMEOUT"
    assert tasks_in(r, MOVES) == ["ascension.choose_move"]
    assert tasks_in(r, ANALYSES) == ["ascension.analyze_position"]
    r.delete(MOVES, ANALYSES)
    r.close()


def queue_analyses(redis_url: str, engine: support.Engine, n: int, budget_ms: int,
                   game_id: str = "0" * 22, batch: bool = False) -> None:  # fmt: skip
    """``n`` searches of ``budget_ms`` each, sent as the engine sends them (their answers will
    be refused: no engine waits for them)."""
    from engine_service.server.dispatch import CeleryDispatcher

    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=9))
    seat = s.to_move()
    view = base64.b64encode(rules.view(s, seat).serialize()).decode()
    sender = CeleryDispatcher(redis_url)
    now = time.time()
    for _ in range(n):
        sender._send_analysis({
            "analysis_id": secrets.token_hex(8), "game_id": game_id, "seat": seat,
            "version": 1, "view": view, "legal": rules.legal_actions(s), "budget_ms": budget_ms,
            "iterations": 0, "seed": 0, "engine_address": engine.address, "enqueued_at": now,
            "expires_at": now + 600, "reply_seconds": 600, "token": "an1.0.x", "batch": batch,
        })  # fmt: skip


def test_moves_never_wait_behind_analyses_and_hints_go_before_review_searches(
    engine: support.Engine, redis_url: str, tmp_path: Path
) -> None:
    """36 s of a review's searches and then one hint queued for one analysis process: AI moves
    are played while the searches wait, and the hint is searched first (a review's searches
    are sent at a lower priority)."""
    r = redis.Redis.from_url(redis_url)
    reviews, hint, queued = "1" * 22, "2" * 22, 12
    queue_analyses(redis_url, engine, queued, 3000, reviews, batch=True)
    queue_analyses(redis_url, engine, 1, 300, hint)
    batch_list = ANALYSES + "\x06\x169"  # (kombu's list of the priority step 9)
    assert (r.llen(ANALYSES), r.llen(batch_list)) == (1, queued)
    w = start_worker(redis_url, str(support.ROOT), tmp_path, "queues",
                     WORKER_CONCURRENCY="1", WORKER_ANALYSIS_CONCURRENCY="1")  # fmt: skip

    def searched() -> list[str]:  # the games of the searches ended, in order
        return re.findall(r"analysis [0-9a-f]{16} of game (\d+): ", w.log())

    try:
        stub = engine.stub()
        game = stub.CreateGame(epb.CreateGameRequest(sets="ss", seed=11, seats=[
            ai("random", seed=1), ai("random", seed=2)]), timeout=support.CALL_TIMEOUT)  # fmt: skip
        deadline = time.monotonic() + 60
        version = 1
        while version < 31:  # 30 moves of the AI seats
            assert time.monotonic() < deadline, f"the AI moves stalled at version {version}"
            view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id),
                                timeout=support.CALL_TIMEOUT)  # fmt: skip
            version = view.version
            time.sleep(0.05)
        # ... while most of the searches still wait, one running at a time beside the moves
        waiting = r.llen(batch_list)
        assert waiting >= queued - 6, waiting
        while len(searched()) < 2:
            assert time.monotonic() < deadline, "the analyses were not searched"
            time.sleep(0.1)
        assert searched()[:2] == [hint, reviews]
    finally:
        w.stop()
        r.delete(ANALYSES, batch_list)
        r.close()


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def group(pid: int) -> list[int]:
    """The processes of ``pid``'s process group (the analyses node and its pool)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and alive(int(entry.name)):
            try:
                pgid = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[2])
            except (OSError, ValueError):
                continue
            if pgid == pid:
                out.append(int(entry.name))
    return out


def test_the_analyses_node_is_started_again_and_dies_with_its_worker(
    redis_url: str, tmp_path: Path
) -> None:
    from ai_workers.metrics import _children, _is_analyses_node

    w = start_worker(redis_url, str(support.ROOT), tmp_path, "lifecycle",
                     WORKER_CONCURRENCY="1", WORKER_ANALYSIS_CONCURRENCY="1")  # fmt: skip

    def node() -> int | None:
        found = [p for p in _children(w.proc.pid) if _is_analyses_node(p) and alive(p)]
        return found[0] if found else None

    try:
        first = node()
        assert first is not None and len(group(first)) == 2  # the node and its pool process
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while (n := node()) in (None, first) or w.log().count(" ready.") < 3:
            assert time.monotonic() < deadline, "the analyses node was not started again"
            time.sleep(0.1)
        assert not group(first)  # nothing of the killed node is left
        assert "the analyses node exited" in w.log()
        second = n
        assert second is not None
        w.kill()  # SIGKILL to `run` (and its moves node): the analyses node goes too
        deadline = time.monotonic() + 60
        while group(second):
            assert time.monotonic() < deadline, f"left behind: {group(second)}"
            time.sleep(0.1)
    finally:
        w.stop()


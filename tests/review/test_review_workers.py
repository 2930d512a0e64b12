"""A review cut short, with a real Redis broker and a real ``ascension-worker run`` (one move
process, one analysis process): the worker runs the searches the review had started and not
one more; what they rate after the cancel is kept; the review asked again starts from it and
searches each of the other decisions once."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from clients.sdk import Client
from engine_service.api.ascension.v1 import engine_pb2 as epb
from tests.ai.test_celery_integration import Worker, start_worker
from tests.review.support import play
from tests.service import support

KEYS = "r" * 40
FIRST_MS = 2500  # the budget of the review that is cut short: its searches outlast the cut
AGAIN_MS = 200  # the budget of the review asked again (kept ratings of more are used)
ANALYSES = "ascension.analyses\x06\x169"  # (kombu's list of a review's searches: priority 9)


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
        ENGINE_REVIEW_MAX_BUDGET_MS=str(FIRST_MS),
        ENGINE_REVIEW_PARALLEL="2",
        ENGINE_ANALYSIS_GRACE_SECONDS="30",  # a busy machine: the searches queue one by one
    )
    yield e
    e.stop()


@pytest.fixture(scope="module")
def worker(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = start_worker(redis_url, str(support.ROOT), tmp_path_factory.mktemp("worker"), "reviews",
                     WORKER_CONCURRENCY="1", WORKER_ANALYSIS_CONCURRENCY="1")  # fmt: skip
    yield w
    w.stop()


def searched(w: Worker, game_id: str) -> int:
    """Searches of ``game_id`` the worker ran (one log line each as it hands the answer back)."""
    return len(re.findall(rf"of game {game_id}: \d+ iterations in", w.log()))


def received(w: Worker) -> int:
    return len(re.findall(r"Task ascension\.analyze_position\[[^]]*\] received", w.log()))


def wait_for(what: str, predicate: object, seconds: float = 90.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_cut_short_reviews_searches_end_kept_and_the_review_goes_on_from_them(
    engine: support.Engine, worker: Worker, redis_url: str
) -> None:
    broker = redis.Redis.from_url(redis_url)
    with Client(engine.address, timeout=120.0) as c:
        g, _, _ = play(c, 51, turns=6)
        gid, token = g.game_id, g.token(0)
        before = received(worker)
        call = engine.stub().ReviewGame(
            epb.ReviewGameRequest(game_id=gid, token=token, budget_ms=FIRST_MS), timeout=120
        )
        # Cut once the worker has begun the first search and both are on their way.
        wait_for("the searches sent", lambda: received(worker) > before
                 and received(worker) - before + broker.llen(ANALYSES) == 2)  # fmt: skip
        call.cancel()
        with pytest.raises(grpc.RpcError) as cut:
            list(call)
        assert cut.value.code() == grpc.StatusCode.CANCELLED
        assert searched(worker, gid) == 0  # (both outlast the cut)
        # The two end on the worker, and nothing more is sent: the third search would have
        # gone out as the first ended, had the review gone on.
        wait_for("the two searches", lambda: searched(worker, gid) == 2)
        assert received(worker) - before == 2 and broker.llen(ANALYSES) == 0

        again = list(c.review(gid, token, budget_ms=AGAIN_MS))
    broker.close()
    assert len(again) >= 4
    # what the cut review's searches rated, kept although nobody read it
    assert [(r.stored, r.budget_ms) for r in again[:2]] == [(True, FIRST_MS)] * 2
    assert [(r.stored, r.budget_ms) for r in again[2:]] == [(False, AGAIN_MS)] * (len(again) - 2)
    # each decision searched once in all (the worker logs a search once it has answered)
    wait_for("the worker's log", lambda: searched(worker, gid) >= len(again))
    assert searched(worker, gid) == len(again) == received(worker) - before
    assert "Traceback" not in worker.log()


def test_analyses_run_on_their_own_niced_node(worker: Worker, redis_url: str) -> None:
    """The analyses node: a child of ``run`` consuming ascension.analyses only, 10 below the
    moves' CPU priority; the moves node consumes ascension.moves only."""
    from celery import Celery

    from ai_workers.metrics import _children, _is_analyses_node

    host = socket.gethostname()
    moves, analyses = f"reviews@{host}", f"reviews.analyses@{host}"
    app = Celery("queues-test", broker=redis_url, set_as_current=False)
    queues = app.control.inspect(destination=[moves, analyses], timeout=10).active_queues()
    assert {node: [q["name"] for q in qs] for node, qs in (queues or {}).items()} == {
        moves: ["ascension.moves"],
        analyses: ["ascension.analyses"],
    }
    nodes = [p for p in _children(worker.proc.pid) if _is_analyses_node(p)]
    assert len(nodes) == 1

    def nice(pid: int) -> int:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])

    assert nice(nodes[0]) - nice(worker.proc.pid) == 10
    assert all(nice(p) == nice(nodes[0]) for p in _children(nodes[0]))  # its pool too

"""AnalyzePosition through Celery for real: a Redis, engines dispatching to it, and an
``ascension-worker run`` that searches and hands the answer back with ``SubmitAnalysis``.

Engine A tells the workers to answer at engine B (its ENGINE_ADVERTISE_ADDRESS), as a load
balancer in front of several replicas would: B leaves the answer in the store and A, which
waits, takes it there. A search reads nothing but the seat's view: the same position with
every card the seat cannot see dealt again gives the same candidates, visit for visit.
Without a worker, the call ends with DEADLINE_EXCEEDED.
"""

from __future__ import annotations

import random
import re
import urllib.request
from collections.abc import Iterator

import pytest
import redis

from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import forced_action, rollout_action
from clients.sdk import Client, UnavailableError, human
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.store import keys
from tests.ai.test_celery_integration import Worker, start_worker
from tests.ai.test_hidden_information import differs_in_hidden_cards, other_deal
from tests.service import support

KEYS = "k" * 40  # replicas that share a store share the AI credential keys
ITERATIONS = 200  # a fixed search, whatever the machine's speed


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    with support.redis_server() as url:
        yield url


def celery_engine(broker: str, redis_url: str, **env: str) -> support.Engine:
    return support.start_engine(
        redis_url,
        ENGINE_AI_DISPATCH="celery",
        CELERY_BROKER_URL=broker,
        ENGINE_AI_TOKEN_KEYS=KEYS,
        ENGINE_ANALYSIS_MAX_BUDGET_MS="20000",
        ENGINE_ANALYSIS_MAX_ITERATIONS=str(ITERATIONS),
        ENGINE_REVIEW_MAX_BUDGET_MS="20000",
        **env,
    )


@pytest.fixture(scope="module")
def engines(redis_url: str) -> Iterator[tuple[support.Engine, support.Engine]]:
    b = celery_engine(redis_url, redis_url)
    a = celery_engine(redis_url, redis_url, ENGINE_ADVERTISE_ADDRESS=b.address)
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture(scope="module")
def worker(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    w = start_worker(redis_url, str(support.ROOT), tmp_path_factory.mktemp("worker"), "hints",
                     WORKER_CONCURRENCY="1")  # fmt: skip
    yield w
    w.stop()


def play_to_mid_game(client: Client, seed: int) -> tuple[str, list[str], rules.State]:
    """A game of two people played (through the engine) to a choice of several actions from
    turn 4; returns its id, the seat tokens and the state, as simulated here too."""
    g = client.create_game([human("A"), human("B")], seed=seed, sets="both")
    s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=seed))
    K = knowledge(s.T)
    rnd = random.Random(seed)
    while True:
        legal = rules.legal_actions(s)
        if s.turn >= 4 and len(legal) > 2 and forced_action(s, legal, K) is None:
            return g.game_id, list(g.seat_tokens), s
        action = rollout_action(s, legal, K, rnd, 0.1)
        client.submit(g.game_id, g.token(s.to_move()), action)
        rules.apply(s, action)


def answers_taken(engine: support.Engine) -> int:
    """SubmitAnalysis calls the engine accepted (its metrics)."""
    url = f"http://127.0.0.1:{engine.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as page:
        text = page.read().decode()
    pattern = r'ascension_grpc_requests_total\{code="OK",method="SubmitAnalysis"\} (\S+)'
    m = re.search(pattern, text)
    return int(float(m.group(1))) if m else 0


def candidates(a: epb.AnalyzePositionResponse) -> list[tuple[int, int, float, str]]:
    return [(c.action, c.visits, c.win_probability, c.description) for c in a.candidates]


def test_a_worker_answers_through_another_replica_and_sees_no_hidden_card(
    engines: tuple[support.Engine, support.Engine], worker: Worker, redis_url: str
) -> None:
    a, b = engines
    with Client(a.address, timeout=60.0) as ca, Client(b.address, timeout=60.0) as cb:
        gid, tokens, s = play_to_mid_game(ca, 3)
        seat = s.to_move()
        before = ca.get_view(gid, tokens[seat])
        # A waits; the worker answers at B, which leaves the answer in the store for A.
        first = ca.analyze(gid, tokens[seat], 20_000)
        assert first.iterations == ITERATIONS and first.version == before.version
        assert {c.action for c in first.candidates} == {x.id for x in before.legal_actions}

        # The cards this seat cannot see, dealt again in the store.
        r = redis.Redis.from_url(redis_url)
        record = keys.game_keys(gid)[0]
        raw = r.hget(record, "state")
        assert isinstance(raw, bytes)
        stored = rules.deserialize(raw)
        assert rules.view(stored, seat) == rules.view(s, seat)
        alt = other_deal(stored, seat, 0)
        assert differs_in_hidden_cards(stored, alt, seat)
        r.hset(record, "state", rules.serialize(alt))
        r.close()
        # B never read this game: it reads the new deal, and shows the seat the same view.
        after = cb.get_view(gid, tokens[seat])
        assert after.rules_view == before.rules_view
        second = cb.analyze(gid, tokens[seat], 20_000)
    assert candidates(second) == candidates(first)
    assert (answers_taken(a), answers_taken(b)) == (0, 2)  # both answers reached B
    assert "analysis" in worker.log() and "Traceback" not in worker.log()


def test_without_a_worker_the_call_ends_with_deadline_exceeded(redis_url: str) -> None:
    idle_broker = redis_url.rsplit("/", 1)[0] + "/5"  # a queue no worker consumes
    e = celery_engine(idle_broker, redis_url, ENGINE_ANALYSIS_GRACE_SECONDS="1")
    try:
        with Client(e.address, timeout=30.0) as c:
            g = c.create_game([human("A"), human("B")], seed=4)
            with pytest.raises(UnavailableError) as err:
                c.analyze(g.game_id, g.token(g.view.to_move), 100)
    finally:
        e.stop()
    assert (err.value.code, err.value.reason) == ("DEADLINE_EXCEEDED", "ANALYSIS_TIMEOUT")
    assert "no AI worker answered" in err.value.message
    assert int(err.value.metadata["waited_ms"]) >= 1000  # it waited (the budget and) the grace


def test_a_review_is_rated_by_the_workers_through_another_replica(
    engines: tuple[support.Engine, support.Engine], worker: Worker
) -> None:
    """ReviewGame's searches go the hints' way: a Celery task each, answered at B, taken from
    the store by A, which streams the ratings."""
    a, b = engines
    with Client(a.address, timeout=60.0) as ca:
        gid, tokens, s = play_to_mid_game(ca, 5)
        seat = 1 - s.to_move()  # (the seat that moved last: it has decisions behind it)
        before = answers_taken(b)
        reviews = list(ca.review(gid, tokens[seat], budget_ms=20_000))
        again = list(ca.review(gid, tokens[seat]))
    assert reviews and all(r.iterations == ITERATIONS and r.seat == seat for r in reviews)
    assert all(len(r.win_probabilities) == 2 for r in reviews)
    assert answers_taken(b) - before == len(reviews)  # one search each, all answered at B
    assert [r.stored for r in again] == [True] * len(reviews)

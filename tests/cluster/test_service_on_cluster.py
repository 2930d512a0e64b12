"""The service suite's main flows, run again with the games in a Redis Cluster: the same test
functions as on a single Redis (imported from tests/service), with this directory's fixtures
(``engine``/``stub`` on the cluster, second replicas and stores in cluster mode)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

import pytest

from engine_service.store import Store
from engine_service.store.redis_store import RedisStore
from tests.cluster.cluster import LocalCluster
from tests.cluster.conftest import CLUSTER_ENV
from tests.service import support
from tests.service.test_errors import (  # noqa: F401
    test_illegal_action_gives_the_rules_reason,
    test_not_your_turn,
    test_replay_of_a_running_game_is_refused,
    test_stale_version_is_aborted_with_the_current_version,
    test_submit_after_the_end,
    test_unknown_game,
)
from tests.service.test_game_flow import (  # noqa: F401
    test_delete_game,
    test_full_game_through_the_api,
    test_list_games_pages_newest_first,
    test_submit_can_answer_with_legal_actions_only,
    test_view_carries_legal_actions_and_rules_view,
)
from tests.service.test_hidden_information import test_updates_carry_no_hidden_card  # noqa: F401
from tests.service.test_idempotency import (  # noqa: F401
    test_concurrent_duplicates_apply_once,
    test_key_reused_for_another_request_is_refused,
    test_retry_returns_the_first_answer,
)
from tests.service.test_store import (  # noqa: F401
    SETTINGS,
    test_a_blocking_read_wakes_on_a_commit,
    test_a_finished_game_keeps_its_window_a_while_then_what_replay_needs,
    test_compare_and_set_on_version_and_commit_id,
    test_list_games_walks_every_bucket_newest_first,
    test_the_cache_notices_a_store_that_went_back_in_time,
    test_the_window_of_updates_and_idempotency_keys,
)
from tests.service.test_submit_paths import (  # noqa: F401
    test_game_deleted_by_another_replica,
    test_game_moved_on_by_another_replica,
    test_refusals_on_the_version_held,
    test_submits_on_a_warm_replica_skip_the_read,
)


@pytest.fixture(scope="module")
def second_engine(cluster: LocalCluster) -> Iterator[support.Engine]:
    """Another replica on the same cluster."""
    e = support.start_engine(cluster.url, **CLUSTER_ENV)
    yield e
    e.stop()


@pytest.fixture
def other(second_engine: support.Engine) -> support.Engine:
    return second_engine  # test_submit_paths' name for it


@pytest.fixture
def memory_engine(engine: support.Engine) -> support.Engine:
    """test_full_game_through_the_api asks for it; its memory case is not run here."""
    return engine


@pytest.fixture(params=["redis"])
def make_store(cluster: LocalCluster) -> Iterator[Callable[..., Store]]:
    def make(**settings: int) -> Store:
        s = dataclasses.replace(SETTINGS, **settings)
        return RedisStore(cluster.url, s, timeout=2.0, mode="cluster")

    yield make

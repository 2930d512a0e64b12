"""Fixtures of the Redis Cluster tests: one real local cluster for the session (3 primaries,
each with a replica for the failover tests; a 1 s ``cluster-node-timeout`` so that a failover
takes a few seconds), and the engine on it (``ENGINE_REDIS_MODE=cluster``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from tests.cluster.cluster import LocalCluster, local_cluster
from tests.service import support

CLUSTER_ENV = {"ENGINE_REDIS_MODE": "cluster"}


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    # replica-validity-factor 0: a replica stands for election however long it was cut off
    # from its primary (a test cuts it off on purpose).
    with local_cluster(masters=3, replicas=1, node_timeout_ms=1000,
                       extra=["--cluster-replica-validity-factor", "0"]) as c:  # fmt: skip
        yield c


@pytest.fixture(scope="session")
def engine(cluster: LocalCluster) -> Iterator[support.Engine]:
    e = support.start_engine(cluster.url, **CLUSTER_ENV)
    yield e
    e.stop()


@pytest.fixture(scope="session")
def stub(engine: support.Engine) -> rpc.EngineStub:
    return engine.stub()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The service tests imported here run on the cluster only (not again in memory)."""
    for item in list(items):
        callspec = getattr(item, "callspec", None)
        in_here = "tests/cluster/" in str(item.path)
        if in_here and callspec is not None and "memory" in callspec.params.values():
            items.remove(item)

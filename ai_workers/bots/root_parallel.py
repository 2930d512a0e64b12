"""Root parallelism: one decision searched by several processes at once.

Each process runs its own ISMCTS from the same view with its own seed (so over other samples of
the hidden cards) for the whole budget; their root statistics are summed, and the answer is the
action with the most visits over all of them. The trees are not shared: this is the simplest
parallel search, and at a few processes nearly as strong as one search with as many iterations.

Used by ``ISMCTSBot`` when ``SearchOptions.workers`` > 1 (benchmarks' ``ismcts:workers=2``),
through ``ismcts.parallel_search``, which hands its search function in: this module knows of
a search only that it reports root visits and values. The helper processes are one pool per
bot process, started on first use and kept; the search in this process is one of the shares.
With an iteration budget, the iterations are split among the shares; with a time budget,
every share searches for that time.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.util
import os
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import replace
from typing import Any, Protocol

from ai_workers.bots.settings import BotSettings
from engine_service import rules


class RootStats(Protocol):
    """What a share's search reports: visits and mean reward of each root action."""

    @property
    def visits(self) -> dict[int, int]: ...

    @property
    def values(self) -> dict[int, float]: ...

    @property
    def iterations(self) -> int: ...


# search(view, legal, settings, options) with options for one process (picklable: a helper
# process is handed it with each share)
Search = Callable[[rules.View, list[int], BotSettings, Any], RootStats]
Share = tuple[dict[int, int], dict[int, float], int]  # root visits, reward sums, iterations

GOLDEN = 0x9E3779B97F4A7C15  # spreads the shares' seeds over the 64-bit range
DISPATCH_MS = 2  # a helper starts this much later than the local share: it stops as much earlier

_pool: ProcessPoolExecutor | None = None
_pool_size = 0
_pool_pid = 0


def _helpers(n: int) -> ProcessPoolExecutor:
    """A pool of ``n`` helper processes, made once per process (again after a fork)."""
    global _pool, _pool_size, _pool_pid
    if _pool is None or _pool_size < n or _pool_pid != os.getpid():
        if _pool is not None and _pool_pid == os.getpid():
            _pool.shutdown(wait=False, cancel_futures=True)
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
        _pool, _pool_size, _pool_pid = ProcessPoolExecutor(n, mp_context=ctx), n, os.getpid()
        # A multiprocessing child (a benchmark's or a worker pool's process) exits by joining
        # its children before any atexit hook: the helpers, which wait for work for ever, must
        # be stopped first or the child never exits. Finalizers with a priority run before that
        # join, highest first; above 10, the priority of the pool's own queue closing its feed
        # (after which the helpers' stop signal would never reach them). Tied to no object: one
        # tied to this pool would run when a larger pool replaces it, and stop the new one.
        multiprocessing.util.Finalize(None, shutdown, exitpriority=100)
    return _pool


def shutdown() -> None:
    """Stop this process's helpers, if it started any (they also stop when it exits)."""
    global _pool, _pool_size
    if _pool is not None and _pool_pid == os.getpid():
        _pool.shutdown(wait=True, cancel_futures=True)
    _pool, _pool_size = None, 0


def _share_settings(settings: BotSettings, k: int, shares: int) -> BotSettings:
    seed = (settings.seed + k * GOLDEN) % 2**64
    iterations = -(-settings.iterations // shares) if settings.iterations else 0
    time_ms = settings.time_ms
    if k and time_ms:
        time_ms = max(1, time_ms - DISPATCH_MS)
    return replace(settings, seed=seed, iterations=iterations, time_ms=time_ms)


def _share(
    search: Search, view_bytes: bytes, legal: list[int], settings: BotSettings, options: Any
) -> Share:
    """One share's search: its root visits, reward sums and iterations."""
    r = search(rules.View.deserialize(view_bytes), legal, settings, options)
    return r.visits, {a: v * r.visits[a] for a, v in r.values.items()}, r.iterations


def merged_roots(
    search: Search,
    view: rules.View,
    legal: list[int],
    settings: BotSettings,
    options: Any,
    shares: int,
) -> tuple[dict[int, int], dict[int, float], int]:
    """Root visits, mean rewards and iterations of ``shares`` searches of ``view`` (this
    process's and ``shares - 1`` helpers'), each with its own seed; ``options`` are those of
    one process's search."""
    pool = _helpers(shares - 1)
    blob = view.serialize()
    futures: list[Future[Share]] = [
        pool.submit(_share, search, blob, legal, _share_settings(settings, k, shares), options)
        for k in range(1, shares)
    ]
    mine = search(view, legal, _share_settings(settings, 0, shares), options)
    visits = dict(mine.visits)
    sums = {a: v * mine.visits[a] for a, v in mine.values.items()}
    iterations = mine.iterations
    for f in futures:
        vis, tot, its = f.result()
        iterations += its
        for a, n in vis.items():
            visits[a] = visits.get(a, 0) + n
        for a, t in tot.items():
            sums[a] = sums.get(a, 0.0) + t
    values = {a: sums[a] / visits[a] for a in sums if visits.get(a)}
    return visits, values, iterations

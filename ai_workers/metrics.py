"""The worker's Prometheus metrics.

Under ``ascension-worker run`` the process pool's children write their samples to
``PROMETHEUS_MULTIPROC_DIR`` (set before this module is imported) and the parent serves them
all on ``WORKER_METRICS_PORT``; in the engine's embedded pool they live in that process.

Names end with their unit. No ``_created`` series are exported; the counters whose label
values are known in advance are exported at 0 by :func:`preinitialise` (``ascension-worker
run`` calls it), so dashboards show 0 rather than no data.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from ai_workers.bots.decide import BOT_RAISED, ILLEGAL_ACTION, LOAD_FAILED, NO_RULES_VIEW
from ai_workers.supervisor import BAD_ANSWER, BOT_DIED, DEADLINE, LOAD_TIMEOUT, QUARANTINED

disable_created_metrics()  # type: ignore[no-untyped-call]

DECISION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
WAIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
IPS_BUCKETS = (100, 250, 500, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 12000, 20000)

moves = Counter("ascension_worker_moves_total", "AI moves submitted, by bot", ["bot"])
fallbacks = Counter(
    "ascension_worker_fallback_moves_total",
    "moves played by the fallback instead of the bot: it raised, answered an illegal action,"
    " overran its deadline (deadline, load_timeout), killed its process (bot_died), is"
    " quarantined, or the move was dead-lettered (dead_letter)",
    ["bot", "reason"],
)
DEAD_LETTER_REASONS = ("worker_lost", "time_limit", "redelivered")
dead_letters = Counter(
    "ascension_worker_dead_letters_total",
    "move tasks not delivered again: their worker process died (worker_lost), they hit the"
    " hard time limit (time_limit), or the broker delivered them again after a worker had"
    " started them and died (redelivered)",
    ["reason"],
)
decision_seconds = Histogram(
    "ascension_worker_decision_seconds", "time to choose a move", ["bot"], buckets=DECISION_BUCKETS
)
mcts_ips = Gauge(
    "ascension_worker_mcts_iterations_per_second",
    "ISMCTS iterations per second of the latest search",
    multiprocess_mode="mostrecent",
)
mcts_ips_hist = Histogram(
    "ascension_worker_mcts_search_iterations_per_second",
    "ISMCTS iterations per second, one observation per search",
    buckets=IPS_BUCKETS,
)
task_failures = Counter("ascension_worker_task_failures_total", "move tasks that failed")
task_retries = Counter("ascension_worker_task_retries_total", "move tasks retried")
queue_wait = Histogram(
    "ascension_worker_queue_wait_seconds",
    "time from the engine enqueuing a move to a worker starting it",
    buckets=WAIT_BUCKETS,
)
outcomes = Counter(
    "ascension_worker_move_outcomes_total",
    "what became of each move request: played, stale, lost_race, replayed, gone, expired, deferred",
    ["outcome"],
)

# Why a fallback move was played (the `reason` label of fallbacks): a bounded set, so the
# series can be exported at 0 and an exception's type never becomes a label value.
FALLBACK_BOT_RAISED = BOT_RAISED
FALLBACK_ILLEGAL_ACTION = ILLEGAL_ACTION
FALLBACK_NO_RULES_VIEW = NO_RULES_VIEW
# The bot was not asked: quarantined on this worker, or its move was dead-lettered.
FALLBACK_QUARANTINED = QUARANTINED
FALLBACK_DEAD_LETTER = "dead_letter"
# The bot host gave no usable answer (ai_workers/supervisor.py).
SUPERVISOR_REASONS = (DEADLINE, LOAD_TIMEOUT, BOT_DIED, LOAD_FAILED, BAD_ANSWER)
FALLBACK_REASONS = (
    FALLBACK_BOT_RAISED,
    FALLBACK_ILLEGAL_ACTION,
    FALLBACK_NO_RULES_VIEW,
    *SUPERVISOR_REASONS,
    FALLBACK_QUARANTINED,
    FALLBACK_DEAD_LETTER,
)
OUTCOMES = ("played", "stale", "lost_race", "replayed", "gone", "expired", "deferred")


def fallback_reason(why: str) -> str:
    """The `reason` label of a fallback, from ai_workers.bots.decide's explanation."""
    if why in FALLBACK_REASONS:
        return why
    if why.startswith("raised"):
        return FALLBACK_BOT_RAISED
    if why == "illegal action":
        return FALLBACK_ILLEGAL_ACTION
    return FALLBACK_NO_RULES_VIEW


def preinitialise(bots: Iterable[str]) -> None:
    """Export every known label combination of the counters at 0."""
    for outcome in OUTCOMES:
        outcomes.labels(outcome)
    for bot in bots:
        moves.labels(bot)
        for reason in FALLBACK_REASONS:
            fallbacks.labels(bot, reason)
    for reason in DEAD_LETTER_REASONS:
        dead_letters.labels(reason)
    task_failures.inc(0)
    task_retries.inc(0)


def _parents() -> dict[int, int]:
    """Parent of every process (Linux /proc)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # Fields after the command name, which is in parentheses and may hold spaces.
        fields = stat.rsplit(")", 1)[1].split()
        found[int(entry.name)] = int(fields[1])
    return found


def _children(pid: int, parents: dict[int, int] | None = None) -> list[int]:
    """Direct child processes of `pid`."""
    return [child for child, parent in (parents or _parents()).items() if parent == pid]


def _is_analyses_node(pid: int) -> bool:
    try:
        return b"analyses-node" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class PoolCollector(Collector):
    """CPU and memory of the Celery pool's processes and of their bot hosts (the children
    that run the bots, ai_workers/supervisor.py), which do the searching.

    The standard ``process_*`` series describe the process serving /metrics, the worker's
    parent; its pool processes (the moves node's and the analyses node's) and their bot hosts
    are summed here, with the analyses node's own process (Linux only; nothing is exported
    elsewhere). ``ascension_worker_pool_processes`` counts the pool processes only.
    """

    def __init__(self, pid: int | None = None) -> None:
        self.pid = pid or os.getpid()
        self._ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def _usage(self, pid: int) -> tuple[float, int]:
        """(CPU seconds, resident bytes) of a process; nothing once it has exited."""
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0, 0
        # utime and stime are fields 14 and 15 of stat, rss (pages) field 24.
        return (int(fields[11]) + int(fields[12])) / self._ticks, int(fields[21]) * self._page

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        if not Path("/proc/self/stat").exists():
            return
        cpu, rss, count = 0.0, 0, 0
        parents = _parents()
        for child in _children(self.pid, parents):
            # The analyses node (ai_workers/analysis_node.py) is a Celery main process of its
            # own: its pool processes are its children.
            node = _is_analyses_node(child)
            pool = _children(child, parents) if node else [child]
            for proc in pool:
                for pid in (proc, *_children(proc, parents)):  # a pool process, its bot host
                    got = self._usage(pid)
                    cpu, rss, count = cpu + got[0], rss + got[1], count + (pid == proc)
            if node:
                got = self._usage(child)
                cpu, rss = cpu + got[0], rss + got[1]
        yield GaugeMetricFamily(
            "ascension_worker_pool_processes", "Celery pool processes of this worker", count
        )
        yield CounterMetricFamily(
            "ascension_worker_pool_cpu_seconds",
            "user and system CPU time of the current pool processes and bot hosts, summed",
            cpu,
        )
        yield GaugeMetricFamily(
            "ascension_worker_pool_resident_memory_bytes",
            "resident memory of the pool processes and bot hosts, summed",
            rss,
        )


# TLS (ai_workers/client_tls.py): the same names as the engine's, for the client certificate
# the pool presents to the engine under mutual TLS (role client). Set by the worker's parent
# only: the pool processes it forks hold their copy at 0 (prometheus_client's multiprocess
# values of a forked process start again), hence the gauges' max.
tls_expiry = Gauge(
    "ascension_tls_certificate_expiry_timestamp_seconds",
    "notAfter (Unix time) of the TLS certificate this process serves (role server) or "
    "presents (role client): the one new connections get",
    ["role"],
    multiprocess_mode="livemax",
)
tls_reloads = Counter(
    "ascension_tls_reloads_total",
    "renewed TLS files taken (result loaded) or refused (result refused: a key not of its "
    "certificate, an unreadable file; the set in use is kept)",
    ["role", "result"],
)
tls_refused = Gauge(
    "ascension_tls_files_refused",
    "1 while the TLS files on disk differ from those in use and cannot be used",
    ["role"],
    multiprocess_mode="livemax",
)
tls_ca_expiry = Gauge(
    "ascension_tls_ca_expiry_timestamp_seconds",
    "the soonest notAfter (Unix time) in the CA bundle this process trusts: the client CA "
    "under mutual TLS (role server), the CA of the engine's certificate (role client)",
    ["role"],
    multiprocess_mode="livemax",
)

"""The worker's Prometheus metrics.

Under ``ascension-worker run`` the process pool's children write their samples to
``PROMETHEUS_MULTIPROC_DIR`` (set before this module is imported) and the parent serves them
all on ``WORKER_METRICS_PORT``; in the engine's embedded pool they live in that process.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

DECISION_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
WAIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
IPS_BUCKETS = (100, 250, 500, 1000, 1500, 2000, 3000, 4000, 6000, 8000, 12000, 20000)

moves = Counter("ascension_worker_moves_total", "AI moves submitted, by bot", ["bot"])
fallbacks = Counter(
    "ascension_worker_fallback_moves_total",
    "moves played by the fallback because the bot raised or answered an illegal action",
    ["bot", "reason"],
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
    "ascension_worker_mcts_iterations_per_second_distribution",
    "ISMCTS iterations per second, per search",
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
    "what became of each move request: played, stale, lost_race, replayed, gone",
    ["outcome"],
)

"""``ascension-worker``: run an AI worker, probe it, or explain where the sweeper went.

ascension-worker run      the Celery worker on queue ascension.moves (prefork, prefetch 1,
                          WORKER_CONCURRENCY processes), metrics on WORKER_METRICS_PORT
ascension-worker check    exit 0 when this host's worker answers a ping (liveness probe)
ascension-worker sweeper  the sweeper runs inside the engine: prints so and exits 0
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ai_workers import config

SWEEPER_NOTE = (
    "ascension-worker sweeper: nothing to run. Stalled AI moves are re-dispatched by the engine "
    "itself (every replica sweeps; ENGINE_AI_SWEEP_SECONDS, ENGINE_AI_STALL_SECONDS)."
)


def _multiproc_dir() -> str:
    """PROMETHEUS_MULTIPROC_DIR for the pool's children (a fresh temp dir if unset); stale
    samples of an earlier run are removed. Must run before prometheus_client is imported."""
    path = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "").strip()
    if not path:
        path = tempfile.mkdtemp(prefix="ascension-worker-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = path
    Path(path).mkdir(parents=True, exist_ok=True)
    for f in Path(path).glob("*.db"):
        f.unlink()
    return path


def _serve_metrics(port: int) -> None:
    from prometheus_client import CollectorRegistry, multiprocess, start_http_server

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    start_http_server(port, registry=registry)


def _mark_dead_children() -> None:
    from celery import signals
    from prometheus_client import multiprocess

    @signals.worker_process_shutdown.connect  # type: ignore[untyped-decorator]
    def _dead(pid: int | None = None, **_: Any) -> None:
        multiprocess.mark_process_dead(pid or os.getpid())  # type: ignore[no-untyped-call]


def run(cfg: config.WorkerConfig) -> int:
    if "prometheus_client" in sys.modules and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        raise RuntimeError("prometheus_client was imported before its multiprocess dir was set")
    _multiproc_dir()
    os.environ.setdefault("ENGINE_ADDRESS", cfg.engine_address)
    from ai_workers.celery_app import app

    _mark_dead_children()
    if cfg.metrics_port:
        _serve_metrics(cfg.metrics_port)
    argv = [
        "worker",
        "--queues", config.QUEUE,
        "--pool", "prefork",
        "--concurrency", str(cfg.concurrency),
        "--prefetch-multiplier", "1",
        "--hostname", cfg.node_name,
        "--loglevel", cfg.log_level,
        "--without-gossip",
        "--without-mingle",
    ]  # fmt: skip
    app.worker_main(argv)
    return 0


def check(cfg: config.WorkerConfig, timeout: float) -> int:
    from celery import Celery

    app = Celery("ascension-worker-check", broker=cfg.broker_url, set_as_current=False)
    app.conf.broker_connection_timeout = timeout
    app.conf.broker_connection_retry_on_startup = False
    app.conf.broker_connection_max_retries = 1
    try:
        replies = app.control.ping(destination=[cfg.node], timeout=timeout)
    except Exception as e:
        print(f"ascension-worker check: broker unreachable: {e}", file=sys.stderr)
        return 1
    if any(cfg.node in r for r in replies or []):
        print(f"{cfg.node}: pong")
        return 0
    print(f"ascension-worker check: {cfg.node} did not answer within {timeout:g}s", file=sys.stderr)
    return 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ascension-worker", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="run the Celery worker (queue ascension.moves)")
    c = sub.add_parser("check", help="liveness: exit 0 if this host's worker answers a ping")
    c.add_argument("--timeout", type=float, default=3.0, help="seconds to wait (default 3)")
    sub.add_parser("sweeper", help="the sweeper lives in the engine: print so and exit 0")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "sweeper":
        print(SWEEPER_NOTE)
        return 0
    try:
        cfg = config.load()
    except ValueError as e:
        print(f"ascension-worker: configuration error: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=cfg.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "check":
        return check(cfg, args.timeout)
    return run(cfg)


if __name__ == "__main__":
    sys.exit(main())

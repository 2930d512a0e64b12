"""``ascension-worker``: run an AI worker, probe it, or explain where the sweeper went.

ascension-worker run      the Celery worker on queue ascension.moves (prefork, prefetch 1,
                          WORKER_CONCURRENCY processes, bots in supervised bot hosts), and
                          its analyses node on queue ascension.analyses (hints, review
                          searches: WORKER_ANALYSIS_CONCURRENCY processes at a lower CPU
                          priority, ai_workers/analysis_node.py); metrics on
                          WORKER_METRICS_PORT; the broker must be set
                          (CELERY_BROKER_URL or CELERY_BROKER_URL_FILE; neither: exit 2)
ascension-worker check    exit 0 when this host's worker answers a ping through the broker
                          (CELERY_BROKER_URL or CELERY_BROKER_URL_FILE; neither: exit 2)
ascension-worker check --local
                          exit 0 while this host's worker writes its heartbeat file (the
                          liveness probe: no broker round trip)
ascension-worker sweeper  the sweeper runs inside the engine: prints so and exits 0
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from ai_workers import config, heartbeat
from ai_workers.analysis_node import COMMAND as ANALYSES_NODE
from ai_workers.analysis_node import AnalysisNode, worker_argv
from engine_service import redis_urls

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


def _state_dir() -> str:
    """The node's bot records and slot locks (ai_workers/slots.py): a fresh temp dir per run,
    shared by the pool's processes."""
    from ai_workers.slots import STATE_DIR_ENV

    path = tempfile.mkdtemp(prefix="ascension-worker-bots-")
    os.environ[STATE_DIR_ENV] = path
    return path


def _serve_metrics(port: int) -> None:
    from prometheus_client import (
        CollectorRegistry,
        PlatformCollector,
        ProcessCollector,
        multiprocess,
        start_http_server,
    )

    from ai_workers import metrics
    from ai_workers.bots.registry import available_bots

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
    # process_* of this (parent) process; the pool's processes are summed by PoolCollector.
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    registry.register(metrics.PoolCollector())
    metrics.preinitialise(available_bots())
    start_http_server(port, registry=registry)


def _mark_dead_children() -> None:
    from celery import signals
    from prometheus_client import multiprocess

    @signals.worker_process_shutdown.connect(weak=False)  # type: ignore[untyped-decorator]
    def _dead(pid: int | None = None, **_: Any) -> None:
        multiprocess.mark_process_dead(pid or os.getpid())  # type: ignore[no-untyped-call]


def _setup_telemetry(cfg: config.WorkerConfig) -> None:
    """LOG_FORMAT=json or tracing: our log format instead of Celery's; tracing is set up in
    each pool process as it starts (a tracer provider does not survive a fork). The
    receivers are local functions: connected with weak=False, or they would be collected."""
    from celery import signals

    from engine_service import telemetry

    if telemetry.log_format() == "text" and telemetry.tracing_mode() == "off":
        return

    @signals.setup_logging.connect(weak=False)  # type: ignore[untyped-decorator]
    def _logging(**_: Any) -> None:
        telemetry.configure_logging(cfg.log_level)

    @signals.worker_process_init.connect(weak=False)  # type: ignore[untyped-decorator]
    def _tracing(**_: Any) -> None:
        if telemetry.configure_tracing("ascension-worker"):
            telemetry.instrument_worker()

    @signals.worker_process_shutdown.connect(weak=False)  # type: ignore[untyped-decorator]
    def _flush(**_: Any) -> None:
        telemetry.shutdown_tracing()


def run(cfg: config.WorkerConfig) -> int:
    if "prometheus_client" in sys.modules and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        raise RuntimeError("prometheus_client was imported before its multiprocess dir was set")
    _multiproc_dir()
    state = _state_dir()
    os.environ.setdefault("ENGINE_ADDRESS", cfg.engine_address)
    from ai_workers.celery_app import app

    _mark_dead_children()
    _setup_telemetry(cfg)
    if cfg.metrics_port:
        try:
            _serve_metrics(cfg.metrics_port)
        except OSError as e:  # another worker (or engine) of this host holds it
            print(f"ascension-worker run: WORKER_METRICS_PORT {cfg.metrics_port}: {e.strerror}; "
                  "set another port (0 turns the metrics off)", file=sys.stderr)  # fmt: skip
            shutil.rmtree(state, ignore_errors=True)
            return 2
    from ai_workers import client_tls
    from clients.sdk.tls import TLS

    tls_stop = threading.Event()
    client_tls.watch(TLS.from_env(), tls_stop)  # checked in main()
    from ai_workers.bots.registry import describe_bots

    logging.getLogger("ascension.worker").info("%s", describe_bots())
    node = cfg.node
    heartbeat.start(node, cfg.broker_url)
    analyses = AnalysisNode(cfg, node) if cfg.analysis_concurrency else None
    if analyses is not None:
        analyses.start()
    try:
        app.worker_main(worker_argv(config.QUEUE, cfg.concurrency, node, cfg.log_level))
    finally:
        tls_stop.set()
        if analyses is not None:
            analyses.stop(cfg.time_limit)
        shutil.rmtree(state, ignore_errors=True)
    return 0


def _local_beats(cfg: config.WorkerConfig) -> list[heartbeat.Beat]:
    """Heartbeats of this host's live workers (the configured node only, when its name
    does not depend on the process id)."""
    beats = [b for b in heartbeat.read_all() if b.process_alive()]
    if "%p" not in cfg.node_name:
        beats = [b for b in beats if b.node == cfg.node]
    return beats


def check_local(cfg: config.WorkerConfig, max_age: float) -> int:
    """Liveness without the broker: a live worker process of this host wrote its heartbeat
    within `max_age` seconds."""
    beats = _local_beats(cfg)
    fresh = [b for b in beats if b.age() <= max_age]
    for b in fresh:
        print(f"{b.node}: alive (pid {b.pid}, heartbeat {b.age():.0f}s ago)")
    if fresh:
        return 0
    if beats:
        stale = ", ".join(f"{b.node} {b.age():.0f}s ago" for b in beats)
        print(
            f"ascension-worker check: heartbeat too old ({stale}; limit {max_age:g}s)",
            file=sys.stderr,
        )
    else:
        print(f"ascension-worker check: no worker of this host writes a heartbeat in {heartbeat.directory()}", file=sys.stderr)  # fmt: skip
    return 1


def broker_source() -> str | None:
    """The setting that names the broker, or None: then neither ``run`` nor ``check`` uses
    the default address (whatever Redis happens to listen there, perhaps another project's)."""
    return next((k for k in config.BROKER_SETTINGS if os.environ.get(k, "").strip()), None)


def no_broker(command: str, advice: str) -> int:
    print(
        f"ascension-worker {command}: no broker set ({' or '.join(config.BROKER_SETTINGS)}): "
        f"{advice}",
        file=sys.stderr,
    )
    return 2


def check(cfg: config.WorkerConfig, timeout: float) -> int:
    """The worker answers a ping through the broker it is configured with; without a broker
    setting, exit 2 rather than ping the default address."""
    from celery import Celery

    source = broker_source()
    if source is None:
        return no_broker("check", "set the worker's; `ascension-worker check --local` checks "
                         "liveness without one")  # fmt: skip
    print(f"broker: {heartbeat.redact(cfg.broker_url)} ({source})")
    if "%p" in cfg.node_name:
        nodes = sorted({b.node for b in _local_beats(cfg)})
        if not nodes:
            print(f"ascension-worker check: no worker of this host found (no heartbeat in {heartbeat.directory()})", file=sys.stderr)  # fmt: skip
            return 1
    else:
        nodes = [cfg.node]
    kombu_url, broker_conf = redis_urls.celery_broker(cfg.broker_url)  # (redis+sentinel://)
    app = Celery("ascension-worker-check", broker=kombu_url, set_as_current=False)
    app.conf.update(broker_conf)
    app.conf.broker_connection_timeout = timeout
    app.conf.broker_connection_retry_on_startup = False
    app.conf.broker_connection_max_retries = 1
    try:
        replies = app.control.ping(destination=nodes, timeout=timeout)
    except Exception as e:
        print(f"ascension-worker check: broker unreachable: {e}", file=sys.stderr)
        return 1
    answered = [node for node in nodes if any(node in r for r in replies or [])]
    for node in answered:
        print(f"{node}: pong")
    if answered:
        return 0
    print(f"ascension-worker check: {', '.join(nodes)} did not answer within {timeout:g}s", file=sys.stderr)  # fmt: skip
    return 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ascension-worker", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="{run,check,sweeper}")
    sub.add_parser("run", help="run the Celery worker (queue ascension.moves, and its analyses "
                   "node on ascension.analyses)")  # fmt: skip
    c = sub.add_parser("check", help="exit 0 if this host's worker answers a ping (--local: "
                       "if it writes its heartbeat; the liveness probe)")  # fmt: skip
    c.add_argument("--timeout", type=float, default=3.0, help="seconds to wait (default 3)")
    c.add_argument("--local", action="store_true",
                   help="check the worker's heartbeat file only, without the broker")  # fmt: skip
    c.add_argument("--max-age", type=float, default=heartbeat.MAX_AGE_SECONDS,
                   help=f"--local: oldest acceptable heartbeat, seconds (default {heartbeat.MAX_AGE_SECONDS:g})")  # fmt: skip
    sub.add_parser("sweeper", help="the sweeper lives in the engine: print so and exit 0")
    # Started by `run` only (its analyses node), hence no help.
    a = sub.add_parser(ANALYSES_NODE)
    a.add_argument("--hostname", required=True)
    a.add_argument("--parent", type=int, required=True)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "sweeper":
        print(SWEEPER_NOTE)
        return 0
    try:
        cfg = config.load()
        from engine_service import telemetry

        telemetry.tracing_mode()  # ASCENSION_TRACING and LOG_FORMAT are checked here
        telemetry.log_format()
        if args.command == "run":  # the TLS files to the engine, as the engine checks its own
            from ai_workers import client_tls
            from clients.sdk.tls import TLS

            client_tls.check(TLS.from_env())
    except ValueError as e:
        print(f"ascension-worker: configuration error: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=cfg.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.command == "check":
        if args.local:
            return check_local(cfg, args.max_age)
        return check(cfg, args.timeout)
    if args.command == ANALYSES_NODE:
        from ai_workers.analysis_node import run_node

        def prepare() -> None:
            _mark_dead_children()
            _setup_telemetry(cfg)

        return run_node(cfg, args.hostname, args.parent, prepare)
    if broker_source() is None:
        return no_broker("run", "name the one the engine sends moves to, e.g. "
                         "CELERY_BROKER_URL=redis://localhost:6379/0 (no default is assumed)")  # fmt: skip
    return run(cfg)


if __name__ == "__main__":
    sys.exit(main())

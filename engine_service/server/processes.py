"""``ascension-engine serve --processes N``: N server processes on one port (SO_REUSEPORT).

Python runs one thread of Python at a time, so one server process uses about one core; a pod
with more cores runs several processes behind its one port, and the kernel spreads incoming
connections over them. Each process is a whole engine (its own replica cache, watch hub, rate
limit counts and Redis connections), as separate replicas sharing one Redis are: hence Redis
is required (games kept in process cannot be shared).

The parent serves no RPC. It
- picks the port when ``ENGINE_GRPC_PORT`` is 0, and holds it (SO_REUSEPORT, not listening)
  until every process listens on it;
- gives the processes one AI credential key when ``ENGINE_AI_TOKEN_KEYS`` is unset (a move
  dispatched by one process may be submitted to any other);
- creates ``PROMETHEUS_MULTIPROC_DIR`` (a temporary directory, removed at exit) and serves the
  processes' metrics merged on ``ENGINE_METRICS_PORT``;
- prints one "listening on" line once every process listens;
- forwards SIGTERM and SIGINT to the processes and exits when they all have (code 0);
- when a process exits by itself (a crash, an out-of-memory kill, the store unreachable at
  start), stops the others (SIGTERM: drain and grace as usual) and exits with that process's
  code (1 if it was killed by a signal). Restarting is left to the supervisor (Kubernetes,
  systemd, compose), which counts and shows it, rather than hidden here.

Process 0 does the housekeeping (AI sweeper, whole-store gauges, index tidying): N copies
would be harmless (re-dispatch is claimed by compare-and-set; tidying is idempotent) but N
times the work.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import Any

from engine_service import rules, telemetry
from engine_service.lifeline import die_with_parent
from engine_service.server.config import Settings

log = logging.getLogger("ascension.engine.processes")
KILL_AFTER_SECONDS = 15.0  # past drain and grace, a process still running is killed


def _child(settings: Settings, index: int, parent: int, announce: Connection) -> None:
    """One server process (spawned: a fresh interpreter, which imports prometheus_client
    with PROMETHEUS_MULTIPROC_DIR set)."""
    die_with_parent(parent, signal.SIGTERM)  # a graceful stop, even when the parent was killed
    try:
        telemetry.configure_tracing("ascension-engine")
        telemetry.configure_logging(settings.log_level)
    except ValueError as e:
        print(f"ascension-engine: configuration error: {e}", file=sys.stderr)
        sys.exit(2)
    telemetry.instrument_engine()
    from engine_service.server.app import StoreUnreachable, run, serve

    def listening(address: str) -> None:
        announce.send(address)
        announce.close()

    code = 0
    try:
        run(serve(settings, housekeeping=index == 0, announce=listening), settings.event_loop)
    except KeyboardInterrupt:
        code = 130
    except (StoreUnreachable, OSError) as e:
        print(f"ascension-engine (process {index}): {e}", file=sys.stderr)
        code = 1
    finally:
        telemetry.shutdown_tracing()
    sys.exit(code)


def _reserve_port(host: str, port: int) -> tuple[int, socket.socket | None]:
    """The port to serve on; for port 0 a free one, held by a bound (not listening) socket
    that the processes can bind beside (SO_REUSEPORT) until they listen."""
    if port:
        return port, None
    family, kind, proto, _, addr = socket.getaddrinfo(
        host, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    s = socket.socket(family, kind, proto)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(addr)
    return int(s.getsockname()[1]), s


class _Parent:
    def __init__(self, settings: Settings, metrics_dir: str) -> None:
        self.settings = settings
        self.metrics_dir = metrics_dir
        self.procs: dict[int, Any] = {}  # index -> multiprocessing Process
        self.stopping_since: float | None = None
        self.code = 0

    def alive(self) -> list[int]:
        return [p.pid for p in self.procs.values() if p.pid is not None and p.exitcode is None]

    def stop_all(self, sig: int = signal.SIGTERM) -> None:
        if self.stopping_since is None:
            self.stopping_since = time.monotonic()
        for pid in self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    def on_signal(self, sig: int, frame: FrameType | None) -> None:
        log.info("%s: stopping the server processes", signal.Signals(sig).name)
        self.stop_all(sig)

    def run(self) -> int:
        s = self.settings
        port, held = _reserve_port(s.host, s.grpc_port)
        children = dataclasses.replace(
            s,
            grpc_port=port,
            metrics_port=0,  # served here, merged
            ai_token_keys=s.ai_token_keys or secrets.token_urlsafe(32),
        )
        if s.metrics_port:
            from engine_service.server.metrics import merged_registry, serve_registry

            try:
                serve_registry(
                    merged_registry(self.metrics_dir, self.alive), s.metrics_port, s.host
                )
            except OSError as e:
                raise OSError(
                    f"cannot serve metrics on {s.host}:{s.metrics_port} (ENGINE_METRICS_PORT): "
                    f"{e.strerror or e}"
                ) from None
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.on_signal)
        ctx = multiprocessing.get_context("spawn")
        pending: dict[Connection, int] = {}  # announce pipe -> index
        for i in range(s.processes):
            receive, send = ctx.Pipe(duplex=False)
            p = ctx.Process(
                target=_child,
                args=(children, i, os.getpid(), send),
                name=f"ascension-engine-{i}",
            )
            p.start()
            send.close()
            self.procs[i] = p
            pending[receive] = i
        address = f"{s.host}:{port}"
        try:
            while self.alive():
                sentinels = {p.sentinel: i for i, p in self.procs.items() if p.exitcode is None}
                for ready in wait([*sentinels, *pending], timeout=1.0):
                    if isinstance(ready, int):
                        self._exited(sentinels[ready])
                        continue
                    assert isinstance(ready, Connection)
                    with contextlib.suppress(EOFError, OSError):  # EOF: it died first
                        ready.recv()
                    del pending[ready]
                    if not pending and self.stopping_since is None:
                        self._listening(address, held)
                        held = None
                self._kill_stragglers()
        finally:
            if held is not None:
                held.close()
        for p in self.procs.values():
            p.join()
        log.info("stopped")
        return self.code

    def _listening(self, address: str, held: socket.socket | None) -> None:
        from engine_service.server.app import exposure, warn_if_exposed

        if held is not None:
            held.close()
        s = self.settings
        metrics_where = f"metrics on :{s.metrics_port}" if s.metrics_port else "metrics off"
        print(
            f"ascension-engine listening on {address} ({exposure(s)}; {s.processes} processes, "
            f"store: redis, AI dispatch: {s.dispatch_mode}, {metrics_where}, rules: {rules.BUILD})",
            flush=True,
        )
        warn_if_exposed(s, address)

    def _exited(self, index: int) -> None:
        from prometheus_client import multiprocess

        p = self.procs[index]
        p.join()
        multiprocess.mark_process_dead(p.pid, self.metrics_dir)  # type: ignore[no-untyped-call]
        if self.stopping_since is not None:
            return
        code = p.exitcode if p.exitcode and p.exitcode > 0 else 1
        log.error(
            "server process %d (pid %d) exited with %s: stopping the others, exit code %d",
            index,
            p.pid,
            f"code {p.exitcode}" if p.exitcode >= 0 else signal.Signals(-p.exitcode).name,
            code,
        )
        self.code = code
        self.stop_all()

    def _kill_stragglers(self) -> None:
        if self.stopping_since is None:
            return
        s = self.settings
        limit = s.shutdown_drain_seconds + s.shutdown_grace_seconds + KILL_AFTER_SECONDS
        if time.monotonic() - self.stopping_since > limit:
            for pid in self.alive():
                log.error("server process pid %d did not stop: killed", pid)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def run(settings: Settings) -> int:
    """Serve with ``settings.processes`` processes until stopped; the exit code."""
    metrics_dir = tempfile.mkdtemp(prefix="ascension-engine-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir  # for the spawned processes
    try:
        return _Parent(settings, metrics_dir).run()
    except OSError as e:
        print(f"ascension-engine: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(metrics_dir, ignore_errors=True)

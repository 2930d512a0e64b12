"""A real local Redis Cluster for tests and scripts: ``redis-server --cluster-enabled yes`` on
free loopback ports, joined with ``redis-cli --cluster create``; data directories in a
temporary directory, every process killed at the end.

    with local_cluster(masters=3, replicas=1) as c:
        c.url            # redis://127.0.0.1:PORT/0 of one master (any node will do)
        c.masters()      # the current primaries (after a failover too)
        c.kill(port)     # SIGKILL one node

A short ``cluster-node-timeout`` makes a failover take a few seconds: a replica stands for
election once its primary has not answered for that long.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis


def _free_ports(n: int) -> list[int]:
    """n free loopback ports whose cluster bus ports (port + 10000) are free too."""
    out: list[int] = []
    while len(out) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port + 10000 > 65535 or port in out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        out.append(port)
    return out


@dataclass
class LocalCluster:
    ports: list[int]
    workdir: Path
    node_timeout_ms: int = 1000
    extra: list[str] = field(default_factory=list)
    procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.masters()[0]}/0"

    def client(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, socket_timeout=5, socket_connect_timeout=2)

    def alive(self) -> list[int]:
        return [p for p, proc in self.procs.items() if proc.poll() is None]

    def slot_map(self) -> list[tuple[int, int, int]]:
        """(first slot, last slot, primary's port) as the first live node that answers sees it."""
        for port in self.alive():
            try:
                with self.client(port) as c:
                    rows = c.execute_command("CLUSTER", "SLOTS")
            except redis.RedisError:
                continue
            return sorted((int(s), int(e), int(p[1])) for s, e, p, *_ in rows)
        raise RuntimeError("no node of the cluster answers")

    def masters(self) -> list[int]:
        """Ports of the primaries that serve slots."""
        return sorted({p for _, _, p in self.slot_map()})

    def owner_of_slot(self, slot: int) -> int:
        """The port of the primary serving ``slot``."""
        for first, last, port in self.slot_map():
            if first <= slot <= last:
                return port
        raise RuntimeError(f"no node serves slot {slot}")

    def owner_of_key(self, key: str) -> int:
        with self.client(self.alive()[0]) as c:
            slot = int(c.execute_command("CLUSTER", "KEYSLOT", key))
        return self.owner_of_slot(slot)

    def replica_of(self, master_port: int) -> int | None:
        with self.client(master_port) as c:
            role = c.execute_command("ROLE")
        replicas = [int(r[1]) for r in role[2]] if len(role) > 2 else []
        live = [p for p in replicas if p in self.alive()]
        return live[0] if live else None

    def kill(self, port: int) -> None:
        """SIGKILL: the node stops at once, with whatever it had not sent to its replica."""
        proc = self.procs[port]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def restart(self, port: int) -> None:
        """Start a killed node again on its data directory (its nodes.conf): a former primary
        whose replica was promoted comes back as that replica's replica."""
        assert self.procs[port].poll() is not None, f"node {port} is running"
        self.procs[port] = _start_node(port, self.workdir, self.node_timeout_ms, self.extra)
        _wait_ping(self, port, 10.0)

    def pause(self, port: int) -> None:
        self.procs[port].send_signal(signal.SIGSTOP)

    def resume(self, port: int) -> None:
        self.procs[port].send_signal(signal.SIGCONT)

    def cut_off_replicas(self, master_port: int) -> None:
        """Close the primary's replication links (their replicas should be paused, or they
        connect again at once): what it writes from now on reaches no replica."""
        with self.client(master_port) as c:
            c.execute_command("CLIENT", "KILL", "TYPE", "replica")

    def wait_synced(self, master_port: int, timeout: float = 30.0) -> None:
        """Until a replica of the primary has acknowledged everything the primary had written
        when this was called."""
        deadline = time.monotonic() + timeout
        target: int | None = None
        while time.monotonic() < deadline:
            with contextlib.suppress(redis.RedisError), self.client(master_port) as c:
                role = c.execute_command("ROLE")
                if target is None:
                    target = int(role[1])
                if any(int(r[2]) >= target for r in role[2]):
                    return
            time.sleep(0.1)
        raise RuntimeError(f"no replica of {master_port} caught up within {timeout}s")

    def wait_ok(self, timeout: float = 30.0, without: int | None = None) -> None:
        """Until every live node reports cluster_state:ok and agrees on who serves each slot
        (and, with ``without``, no slot is served by that node: its replica took over)."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            try:
                views = set()
                ok = True
                for port in self.alive():
                    with self.client(port) as c:
                        info = c.execute_command("CLUSTER", "INFO")
                        text = info.decode() if isinstance(info, bytes) else str(info)
                        if "cluster_state:ok" not in text:
                            ok = False
                            last = f"{port}: {text.splitlines()[0]}"
                            break
                        rows = c.execute_command("CLUSTER", "SLOTS")
                        views.add(
                            tuple(sorted((int(s), int(e), int(p[1])) for s, e, p, *_ in rows))
                        )
                if ok and len(views) == 1 and all(p != without for _, _, p in next(iter(views))):
                    return
                if ok:
                    last = f"{len(views)} different slot maps"
            except redis.RedisError as e:
                last = str(e)
            time.sleep(0.1)
        raise RuntimeError(f"the cluster did not settle within {timeout}s: {last}")

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)


def _start_node(
    port: int, workdir: Path, node_timeout_ms: int, extra: list[str]
) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    d = workdir / str(port)
    d.mkdir(exist_ok=True)
    return subprocess.Popen(
        [
            binary,
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--dir", str(d),
            "--cluster-enabled", "yes",
            "--cluster-config-file", f"nodes-{port}.conf",
            "--cluster-node-timeout", str(node_timeout_ms),
            "--save", "",
            "--appendonly", "no",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip


@contextlib.contextmanager
def local_cluster(
    masters: int = 3, replicas: int = 0, node_timeout_ms: int = 1000, extra: list[str] | None = None
) -> Iterator[LocalCluster]:
    """A cluster of ``masters`` primaries with ``replicas`` replicas each, ready to use."""
    n = masters * (1 + replicas)
    with tempfile.TemporaryDirectory(prefix="asc-cluster-") as tmp:
        workdir = Path(tmp)
        ports = _free_ports(n)
        cluster = LocalCluster(ports, workdir, node_timeout_ms, extra or [])
        try:
            for port in ports:
                cluster.procs[port] = _start_node(port, workdir, node_timeout_ms, cluster.extra)
            for port in ports:
                _wait_ping(cluster, port, 10.0)
            cli = shutil.which("redis-cli") or "/usr/bin/redis-cli"
            subprocess.run(
                [cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                 "--cluster-replicas", str(replicas), "--cluster-yes"],
                check=True, capture_output=True, timeout=60,
            )  # fmt: skip
            cluster.wait_ok()
            if replicas:
                _wait_replicas_synced(cluster, masters * replicas)
            yield cluster
        finally:
            cluster.stop()


def _wait_ping(cluster: LocalCluster, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with cluster.client(port) as c:
                c.ping()
            return
        except redis.ConnectionError:
            if time.monotonic() > deadline or cluster.procs[port].poll() is not None:
                raise RuntimeError(f"redis-server on port {port} did not start") from None
            time.sleep(0.05)


def _wait_replicas_synced(cluster: LocalCluster, want: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        synced = 0
        for port in cluster.alive():
            with cluster.client(port) as c:
                role = c.execute_command("ROLE")
                if role[0] in (b"slave", "slave") and role[3] in (b"connected", "connected"):
                    synced += 1
        if synced >= want:
            _wait_acknowledged(cluster, deadline)
            return
        time.sleep(0.1)
    raise RuntimeError("the replicas did not finish their first sync")


def _wait_acknowledged(cluster: LocalCluster, deadline: float) -> None:
    """Until each primary's replica has acknowledged a write (WAIT): a replica just synced
    takes up to a second to send its first acknowledgement, which a test's short WAIT timeout
    would take for a lost replica."""
    for master in cluster.masters():
        key = next(f"warmup:{i}" for i in range(100_000) if cluster.owner_of_key(f"warmup:{i}") == master)
        with cluster.client(master) as c:
            c.set(key, 1)
            while int(c.execute_command("WAIT", 1, 1000)) < 1:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the replica of {master} acknowledged nothing")
            c.delete(key)

"""A real local Redis Sentinel setup for tests and scripts: a primary, its replicas and three
Sentinels (``redis-server --sentinel`` with generated configuration files), every process on
a free loopback port, killed at the end.

    with local_sentinel(replicas=1) as s:
        s.url()               # redis+sentinel://127.0.0.1:P1,...:P3/games/0
        s.primary()           # the port the Sentinels name now
        s.kill(port)          # SIGKILL a server
        s.wait_failover(old)  # until the Sentinels name another primary, promoted
        s.restart(port)       # a killed server back (the Sentinels make it a replica)

A 1 s ``down-after-milliseconds`` makes a failover take a few seconds. Persistence is the
shipped one (append-only file, ``appendfsync always``): a restarted server loads its file.
``Secured`` adds passwords (the servers', the Sentinels' own) and TLS everywhere (clients,
replication, Sentinels), with certificates of tests/security/pki.py.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import redis

from tests.reliability.redis_proc import RedisProcess
from tests.security.pki import Pki

SERVICE = "games"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000


def free_ports(n: int, highest: int = 55535) -> list[int]:
    """``n`` free loopback ports, each at most ``highest``."""
    out: list[int] = []
    while len(out) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
        if port <= highest and port not in out:
            out.append(port)
    return out


@dataclass(frozen=True)
class Secured:
    pki: Pki | None = None  # TLS for everything (no plaintext port)
    password: str = ""  # the servers' (requirepass, masterauth; the Sentinels' auth-pass)
    sentinel_password: str = ""  # the Sentinels' own requirepass

    def server_args(self) -> tuple[str, ...]:
        out: list[str] = []
        if self.password:
            out += ["--requirepass", self.password, "--masterauth", self.password]
        if self.pki:
            out += ["--tls-cert-file", str(self.pki.server_cert), "--tls-key-file",
                    str(self.pki.server_key), "--tls-ca-cert-file", str(self.pki.ca),
                    "--tls-auth-clients", "no", "--tls-replication", "yes"]  # fmt: skip
        return tuple(out)

    def sentinel_conf(self) -> str:
        lines = []
        if self.password:
            lines.append(f"sentinel auth-pass {SERVICE} {self.password}")
        if self.sentinel_password:
            lines += [f"requirepass {self.sentinel_password}",
                      f"sentinel sentinel-pass {self.sentinel_password}"]  # fmt: skip
        if self.pki:
            lines += [f"tls-cert-file {self.pki.server_cert}", f"tls-key-file {self.pki.server_key}",
                      f"tls-ca-cert-file {self.pki.ca}", "tls-auth-clients no",
                      "tls-replication yes"]  # fmt: skip
        return "".join(line + "\n" for line in lines)

    def client(self, port: int, password: str) -> redis.Redis:
        tls = {"ssl": True, "ssl_ca_certs": str(self.pki.ca)} if self.pki else {}
        return redis.Redis(port=port, password=password or None, socket_timeout=5,
                           socket_connect_timeout=2, **tls)  # type: ignore[arg-type]  # fmt: skip


class Server(RedisProcess):
    """A data server on a port chosen here."""

    def __init__(self, data_dir: Path, port: int, *args: str, secured: Secured = Secured()) -> None:
        tls = ("--port", "0", "--tls-port", str(port)) if secured.pki else ()
        super().__init__(data_dir, *args, *secured.server_args(), *tls)
        self.port = port
        self.secured = secured
        self.settings = self.args  # (without a replicaof given at a restart)

    def client(self) -> redis.Redis:
        return self.secured.client(self.port, self.secured.password)


SENTINEL_CONF = """{listen}
bind 127.0.0.1
dir {dir}
sentinel monitor {service} 127.0.0.1 {primary} 2
sentinel down-after-milliseconds {service} {down_after}
sentinel failover-timeout {service} {failover_timeout}
sentinel parallel-syncs {service} 1
"""


@dataclass
class LocalSentinel:
    workdir: Path
    secured: Secured = Secured()
    servers: dict[int, Server] = field(default_factory=dict)
    sentinel_ports: list[int] = field(default_factory=list)
    sentinels: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def url(self, db: int = 0) -> str:
        """The engine's REDIS_URL for this setup."""
        sec = self.secured
        scheme = "rediss+sentinel" if sec.pki else "redis+sentinel"
        auth = f":{sec.password}@" if sec.password else ""
        hosts = ",".join(f"127.0.0.1:{p}" for p in self.sentinel_ports)
        options = [f"sentinel_password={sec.sentinel_password}"] if sec.sentinel_password else []
        options += [f"ssl_ca_certs={sec.pki.ca}"] if sec.pki else []
        query = "?" + "&".join(options) if options else ""
        return f"{scheme}://{auth}{hosts}/{SERVICE}/{db}{query}"

    def client(self, port: int) -> redis.Redis:
        sec = self.secured
        return sec.client(port, sec.sentinel_password if port in self.sentinel_ports else sec.password)

    def named(self) -> dict[int, int | None]:
        """Sentinel port -> the primary's port it names (None: it does not answer)."""
        out: dict[int, int | None] = {}
        for port in self.sentinel_ports:
            try:
                with self.client(port) as c:
                    addr = c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
                out[port] = int(addr[1])
            except (redis.RedisError, TypeError, IndexError):
                out[port] = None
        return out

    def primary(self) -> int:
        """The port a majority of the Sentinels name."""
        votes = [p for p in self.named().values() if p is not None]
        best = max(set(votes), key=votes.count) if votes else None
        if best is None or votes.count(best) < 2:
            raise RuntimeError(f"the Sentinels do not agree on a primary: {self.named()}")
        return best

    def role(self, port: int) -> str:
        try:
            with self.client(port) as c:
                role = c.execute_command("ROLE")
        except redis.RedisError:
            return "down"
        return role[0].decode() if isinstance(role[0], bytes) else str(role[0])

    def replicas_of(self, port: int) -> list[int]:
        """Ports of the replicas connected to ``port`` and caught up with it."""
        with self.client(port) as c:
            role = c.execute_command("ROLE")
        offset = int(role[1])
        return [int(r[1]) for r in role[2] if int(r[2]) >= offset] if len(role) > 2 else []

    def kill(self, port: int) -> None:
        self.servers[port].kill()

    def restart(self, port: int, replica_of: int | None = None) -> None:
        """Start a killed server again on its files; with ``replica_of``, as that server's
        replica (what a start script that asks the Sentinels does: else the Sentinels make it
        one, 10-20 s after it is back)."""
        server = self.servers[port]
        more = ("--replicaof", "127.0.0.1", str(replica_of)) if replica_of else ()
        server.args = (*server.settings, *more)
        server.start()

    def wait(self, what: str, ok: object, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(redis.RedisError, RuntimeError):
                if ok():  # type: ignore[operator]
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} within {timeout}s: {self.describe()}")
            time.sleep(0.05)

    def wait_failover(self, old: int, timeout: float = 60.0) -> int:
        """Until every Sentinel names a primary other than ``old`` and it says it is one."""

        def promoted() -> bool:
            named = set(self.named().values())
            return len(named) == 1 and old not in named and self.role(self.primary()) == "master"

        self.wait("no failover", promoted, timeout)
        return self.primary()

    def wait_replicated(self, replicas: int = 1, timeout: float = 60.0) -> None:
        """Until the primary has ``replicas`` replicas caught up, and every Sentinel knows
        them and the other Sentinels (a failover needs both)."""

        def ready() -> bool:
            primary = self.primary()
            if len(self.replicas_of(primary)) < replicas:
                return False
            for port in self.sentinel_ports:
                with self.client(port) as c:
                    state = c.sentinel_master(SERVICE)
                if state["num-other-sentinels"] < len(self.sentinel_ports) - 1:
                    return False
                if state["num-slaves"] < replicas or state["is_sdown"]:
                    return False
            return True

        self.wait("the primary, its replicas and the Sentinels did not find each other", ready,
                  timeout)  # fmt: skip

    def describe(self) -> str:
        roles = {p: self.role(p) for p in self.servers}
        return f"servers {roles}; Sentinels name {self.named()}"

    def stop(self) -> None:
        for proc in self.sentinels:
            if proc.poll() is None:
                proc.kill()
        for proc in self.sentinels:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        for server in self.servers.values():
            server.kill()


@contextlib.contextmanager
def local_sentinel(replicas: int = 1, secured: Secured = Secured()) -> Iterator[LocalSentinel]:
    """A primary with ``replicas`` replicas, watched by three Sentinels, ready to use."""
    persistence = ("--appendonly", "yes", "--appendfsync", "always")
    with tempfile.TemporaryDirectory(prefix="asc-sentinel-") as tmp:
        s = LocalSentinel(Path(tmp), secured)
        ports = free_ports(4 + replicas)
        try:
            primary, *replica_ports = ports[: 1 + replicas]
            s.servers[primary] = Server(s.workdir / str(primary), primary, *persistence,
                                        secured=secured)  # fmt: skip
            for port in replica_ports:
                s.servers[port] = Server(s.workdir / str(port), port, *persistence, "--replicaof",
                                         "127.0.0.1", str(primary), secured=secured)  # fmt: skip
            for server in s.servers.values():
                server.start()
            s.sentinel_ports = ports[1 + replicas :]
            for port in s.sentinel_ports:
                conf = s.workdir / f"sentinel-{port}.conf"  # (Sentinel rewrites it: writable)
                listen = f"port 0\ntls-port {port}" if secured.pki else f"port {port}"
                conf.write_text(SENTINEL_CONF.format(
                    listen=listen, dir=s.workdir, service=SERVICE, primary=primary,
                    down_after=DOWN_AFTER_MS, failover_timeout=FAILOVER_TIMEOUT_MS)
                    + secured.sentinel_conf())  # fmt: skip
                s.sentinels.append(subprocess.Popen(
                    [shutil.which("redis-server") or "/usr/bin/redis-server", str(conf), "--sentinel"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
            s.wait_replicated(replicas)
            yield s
        finally:
            s.stop()

"""nginx in front of an engine, as an Ingress is: gRPC over HTTP/2 (h2c), the client's address
appended to ``x-forwarded-for`` ($proxy_add_x_forwarded_for, as ingress-nginx does), and every
call to the engine from one address of its own (``grpc_bind``). It listens on 127.0.0.1 and
[::1]: two clients of one machine reach it from two addresses. With ``http=True`` it is the same
in front of an HTTP server (the browser gateway): HTTP/1.1, ``proxy_pass`` and ``proxy_bind``.
tests/run installs nginx (Debian's nginx-light) when it is missing."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.service.support import free_port

CONFIG = """
daemon off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port}{http2};
        listen [::1]:{port}{http2};
        location / {{
{location}
        }}
    }}
}}
"""
GRPC = """
            grpc_pass grpc://{upstream};
            grpc_bind {source};
            grpc_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            grpc_read_timeout 1h;
            grpc_send_timeout 1h;
"""
HTTP = """
            proxy_pass http://{upstream};
            proxy_bind {source};
            proxy_http_version 1.1;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffering off;
            proxy_read_timeout 1h;
"""


class NginxProxy:
    """``source``: the address nginx calls the engine from (its own, as a proxy pod's)."""

    def __init__(
        self, workdir: Path, upstream: str, source: str = "127.0.0.2", http: bool = False
    ) -> None:
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        self.dir = workdir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.source = source
        conf = self.dir / "nginx.conf"
        conf.write_text(
            CONFIG.format(
                dir=self.dir,
                port=self.port,
                http2="" if http else " http2",
                location=(HTTP if http else GRPC).format(upstream=upstream, source=source),
            )
        )
        self.proc = subprocess.Popen([binary, "-p", str(self.dir), "-c", str(conf)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode() if self.proc.stderr else ""
                    raise RuntimeError(f"nginx did not start: {err}") from None
                time.sleep(0.05)

    @property
    def v4(self) -> str:
        """The proxy's address for a client that comes from 127.0.0.1."""
        return f"127.0.0.1:{self.port}"

    @property
    def v6(self) -> str:
        """... and for one that comes from ::1."""
        return f"[::1]:{self.port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # (fast shutdown: its workers exit too)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

"""What the certificate renewal tests need: TLS files renewed as deployments renew them, the
certificate a server presents to a new connection, and waiting for an event with a bound."""

from __future__ import annotations

import math
import os
import re
import socket
import ssl
import time
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.security.pki import Leaf

REPLACE = "replace"
SECRET_VOLUME = "secret-volume"


class TlsDir:
    """A directory of TLS files (``tls.crt``, ``tls.key``, ``ca.crt``) renewed in one of two
    ways:

    - ``replace``: each file renamed over the old one, one after the other (a certbot hook,
      an operator's copy): between two renames the certificate is new and its key is not;
    - ``secret-volume``: as the kubelet renews a Secret volume: the files are symlinks
      through ``..data``, a symlink to a ``..<timestamp>`` directory; a renewal writes a new
      directory and swaps ``..data`` with one rename, then removes the old directory.
    """

    def __init__(self, directory: Path, mode: str) -> None:
        assert mode in (REPLACE, SECRET_VOLUME)
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.mode = mode
        self._renewals = 0

    def path(self, name: str) -> str:
        return str(self.directory / name)

    def write(self, files: Mapping[str, bytes]) -> None:
        """Write ``files`` (name -> content), in their order."""
        self._renewals += 1
        if self.mode == REPLACE:
            for name, data in files.items():
                tmp = self.directory / f".{name}.tmp"
                tmp.write_bytes(data)
                os.replace(tmp, self.directory / name)
            return
        data_link = self.directory / "..data"
        old = os.readlink(data_link) if data_link.is_symlink() else None
        stamp = f"..2026_01_01_00_00_{self._renewals:02d}.{os.getpid()}"
        (self.directory / stamp).mkdir()
        for name, data in files.items():
            (self.directory / stamp / name).write_bytes(data)
        tmp_link = self.directory / "..data_tmp"
        os.symlink(stamp, tmp_link)
        os.replace(tmp_link, data_link)  # the one atomic step
        for name in files:
            link = self.directory / name
            if not link.is_symlink():
                os.symlink(f"..data/{name}", link)
        if old is not None:
            for f in (self.directory / old).iterdir():
                f.unlink()
            (self.directory / old).rmdir()

    def write_leaf(self, leaf: Leaf, ca: Path | None = None) -> None:
        files = {"tls.crt": leaf.cert.read_bytes(), "tls.key": leaf.key.read_bytes()}
        if ca is not None:
            files["ca.crt"] = ca.read_bytes()
        self.write(files)


def presented(address: str, client: Leaf | None = None, timeout: float = 10.0) -> bytes:
    """The certificate (DER) the server at ``address`` presents to a new TLS connection (ALPN
    h2, as gRPC asks; not verified: compared by the caller). ``client``: a certificate to
    present, for a server that asks for one."""
    host, _, port = address.rpartition(":")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(["h2"])
    if client is not None:
        ctx.load_cert_chain(client.cert, client.key)
    with (
        socket.create_connection((host, int(port)), timeout=timeout) as raw,
        ctx.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return der


def wait_for(
    what: str, done: Callable[[], bool], timeout: float = 60.0, logs: Callable[[], str] = str
) -> float:
    """Poll ``done`` until it holds (AssertionError naming ``what``, with ``logs()``, after
    ``timeout`` seconds: generous, for a loaded machine); returns the seconds it took."""
    start = time.monotonic()
    while not done():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f} s\n{logs()}")
        time.sleep(0.05)
    return time.monotonic() - start


def scrape(port: int, name: str, **labels: str) -> float:
    """The value of the series ``name`` with exactly ``labels`` on
    ``http://127.0.0.1:PORT/metrics``; NaN when there is none."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    for line in text.splitlines():
        if line.startswith("#") or not line.startswith(name):
            continue
        series, _, value = line.rpartition(" ")
        found, _, rest = series.partition("{")
        if found == name and dict(re.findall(r'(\w+)="([^"]*)"', rest)) == labels:
            return float(value)
    return math.nan

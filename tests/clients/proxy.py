"""A TCP proxy whose connections a test can cut, to break gRPC streams on purpose."""

from __future__ import annotations

import contextlib
import socket
import threading


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to a target; ``cut()`` closes every open connection."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(16)
        self.port = int(self._srv.getsockname()[1])
        self._conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self._closed = False
        self.accepted = 0
        self._pipes = 0  # pipes still forwarding: two per open connection
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._srv.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, upstream]
                self.accepted += 1
                self._pipes += 2
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @property
    def open(self) -> int:
        """Connections still open (neither side has closed its end)."""
        with self._lock:
            return (self._pipes + 1) // 2

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._pipes -= 1

    def cut(self) -> None:
        with self._lock:
            conns, self._conns = self._conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self._closed = True
        self.cut()
        self._srv.close()

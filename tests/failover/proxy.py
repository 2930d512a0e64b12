"""One fixed address in front of a Redis whose primary changes, as a managed service's primary
endpoint (or a DNS name) is: a TCP proxy on loopback that sends each new connection to the
server it currently points at (``point_at``), while the connections made before stay with
the server they reached, as they would through a DNS change."""

from __future__ import annotations

import contextlib
import socket
import threading


class Endpoint:
    def __init__(self, target: int) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def point_at(self, port: int) -> None:
        """New connections go to ``port`` from now on."""
        self.target = port

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                if self._closed:
                    client.close()
                    server.close()
                    return
                self._sockets.update((client, server))
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):  # one side gone: so is the other
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._sockets = self._sockets, set()
        self._listener.close()
        for s in sockets:
            with contextlib.suppress(OSError):
                s.close()

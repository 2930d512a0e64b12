"""Channels that follow renewed TLS files: a certificate, key or CA bundle replaced on disk is
used by the next connections, with no restart and without cutting calls in flight.

A channel's credentials are fixed when it is made, so a renewal needs a new channel. The
channels here stand in for one: each call first checks the files when the check is due
(every ``TLS.reload_seconds``; engine_service.tls_files takes a renewed set only when whole),
and when they were renewed, makes a new channel for this and later calls. The old channel is
closed once the calls started on it (an open WatchGame stream) have finished.

Multicallables (what a stub holds) are made once and stay valid: each call goes to the
channel current at that moment. ``subscribe`` and the aio channel's state methods speak of the
current channel.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from clients.sdk._grpc import aio, grpc
from engine_service.tls_files import Pem, Watched


class _Generation:
    """One underlying channel and the calls started on it that have not finished."""

    __slots__ = ("calls", "channel", "retired")

    def __init__(self, channel: Any) -> None:
        self.channel = channel
        self.calls = 0
        self.retired = False


class _Channels:
    """The current channel, made anew when the files are renewed; old ones until idle."""

    def __init__(self, files: Watched, make: Callable[[Pem], Any], close: Callable[[Any], None]):
        self.files = files
        self._make = make
        self._close = close
        self._lock = threading.Lock()
        self._seen, pem = files.snapshot()
        self.current = _Generation(make(pem))
        self._draining: set[_Generation] = set()
        self.closed = False

    def acquire(self) -> _Generation:
        """The channel for a call starting now (checking the files when due); pair with
        :meth:`release` when the call ends."""
        self.files.check_if_due()
        generation, pem = self.files.snapshot()
        idle = None
        with self._lock:
            if generation != self._seen and not self.closed:
                old, self._seen = self.current, generation
                self.current = _Generation(self._make(pem))
                old.retired = True
                if old.calls:
                    self._draining.add(old)
                else:
                    idle = old
            g = self.current
            g.calls += 1
        if idle is not None:
            self._close(idle.channel)
        return g

    def release(self, g: _Generation) -> None:
        with self._lock:
            g.calls -= 1
            idle = g.retired and g.calls == 0 and g in self._draining
            if idle:
                self._draining.discard(g)
        if idle:
            self._close(g.channel)

    def all(self) -> list[Any]:
        """Every underlying channel (closing the stand-in closes them all)."""
        with self._lock:
            self.closed = True
            out = [self.current.channel, *(g.channel for g in self._draining)]
            self._draining.clear()
        return out


class _MultiCallable:
    """A multicallable of whichever channel is current when a call starts."""

    def __init__(self, channels: _Channels, kind: str, args: tuple[Any, ...], kwargs: Any):
        self._channels = channels
        self._kind = kind
        self._args = args
        self._kwargs = kwargs
        self._made: tuple[_Generation, Any] | None = None

    def _target(self) -> tuple[_Generation, Any]:
        g = self._channels.acquire()
        made = self._made
        if made is None or made[0] is not g:
            made = self._made = (g, getattr(g.channel, self._kind)(*self._args, **self._kwargs))
        return g, made[1]

    def _blocking(self, name: str, *args: Any, **kwargs: Any) -> Any:
        g, target = self._target()
        try:
            return getattr(target, name)(*args, **kwargs)
        finally:
            self._channels.release(g)

    def _started(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """A call that outlives this method (a stream, a future, an aio call): released when
        it is done."""
        g, target = self._target()
        try:
            call = getattr(target, name)(*args, **kwargs)
        except BaseException:
            self._channels.release(g)
            raise
        call.add_done_callback(lambda _: self._channels.release(g))
        return call


class _SyncMultiCallable(_MultiCallable):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._kind.endswith("_unary"):
            return self._blocking("__call__", *args, **kwargs)
        return self._started("__call__", *args, **kwargs)

    def with_call(self, *args: Any, **kwargs: Any) -> Any:
        return self._blocking("with_call", *args, **kwargs)

    def future(self, *args: Any, **kwargs: Any) -> Any:
        return self._started("future", *args, **kwargs)


class _AioMultiCallable(_MultiCallable):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._started("__call__", *args, **kwargs)


def _close_sync(channel: Any) -> None:
    # Not on the thread that may be running the last call's done-callback (gRPC's own).
    threading.Thread(target=channel.close, name="close-old-channel", daemon=True).start()


class ReloadingChannel(grpc.Channel):  # type: ignore[misc]
    """A blocking channel that follows renewed TLS files (see the module's description)."""

    def __init__(self, files: Watched, make: Callable[[Pem], Any]) -> None:
        self._channels = _Channels(files, make, _close_sync)

    def _multicallable(self, kind: str, args: tuple[Any, ...], kwargs: Any) -> Any:
        return _SyncMultiCallable(self._channels, kind, args, kwargs)

    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("unary_unary", args, kwargs)

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("unary_stream", args, kwargs)

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("stream_unary", args, kwargs)

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("stream_stream", args, kwargs)

    def subscribe(self, callback: Any, try_to_connect: bool = False) -> None:
        self._channels.current.channel.subscribe(callback, try_to_connect)

    def unsubscribe(self, callback: Any) -> None:
        self._channels.current.channel.unsubscribe(callback)

    def close(self) -> None:
        for channel in self._channels.all():
            channel.close()

    def __enter__(self) -> ReloadingChannel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AioReloadingChannel(aio.Channel):  # type: ignore[misc]
    """The grpc.aio twin of :class:`ReloadingChannel`."""

    def __init__(self, files: Watched, make: Callable[[Pem], Any]) -> None:
        self._closing: set[asyncio.Task[None]] = set()
        self._channels = _Channels(files, make, self._close_later)

    def _close_later(self, channel: Any) -> None:
        try:
            task = asyncio.get_running_loop().create_task(channel.close())
        except RuntimeError:  # no loop running (the process is ending): nothing to wait for
            return
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _multicallable(self, kind: str, args: tuple[Any, ...], kwargs: Any) -> Any:
        return _AioMultiCallable(self._channels, kind, args, kwargs)

    def unary_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("unary_unary", args, kwargs)

    def unary_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("unary_stream", args, kwargs)

    def stream_unary(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("stream_unary", args, kwargs)

    def stream_stream(self, *args: Any, **kwargs: Any) -> Any:
        return self._multicallable("stream_stream", args, kwargs)

    def get_state(self, try_to_connect: bool = False) -> Any:
        return self._channels.current.channel.get_state(try_to_connect)

    async def wait_for_state_change(self, last_observed_state: Any) -> None:
        await self._channels.current.channel.wait_for_state_change(last_observed_state)

    async def channel_ready(self) -> None:
        await self._channels.current.channel.channel_ready()

    async def close(self, grace: float | None = None) -> None:
        await asyncio.gather(*(c.close(grace) for c in self._channels.all()))
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    async def __aenter__(self) -> AioReloadingChannel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close(None)

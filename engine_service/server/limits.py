"""Per-peer rate limits, the cap on live games, and rate-limited logging of bad requests.

Limits answer RESOURCE_EXHAUSTED with a message naming the setting that set them (and ErrorInfo
metadata ``limit``, ``retry_after_ms``), so an operator reading a client's error knows which
knob it was. Counting is per replica and in memory: N replicas let a peer through N times as
often (docs/security.md).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import NoReturn

from engine_service.server.errors import Code, ServiceError

MAX_PEERS = 65536  # buckets kept; the least recently seen peer is forgotten first


def peer_key(peer: str) -> str:
    """Who a gRPC peer string (``ipv4:1.2.3.4:5678``, ``ipv6:[::1]:5678``, ``unix:/p``) counts
    as: its address without the port (``address_key``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv4":
        return "ipv4:" + rest.rpartition(":")[0]
    if kind == "ipv6":
        host = rest.rpartition(":")[0].strip("[]").split("%")[0]
        try:
            return address_key(ipaddress.IPv6Address(host))
        except ValueError:
            return "ipv6:" + host
    return peer


def address_key(a: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    """Who an address counts as: itself; an IPv6 address by its /64 (one host usually holds a
    whole /64, so counting single addresses would give it 2**64 buckets), except an
    IPv4-mapped one (``::ffff:1.2.3.4``), which is the IPv4 caller it maps."""
    if isinstance(a, ipaddress.IPv4Address):
        return f"ipv4:{a}"
    if a.ipv4_mapped is not None:  # an IPv4 caller of a dual-stack port: its own address
        return f"ipv4:{a.ipv4_mapped}"
    return f"ipv6:{ipaddress.IPv6Network((a, 64), strict=False)}"


class RateLimit:
    """A token bucket per peer: at most ``burst`` calls at once, refilled at ``rate`` per second."""

    def __init__(
        self,
        setting: str,
        what: str,
        rate: float,
        burst: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.setting = setting  # the variable that sets it, named in refusals
        self.what = what  # e.g. "20 CreateGame calls per minute per peer"
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # peer -> (tokens, at)

    def take(self, peer: str) -> None:
        """Count one call of ``peer`` (a :func:`peer_key`), or refuse it."""
        now = self._clock()
        b = self._buckets.get(peer)
        if b is None:
            tokens = self.burst
            if len(self._buckets) >= MAX_PEERS:
                self._buckets.popitem(last=False)
        else:
            tokens = min(self.burst, b[0] + (now - b[1]) * self.rate)
            self._buckets.move_to_end(peer)
        if tokens < 1.0:
            self._buckets[peer] = (tokens, now)
            wait = (1.0 - tokens) / self.rate
            raise ServiceError(
                Code.RESOURCE_EXHAUSTED,
                f"rate limit {self.setting} reached ({self.what}) for {peer}; "
                f"retry in {wait:.1f}s",
                reason="RATE_LIMITED",
                metadata={
                    "limit": self.setting,
                    "peer": peer,
                    "retry_after_ms": str(math.ceil(wait * 1000)),
                },
                retry_after=wait,
            )
        self._buckets[peer] = (tokens - 1.0, now)


async def refuse_after_pause(err: ServiceError, pause: float) -> NoReturn:
    """Raise ``err``, a refusal by the caller's own limit (its calls in flight, its rate), after
    ``pause`` seconds (its retry-after when shorter). A client that asks again as soon as it is
    refused then costs the server one call per pause, not one per round trip: a flood of
    refused calls from a few connections cannot take the CPU the other players' calls need."""
    wait = pause if err.retry_after is None else min(pause, err.retry_after)
    if wait > 0:
        await asyncio.sleep(wait)
    raise err


def per_minute(setting: str, method: str, n: int) -> RateLimit | None:
    if n <= 0:
        return None
    return RateLimit(setting, f"{n} {method} calls per minute per peer", n / 60.0, float(n))


def per_second(setting: str, method: str, n: int) -> RateLimit | None:
    if n <= 0:
        return None
    return RateLimit(setting, f"{n} {method} calls per second per peer", float(n), float(n))


@dataclass(frozen=True, slots=True)
class CallLimits:
    """Per-peer rate limits (None: off) and the cap on live games (0: none)."""

    create: RateLimit | None = None
    submit: RateLimit | None = None
    max_live_games: int = 0
    practice: RateLimit | None = None  # PracticeFromHere (it creates a game)


def live_games_reached(cap: int, live: int) -> ServiceError:
    return ServiceError(
        Code.RESOURCE_EXHAUSTED,
        f"limit ENGINE_MAX_LIVE_GAMES reached: {live} games are not over (cap {cap}); "
        "finish or delete games, or try again later",
        reason="LIVE_GAMES_LIMIT",
        metadata={"limit": "ENGINE_MAX_LIVE_GAMES", "cap": str(cap), "live": str(live)},
    )


class LiveGamesCap:
    """ENGINE_MAX_LIVE_GAMES, checked before each CreateGame. Counting the live games reads
    every bucket's index (64 ZCARD: about 1.4 ms of CPU, more than the create itself), so far
    from the cap a count at most ``max_age`` seconds old, plus the games this replica let
    through since, is enough; within ``margin`` (a share of the cap) of it, every check counts
    again. Other replicas' creates in the last ``max_age`` seconds are what the margin is for."""

    def __init__(
        self,
        cap: int,
        count: Callable[[], Awaitable[int]],
        max_age: float = 1.0,
        margin: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cap = cap
        self._count = count
        self._max_age = max_age
        self._room = cap * (1.0 - margin)
        self._clock = clock
        self._seen = 0  # the last count
        self._at = -math.inf  # when it was read
        self._since = 0  # games let through since

    async def check(self) -> None:
        """Let one more game through, or refuse it (RESOURCE_EXHAUSTED, LIVE_GAMES_LIMIT)."""
        now = self._clock()
        if now - self._at < self._max_age and self._seen + self._since < self._room:
            self._since += 1
            return
        live = await self._count()
        self._seen, self._at, self._since = live, now, 0
        if live >= self.cap:
            raise live_games_reached(self.cap, live)
        self._since = 1


class LogLimiter:
    """At most ``per_window`` lines every ``window`` seconds; the rest are counted and the count
    is logged with the next line let through (anonymous callers must not be able to flood the
    log)."""

    def __init__(
        self,
        log: logging.Logger,
        per_window: int = 10,
        window: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.per_window = per_window
        self.window = window
        self._clock = clock
        self._start = -math.inf
        self._logged = 0
        self.suppressed = 0

    def warning(self, msg: str, *args: object) -> bool:
        """Log (at WARNING) unless this window's lines are used up; True if logged."""
        now = self._clock()
        if now - self._start >= self.window:
            if self.suppressed:
                self.log.warning(
                    "%d more such lines in the last %.0fs were not logged",
                    self.suppressed,
                    now - self._start,
                )
            self._start, self._logged, self.suppressed = now, 0, 0
        if self._logged >= self.per_window:
            self.suppressed += 1
            return False
        self._logged += 1
        self.log.warning(msg, *args)
        return True

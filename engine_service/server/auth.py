"""Operator credentials (``authorization: Bearer <key>`` metadata) and who may choose a seed.

An operator key is a secret the server is configured with (``ENGINE_OPERATOR_KEYS`` or
``ENGINE_OPERATOR_KEYS_FILE``; only SHA-256 digests are kept in memory after start). With no
keys the server is open: anyone may create, list and delete (with the game's admin token)
games, as in the embedded default. With keys, CreateGame (unless ``ENGINE_PUBLIC_CREATE``),
ListGames and DeleteGame need one. Choosing the seed of a game with a human seat needs one in
either case (whoever knows the seed can work out every hidden card), unless
``ENGINE_CALLER_SEEDS=anyone`` (private engines, tests).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.errors import Code, ServiceError, refused

MIN_KEY_CHARS = 16
SEEDS_OPERATOR, SEEDS_ANYONE = "operator", "anyone"


def parse_keys(raw: str) -> tuple[str, ...]:
    """Keys separated by commas or new lines; blank lines and ``#`` comments are skipped."""
    keys: list[str] = []
    for line in raw.splitlines():
        line = line.split("#", 1)[0]
        keys.extend(k.strip() for k in line.split(",") if k.strip())
    return tuple(keys)


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


def digests(keys: Iterable[str]) -> tuple[bytes, ...]:
    """What the server keeps of its keys: their SHA-256 digests."""
    return tuple(_digest(k) for k in keys)


def known(key: str, key_digests: Iterable[bytes]) -> bool:
    """Is ``key`` one of the keys, compared by digest in constant time."""
    d = _digest(key)
    found = False
    for k in key_digests:  # no early exit: same time whichever key matches
        found |= hmac.compare_digest(d, k)
    return found


def bearer(metadata: Iterable[Any] | None) -> str | None:
    """The key of an ``authorization: Bearer <key>`` header, if any."""
    for item in metadata or ():
        if item[0] == "authorization":
            value = item[1]
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            scheme, _, key = str(value).strip().partition(" ")
            return key.strip() if scheme.lower() == "bearer" else ""
    return None


@dataclass(frozen=True, slots=True)
class Access:
    """Who may do what: the operator keys' digests and the two switches."""

    key_digests: tuple[bytes, ...] = ()
    public_create: bool = False
    caller_seeds: str = SEEDS_OPERATOR

    @staticmethod
    def of(keys: Iterable[str], public_create: bool, caller_seeds: str) -> Access:
        return Access(digests(keys), public_create, caller_seeds)

    @property
    def closed(self) -> bool:
        """True when operator keys are configured."""
        return bool(self.key_digests)

    def _known(self, key: str) -> bool:
        return known(key, self.key_digests)

    def operator(self, context: Any, call: str, *, required: bool) -> bool:
        """True when the call carries a valid operator key. ``required`` (and the server has
        keys): no key is UNAUTHENTICATED. A key that is not valid is refused in any case, on
        a server with keys (a caller who sends one expects its powers)."""
        key = bearer(context.invocation_metadata())
        if not key:
            if required and self.closed:
                raise refused(
                    Code.UNAUTHENTICATED,
                    "OPERATOR_CREDENTIAL_REQUIRED",
                    f"{call} needs an operator credential on this server: send the metadata "
                    "'authorization: Bearer <operator key>'",
                    call=call,
                )
            return False
        if not self.closed:
            return False  # an open server has no operators: the key grants nothing
        if self._known(key):
            return True
        raise refused(
            Code.UNAUTHENTICATED,
            "UNKNOWN_OPERATOR_KEY",
            "the bearer key in 'authorization' is not an operator key of this server",
            call=call,
        )

    def operator_id(self, context: Any) -> str | None:
        """``operator:<digest prefix>`` for a call with a valid operator key (the identity the
        per-caller limits count it as), else None; never refuses."""
        key = bearer(context.invocation_metadata())
        if not key or not self.closed or not self._known(key):
            return None
        return "operator:" + _digest(key).hex()[:16]

    def check_seed(self, req: epb.CreateGameRequest, operator: bool) -> None:
        """A caller-chosen seed: operators, games without a human seat, or anyone when the
        server says so; otherwise PERMISSION_DENIED (the server draws a secret seed when none
        is given, and GetReplay gives it once the game is over)."""
        if not req.HasField("seed") or operator or self.caller_seeds == SEEDS_ANYONE:
            return
        if req.seats and all(s.kind == pb.SeatInfo.AI for s in req.seats):
            return
        none = "" if self.closed else " (this server has no operator keys)"
        raise ServiceError(
            Code.PERMISSION_DENIED,
            "seed: choosing the seed of a game with a human seat needs an operator credential"
            f"{none} (whoever knows the seed can work out every hidden card); leave it unset and "
            "the server draws a secret one, which GetReplay gives once the game is over",
            reason="SEED_NEEDS_OPERATOR",
            metadata={"field": "seed"},
        )

"""Seat tokens and AI move credentials. Never log or show either.

Seat tokens are random secrets handed out by CreateGame; only their SHA-256 is kept with the
game. AI seats are not played with a stored token: each time an AI seat is to move, the server
mints a short-lived credential for that one move (:class:`AiCredentials`): an HMAC, under a key
the engines hold, of the game, the seat, the version the move is for and an expiry. It is put in
the dispatch payload's ``token`` when the move is sent (never in the store), and it acts for its
seat only while the game is at that version and before it expires; otherwise it reads like no
token (a spectator's view) and cannot submit. A leaked credential thus gives at most that one
move. Engines that share a store must share the key (``ENGINE_AI_TOKEN_KEYS``); the first key
signs, every key listed verifies (rotation: add the new key second, then first, then drop the
old one).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from engine_service.server.dispatch import AnalysisFuture, Dispatcher, Payload
from engine_service.server.errors import Code, ServiceError, refused

AI_PREFIX = "ai1."
# ai1.<seat>.<version>.<expiry>.<24 bytes of MAC, base64url>: ASCII digits only, one spelling
_NUMBER = r"(0|[1-9][0-9]{0,18})"
_CREDENTIAL = re.compile(
    rf"ai1\.{_NUMBER}\.{_NUMBER}\.{_NUMBER}\.([A-Za-z0-9_-]{{32}})", re.ASCII
)
MIN_KEY_CHARS = 32
REPLY_PREFIX = "an1."
# an1.<expiry>.<24 bytes of MAC, base64url>: how a worker hands back an analysis
_REPLY = re.compile(rf"an1\.{_NUMBER}\.([A-Za-z0-9_-]{{32}})", re.ASCII)


def new_token() -> str:
    """32 URL-safe characters (192 random bits), never starting with "-": a token is pasted
    into command lines (``ascension play --token T``), where a leading dash reads as an
    option. Drawing again costs one bit of the first character's 6 (1 draw in 64)."""
    while True:
        token = secrets.token_urlsafe(24)
        if token[0] != "-":
            return token


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def seat_of(token: str, seat_digests: Sequence[str]) -> int | None:
    """The seat whose token this is, or None."""
    d = digest(token)
    found = None
    for seat, known in enumerate(seat_digests):
        if hmac.compare_digest(d, known):
            found = seat
    return found


def matches(token: str, known_digest: str) -> bool:
    return hmac.compare_digest(digest(token), known_digest)


def is_ai_credential(token: str) -> bool:
    return token.startswith(AI_PREFIX)


@dataclass(frozen=True, slots=True)
class Grant:
    """What a valid AI credential names."""

    seat: int
    version: int
    expires: int  # unix seconds


class AiCredentials:
    """Mints and checks AI move credentials: ``ai1.<seat>.<version>.<expiry>.<mac>``."""

    def __init__(
        self, keys: Sequence[str], ttl_seconds: float, clock: Callable[[], float] = time.time
    ) -> None:
        if not keys:
            raise ValueError("at least one key is needed")
        self._keys = [k.encode() for k in keys]
        self.ttl = ttl_seconds
        self._clock = clock

    @staticmethod
    def generate(ttl_seconds: float = 900.0) -> AiCredentials:
        """A key of this process only (the embedded default: one process, nothing to share)."""
        return AiCredentials([secrets.token_urlsafe(32)], ttl_seconds)

    def _mac(self, key: bytes, game_id: str, seat: int, version: int, expires: int) -> str:
        body = f"{game_id}.{seat}.{version}.{expires}".encode()
        mac = hmac.new(key, body, hashlib.sha256).digest()[:24]
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def mint(self, game_id: str, seat: int, version: int) -> str:
        expires = int(self._clock() + self.ttl)
        mac = self._mac(self._keys[0], game_id, seat, version, expires)
        return f"{AI_PREFIX}{seat}.{version}.{expires}.{mac}"

    def grant(self, token: str, game_id: str) -> Grant:
        """The credential's seat and version, or UNAUTHENTICATED (forged, or expired)."""
        m = _CREDENTIAL.fullmatch(token)
        if m is None:
            raise refused(Code.UNAUTHENTICATED, "UNKNOWN_TOKEN", "malformed AI move credential")
        seat, version, expires = int(m[1]), int(m[2]), int(m[3])
        mac = m[4].encode()
        if not any(
            hmac.compare_digest(mac, self._mac(k, game_id, seat, version, expires).encode())
            for k in self._keys
        ):
            raise refused(
                Code.UNAUTHENTICATED,
                "UNKNOWN_TOKEN",
                "token does not match any seat of this game",
            )
        if self._clock() > expires:
            raise refused(
                Code.UNAUTHENTICATED,
                "AI_CREDENTIAL_EXPIRED",
                f"this AI move credential expired (it was for version {version}); the engine "
                "sends a new one when it dispatches the move again",
                version=version,
            )
        return Grant(seat, version, expires)

    # ---- analysis replies (AnalyzePosition) ---------------------------------------------
    # ``an1.<expiry>.<mac>``: the MAC is under a key derived from each key for this purpose
    # only, so that no analysis credential can ever pass for a move credential or the reverse.

    def _reply_mac(self, key: bytes, game_id: str, analysis_id: str, expires: int) -> str:
        derived = hmac.new(key, b"ascension analysis reply", hashlib.sha256).digest()
        body = f"{game_id}.{analysis_id}.{expires}".encode()
        mac = hmac.new(derived, body, hashlib.sha256).digest()[:24]
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def mint_reply(self, game_id: str, analysis_id: str, ttl_seconds: float) -> str:
        """The credential with which a worker hands back that one analysis."""
        expires = int(self._clock() + ttl_seconds) + 1
        return f"{REPLY_PREFIX}{expires}.{self._reply_mac(self._keys[0], game_id, analysis_id, expires)}"

    def check_reply(self, token: str, game_id: str, analysis_id: str) -> None:
        """UNAUTHENTICATED unless ``token`` is a live reply credential of that analysis."""
        m = _REPLY.fullmatch(token)
        if m is None:
            raise refused(Code.UNAUTHENTICATED, "UNKNOWN_TOKEN", "malformed analysis credential")
        expires, mac = int(m[1]), m[2].encode()
        if not any(
            hmac.compare_digest(mac, self._reply_mac(k, game_id, analysis_id, expires).encode())
            for k in self._keys
        ):
            raise refused(
                Code.UNAUTHENTICATED, "UNKNOWN_TOKEN", "the credential is not this analysis's"
            )
        if self._clock() > expires:
            raise refused(
                Code.UNAUTHENTICATED,
                "AI_CREDENTIAL_EXPIRED",
                "this analysis credential expired: the engine no longer waits for the answer",
            )

    def seat(self, token: str, game_id: str, version: int, *, acting: bool) -> int | None:
        """The seat the credential acts for at ``version``; None (a spectator) for reads at
        another version. ``acting`` (a submit naming ``version``): another version is refused."""
        g = self.grant(token, game_id)
        if g.version == version:
            return g.seat
        if acting:
            raise ServiceError(
                Code.UNAUTHENTICATED,
                f"this AI move credential is for version {g.version}, not {version}",
                reason="UNKNOWN_TOKEN",
                metadata={"credential_version": str(g.version)},
            )
        return None


class CredentialedDispatcher(Dispatcher):
    """Puts a freshly minted credential in each payload as it is sent (payloads are stored
    without one): the one place AI credentials leave the engine."""

    def __init__(self, inner: Dispatcher, credentials: AiCredentials) -> None:
        self.inner = inner
        self.credentials = credentials
        self.name = inner.name

    async def dispatch(self, payload: Payload) -> None:
        token = self.credentials.mint(payload["game_id"], payload["seat"], payload["version"])
        await self.inner.dispatch({**payload, "token": token})

    async def analyse(self, payload: Payload) -> AnalysisFuture | None:
        """An analysis goes out with the credential of its reply (it acts for no seat)."""
        token = self.credentials.mint_reply(
            payload["game_id"], payload["analysis_id"], payload["reply_seconds"]
        )
        return await self.inner.analyse({**payload, "token": token})

    async def close(self) -> None:
        await self.inner.close()


def without_token(payload: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in payload.items() if k != "token"}

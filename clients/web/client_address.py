"""Who the browser is: the address the gateway tells the engine, for its limits per caller.

A browser may send any ``X-Forwarded-For``, ``Forwarded`` or ``X-Real-IP`` it likes, so none of
what it sends in such headers reaches the engine (``forwarding.ADDRESS_HEADERS``). The gateway
says the browser's address itself: the peer of the HTTP connection, unless that peer is one of
the gateway's own trusted proxies (``--trusted-proxies``, ``ASCENSION_WEB_TRUSTED_PROXIES``:
a load balancer or the Ingress controller in front of it), in which case it is the right-most
address of their header (``--client-address-header``, ``ASCENSION_WEB_CLIENT_ADDRESS_HEADER``,
``x-forwarded-for`` by default) that is not one of them, read as the engine reads its own
proxies' (``engine_service.forwarding``).

It goes to the engine as ``x-forwarded-for: <address>`` (one entry, for an engine that names
the gateway in ``ENGINE_TRUSTED_PROXIES``) and, with a gateway key (``--gateway-key-file``,
``ASCENSION_WEB_GATEWAY_KEY[_FILE]``; one of the engine's ``ENGINE_GATEWAY_KEYS``), as
``ascension-client-address`` beside the key, which the engine believes whatever address the
gateway calls from.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine_service.forwarding import (
    ADDRESS_HEADER_PREFIXES,
    ADDRESS_HEADERS,
    CLIENT_ADDRESS,
    DEFAULT_HEADER,
    GATEWAY_KEY,
    Proxies,
    header_values,
    ip,
    parse_networks,
)

ENV_TRUSTED = "ASCENSION_WEB_TRUSTED_PROXIES"
ENV_HEADER = "ASCENSION_WEB_CLIENT_ADDRESS_HEADER"
ENV_KEY = "ASCENSION_WEB_GATEWAY_KEY"
MIN_KEY_CHARS = 16  # (the engine's least for ENGINE_GATEWAY_KEYS)
_HEADER_NAME = re.compile(r"[A-Za-z0-9-]+")
_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")  # an obfuscated RFC 7239 node name, "unknown"


def header_name(text: str) -> str:
    """The header the trusted proxies set (``x-forwarded-for`` when empty)."""
    name = text.strip().lower() or DEFAULT_HEADER
    if not _HEADER_NAME.fullmatch(name):
        raise ValueError(f"{text!r} is not a header name (letters, digits, '-')")
    return name


def gateway_key(text: str) -> str:
    """The key a gateway sends: the first of a file's keys (separated by commas or new lines,
    as ENGINE_GATEWAY_KEYS, so that one mounted Secret serves both; ``#`` starts a comment)."""
    for line in text.splitlines():
        for key in line.split("#", 1)[0].split(","):
            if key.strip():
                if len(key.strip()) < MIN_KEY_CHARS:
                    raise ValueError(f"a gateway key needs at least {MIN_KEY_CHARS} characters")
                return key.strip()
    raise ValueError("no key in it")


def key_from_env(env: Mapping[str, str] | None = None) -> str | None:
    """``ASCENSION_WEB_GATEWAY_KEY``, or the first key of the file ``..._FILE``; ValueError
    names the variable at fault."""
    env = os.environ if env is None else env
    path = env.get(ENV_KEY + "_FILE", "").strip()
    name = ENV_KEY + "_FILE" if path else ENV_KEY
    try:
        raw = Path(path).read_text() if path else env.get(ENV_KEY, "")
        return gateway_key(raw) if raw.strip() else None
    except (OSError, ValueError) as e:
        raise ValueError(f"{name}: {e}") from None


@dataclass(frozen=True, slots=True)
class ClientAddress:
    """The gateway's trusted proxies and key (none: the browser is the connection's peer)."""

    proxies: Proxies = field(default_factory=Proxies)
    key: str | None = field(default=None, repr=False)

    @staticmethod
    def of(trusted: str = "", header: str = "", key: str | None = None) -> ClientAddress:
        """From the settings' text; ValueError says what is wrong."""
        return ClientAddress(Proxies(parse_networks(trusted), header_name(header)), key)

    @staticmethod
    def from_options(
        trusted: str | None = None,
        header: str | None = None,
        key_file: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ClientAddress:
        """The command line's options (None: not given), else the ``ASCENSION_WEB_*``
        variables; ValueError names the option or variable at fault."""
        env = os.environ if env is None else env
        t_name, t = (
            ("--trusted-proxies", trusted)
            if trusted is not None
            else (ENV_TRUSTED, env.get(ENV_TRUSTED, ""))
        )
        h_name, h = (
            ("--client-address-header", header)
            if header is not None
            else (ENV_HEADER, env.get(ENV_HEADER, ""))
        )
        try:
            networks = parse_networks(t)
        except ValueError as e:
            raise ValueError(f"{t_name}: {e}") from None
        try:
            name = header_name(h)
        except ValueError as e:
            raise ValueError(f"{h_name}: {e}") from None
        if key_file:
            try:
                key: str | None = gateway_key(Path(key_file).read_text())
            except (OSError, ValueError) as e:
                raise ValueError(f"--gateway-key-file: {e}") from None
        else:
            key = key_from_env(env)
        return ClientAddress(Proxies(networks, name), key)

    def passes(self, header: str) -> bool:
        """May a header the browser sent go to the engine? Never one that names an address."""
        h = header.lower()
        return not (h in ADDRESS_HEADERS or h == self.proxies.header
                    or h.startswith(ADDRESS_HEADER_PREFIXES))  # fmt: skip

    def browser(self, peer: str | None, headers: Iterable[tuple[str, str]]) -> str | None:
        """The browser's address (or a name its trusted proxy gave): ``peer`` is the HTTP
        connection's ``host:port``; None when there is none to tell."""
        if not peer:
            return None
        a = ip(peer.rpartition(":")[0])  # (v6 too: "::1:5678" is ::1 and its port)
        if a is None:
            return None
        if self.proxies.trusted and self.proxies.trusts(a):
            told = self.proxies.client(header_values(headers, self.proxies.header))
            if isinstance(told, str) and _NAME.fullmatch(told):
                return told
            if told is not None and not isinstance(told, str):
                return str(told)
        return str(a)  # (a trusted proxy that told nothing usable: itself)

    def metadata(
        self, peer: str | None, headers: Iterable[tuple[str, str]]
    ) -> list[tuple[str, str]]:
        """What the gateway adds to each call to the engine."""
        who = self.browser(peer, headers)
        if who is None:
            return []
        out = [("x-forwarded-for", who)]
        if self.key:
            out += [(CLIENT_ADDRESS, who), (GATEWAY_KEY, self.key)]
        return out

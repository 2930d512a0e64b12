"""Which requests `ascension web` answers: none that a foreign page could have sent.

DNS rebinding: a page on ``http://attacker.example:8080`` whose name is made to resolve to
127.0.0.1 is, to the browser, its own origin; its scripts could then read the lobby and call
the Engine API through this gateway (with the operator key it may hold). Such requests carry
``Host: attacker.example:8080``, so a request is answered only when its Host is

- an IP address (the page is then its own origin: no other site's script can read it), or
- ``localhost``, or
- a name this server was told it serves: the ``--host`` it listens on, when a name, and each
  name given with ``--allow-host`` or ``ASCENSION_WEB_ALLOWED_HOSTS`` (e.g. the name of a
  reverse proxy in front of it);

else it is refused with 421 Misdirected Request. And a request whose ``Origin`` (browsers send
one with every POST and every cross-origin request) is neither the page's own origin (the same
host and port as its Host) nor one of those names is refused with 403: another site's page
may not drive this one's API, even with a request that needs no CORS preflight.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

ENV_ALLOWED = "ASCENSION_WEB_ALLOWED_HOSTS"
_NAME = re.compile(r"^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")


def host_name(raw: str) -> str:
    """A name for ``--allow-host``: a DNS name or an IP address, without port or scheme."""
    name = raw.strip().lower().rstrip(".")
    if _NAME.match(name) or _is_ip(name.strip("[]")):
        return name.strip("[]")
    raise ValueError(f"{raw!r} is not a host name (give the name alone: play.example.com)")


def names_from_env(env: Mapping[str, str] | None = None) -> list[str]:
    """``ASCENSION_WEB_ALLOWED_HOSTS``: names separated by commas or spaces."""
    raw = (os.environ if env is None else env).get(ENV_ALLOWED, "")
    return [host_name(n) for n in re.split(r"[,\s]+", raw) if n]


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _split(authority: str) -> tuple[str, int | None] | None:
    """``host[:port]`` -> (lower-case host without brackets or final dot, port); None if it
    is not one."""
    try:
        parts = urlsplit("//" + authority)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host or parts.username is not None or parts.path or parts.query or parts.fragment:
        return None
    return host.rstrip("."), port


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    reason: str


@dataclass(frozen=True, slots=True)
class HostGuard:
    names: frozenset[str]  # served names besides IP addresses and localhost

    @staticmethod
    def of(listen_host: str, allowed: Iterable[str] = ()) -> HostGuard:
        names = {host_name(n) for n in allowed}
        bare = listen_host.strip("[]").lower()
        if bare and not _is_ip(bare):
            names.add(host_name(bare))
        return HostGuard(frozenset(names))

    def serves(self, host: str) -> bool:
        return host == "localhost" or _is_ip(host) or host in self.names

    def check(self, host_header: str | None, origin: str | None) -> Refusal | None:
        """None when the request may be answered, else why not."""
        told = "names given with --allow-host or " + ENV_ALLOWED
        host = _split(host_header or "")
        if host is None or not self.serves(host[0]):
            shown = (host_header or "none")[:100]
            return Refusal(
                421,
                f"this server answers requests for its IP addresses, localhost and the {told}, "
                f"not for Host {shown!r}",
            )
        if origin is None:
            return None
        where = _split(urlsplit(origin).netloc) if "://" in origin else None
        if where is not None and (where == host or where[0] in self.names):
            return None
        return Refusal(
            403,
            f"requests from pages of other sites are refused (Origin {origin[:100]!r}); a page "
            f"served under another name needs that name among the {told}",
        )

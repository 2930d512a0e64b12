"""Who a call counts as for the limits per caller (rates, watch streams, watch rebuilds).

By default a caller is its connection's address (``peer_key``: an IPv6 one by its /64). Behind
a proxy (an Ingress, a Gateway, a load balancer) every call comes from a few proxy addresses,
so the proxies to trust are named (``ENGINE_TRUSTED_PROXIES``, CIDRs): a call whose peer is
one of them counts as the address they report in ``ENGINE_CLIENT_ADDRESS_HEADER``
(``x-forwarded-for`` by default; the RFC 7239 ``forwarded`` header is read too). Each proxy
appends the address it received the call from, so the header is read from the right: the
first address that is not a trusted proxy is the client (anything to its left was sent by the
client itself and may be forged). A call from elsewhere is its peer, whatever it sends.

An authenticated caller is counted by who it is rather than where from: a valid operator key
(``Access.operator_id``), or, for SubmitAction, a seat token of a game whose metadata this
replica holds (the game: its seats share a bucket). Never an unverified claim: a made-up
identity would get a fresh bucket each time.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from typing import Any

from engine_service.server.limits import address_key, peer_key

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_HEADER = "x-forwarded-for"
MAX_HOPS = 32  # entries of the header read at most (from the right)


def parse_networks(raw: str) -> tuple[Network, ...]:
    """Comma-separated CIDRs (a bare address is a /32 or /128); ValueError names a bad one."""
    out = []
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(ipaddress.ip_network(part, strict=False))
        except ValueError:
            raise ValueError(f"{part!r} is not an address or a CIDR network") from None
    return tuple(out)


def peer_address(peer: str) -> Address | None:
    """The address of a gRPC peer string (``ipv4:1.2.3.4:5678``, ``ipv6:[::1]:5678``)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    host = rest.rpartition(":")[0].strip("[]").split("%")[0]
    return _address(host)


def _address(text: str) -> Address | None:
    try:
        a = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        return a.ipv4_mapped
    return a


def _hop(entry: str) -> Address | str | None:
    """One entry of X-Forwarded-For (``1.2.3.4``, ``1.2.3.4:5``, ``[::1]:5``, ``::1``) or of
    Forwarded (``for=1.2.3.4;proto=https``, ``for="[::1]:5"``): its address, else the entry
    as given (an obfuscated name, ``unknown``), None when empty."""
    entry = entry.strip()
    if "=" in entry:  # RFC 7239: the for= parameter
        found = ""
        for param in entry.split(";"):
            name, _, value = param.partition("=")
            if name.strip().lower() == "for":
                found = value.strip().strip('"')
        entry = found
    if not entry:
        return None
    if entry.startswith("["):  # [v6] or [v6]:port
        return _address(entry[1 : entry.find("]")] if "]" in entry else entry[1:]) or entry
    a = _address(entry)
    if a is None and entry.count(":") == 1:  # v4:port
        a = _address(entry.partition(":")[0])
    return a if a is not None else entry[:64]


class Callers:
    def __init__(self, trusted: Sequence[Network] = (), header: str = DEFAULT_HEADER) -> None:
        self.trusted = tuple(trusted)
        self.header = header.strip().lower() or DEFAULT_HEADER

    def _trusted(self, a: Address) -> bool:
        return any(a in net for net in self.trusted)

    def key(self, context: Any) -> str:
        """The caller's address, as the limits count it."""
        peer = context.peer()
        if not self.trusted:
            return peer_key(peer)
        a = peer_address(peer)
        if a is None or not self._trusted(a):
            return peer_key(peer)
        return self.forwarded(context.invocation_metadata()) or peer_key(peer)

    def forwarded(self, metadata: Iterable[Any] | None) -> str | None:
        """The right-most entry of the header that is not a trusted proxy (None: no header, or
        only trusted proxies in it)."""
        values = []
        for item in metadata or ():
            if item[0] == self.header:
                v = item[1]
                values.append(v.decode("latin-1") if isinstance(v, bytes) else str(v))
        if not values:
            return None
        entries = ",".join(values).split(",")[-MAX_HOPS:]
        for entry in reversed(entries):
            hop = _hop(entry)
            if hop is None:
                continue
            if isinstance(hop, str):
                return "name:" + hop  # (set by a trusted proxy: opaque, but its own)
            if not self._trusted(hop):
                return address_key(hop)
        return None

"""Who a call comes from when proxies stand in between: the addresses they report, and how the
browser gateway names the browser it forwards a call for.

Shared by the engine (``server/callers.py``: ``ENGINE_TRUSTED_PROXIES``, ``ENGINE_GATEWAY_KEYS``)
and the browser gateway (``clients/web``: ``ASCENSION_WEB_TRUSTED_PROXIES``), which read a
chain of proxies the same way. Each proxy appends the address it received the request from to
``X-Forwarded-For`` (or the RFC 7239 ``Forwarded`` header), so the chain is read from the
right: the first address that is not a trusted proxy is the client; anything to its left was
written by the client itself and may be forged.

The gateway tells the engine who the browser is in metadata of its own: the address in
:data:`CLIENT_ADDRESS`, believed only beside a valid gateway key in :data:`GATEWAY_KEY` (a
secret the engine and its gateways share), so the engine trusts a gateway for exactly one hop
whatever address it calls from. The gateway drops every header of :data:`ADDRESS_HEADERS` a
browser sends.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_HEADER = "x-forwarded-for"
MAX_HOPS = 32  # entries of a chain read at most (from the right)

# The gateway's metadata to the engine: its key, and the address of the browser it calls for.
GATEWAY_KEY = "ascension-gateway-key"
CLIENT_ADDRESS = "ascension-client-address"

# Headers that name a client's address (set by proxies and CDNs, or forged by a client). A
# gateway never passes on what a browser sent in them; it says the browser's address itself.
ADDRESS_HEADERS = frozenset(
    {GATEWAY_KEY, CLIENT_ADDRESS, "x-forwarded-for", "forwarded", "x-real-ip",
     "x-client-ip", "x-cluster-client-ip", "x-original-forwarded-for", "true-client-ip",
     "cf-connecting-ip", "fastly-client-ip", "x-envoy-external-address", "x-appengine-user-ip"}
)  # fmt: skip
ADDRESS_HEADER_PREFIXES = ("x-forwarded-",)  # -host, -proto, -port, -by, -server


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


def ip(text: str) -> Address | None:
    """An address (an IPv4-mapped IPv6 one as its IPv4 address), None if ``text`` is none."""
    try:
        a = ipaddress.ip_address(text.strip().strip("[]").split("%")[0])
    except ValueError:
        return None
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        return a.ipv4_mapped
    return a


def hop(entry: str) -> Address | str | None:
    """One entry of X-Forwarded-For (``1.2.3.4``, ``1.2.3.4:5``, ``[::1]:5``, ``::1``) or of
    Forwarded (``for=1.2.3.4;proto=https``, ``for="[::1]:5"``): its address, else the entry
    as given, at most 64 characters (an obfuscated name, ``unknown``), None when empty."""
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
        return ip(entry[1 : entry.find("]")] if "]" in entry else entry[1:]) or entry[:64]
    a = ip(entry)
    if a is None and entry.count(":") == 1:  # v4:port
        a = ip(entry.partition(":")[0])
    return a if a is not None else entry[:64]


def header_values(items: Iterable[tuple[str, str | bytes]], name: str) -> list[str]:
    """Every value of header ``name`` (lower case) among ``items``, in order."""
    out = []
    for key, value in items:
        if key.lower() == name:
            out.append(value.decode("latin-1") if isinstance(value, bytes) else str(value))
    return out


class Proxies:
    """The proxies trusted to report a client's address (CIDRs), and the header they use."""

    def __init__(self, trusted: Sequence[Network] = (), header: str = DEFAULT_HEADER) -> None:
        self.trusted = tuple(trusted)
        self.header = header.strip().lower() or DEFAULT_HEADER

    def trusts(self, a: Address) -> bool:
        return any(a in net for net in self.trusted)

    def client(self, values: Sequence[str]) -> Address | str | None:
        """The right-most entry of the header's values (joined in order) that is not a trusted
        proxy: an address, or a name a trusted proxy wrote (opaque, but its own); None when
        there is no entry, or only trusted proxies."""
        if not values:
            return None
        for entry in reversed(",".join(values).split(",")[-MAX_HOPS:]):
            h = hop(entry)
            if h is None:
                continue
            if isinstance(h, str) or not self.trusts(h):
                return h
        return None

"""Who a call counts as for the limits per caller (rates, watch streams, watch rebuilds).

By default a caller is its connection's address (``peer_key``: an IPv6 one by its /64). Two
things in front of the engine may say otherwise:

- **A browser gateway** (``ascension web``) that presents one of ``ENGINE_GATEWAY_KEYS`` in
  ``ascension-gateway-key``: the call counts as the address it names in
  ``ascension-client-address`` (the browser it saw, or what its own trusted proxies reported).
  Believed for that one hop only, whatever address the gateway calls from: web pods' addresses
  are dynamic and shared with every other pod of the network, so an address cannot say that a
  call comes from a gateway; the key can. A key that is not one of them is refused
  (UNAUTHENTICATED ``UNKNOWN_GATEWAY_KEY``) on every call: a gateway that sends one expects to
  be believed. Without gateway keys both headers are ignored.
- **Proxies** (an Ingress, a Gateway, a load balancer) named by address
  (``ENGINE_TRUSTED_PROXIES``, CIDRs): a call whose peer is one of them counts as the address
  they report in ``ENGINE_CLIENT_ADDRESS_HEADER`` (``x-forwarded-for`` by default; the RFC 7239
  ``forwarded`` header is read too), read from the right (``engine_service.forwarding``).

A call from elsewhere is its peer, whatever it sends.

An authenticated caller is counted by who it is rather than where from: a valid operator key
(``Access.operator_id``), or, for SubmitAction, a seat token of a game whose metadata this
replica holds (the game: its seats share a bucket). Never an unverified claim: a made-up
identity would get a fresh bucket each time.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engine_service.forwarding import (
    CLIENT_ADDRESS,
    DEFAULT_HEADER,
    GATEWAY_KEY,
    Address,
    Network,
    Proxies,
    header_values,
    hop,
    ip,
    parse_networks,
)
from engine_service.server.auth import digests, known
from engine_service.server.errors import Code, refused
from engine_service.server.limits import address_key, peer_key

__all__ = ["DEFAULT_HEADER", "Callers", "parse_networks", "peer_address"]


def peer_address(peer: str) -> Address | None:
    """The address of a gRPC peer string (``ipv4:1.2.3.4:5678``, ``ipv6:[::1]:5678``)."""
    kind, _, rest = peer.partition(":")
    if kind not in ("ipv4", "ipv6"):
        return None
    return ip(rest.rpartition(":")[0])


def _key_of(h: Address | str | None) -> str | None:
    if h is None:
        return None
    if isinstance(h, str):
        return "name:" + h  # (written by a trusted proxy or a gateway: opaque, but its own)
    return address_key(h)


class Callers:
    def __init__(
        self,
        trusted: Sequence[Network] = (),
        header: str = DEFAULT_HEADER,
        gateway_keys: Iterable[str] = (),
    ) -> None:
        self.proxies = Proxies(trusted, header)
        self.trusted = self.proxies.trusted
        self.header = self.proxies.header
        self._gateway_digests = digests(gateway_keys)

    def gateway(self, metadata: Iterable[Any] | None) -> bool:
        """True when the call carries a valid gateway key. A key that is not one of
        ENGINE_GATEWAY_KEYS is refused (UNAUTHENTICATED, UNKNOWN_GATEWAY_KEY); without gateway
        keys the header is ignored."""
        if not self._gateway_digests:
            return False
        keys = header_values(metadata or (), GATEWAY_KEY)
        if not keys:
            return False
        if len(keys) == 1 and known(keys[0].strip(), self._gateway_digests):
            return True
        raise refused(
            Code.UNAUTHENTICATED,
            "UNKNOWN_GATEWAY_KEY",
            f"the key in '{GATEWAY_KEY}' is not one of this server's gateway keys "
            "(ENGINE_GATEWAY_KEYS): give the gateway one of them",
        )

    def key(self, context: Any) -> str:
        """The caller's address, as the limits count it."""
        peer = context.peer()
        metadata = context.invocation_metadata()
        if self.gateway(metadata):
            named = header_values(metadata, CLIENT_ADDRESS)
            # One address, the gateway's own word (it dropped what the browser sent).
            return (_key_of(hop(named[0])) if len(named) == 1 else None) or peer_key(peer)
        if not self.trusted:
            return peer_key(peer)
        a = peer_address(peer)
        if a is None or not self.proxies.trusts(a):
            return peer_key(peer)
        return self.forwarded(metadata) or peer_key(peer)

    def forwarded(self, metadata: Iterable[Any] | None) -> str | None:
        """The right-most entry of the header that is not a trusted proxy (None: no header, or
        only trusted proxies in it)."""
        return _key_of(self.proxies.client(header_values(metadata or (), self.header)))

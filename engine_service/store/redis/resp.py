"""Commands in the Redis protocol (RESP), packed by hand for the hot path: as redis-py packs
them (str as UTF-8, int as its decimal digits), in one buffer, without its per-argument
overhead."""

from __future__ import annotations


def bulks(args: tuple[bytes | str | int, ...]) -> bytes:
    """Arguments in the Redis protocol, as redis-py encodes them (str as UTF-8, int as its
    decimal digits), without the command's header."""
    parts: list[bytes] = []
    add = parts.append
    for a in args:
        if type(a) is not bytes:
            a = str(a).encode()
        add(b"$%d\r\n%b\r\n" % (len(a), a))  # one piece per argument: fewer, larger copies
    return b"".join(parts)


def pack(*args: bytes | str | int) -> bytes:
    """One command in the Redis protocol, in one buffer."""
    return b"*%d\r\n" % len(args) + bulks(args)


_BULK_HEADS = tuple(b"$%d\r\n" % n for n in range(1024))  # (formatting one: ~1,100 instructions)


def head(n: int) -> bytes:
    """A bulk string's header, for ``n`` bytes."""
    return _BULK_HEADS[n] if n < 1024 else b"$%d\r\n" % n

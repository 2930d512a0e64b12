"""A tiny deterministic PRNG whose whole state is one int stored in the game state.

xorshift64* (Vigna): fast in pure Python, 64 bits of state, and trivially cloned or
serialized, unlike ``random.Random``. It is for game shuffles, not for secrets.
"""

from __future__ import annotations

MASK = (1 << 64) - 1
MULT = 0x2545F4914F6CDD1D


def seed_state(seed: int) -> int:
    """Mix any int seed into a non-zero 64-bit state (splitmix64 finalizer)."""
    z = (seed + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    z ^= z >> 31
    return z or 1


def step(x: int) -> int:
    x ^= x >> 12
    x ^= (x << 25) & MASK
    x ^= x >> 27
    return x


def below(x: int, n: int) -> tuple[int, int]:
    """Return (new state, a number in [0, n))."""
    x ^= x >> 12
    x ^= (x << 25) & MASK
    x ^= x >> 27
    return x, (((x * MULT) & MASK) >> 16) % n


def shuffle(x: int, items: list[int]) -> int:
    """Fisher-Yates shuffle of ``items`` in place; returns the new RNG state."""
    for i in range(len(items) - 1, 0, -1):
        x ^= x >> 12
        x ^= (x << 25) & MASK
        x ^= x >> 27
        j = (((x * MULT) & MASK) >> 16) % (i + 1)
        items[i], items[j] = items[j], items[i]
    return x

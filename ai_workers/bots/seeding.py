"""A seed per decision: the seat's seed mixed with where the game is, so a seeded bot is
reproducible yet does not replay the same random stream at every decision."""

from __future__ import annotations

import hashlib
import marshal

from engine_service import rules
from engine_service.rules import rng as R


def decision_seed(view: rules.View, seed: int) -> int:
    s = view.state
    where = (s.turn, s.active, view.seat, s.runes, s.power, s.pool, s.moved,
             len(s.played[s.active]), len(s.used), s.decision)  # fmt: skip
    # Not hash(): on Python 3.11 hash(None) is None's address, so a tuple holding None (no
    # pending decision) hashed differently in every process and seeded bots were reproducible
    # only within one process. marshal (version 2: no back-references) gives equal bytes for
    # equal values.
    digest = hashlib.blake2b(marshal.dumps(where, 2), digest_size=8).digest()
    return R.seed_state(R.seed_state(seed) ^ (int.from_bytes(digest, "big") & R.MASK))

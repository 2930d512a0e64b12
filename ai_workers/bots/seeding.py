"""A seed per decision: the seat's seed mixed with where the game is, so a seeded bot is
reproducible yet does not replay the same random stream at every decision."""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import rng as R


def decision_seed(view: rules.View, seed: int) -> int:
    s = view.state
    # hash() of a tuple of ints is not randomized per process (only str/bytes hashes are)
    where = hash((s.turn, s.active, view.seat, s.runes, s.power, s.pool, s.moved,
                  len(s.played[s.active]), len(s.used), s.decision))  # fmt: skip
    return R.seed_state(R.seed_state(seed) ^ (where & R.MASK))

"""Why a reviewed decision lost chances, in a player's words, from the rules state at the time.

The search only says how much a move lowered the seat's chance; the words come from what the
rules state shows differs between the move played and the search's best one: resources left
unspent while an acquire or defeat was affordable, a banished card worth more than the seat's
others, a different card acquired or Monster defeated. Card names and costs are the card
data's (``State.T``). Reads the seat's own cards and the public board only.
"""

from __future__ import annotations

from engine_service import rules
from engine_service.rules import actions as A
from engine_service.rules.describe import describe_action, target_name
from engine_service.rules.engine import target_cost
from engine_service.rules.state import DEEP

# Buying or defeating with the seat's own resources (legal = affordable now).
_SPEND_RUNES = frozenset((A.ACQUIRE,))
_SPEND_POWER = frozenset((A.DEFEAT,))
_SPEND_CREW = frozenset((A.ACQUIRE_CREW, A.DEFEAT_CREW, A.DEFEAT_VOID))
_BANISH = frozenset((A.BANISH_HAND, A.BANISH_DISCARD))


def _kind(action: int) -> int:
    return action >> 16


def _arg(action: int) -> int:
    return action & 0xFFFF


def _target(s: rules.State, action: int) -> str:
    """A target's name and cost, ``Mangrove Matron (5)``; center spaces without the space."""
    t = _arg(action)
    name = s.T.names[s.center[t]] if t < DEEP and s.center[t] >= 0 else target_name(s, t)
    return f"{name} ({target_cost(s, t)})"


def wasted(s: rules.State, legal: list[int], action: int) -> str | None:
    """When ``action`` gave up an affordable acquire or defeat for nothing (ended the turn
    with it legal, or declined a free card), why in words; else None. A review never labels
    such a move GOOD or BEST (:func:`engine_service.server.review.label`)."""
    kind = _kind(action)
    if kind == A.SKIP and s.decision is not None and s.decision[0] == A.D_FREE:
        free = [a for a in legal if _kind(a) == A.TAKE_FREE]
        if free:
            return f"declined a free card while {_target(s, free[0])} could be taken"
        return None
    if kind != A.END_TURN:
        return None
    defeats = [a for a in legal if _kind(a) in _SPEND_POWER]
    buys = [a for a in legal if _kind(a) in _SPEND_RUNES]
    crew = [a for a in legal if _kind(a) in _SPEND_CREW]
    parts = []
    if defeats:
        best = max(defeats, key=lambda a: target_cost(s, _arg(a)))
        parts.append(f"left {s.power} Power unspent while {_target(s, best)} could be defeated")
    if buys:
        best = max(buys, key=lambda a: target_cost(s, _arg(a)))
        where = "in the center row" if _arg(best) < DEEP else "available"
        parts.append(f"left {s.runes} Runes unspent while {_target(s, best)} was {where}")
    if crew and not parts:
        parts.append(f"ended the turn while {describe_action(s, crew[0])} was possible")
    return "; ".join(parts) if parts else None


def _own_cards(s: rules.State, seat: int) -> list[int]:
    return [
        *s.hands[seat],
        *s.decks[seat],
        *s.discards[seat],
        *s.constructs[seat],
        *(s.played[seat] if seat < len(s.played) else ()),
    ]


def explain(s: rules.State, seat: int, legal: list[int], action: int, best: int) -> str:
    """Why playing ``action`` in ``s`` was worse than ``best``, in a player's words."""
    w = wasted(s, legal, action)
    if w is not None:
        return w
    T = s.T
    kind, arg = _kind(action), _arg(action)
    if kind in _BANISH:
        cost = T.cost[arg]
        own = _own_cards(s, seat)
        if own and cost >= max(T.cost[c] for c in own) and cost > 0:
            return f"banished {T.names[arg]}, your best card"
        return f"banished {T.names[arg]} ({cost}) where the search would {_lower(describe_action(s, best))}"
    if kind == A.BANISH_CENTER:
        return (
            f"banished {_target(s, action)} from the center row where the search would "
            f"{_lower(describe_action(s, best))}"
        )
    if kind in _SPEND_RUNES and _kind(best) in _SPEND_RUNES:
        return f"acquired {_target(s, action)} where {_target(s, best)} was the stronger buy"
    if kind in _SPEND_POWER and _kind(best) in _SPEND_POWER:
        return f"defeated {_target(s, action)} where defeating {_target(s, best)} was stronger"
    if kind == A.END_TURN:
        return f"ended the turn early: the search would {_lower(describe_action(s, best))} first"
    return (
        f"{_lower(describe_action(s, action))} where the search would "
        f"{_lower(describe_action(s, best))}"
    )


def _lower(text: str) -> str:
    return text[:1].lower() + text[1:] if text else text


# Before this share of the Honor pool is taken, a chance shown is still mostly a guess: in the
# first third of a game the value model's chances score close to "always 50%"
# (benchmarks/calibration.py prints the Brier score of both sides; docs/bots.md, "Where a
# chance is still a guess"); hints and reviews say so (chance_is_guess).
GUESS_UNTIL_TAKEN = 1.0 / 3.0


def chance_is_guess(s: rules.State) -> bool:
    """Whether a win chance shown at ``s`` is still a guess (early in the game)."""
    if s.ending or s.over:
        return False
    return 1.0 - s.pool / s.config.honor_pool < GUESS_UNTIL_TAKEN

"""The chances players are shown, calibrated: the search's raw chances mapped by a fitted scaling.

The search's chance of an action is the mean of its evaluations after it (the value model at
its horizon), and those miss what a seat's place in the round is worth: in self-play the seat
that plays second won 55% of 1,400 games, more than its raw chances said
(benchmarks/calibration.py, ``--raw``). The search itself
keeps its raw values (only the order of its actions matters to it); what hints and reviews
show goes through :func:`shown`, a logistic recalibration (Platt scaling) of each seat's raw
chance ``p``:

    shown = sigmoid((a + b * taken) * logit(p) + c * order)

with ``taken`` the share of the Honor pool taken (the scaling may differ as the game goes) and
``order`` +1 for the seat that plays second in a round, -1 for the first (two-player games;
with more seats ``c`` is left out and the chances are normalised to sum to 1). A certain
outcome (0 or 1) stays certain. The weights are plain data (``chance_scaling.json``), fitted on
the search's own self-play by ``python -m ai_workers.fit_chances ROWS.jsonl ... --write``
from the rows ``benchmarks/calibration.py --raw --rows FILE`` writes.
"""

from __future__ import annotations

import json
import math
from importlib import resources

SCALING_FILE = "chance_scaling.json"
EDGE = 1e-6  # raw chances are kept inside (EDGE, 1 - EDGE) for the logit, unless certain


def _load() -> tuple[float, float, float]:
    raw = json.loads(resources.files("ai_workers").joinpath(SCALING_FILE).read_text())
    w = raw["weights"]
    return float(w["a"]), float(w["b"]), float(w["c"])


A, B, C = _load()


def logit(p: float) -> float:
    p = min(1.0 - EDGE, max(EDGE, p))
    return math.log(p / (1.0 - p))


def sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))


def features(p: float, taken: float, order: float) -> list[float]:
    """The scaling's terms for one raw chance (what the fit regresses the outcome on)."""
    lp = logit(p)
    return [lp, lp * taken, order]


def shown(
    raw: list[float], first: int, taken: float, weights: tuple[float, float, float] | None = None
) -> list[float]:
    """Every seat's chance as shown, from the search's raw ones (index = seat); ``first``: the
    seat that starts each round; ``taken``: the share of the Honor pool taken; ``weights``:
    (a, b, c) other than the fitted ones (to score another fit)."""
    a, b, c = weights or (A, B, C)
    n = len(raw)
    out = []
    for q, p in enumerate(raw):
        if p <= 0.0 or p >= 1.0:
            out.append(min(1.0, max(0.0, p)))  # (a finished game: certain)
            continue
        order = (1.0 if (q - first) % n else -1.0) if n == 2 else 0.0
        out.append(sigmoid((a + b * taken) * logit(p) + c * order))
    if n != 2:  # (with two seats the map keeps them summing to 1 by itself)
        total = sum(out)
        if total > 0:
            out = [p / total for p in out]
    return out


def scaled_error(se: float, p: float, p_shown: float, taken: float) -> float:
    """A raw standard error carried through the map (its slope at ``p``)."""
    if se <= 0.0 or p <= 0.0 or p >= 1.0:
        return 0.0
    slope = (A + B * taken) * p_shown * (1.0 - p_shown) / (p * (1.0 - p))
    return abs(slope) * se

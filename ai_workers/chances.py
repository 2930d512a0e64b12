"""The chances players are shown, calibrated: the search's raw chances mapped by a fitted scaling.

The search's chance of an action is the mean of its evaluations after it (the value model at
its horizon), and those run more extreme than outcomes: in self-play a raw 75% won about 65%
of the time, a raw 25% about 34% (benchmarks/calibration.py, ``--raw``). The search itself
keeps its raw values (only the order of its actions matters to it); what hints and reviews
show goes through :func:`shown`, a logistic recalibration (Platt scaling) of each seat's raw
chance ``p``:

    shown = sigmoid((a + b * taken) * logit(p) + c * order)

with ``taken`` the share of the Honor pool taken (the scaling may differ as the game goes) and
``order`` +1 for the seat that plays second in a round, -1 for the first (two-player games;
with more seats ``c`` is left out and the chances are normalised to sum to 1). A certain
outcome (0 or 1) stays certain. The weights are plain data (``chance_scaling.json``), fitted on
the search's own self-play by ``python -m ai_workers.chances --fit ROWS.jsonl ... --write``
from the rows ``benchmarks/calibration.py --raw --rows FILE`` writes.
"""

from __future__ import annotations

import argparse
import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

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


def shown(raw: list[float], first: int, taken: float) -> list[float]:
    """Every seat's chance as shown, from the search's raw ones (index = seat); ``first``: the
    seat that starts each round; ``taken``: the share of the Honor pool taken."""
    n = len(raw)
    out = []
    for q, p in enumerate(raw):
        if p <= 0.0 or p >= 1.0:
            out.append(min(1.0, max(0.0, p)))  # (a finished game: certain)
            continue
        order = (1.0 if (q - first) % n else -1.0) if n == 2 else 0.0
        out.append(sigmoid((A + B * taken) * logit(p) + C * order))
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


# ---- fitting (a developer's tool: numpy is in the dev extras) ------------------------------


def fit(rows: list[dict[str, Any]]) -> list[float]:
    """Logistic regression of ``won`` on :func:`features` (no intercept: the terms change sign
    with the seat), Newton's method with a little shrinkage."""
    import numpy as np

    X = np.array([features(r["chance"], r["taken"], 1.0 if r["order"] else -1.0) for r in rows])
    y = np.array([r["won"] for r in rows], dtype=float)
    w = np.array([1.0, 0.0, 0.0])
    for _ in range(30):
        z = np.clip(X @ w, -40, 40)
        p = 1.0 / (1.0 + np.exp(-z))
        g = X.T @ (p - y) + 1e-4 * w
        H = (X * (p * (1 - p))[:, None]).T @ X + 1e-4 * np.eye(3)
        w = w - np.linalg.solve(H, g)
    return [float(x) for x in w]


def main() -> None:
    ap = argparse.ArgumentParser(description="Fit the scaling of the chances shown.")
    ap.add_argument("--fit", nargs="+", required=True, help="rows (JSON lines) of "
                    "benchmarks/calibration.py --raw --rows")  # fmt: skip
    ap.add_argument("--write", action="store_true", help=f"store the weights in {SCALING_FILE}")
    args = ap.parse_args()
    rows = [json.loads(line) for f in args.fit for line in Path(f).read_text().splitlines()]
    a, b, c = fit(rows)
    games = len({r["game"] for r in rows})
    print(f"{len(rows)} decisions of {games} games: a {a:.4f}, b {b:.4f}, c {c:.4f}")
    if args.write:
        path = Path(__file__).with_name(SCALING_FILE)
        data = {
            "fitted_by": "python -m ai_workers.chances --fit " + " ".join(args.fit) + " --write",
            "source": f"{len(rows)} rated decisions of {games} games of self-play",
            "weights": {"a": round(a, 5), "b": round(b, 5), "c": round(c, 5)},
        }
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

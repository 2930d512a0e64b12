"""Fit the scaling of the chances shown (:mod:`ai_workers.chances`) to self-play outcomes: a
developer's tool (numpy, the dev extra).

    python benchmarks/calibration.py --games 100 --seed S --raw --rows rows-S.jsonl   # a few S
    python -m ai_workers.fit_chances rows-*.jsonl [--write]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from ai_workers.chances import SCALING_FILE, features


def fit(rows: list[dict[str, Any]]) -> list[float]:
    """Logistic regression of ``won`` on :func:`features` (no intercept: the terms change sign
    with the seat), Newton's method with a little shrinkage; rows of a finished game (a chance
    of 0 or 1) are left out."""
    rows = [r for r in rows if 0.0 < r["chance"] < 1.0]  # (certain ones stay so: no fit)
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
    ap.add_argument("rows", nargs="+", help="rows (JSON lines) of "
                    "benchmarks/calibration.py --raw --rows")  # fmt: skip
    ap.add_argument("--write", action="store_true", help=f"store the weights in {SCALING_FILE}")
    args = ap.parse_args()
    rows = [json.loads(line) for f in args.rows for line in Path(f).read_text().splitlines()]
    a, b, c = fit(rows)
    games = len({r["game"] for r in rows})
    print(f"{len(rows)} decisions of {games} games: a {a:.4f}, b {b:.4f}, c {c:.4f}")
    if args.write:
        path = Path(__file__).with_name(SCALING_FILE)
        data = {
            "fitted_by": "python -m ai_workers.fit_chances " + " ".join(args.rows) + " --write",
            "source": f"{len(rows)} rated decisions of {games} games of self-play",
            "weights": {"a": round(a, 5), "b": round(b, 5), "c": round(c, 5)},
        }
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Fit the value model to the search's own self-play: ``python -m ai_workers.bots.fit_value``.

The value model (``evaluation.VALUE_WEIGHTS``, the search's default evaluation and so the
chances that hints and reviews show) is a logistic regression of "this seat won" on the
difference between the two seats' terms of ``evaluation.seat_features``: Honor (at the start,
at the end and in the last round), deck quality, Constructs in play and still in the deck,
Crew, deck size, who plays next and who plays last in each round (both also weighted by how
far the game is), and the hand of the seat to play next.

It plays 2-player games of every set combination between two copies of a bot spec (default
``ismcts@200it``, the search itself), records both seats' terms at the start of every turn
(where the search evaluates: its rollouts stop at a turn's start), fits on four fifths of the
games and scores the rest (log-loss and Brier beside the older weight sets), then refits on
every game. ``--write`` stores the weights in ``ai_workers/bots/value_model.json`` (plain
data, read at import). ``--save FILE`` keeps the recorded positions (JSON lines) and
``--load FILE ...`` fits from such files without playing.

    python -m ai_workers.bots.fit_value [--games 400] [--bot ismcts@200it] [--seed 200000]
        [--workers N] [--save FILE] [--load FILE ...] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np  # the dev extra: the value model is fitted on a developer's machine

from ai_workers.bots.evaluation import (
    VALUE_FIELDS,
    VALUE_MODEL_FILE,
    WEIGHT_SETS,
    pool_left,
    seat_features,
    seat_stats,
)
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.settings import BotSettings
from ai_workers.bots.specs import make_bot, parse_spec
from engine_service import rules

DEFAULT_BOT = "ismcts@200it"
L2 = 1e-4  # a little shrinkage: the rarer terms (the last round) stay finite
Position = dict[str, Any]


def record(s: rules.State) -> Position:
    """Seat 0's terms less seat 1's, and how far the game is (``y`` is filled in at the end)."""
    K = knowledge(s.T)
    st = [seat_stats(s, q, K) for q in (0, 1)]
    a, b = (seat_features(s, q, st[q], K) for q in (0, 1))
    return {"x": [u - v for u, v in zip(a, b, strict=True)], "turn": s.turn,
            "pool_left": pool_left(s)}  # fmt: skip


def self_play(seed: int, bot: str = DEFAULT_BOT) -> list[Position]:
    """One game's positions (the start of every turn after the first), each with ``y``: 1
    when seat 0 won."""
    s = rules.new_game(
        rules.GameConfig(sets=("ss", "cotgi", "both")[seed % 3], players=2, seed=seed)
    )
    spec = parse_spec(bot)
    players = [make_bot(spec) for _ in range(2)]
    settings = [
        BotSettings(name=spec.name, iterations=spec.iterations, time_ms=spec.time_ms or 0,
                    seed=seed * 8 + q)
        for q in range(2)
    ]  # fmt: skip
    out: list[Position] = []
    turn = s.turn
    while not s.over:
        legal = rules.legal_actions(s)
        p = s.to_move()
        a = legal[0] if len(legal) == 1 else players[p].choose(rules.view(s, p), legal, settings[p])
        rules.apply_unchecked(s, a)
        if s.turn != turn and not s.over:
            turn = s.turn
            out.append(record(s))
    won0 = int(rules.winner(s) == 0)
    for r in out:
        r["y"] = won0
        r["game"] = seed
    return out


def arrays(rows: list[Position]) -> tuple[np.ndarray, np.ndarray]:
    """Both seats' rows: seat 0's difference and its mirror (seat 1's), so that the fit is
    symmetric by construction."""
    x = np.array([r["x"] for r in rows], dtype=float)
    y = np.array([r["y"] for r in rows], dtype=float)
    return np.vstack([x, -x]), np.concatenate([y, 1.0 - y])


def fit(x: np.ndarray, y: np.ndarray, l2: float = L2, steps: int = 30) -> np.ndarray:
    """Logistic regression without intercept (the terms are differences), Newton's method."""
    w = np.zeros(x.shape[1])
    n = len(y)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        grad = x.T @ (p - y) / n + l2 * w
        hess = (x * (p * (1 - p))[:, None]).T @ x / n + l2 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return w


SEAT_TERMS = ("next_to_play", "next_to_play_end", "last_seat", "last_seat_end")


def refit_seat_terms(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``w`` with the seat-order and to-move terms refitted on ``x``, ``y`` (the others held):
    how much the seat that plays last gains depends on how the players play, so these terms
    come from the self-play of the search as it is now."""
    idx = [VALUE_FIELDS.index(k) for k in SEAT_TERMS]
    rest = [i for i in range(len(w)) if i not in idx]
    offset = x[:, rest] @ w[rest]
    v = w[idx].copy()
    xs = x[:, idx]
    for _ in range(30):
        p = 1.0 / (1.0 + np.exp(-np.clip(offset + xs @ v, -30, 30)))
        grad = xs.T @ (p - y) / len(y) + L2 * v
        hess = (xs * (p * (1 - p))[:, None]).T @ xs / len(y) + L2 * np.eye(len(v))
        v -= np.linalg.solve(hess, grad)
    out = w.copy()
    out[idx] = v
    return out


def scores(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """Mean log-loss and Brier of the weights ``w`` on these rows."""
    p = np.clip(1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30))), 1e-9, 1 - 1e-9)
    loss = float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))
    return loss, float(np.mean((p - y) ** 2))


def weight_vector(name: str) -> np.ndarray:
    w = WEIGHT_SETS[name]
    return np.array([getattr(w, k) for k in VALUE_FIELDS], dtype=float)


def play(games: int, seed: int, bot: str, workers: int) -> list[Position]:
    rows: list[Position] = []
    t0 = time.time()
    seeds = range(seed, seed + games)
    with ProcessPoolExecutor(workers) as ex:
        for k, game in enumerate(ex.map(partial(self_play, bot=bot), seeds)):
            rows.extend(game)
            if (k + 1) % 10 == 0 or k + 1 == games:
                print(f"[{time.time() - t0:6.0f} s] {k + 1}/{games} games, {len(rows)} positions",
                      file=sys.stderr, flush=True)  # fmt: skip
    return rows


def report(rows: list[Position], recent: list[Position] | None = None) -> np.ndarray:
    """Fit on four fifths of the games, print the held-out scores, refit on all of them (and
    the seat terms on ``recent`` alone, when given)."""
    games = sorted({r["game"] for r in rows})
    held = set(games[4::5])
    train = [r for r in rows if r["game"] not in held]
    test = [r for r in rows if r["game"] in held]
    print(f"# {len(rows)} positions from {len(games)} games; held out: {len(held)} games "
          f"({len(test)} positions)")  # fmt: skip
    if train and test:
        xt, yt = arrays(test)
        w = fit(*arrays(train))
        loss, brier = scores(xt, yt, w)
        print(f"held out, value model fitted on the rest: log-loss {loss:.4f}, Brier {brier:.4f}")
        for name in ("heuristic", "ismcts", "value"):
            loss, brier = scores(xt, yt, weight_vector(name))
            print(f"held out, weight set {name!r} (as committed): log-loss {loss:.4f}, "
                  f"Brier {brier:.4f}")  # fmt: skip
    w = fit(*arrays(rows))
    loss, brier = scores(*arrays(rows), w)
    print(f"fitted on all: log-loss {loss:.4f}, Brier {brier:.4f}")
    if recent:
        xr, yr = arrays(recent)
        before = scores(xr, yr, w)[1]
        w = refit_seat_terms(w, xr, yr)
        print(f"seat terms refitted on the {len({r['game'] for r in recent})} recent games: "
              f"their Brier {before:.4f} -> {scores(xr, yr, w)[1]:.4f}")  # fmt: skip
    for k, v in zip(VALUE_FIELDS, w, strict=True):
        print(f"  {k:18s} {v:+.4f}")
    return w


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--games", type=int, default=400)
    ap.add_argument("--bot", default=DEFAULT_BOT, help="the bot spec playing both seats")
    ap.add_argument("--seed", type=int, default=200000, help="first game's seed")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--save", default="", help="write the recorded positions here (JSON lines)")
    ap.add_argument("--load", nargs="*", default=[], help="fit from these files, not play")
    ap.add_argument("--recent", nargs="*", default=[],
                    help="saved positions of the search as it is now: the seat terms from them")  # fmt: skip
    ap.add_argument("--write", action="store_true", help=f"store the weights in {VALUE_MODEL_FILE}")
    args = ap.parse_args(argv)
    if args.load:
        rows = [json.loads(line) for f in args.load for line in Path(f).read_text().splitlines()]
        source = " + ".join(args.load)
    else:
        parse_spec(args.bot)  # a bad spec fails here, not in every worker
        rows = play(args.games, args.seed, args.bot, args.workers)
        source = f"{args.games} games of {args.bot} from seed {args.seed}"
        if args.save:
            Path(args.save).write_text("".join(json.dumps(r) + "\n" for r in rows))
    if not rows:
        ap.error("no positions recorded")
    print(f"# value model from {source}")
    recent = [json.loads(line) for f in args.recent for line in Path(f).read_text().splitlines()]
    if recent:
        source += f"; seat terms from {' + '.join(args.recent)}"
    w = report(rows, recent)
    if args.write:
        path = Path(__file__).with_name(VALUE_MODEL_FILE)
        data = {
            "fitted_by": f"python -m ai_workers.bots.fit_value {' '.join(sys.argv[1:])}".strip(),
            "source": source,
            "positions": len(rows),
            "weights": {k: round(float(v), 5) for k, v in zip(VALUE_FIELDS, w, strict=True)},
        }
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

"""Fit the evaluation's weights to self-play: ``python -m ai_workers.bots.fit_eval``.

Plays 2-player games of every set combination between heuristic players that take a random
move (other than ending the turn) 10% of the time (or, with ``--bot SPEC``, between two
copies of any bot spec of ``benchmarks/strength.py``, e.g. ``ismcts@300it``), records at the
end of every turn, for each seat, its differences to the other seat in the evaluation's features, and fits a logistic
regression of "this seat won" on them (Newton's method, a little L2). Features that should
matter differently early and late are split in two, weighted by the fraction of the Honor pool
left and by the rest. Prints the fitted :class:`~ai_workers.bots.evaluation.Weights`.

``--evaluation projection`` fits the ``projection`` evaluation instead: its one feature, the
lead in projected Honor (at the exchange rate ``--econ`` for future resources), split the same
way, and who plays next; prints the fitted :class:`~ai_workers.bots.evaluation.Projection`.

    python -m ai_workers.bots.fit_eval [--games 3000] [--bot SPEC] [--workers N] [--seed S]
        [--evaluation lead|projection] [--econ 0.6]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from ai_workers.bots.evaluation import (
    PROJECTION,
    Projection,
    hand_value,
    pool_left,
    projected,
    seat_stats,
)
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import rollout_action
from ai_workers.bots.settings import BotSettings
from ai_workers.bots.specs import make_bot, parse_spec
from engine_service import rules

FIELDS = (
    "honor_start", "honor_end", "avg_play_start", "avg_play_end", "turn_start", "turn_end",
    "pending_start", "pending_end", "crew", "size", "next_to_play", "hand",
)  # fmt: skip
Row = tuple[list[float], int]
Features = Callable[[rules.State, int], list[float]]


def features(s: rules.State, q: int) -> list[float]:
    K = knowledge(s.T)
    st = [seat_stats(s, o, K) for o in range(s.n)]
    o = 1 - q
    f = pool_left(s)
    g = 1.0 - f
    dh = st[q].honor - st[o].honor
    da = st[q].avg_play - st[o].avg_play
    dt = st[q].turn_sum - st[o].turn_sum
    dp = st[q].pending - st[o].pending
    return [dh * f, dh * g, da * f, da * g, dt * f, dt * g, dp * f, dp * g,
            min(s.crew[q], 9) - min(s.crew[o], 9), st[q].size - st[o].size,
            1.0 if s.active == q else 0.0,
            hand_value(s, s.active, K) * (1.0 if s.active == q else -1.0)]  # fmt: skip


def projection_features(s: rules.State, q: int, econ: float = PROJECTION.econ) -> list[float]:
    """Seat ``q``'s lead in projected Honor, weighted by the pool left and by the rest, and +1
    when it plays next (-1 when the other seat does): :class:`Projection`'s numbers, in order."""
    K = knowledge(s.T)
    o = 1 - q
    lead = projected(s, q, seat_stats(s, q, K), econ) - projected(s, o, seat_stats(s, o, K), econ)
    f = pool_left(s)
    return [lead * f, lead * (1.0 - f), 1.0 if s.active == q else -1.0]


def self_play(seed: int, bot: str = "", features: Features = features) -> list[Row]:
    """One game's rows; ``bot`` (a spec) plays both seats, else the noisy heuristic."""
    s = rules.new_game(
        rules.GameConfig(sets=("ss", "cotgi", "both")[seed % 3], players=2, seed=seed)
    )
    K = knowledge(s.T)
    rnd = random.Random(seed)
    spec = parse_spec(bot) if bot else None
    players = [make_bot(spec) for _ in range(2)] if spec else []
    settings = [
        BotSettings(name=spec.name, iterations=spec.iterations, time_ms=spec.time_ms or 0,
                    seed=seed * 8 + q)
        for q in range(2)
    ] if spec else []  # fmt: skip
    seen: list[tuple[int, list[float]]] = []
    turn = s.turn
    while not s.over:
        legal = rules.legal_actions(s)
        if not spec:
            a = rollout_action(s, legal, K, rnd, 0.1)
        elif len(legal) == 1:
            a = legal[0]
        else:
            p = s.to_move()
            a = players[p].choose(rules.view(s, p), legal, settings[p])
        rules.apply_unchecked(s, a)
        if s.turn != turn and not s.over:
            turn = s.turn
            seen.extend((q, features(s, q)) for q in (0, 1))
    w = rules.winner(s)
    return [(x, int(q == w)) for q, x in seen]


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for i in range(n):
        p = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[p] = m[p], m[i]
        for r in range(n):
            if r != i:
                k = m[r][i] / m[i][i]
                for c in range(i, n + 1):
                    m[r][c] -= k * m[i][c]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit(rows: list[Row], l2: float = 1e-3, steps: int = 20) -> tuple[list[float], float]:
    """Logistic regression without intercept (the features are differences); returns the
    weights and the mean log-loss."""
    d = len(rows[0][0])
    w = [0.0] * d
    for _ in range(steps):
        grad = [l2 * wi for wi in w]
        hess = [[l2 if i == j else 0.0 for j in range(d)] for i in range(d)]
        for x, y in rows:
            z = max(-30.0, min(30.0, sum(a * b for a, b in zip(w, x, strict=True))))
            p = 1.0 / (1.0 + math.exp(-z))
            for i in range(d):
                grad[i] += (p - y) * x[i]
                hp = p * (1 - p) * x[i]
                for j in range(d):
                    hess[i][j] += hp * x[j]
        w = [a - b for a, b in zip(w, _solve(hess, grad), strict=True)]
    loss = 0.0
    for x, y in rows:
        z = max(-30.0, min(30.0, sum(a * b for a, b in zip(w, x, strict=True))))
        p = min(max(1.0 / (1.0 + math.exp(-z)), 1e-9), 1 - 1e-9)
        loss -= y * math.log(p) + (1 - y) * math.log(1 - p)
    return w, loss / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--games", type=int, default=3000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bot", default="", help="a bot spec playing both seats, e.g. ismcts@300it")
    ap.add_argument("--evaluation", choices=["lead", "projection"], default="lead")
    ap.add_argument("--econ", type=float, default=PROJECTION.econ,
                    help="projection: the rate of future resources (default %(default)s)")  # fmt: skip
    args = ap.parse_args()
    feats: Features = features
    if args.evaluation == "projection":
        feats = partial(projection_features, econ=args.econ)
    if args.bot:
        parse_spec(args.bot)  # a bad spec fails here, not in every worker
    seeds = range(args.seed, args.seed + args.games)
    rows: list[Row] = []
    t0 = time.time()
    with ProcessPoolExecutor(args.workers) as ex:
        chunk = 1 if args.bot else 20
        for k, game in enumerate(ex.map(partial(self_play, bot=args.bot, features=feats), seeds, chunksize=chunk)):
            rows.extend(game)
            if args.bot and (k + 1) % 25 == 0:
                print(f"[{(time.time() - t0) / 60:5.1f} min] {k + 1}/{args.games} games",
                      file=sys.stderr, flush=True)  # fmt: skip
    w, loss = fit(rows)
    who = args.bot or "heuristic (10% random moves)"
    print(f"# {len(rows)} positions from {args.games} games of {who}, mean log-loss {loss:.4f}")
    if args.evaluation == "projection":
        print(Projection(args.econ, round(w[0], 4), round(w[1], 4), round(w[2], 4)))
    else:
        print("Weights(" + ", ".join(f"{k}={v:.4f}" for k, v in zip(FIELDS, w, strict=True)) + ")")


if __name__ == "__main__":
    main()

"""Elo ratings from game results: a Bradley-Terry fit over all of them at once.

Player i beats player j with probability ``1 / (1 + 10 ** ((r_j - r_i) / 400))``. The ratings
maximise the likelihood of every recorded result, plus a weak prior: one virtual drawn game
between every pair that met (half a win each way). Without it a pair where one side won every
game (``heuristic`` against ``random``) would push the gap to infinity; with it the gap stays
finite and large, and the prior's weight fades as games accumulate.

Ratings are shifted so that the ``anchor`` player (if given) sits at ``anchor_rating``, else so
that their mean does. The 95% intervals come from the curvature of the log-likelihood at the
fit (the Laplace approximation): the uncertainty of each rating *relative to the anchor* (or
to the mean), so the anchor's own interval is a point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

ELO = 400.0 / math.log(10.0)  # Elo points per natural-log unit of odds
Z95 = 1.959964
PRIOR_DRAWS = 1.0  # virtual drawn games per pair that met


@dataclass(frozen=True, slots=True)
class Rating:
    name: str
    elo: float
    ci95: tuple[float, float]
    games: int
    score: float  # points scored (a win 1, a draw 0.5)


def fit(
    results: Iterable[tuple[str, str, float]],
    anchor: str | None = None,
    anchor_rating: float = 0.0,
    prior_draws: float = PRIOR_DRAWS,
    iterations: int = 100,
) -> list[Rating]:
    """Ratings from ``(a, b, score of a)`` results (1 a won, 0 b won, 0.5 a draw), best
    first."""
    names: list[str] = []
    index: dict[str, int] = {}
    wins: dict[tuple[int, int], float] = {}  # (i, j) -> points i scored against j
    games: dict[tuple[int, int], float] = {}  # (i, j) with i < j -> games played
    played = []
    for a, b, sc in results:
        if a == b:
            raise ValueError(f"a player cannot play itself: {a!r}")
        for x in (a, b):
            if x not in index:
                index[x] = len(names)
                names.append(x)
        i, j = index[a], index[b]
        wins[i, j] = wins.get((i, j), 0.0) + sc
        wins[j, i] = wins.get((j, i), 0.0) + 1.0 - sc
        key = (min(i, j), max(i, j))
        games[key] = games.get(key, 0.0) + 1.0
        played.append((i, j, sc))
    n = len(names)
    if n == 0:
        return []
    if anchor is not None and anchor not in index:
        raise ValueError(f"anchor {anchor!r} played no game")
    # the prior: virtual draws between every pair that met
    for i, j in list(games):
        wins[i, j] = wins.get((i, j), 0.0) + prior_draws / 2
        wins[j, i] = wins.get((j, i), 0.0) + prior_draws / 2
        games[i, j] += prior_draws
    opp: list[list[tuple[int, float]]] = [[] for _ in range(n)]  # i -> (j, games between)
    for (i, j), g in games.items():
        opp[i].append((j, g))
        opp[j].append((i, g))
    total_w = [sum(wins.get((i, j), 0.0) for j, _ in opp[i]) for i in range(n)]
    # the MM algorithm (Hunter 2004) on strengths gamma = exp(r): converges for connected data
    gamma = [1.0] * n
    for _ in range(iterations):
        new = []
        for i in range(n):
            den = sum(g / (gamma[i] + gamma[j]) for j, g in opp[i])
            new.append(total_w[i] / den if den > 0 and total_w[i] > 0 else gamma[i])
        m = math.exp(sum(math.log(x) for x in new) / n)
        delta = max(abs(math.log(x / m) - math.log(y)) for x, y in zip(new, gamma, strict=True))
        gamma = [x / m for x in new]
        if delta < 1e-10:
            break
    r = [math.log(x) for x in gamma]  # natural-log units
    # observed information (the Hessian of minus the log-likelihood)
    h = [[0.0] * n for _ in range(n)]
    for (i, j), g in games.items():
        p = 1.0 / (1.0 + math.exp(r[j] - r[i]))
        w = g * p * (1 - p)
        h[i][i] += w
        h[j][j] += w
        h[i][j] -= w
        h[j][i] -= w
    ref = index[anchor] if anchor is not None else None
    var = _relative_variances(h, ref)
    shift = r[ref] if ref is not None else sum(r) / n
    score = [0.0] * n
    count = [0] * n
    for i, j, sc in played:
        score[i] += sc
        score[j] += 1 - sc
        count[i] += 1
        count[j] += 1
    out = []
    for i, name in enumerate(names):
        elo = anchor_rating + ELO * (r[i] - shift)
        half = Z95 * ELO * math.sqrt(max(0.0, var[i]))
        out.append(Rating(name, elo, (elo - half, elo + half), count[i], score[i]))
    out.sort(key=lambda x: -x.elo)
    return out


def _relative_variances(h: list[list[float]], ref: int | None) -> list[float]:
    """Variance of each rating relative to player ``ref`` (fixed at 0), or relative to the
    mean of all when ``ref`` is None: invert the information with that constraint."""
    n = len(h)
    if n == 1:
        return [0.0]
    if ref is not None:
        keep = [i for i in range(n) if i != ref]
        sub = [[h[i][j] for j in keep] for i in keep]
        inv = _invert(sub)
        out = [0.0] * n
        for a, i in enumerate(keep):
            out[i] = inv[a][a]
        return out
    # sum-to-zero constraint: the pseudo-inverse of a Laplacian-like matrix is
    # (H + J/n)^-1 - J/n, with J the all-ones matrix
    m = [[h[i][j] + 1.0 / n for j in range(n)] for i in range(n)]
    inv = _invert(m)
    return [inv[i][i] - 1.0 / n for i in range(n)]


def _invert(m: list[list[float]]) -> list[list[float]]:
    n = len(m)
    a = [[*row, *(1.0 if i == j else 0.0 for j in range(n))] for i, row in enumerate(m)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(a[r][c]))
        if abs(a[p][c]) < 1e-12:
            raise ValueError("the results do not connect every player to the others")
        a[c], a[p] = a[p], a[c]
        piv = a[c][c]
        a[c] = [x / piv for x in a[c]]
        for r in range(n):
            if r != c and a[r][c]:
                k = a[r][c]
                a[r] = [x - k * y for x, y in zip(a[r], a[c], strict=True)]
    return [row[n:] for row in a]


def expected_score(elo_a: float, elo_b: float) -> float:
    """The chance that a beats b, from their ratings."""
    return 1.0 / (1.0 + 10 ** ((elo_b - elo_a) / 400.0))

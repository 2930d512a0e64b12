"""Are the win chances that hints and reviews show calibrated? Self-play against outcomes.

    python benchmarks/calibration.py [--games 100] [--seed 900000] [--bot ismcts@200it]
        [--iterations 200] [--workers 2] [--plot FILE.png] [--json]

Plays ``--games`` two-player games (sets rotating ss / cotgi / both with the seed) between two
copies of ``--bot`` and rates every decision with a real choice (as ``ReviewGame`` picks them)
the way the engine's analysis does (``ai_workers.analysis.analyse_view``: one search of
``--iterations`` from the deciding seat's view, the analysis seed): the chance shown for the
action played is scored against whether that seat won. Prints:

- the Brier score of those chances, and of a three-term logistic baseline (Honor lead,
  Honor lead times the share of the Honor pool taken, seat order), fitted on the other half
  of the games than the one it is scored on (two folds: even and odd games);
- per seat in turn order (the seat that starts, the second): the mean chance shown, the share
  of games won and the expected calibration error (ECE: ten equal-width bins of the chance,
  each bin's |mean chance - share won| weighted by its decisions);
- the Brier score per third of the game (by turn, of that game's turns), beside always 50%;
- the Brier score of the chances the analysis marks a guess (``explain.chance_is_guess``:
  early in the game) and of the others;
- with ``--plot``, a reliability diagram (PNG) of both seats.

Targets (each 100-game sample): Brier at least 15% below the baseline, ECE at most 0.05 for
each seat, the first third at most 0.225. Progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ai_workers.analysis import analyse_view  # noqa: E402
from ai_workers.bots.evaluation import pool_left, seat_stats  # noqa: E402
from ai_workers.bots.knowledge import knowledge  # noqa: E402
from ai_workers.bots.settings import BotSettings  # noqa: E402
from ai_workers.bots.specs import make_bot, parse_spec  # noqa: E402
from ai_workers.chances import shown  # noqa: E402
from engine_service import rules  # noqa: E402
from engine_service.server.analysis import ANALYSIS_SEED  # noqa: E402
from engine_service.server.explain import GUESS_UNTIL_TAKEN  # noqa: E402
from engine_service.server.review import real_choice  # noqa: E402

SETS = ("ss", "cotgi", "both")
BINS = 10
TARGET_BELOW_BASELINE = 0.15  # Brier at least this much below the baseline's
TARGET_ECE = 0.05
TARGET_FIRST_THIRD = 0.225
Row = dict[str, Any]


def play_and_rate(seed: int, bot: str, iterations: int, raw: bool = False) -> list[Row]:
    """One self-play game; a row per rated decision: the seat, its turn order, the chance shown
    for the action it played, the baseline's terms, and (at the end) whether it won."""
    s = rules.new_game(rules.GameConfig(sets=SETS[seed % 3], players=2, seed=seed))
    K = knowledge(s.T)
    spec = parse_spec(bot)
    players = [make_bot(spec) for _ in range(2)]
    settings = [
        BotSettings(name=spec.name, iterations=spec.iterations,
                    time_ms=0 if spec.iterations else spec.time_ms or 200, seed=seed * 8 + q)
        for q in range(2)
    ]  # fmt: skip
    rows: list[Row] = []
    while not s.over:
        legal = rules.legal_actions(s)
        p = s.to_move()
        if len(legal) == 1:
            rules.apply_unchecked(s, legal[0])
            continue
        view = rules.view(s, p)
        action = players[p].choose(view, legal, settings[p])
        if real_choice(s, legal, action):
            cands = analyse_view(view, legal, 0, iterations, ANALYSIS_SEED, raw)["candidates"]
            chance = {int(c[0]): float(c[2]) for c in cands}
            honor = [seat_stats(s, q, K).honor for q in (0, 1)]
            rows.append({
                "game": seed, "seat": p, "order": (p - s.first) % 2, "turn": s.turn,
                "chance": chance.get(action, min(chance.values())),
                "lead": honor[p] - honor[1 - p], "taken": 1.0 - pool_left(s),
            })  # fmt: skip
        rules.apply_unchecked(s, action)
    won = rules.winner(s)
    for r in rows:
        r["won"] = int(r["seat"] == won)
        r["third"] = min(2, 3 * (r["turn"] - 1) // max(1, s.turn))
    return rows


# ---- the figures ----------------------------------------------------------------------------


def brier(ps: list[float], ys: list[int]) -> float:
    return sum((p - y) ** 2 for p, y in zip(ps, ys, strict=True)) / len(ps) if ps else math.nan


def ece(ps: list[float], ys: list[int], bins: int = BINS) -> float:
    """Expected calibration error: each bin's |mean chance - share won|, weighted by count."""
    if not ps:
        return math.nan
    sums = [[0.0, 0.0, 0] for _ in range(bins)]
    for p, y in zip(ps, ys, strict=True):
        b = sums[min(bins - 1, int(p * bins))]
        b[0] += p
        b[1] += y
        b[2] += 1
    return sum(abs(sp - sy) for sp, sy, n in sums if n) / len(ps)


def baseline_terms(r: Row) -> list[float]:
    """Honor lead, the lead as the pool empties, seat order (+1 second, -1 first)."""
    return [r["lead"], r["lead"] * r["taken"], 1.0 if r["order"] else -1.0]


def fit_logistic(xs: list[list[float]], ys: list[int], steps: int = 25) -> list[float]:
    """Logistic regression without intercept (the terms change sign with the seat), Newton."""
    d = len(xs[0])
    w = [0.0] * d
    for _ in range(steps):
        g = [1e-3 * wi for wi in w]
        h = [[1e-3 if i == j else 0.0 for j in range(d)] for i in range(d)]
        for x, y in zip(xs, ys, strict=True):
            z = sum(a * b for a, b in zip(w, x, strict=True))
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            for i in range(d):
                g[i] += (p - y) * x[i]
                for j in range(d):
                    h[i][j] += p * (1 - p) * x[i] * x[j]
        w = [a - b for a, b in zip(w, _solve(h, g), strict=True)]
    return w


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for i in range(n):
        piv = max(range(i, n), key=lambda r: abs(m[r][i]))
        m[i], m[piv] = m[piv], m[i]
        for r in range(n):
            if r != i:
                k = m[r][i] / m[i][i]
                for c in range(i, n + 1):
                    m[r][c] -= k * m[i][c]
    return [m[i][n] / m[i][i] for i in range(n)]


def baseline(rows: list[Row]) -> list[float]:
    """The baseline's chance of each row, from a fit on the games of the other fold."""
    out = [0.5] * len(rows)
    for fold in (0, 1):
        train = [r for r in rows if r["game"] % 2 != fold]
        if not train:
            continue
        w = fit_logistic([baseline_terms(r) for r in train], [r["won"] for r in train])
        for i, r in enumerate(rows):
            if r["game"] % 2 == fold:
                z = sum(a * b for a, b in zip(w, baseline_terms(r), strict=True))
                out[i] = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
    return out


def reliability(ps: list[float], ys: list[int], bins: int = BINS) -> list[tuple[float, float, int]]:
    """(mean chance, share won, decisions) of each non-empty bin."""
    acc: list[list[float]] = [[0.0, 0.0, 0.0] for _ in range(bins)]
    for p, y in zip(ps, ys, strict=True):
        b = acc[min(bins - 1, int(p * bins))]
        b[0] += p
        b[1] += y
        b[2] += 1
    return [(sp / n, sy / n, int(n)) for sp, sy, n in acc if n]


def figures(rows: list[Row]) -> dict[str, Any]:
    ps = [r["chance"] for r in rows]
    ys = [r["won"] for r in rows]
    base = baseline(rows)
    out: dict[str, Any] = {
        "games": len({r["game"] for r in rows}),
        "decisions": len(rows),
        "brier": brier(ps, ys),
        "baseline_brier": brier(base, ys),
        "ece": ece(ps, ys),
        "seats": [],
        "thirds": [],
    }
    out["below_baseline"] = 1.0 - out["brier"] / out["baseline_brier"] if rows else math.nan
    for order, name in ((0, "first"), (1, "second")):
        mine = [r for r in rows if r["order"] == order]
        mp, my = [r["chance"] for r in mine], [r["won"] for r in mine]
        games = {r["game"]: r["won"] for r in mine}
        out["seats"].append({
            "seat": name, "decisions": len(mine),
            "mean_chance": sum(mp) / len(mp) if mp else math.nan,
            "games_won": sum(games.values()) / len(games) if games else math.nan,
            "decisions_won": sum(my) / len(my) if my else math.nan,
            "ece": ece(mp, my), "brier": brier(mp, my), "bins": reliability(mp, my),
        })  # fmt: skip
    for third in range(3):
        mine = [r for r in rows if r["third"] == third]
        ys3 = [r["won"] for r in mine]
        out["thirds"].append({
            "third": third + 1, "decisions": len(mine),
            "brier": brier([r["chance"] for r in mine], ys3),
            "baseline_brier": brier([b for b, r in zip(base, rows, strict=True) if r["third"] == third], ys3),
            "always_half": 0.25 if mine else math.nan,
        })  # fmt: skip
    early = [r for r in rows if r["taken"] < GUESS_UNTIL_TAKEN]
    late = [r for r in rows if r["taken"] >= GUESS_UNTIL_TAKEN]
    out["guess"] = {
        "rule": f"less than {GUESS_UNTIL_TAKEN:.2f} of the Honor pool taken",
        "decisions": len(early),
        "brier": brier([r["chance"] for r in early], [r["won"] for r in early]),
        "brier_after": brier([r["chance"] for r in late], [r["won"] for r in late]),
    }
    out["targets"] = {
        "brier_15pct_below_baseline": out["below_baseline"] >= TARGET_BELOW_BASELINE,
        "ece_per_seat_at_most_0.05": all(x["ece"] <= TARGET_ECE for x in out["seats"]),
        "first_third_at_most_0.225": out["thirds"][0]["brier"] <= TARGET_FIRST_THIRD,
    }
    return out


def resample(rows: list[Row], draws: int, games: int, seed: int = 0) -> dict[str, Any]:
    """How often samples of ``games`` games drawn (with replacement) from ``rows``' games meet
    each target: the spread a fixed model's figures have from one sample to the next."""
    by_game: dict[int, list[Row]] = {}
    for r in rows:
        by_game.setdefault(r["game"], []).append(r)
    pool = sorted(by_game)
    rng = random.Random(seed)
    met: Counter[str] = Counter()
    worst_ece: list[float] = []
    for _ in range(draws):
        # (each drawn game numbered anew: a game drawn twice counts twice, in one fold)
        sample = [{**r, "game": k} for k, g in enumerate(rng.choices(pool, k=games))
                  for r in by_game[g]]  # fmt: skip
        out = figures(sample)
        met.update(k for k, ok in out["targets"].items() if ok)
        met["all three"] += all(out["targets"].values())
        worst_ece.append(max(x["ece"] for x in out["seats"]))
    worst_ece.sort()
    return {"draws": draws, "games": games, "pool": len(pool),
            "met": {k: met[k] / draws for k in (*out["targets"], "all three")},
            "worst_seat_ece_median": worst_ece[draws // 2],
            "worst_seat_ece_p90": worst_ece[min(draws - 1, (9 * draws) // 10)]}  # fmt: skip


def as_shown(r: Row, weights: tuple[float, float, float] | None = None) -> Row:
    """A row of a ``--raw`` run with the chance players are shown (ai_workers.chances), or
    with the scaling of ``weights``."""
    p = r["chance"]
    first = 0 if r["order"] == 0 else 1
    return {**r, "chance": shown([p, 1.0 - p], first, r["taken"], weights)[0]}


def read_rows(path: str) -> list[Row]:
    """The rows a ``--rows`` run wrote (JSON lines)."""
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def held_out(files: list[str]) -> list[tuple[str, tuple[float, float, float], dict[str, Any]]]:
    """Each file's rows scored with the scaling fitted on the other files' (leave one sample
    out): what a scaling does on games it was not fitted on."""
    from ai_workers.fit_chances import fit  # (numpy: the dev extra)

    raw = {f: read_rows(f) for f in files}
    out = []
    for f in files:
        a, b, c = fit([r for g, rows in raw.items() if g != f for r in rows])
        out.append((f, (a, b, c), figures([as_shown(r, (a, b, c)) for r in raw[f]])))
    return out


def plot(out: dict[str, Any], path: str, title: str) -> None:
    """A reliability diagram: share won against the chance shown, per seat, bins sized by their
    decisions."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.2, 5.2), dpi=100)
    ax.plot([0, 1], [0, 1], color="#999999", lw=1, ls="--", label="calibrated")
    for seat, color in zip(out["seats"], ("#1f77b4", "#d62728"), strict=True):
        bins = seat["bins"]
        if not bins:
            continue
        xs, ys, ns = zip(*bins, strict=True)
        top = max(ns)
        ax.plot(xs, ys, color=color, lw=1.5, marker="o", ms=0,
                label=f"{seat['seat']} seat: ECE {seat['ece']:.3f}")  # fmt: skip
        ax.scatter(xs, ys, s=[20 + 180 * n / top for n in ns], color=color, alpha=0.7, zorder=3)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("win chance shown for the action played")
    ax.set_ylabel("share of those decisions whose seat won")
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--games", type=int, default=100)
    ap.add_argument("--seed", type=int, default=900000, help="first game's seed")
    ap.add_argument("--bot", default="ismcts@200it", help="the bot spec playing both seats")
    ap.add_argument("--iterations", type=int, default=200, help="iterations of each rating")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--plot", default="", help="write a reliability diagram (PNG) here")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    ap.add_argument("--raw", action="store_true", help="the search's own chances, unscaled "
                    "(what python -m ai_workers.fit_chances reads)")  # fmt: skip
    ap.add_argument("--rows", default="", help="write the rated decisions here (JSON lines)")
    ap.add_argument("--load", nargs="*", default=[], help="read rows (of --raw runs) instead "
                    "of playing, and score them as shown (ai_workers/chance_scaling.json)")  # fmt: skip
    ap.add_argument("--held-out", action="store_true", help="with --load of several files: "
                    "score each with the scaling fitted on the others, one line a file, and stop")  # fmt: skip
    ap.add_argument("--resample", type=int, default=0, metavar="N", help="with --load: also draw "
                    "N samples of --games games from the loaded ones (with replacement) and "
                    "print how often each target is met")  # fmt: skip
    args = ap.parse_args(argv)
    parse_spec(args.bot)
    if args.held_out:
        if len(args.load) < 2:
            ap.error("--held-out needs --load with two files or more")
        report_held_out(args.load, args.json)
        return
    rows: list[Row] = []
    t0 = time.time()
    if args.load:
        rows = [as_shown(r) for f in args.load for r in read_rows(f)]
        args.seed = min(r["game"] for r in rows)
    seeds = range(args.seed, args.seed + (0 if args.load else args.games))
    job = partial(play_and_rate, bot=args.bot, iterations=args.iterations, raw=args.raw)
    with ProcessPoolExecutor(args.workers) as ex:
        for k, game in enumerate(ex.map(job, seeds)):
            rows.extend(game)
            print(f"[{time.time() - t0:6.0f} s] game {k + 1}/{args.games}: {len(rows)} decisions "
                  "rated", file=sys.stderr, flush=True)  # fmt: skip
    if args.rows:
        Path(args.rows).write_text("".join(json.dumps(r) + "\n" for r in rows))
    if not rows:
        ap.error("no decision was rated")
    out = figures(rows)
    out.update(bot=args.bot, iterations=args.iterations, first_seed=args.seed,
               seconds=round(time.time() - t0, 1))  # fmt: skip
    print(f"Calibration: {out['games']} games of {args.bot} from seed {args.seed}, "
          f"{out['decisions']} decisions rated at {args.iterations} iterations "
          f"({out['seconds']:.0f} s)")  # fmt: skip
    print(f"Brier {out['brier']:.4f}; baseline (Honor lead, pool taken, seat order; fitted on "
          f"the other half) {out['baseline_brier']:.4f}: {100 * out['below_baseline']:+.1f}% "
          f"below (target 15%); ECE pooled {out['ece']:.3f}")  # fmt: skip
    for x in out["seats"]:
        print(f"  {x['seat']:6s} seat: {x['decisions']:5d} decisions, mean chance "
              f"{x['mean_chance']:.3f}, games won {x['games_won']:.3f}, ECE {x['ece']:.3f} "
              f"(target 0.05), Brier {x['brier']:.4f}")  # fmt: skip
    for x in out["thirds"]:
        print(f"  third {x['third']}: {x['decisions']:5d} decisions, Brier {x['brier']:.4f} "
              f"(baseline {x['baseline_brier']:.4f}, always 50% 0.25)"
              + ("; target 0.225" if x["third"] == 1 else ""))  # fmt: skip
    g = out["guess"]
    print(f"  marked a guess ({g['rule']}): {g['decisions']} decisions, Brier {g['brier']:.4f}; "
          f"the others {g['brier_after']:.4f}")  # fmt: skip
    met = ", ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in out["targets"].items())
    print(f"targets: {met}")
    if args.resample and args.load:
        spread = resample(rows, args.resample, args.games)
        print(f"resampled: {spread['draws']} samples of {spread['games']} games from the "
              f"{spread['pool']} loaded; targets met: "
              + ", ".join(f"{k} {100 * v:.0f}%" for k, v in spread["met"].items())
              + f"; worst seat's ECE median {spread['worst_seat_ece_median']:.3f}, "
              f"90th percentile {spread['worst_seat_ece_p90']:.3f}")  # fmt: skip
        out["resampled"] = spread
    if args.plot:
        plot(out, args.plot, f"{out['games']} games of {args.bot} from seed {args.seed}, "
             f"{out['decisions']} decisions, {args.iterations} iterations each")  # fmt: skip
        print(f"reliability diagram: {args.plot}")
    if args.json:
        for x in out["seats"]:
            x["bins"] = [list(b) for b in x["bins"]]
        print(json.dumps(out))


def report_held_out(files: list[str], as_json: bool) -> None:
    results = held_out(files)
    print(f"Held out: each of {len(files)} files scored with the scaling fitted on the others")
    met: Counter[str] = Counter()
    for f, (a, b, c), out in results:
        s1, s2 = out["seats"]
        print(f"  {Path(f).name}: a {a:.3f} b {b:+.3f} c {c:.3f}; Brier {out['brier']:.4f}, "
              f"{100 * out['below_baseline']:.1f}% below the baseline; ECE {s1['ece']:.3f} / "
              f"{s2['ece']:.3f}; second seat won {100 * s2['games_won']:.0f}%; first third "
              f"{out['thirds'][0]['brier']:.4f}")  # fmt: skip
        met.update(k for k, ok in out["targets"].items() if ok)
    names = results[0][2]["targets"]
    print("targets met: " + ", ".join(f"{k} {met[k]} of {len(results)}" for k in names))
    if as_json:
        print(json.dumps([{"file": f, "weights": w, "targets": o["targets"]} for f, w, o in results]))


if __name__ == "__main__":
    main()

"""Playing strength: seat-rotated tournaments on the same deals, at any table size.

For each pair (A, B) and each deal (a seed), A plays one game from every seat against N-1
copies of B (``--players N``, 2-6): the very same deal N times, A in seat 0, 1, ..., N-1. As
the first player is drawn from the deal, A also starts from every position in turn. Bots see
only their seat's view, as in the service; a decision with one legal action is played at
once. Games run in parallel (one process each) with progress lines on stderr.

The report gives A's win rate beside its fair share 1/N with a 95% confidence interval
(Wilson), its win rate by turn order, its margin over the best other seat, and the search
speed (iterations per second of A's searches, which depends on the load of the machine: a
wall-clock budget gives fewer iterations on a busy one). Targets, met when the interval's
lower end clears them: 2 players: ``ismcts`` beats ``heuristic`` in 85% of games at 100 ms
and 95% at 1 s, ``heuristic`` beats ``random`` in 90%, ``expert`` beats ``heuristic`` in
60%; 3 and 4 players: ``ismcts`` wins twice its fair share against ``heuristic`` bots.

A player is a spec ``name[@budget][:option=value]...`` (``ismcts@1s``,
``ismcts:backup=paranoid``): see ``ai_workers/bots/specs.py``. Variants of one bot compared
in one run meet the same deals at the same time, so machine load weighs on them alike.

    python benchmarks/strength.py [--players N] [--bots A,B,...] [--vs B | --all-pairs]
        [--games G] [--budget-ms MS] [--sets ss|cotgi|both] [--workers W] [--seed S]
        [--exploration C] [--replays R] [--positions P] [--max-minutes M] [--json]

By default the bots play a ladder (each against the next in ``--bots``): ismcts vs heuristic
and heuristic vs random, 300 games each at 100 ms per decision. ``--games`` is per pair and
rounded up to whole deals (a multiple of N). ``--max-minutes`` stops taking new games after
that long; only deals finished from every seat by every pair are counted.

``--positions 31002:0,31011:0`` (or ``@FILE``) plays only those (deal, seat) positions: A in
that seat of that deal (to screen variants on the positions a bot loses most).

``--replays R`` plays every game R times with other bot seeds (the same deal and seat, other
searches) and reports how A's losses spread over the (deal, seat) positions: how many were
lost in 0, 1, ..., R of their replays, and the share of all losses that fell in positions lost
in most replays. Losses spread thinly are the bot's slips; losses gathered in a few positions
are deals that play against that seat, or that the bot misplays every time (play those
positions with other bots to tell which).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ai_workers.arena import (
    GameRecord,
    Match,
    Result,
    SeatStats,
    check_specs,
    matches,
    run_matches,
    wilson,
)
from ai_workers.bots.settings import DEFAULT_EXPLORATION
from ai_workers.bots.specs import BotSpec, parse_spec
from clients.bots_runner import fallback_note, mostly_fallbacks


def target(a: BotSpec, b: BotSpec, players: int, budget_ms: int) -> float | None:
    """The win rate A should reach against B (lower end of the 95% interval), if any."""
    if a.iterations:
        return None  # the targets are per time budget
    ms = a.time_ms if a.time_ms is not None else budget_ms
    pair = (a.name, b.name)
    if players == 2:
        if pair == ("ismcts", "heuristic"):
            return 0.95 if ms >= 1000 else 0.85 if ms >= 100 else None
        if pair == ("heuristic", "random"):
            return 0.90
        if pair == ("expert", "heuristic"):
            return 0.60
    elif players in (3, 4) and pair == ("ismcts", "heuristic") and ms >= 100:
        return 2.0 / players
    return None


def loss_spread(rs: list[Result], replays: int) -> dict[str, Any]:
    """How A's losses spread over (deal, seat) positions played ``replays`` times each."""
    lost: dict[tuple[int, int], list[bool]] = {}
    for j, g in rs:
        lost.setdefault((j.seed, j.a_seat), []).append(g.winner != j.a_seat)
    histogram = [0] * (replays + 1)
    losses = in_most = 0
    for outcomes in lost.values():
        k = sum(outcomes)
        histogram[k] += 1
        losses += k
        if 2 * k > len(outcomes):
            in_most += k
    return {
        "replays": replays,
        "positions": len(lost),
        "positions_by_losses": histogram,  # [lost in 0 replays, 1, ..., all]
        "losses": losses,
        "share_of_losses_in_positions_mostly_lost": in_most / losses if losses else 0.0,
    }


def margin_of_a(j: Match, g: GameRecord) -> int:
    """A's final score less the best other seat's."""
    me = j.a_seat
    return g.scores[me] - max(v for q, v in enumerate(g.scores) if q != me)


def parse_positions(text: str, players: int) -> set[tuple[int, int]]:
    """``DEAL:SEAT`` positions, comma- or whitespace-separated, or ``@FILE`` of them."""
    if text.startswith("@"):
        text = Path(text[1:]).read_text()
    out: set[tuple[int, int]] = set()
    for item in text.replace(",", " ").split():
        deal, sep, seat = item.partition(":")
        if not sep or not deal.isdigit() or not seat.isdigit() or int(seat) >= players:
            raise ValueError(f"--positions: {item!r} is not DEAL:SEAT with SEAT below {players}")
        out.add((int(deal), int(seat)))
    if not out:
        raise ValueError("--positions names no position")
    return out


def sign_test(gained: int, lost: int) -> float:
    """Two-sided p-value of ``gained`` against ``lost`` if either were as likely (exact)."""
    n = gained + lost
    if n == 0:
        return 1.0
    k = min(gained, lost)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def paired(pairs: list[tuple[str, str]], results: list[Result]) -> list[dict[str, Any]]:
    """Each variant against the first bot that met the same opponent, game by game: the same
    deal, seat and replay (so the same cards), where one won and the other did not."""
    games: dict[tuple[str, str], dict[tuple[int, int, int], tuple[bool, float]]] = {}
    for j, g in results:
        won = g.winner == j.a_seat
        games.setdefault((j.a, j.b), {})[(j.seed, j.a_seat, j.replay)] = (won, margin_of_a(j, g))
    out: list[dict[str, Any]] = []
    for i, (a, b) in enumerate(pairs):
        base = next((x for x, y in pairs[:i] if y == b), None)
        if base is None:
            continue
        mine, theirs = games.get((a, b), {}), games.get((base, b), {})
        both = sorted(set(mine) & set(theirs))
        gained = sum(mine[k][0] and not theirs[k][0] for k in both)
        lost = sum(theirs[k][0] and not mine[k][0] for k in both)
        diff = sum(mine[k][1] - theirs[k][1] for k in both)
        out.append({
            "a": a, "baseline": base, "b": b, "games": len(both), "gained": gained, "lost": lost,
            "p_value": sign_test(gained, lost),
            "mean_margin_gain": diff / len(both) if both else 0.0,
        })  # fmt: skip
    return out


def latest(stats: list[SeatStats]) -> str:
    """The reason of the latest fallback move among these seats' games, "" if none."""
    return next((x.last_fallback for x in reversed(stats) if x.fallbacks), "")


def fallback_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per bot of a pair that played fallback moves: its results there are not its
    own strength (the same line as ``ascension bots``)."""
    lines = []
    for r in rows:
        for side, decisions in (("a", r["decisions_a"]), ("b", r["decisions_b"])):
            if r[f"fallbacks_{side}"]:
                note = fallback_note(r[side], r[f"fallbacks_{side}"], decisions,
                                     r[f"last_fallback_{side}"])  # fmt: skip
                lines.append(f"  (!) {r['a']} vs {r['b']}: {note}")
    return lines


def summarize(
    pairs: list[tuple[str, str]], results: list[Result], args: argparse.Namespace
) -> list[dict[str, Any]]:
    n = args.players
    out: list[dict[str, Any]] = []
    for a, b in pairs:
        rs = [(j, g) for j, g in results if (j.a, j.b) == (a, b)]
        games = len(rs)
        wins = sum(g.winner == j.a_seat for j, g in rs)
        lo, hi = wilson(wins, games)
        rate = wins / games if games else 0.0
        tgt = target(parse_spec(a), parse_spec(b), n, args.budget_ms)
        st = [g.stats[j.a_seat] for j, g in rs]
        st_b = [x for j, g in rs for q, x in enumerate(g.stats) if q != j.a_seat]
        it = sum(x.iterations for x in st)
        it_s = sum(x.search_s for x in st)
        dec = sum(x.decisions for x in st)
        margin = [margin_of_a(j, g) for j, g in rs]
        by_pos = [0] * n
        games_pos = [0] * n
        for j, g in rs:
            pos = (j.a_seat - g.first) % n
            games_pos[pos] += 1
            by_pos[pos] += g.winner == j.a_seat
        out.append({
            "a": a, "b": b, "players": n, "games": games, "wins_a": wins, "win_rate": rate,
            "fair_share": 1.0 / n, "ci95": [lo, hi],
            "share_ratio": rate * n, "share_ratio_ci95": [lo * n, hi * n],
            "wins_a_by_turn_order": by_pos, "games_by_turn_order": games_pos,
            "mean_margin_a": sum(margin) / games if games else 0.0,
            "mean_turns": sum(g.turns for _, g in rs) / games if games else 0.0,
            "decisions_a": dec,
            "mean_think_ms_a": 1000 * sum(x.think_s for x in st) / dec if dec else 0.0,
            "searches_a": sum(x.searches for x in st),
            "iterations_a": it,
            "iterations_per_s_a": it / it_s if it_s else 0.0,
            "mean_iterations_per_search_a": it / max(1, sum(x.searches for x in st)),
            "target": tgt, "meets_target": None if tgt is None else lo >= tgt,
            "fallbacks_a": sum(x.fallbacks for x in st), "last_fallback_a": latest(st),
            "decisions_b": sum(x.decisions for x in st_b),
            "fallbacks_b": sum(x.fallbacks for x in st_b), "last_fallback_b": latest(st_b),
        })  # fmt: skip
        row = out[-1]
        # Mostly fallback moves: the rate is the fallback policy's, not A's (or not against B)
        row["own_a"] = not mostly_fallbacks(row["fallbacks_a"], dec)
        row["own_b"] = not mostly_fallbacks(row["fallbacks_b"], row["decisions_b"])
        if not (row["own_a"] and row["own_b"]) and tgt is not None:
            row["meets_target"] = None
        if args.replays > 1:
            out[-1]["loss_spread"] = loss_spread(rs, args.replays)
    return out


def print_table(
    rows: list[dict[str, Any]],
    args: argparse.Namespace,
    elapsed: float,
    pairings: list[dict[str, Any]],
) -> None:
    n = args.players
    print(f"\nStrength: {n} players, sets {args.sets}, {args.budget_ms} ms per decision unless "
          f"the spec says, deals from seed {args.seed}, each from every seat; "
          f"{elapsed / 60:.1f} min on {args.workers} processes")  # fmt: skip
    print(f"{'A vs B':38s} {'games':>5s} {'wins':>5s} {'win rate':>8s} {'fair':>5s}  "
          f"{'95% CI':>16s}  {'x fair':>6s} {'it/s':>6s} {'it/srch':>7s}  target")  # fmt: skip
    for r in rows:
        lo, hi = r["ci95"]
        tgt = r["target"]
        verdict = "" if tgt is None else (
            f">= {tgt:.0%}: {'met' if r['meets_target'] else 'not met'} (lower end {lo:.1%})")  # fmt: skip
        rate, ci, ratio = f"{r['win_rate']:.1%}", f"[{lo:6.1%}, {hi:6.1%}]", f"{r['share_ratio']:.2f}"
        if not r["own_a"]:  # no figure of A's own: a dash (the (!) line below says why)
            rate, ci, ratio = "—", "—", "—"
            verdict = "" if tgt is None else "not judged: fallback moves"
        elif r["fallbacks_a"] or r["fallbacks_b"]:
            rate += " (!)"  # some fallback moves: the figure marked
            if not r["own_b"] and tgt is not None:
                verdict = f"not judged: {r['b']} played fallback moves"
        print(f"{r['a'] + ' vs ' + r['b']:38s} {r['games']:5d} {r['wins_a']:5d} "
              f"{rate:>8s} {r['fair_share']:5.0%}  {ci:>16s}  "
              f"{ratio:>6s} {r['iterations_per_s_a']:6.0f} "
              f"{r['mean_iterations_per_search_a']:7.0f}  {verdict}")  # fmt: skip
    for r in rows:
        pos = ", ".join(f"{w}/{g}" for w, g in zip(r["wins_a_by_turn_order"],
                                                   r["games_by_turn_order"], strict=True))  # fmt: skip
        print(f"  {r['a']} vs {r['b']}: wins by turn order (1st, 2nd, ...) {pos}; mean margin "
              f"{r['mean_margin_a']:+.1f} Honor; {r['mean_turns']:.1f} turns; "
              f"{r['mean_think_ms_a']:.1f} ms per decision")  # fmt: skip
        spread = r.get("loss_spread")
        if spread:
            counts = ", ".join(f"{k}: {c}" for k, c in enumerate(spread["positions_by_losses"]))
            print(f"  {r['a']} vs {r['b']}: {spread['positions']} (deal, seat) positions by "
                  f"losses in {spread['replays']} replays: {counts}; "
                  f"{spread['share_of_losses_in_positions_mostly_lost']:.0%} of the "
                  f"{spread['losses']} losses in positions lost in most replays")  # fmt: skip
    for line in fallback_lines(rows):
        print(line)
    by_pair = {(r["a"], r["b"]): r for r in rows}
    for p in pairings:
        print(f"  {p['a']} against {p['baseline']} on the same {p['games']} games vs {p['b']}: "
              f"won {p['gained']} it lost, lost {p['lost']} it won (sign test p = "
              f"{p['p_value']:.3f}); margin {p['mean_margin_gain']:+.2f} Honor a game")  # fmt: skip
        for who, row in ((p["baseline"], by_pair.get((p["baseline"], p["b"]))),
                         (p["a"], by_pair.get((p["a"], p["b"])))):  # fmt: skip
            if row is not None and row["fallbacks_a"]:
                share = row["fallbacks_a"] / max(1, row["decisions_a"])
                print(f"  (!) {p['a']} against {p['baseline']}: {who} played fallback moves on "
                      f"{share:.0%} of its decisions (latest: {row['last_fallback_a']}): the "
                      f"comparison is with the fallback's play, not {who}'s")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--bots", default="ismcts,heuristic,random", help="comma-separated bot specs")
    ap.add_argument("--players", type=int, default=2, choices=range(2, 7), help="seats (2-6)")
    ap.add_argument("--vs", default="", help="play every bot of --bots against this one")
    ap.add_argument("--all-pairs", action="store_true", help="every pair, not only neighbours")
    ap.add_argument("--games", type=int, default=300, help="games per pair (default 300)")
    ap.add_argument("--budget-ms", type=int, default=100, help="time per decision (default 100)")
    ap.add_argument("--sets", choices=["ss", "cotgi", "both"], default="both")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes")
    ap.add_argument("--seed", type=int, default=1, help="first deal's seed")
    ap.add_argument("--exploration", type=float, default=DEFAULT_EXPLORATION, help="UCT constant")
    ap.add_argument("--replays", type=int, default=1,
                    help="play every game R times with other bot seeds (see above)")  # fmt: skip
    ap.add_argument("--positions", default="",
                    help="play only these DEAL:SEAT positions (comma-separated, or @FILE)")  # fmt: skip
    ap.add_argument("--max-minutes", type=float, default=0.0, help="stop taking games after this")
    ap.add_argument("--progress-s", type=float, default=60.0, help="seconds between progress lines")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()
    if args.replays < 1:
        ap.error("--replays must be at least 1")
    if args.players > 4 and args.sets == "ss":
        ap.error("5-6 players need Curse of the Golden Isles (--sets cotgi or both)")
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    check_specs([*bots, args.vs] if args.vs else bots)  # fail early on an unknown name
    if args.vs:
        pairs = [(b, args.vs.strip()) for b in bots]
    elif len(bots) < 2:
        ap.error("--bots needs at least two bots (or use --vs)")
    elif args.all_pairs:
        pairs = [(bots[i], bots[j]) for i in range(len(bots)) for j in range(i + 1, len(bots))]
    else:
        pairs = list(itertools.pairwise(bots))
    deals = max(1, -(-args.games // args.players))
    kw: dict[str, Any] = dict(players=args.players, sets=args.sets, budget_ms=args.budget_ms,
                              exploration=args.exploration, replays=args.replays)  # fmt: skip
    if args.positions:
        try:
            wanted = parse_positions(args.positions, args.players)
        except ValueError as e:
            ap.error(str(e))
        deals = len({d for d, _ in wanted})
        todo = [m for d in sorted({d for d, _ in wanted})
                for m in matches(pairs, 1, first_seed=d, **kw) if (d, m.a_seat) in wanted]  # fmt: skip
    else:
        todo = matches(pairs, deals, first_seed=args.seed, **kw)

    def brief(results: list[Result]) -> str:
        return "; ".join(f"{r['a']}: {r['wins_a']}/{r['games']}"
                         for r in summarize(pairs, results, args))  # fmt: skip

    t0 = time.time()
    results = run_matches(todo, args.workers, max_minutes=args.max_minutes,
                          progress_s=args.progress_s, progress=brief)  # fmt: skip
    elapsed = time.time() - t0
    rows = summarize(pairs, results, args)
    pairings = paired(pairs, results)
    print_table(rows, args, elapsed, pairings)
    if args.json:
        print(json.dumps({
            "benchmark": "strength", "players": args.players, "sets": args.sets,
            "budget_ms": args.budget_ms, "exploration": args.exploration, "deals": deals,
            "first_seed": args.seed, "replays": args.replays, "workers": args.workers, "elapsed_s": round(elapsed, 1),
            "pairs": rows, "paired": pairings,
            "games": [{"a": j.a, "b": j.b, "a_seat": j.a_seat, "replay": j.replay, **asdict(g)}
                      for j, g in sorted(results, key=lambda r: (r[0].a, r[0].b, r[0].seed, r[0].a_seat,
                                                                 r[0].replay))],
        }))  # fmt: skip


if __name__ == "__main__":
    main()

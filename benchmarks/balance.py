"""Card balance: thousands of fast games between simple players, and what each card does to
the win rate of the players who took it.

    python benchmarks/balance.py [--games N] [--sets ss,cotgi,both] [--players 2]
                                 [--policy greedy|heuristic|random|mixed] [--seed S]
                                 [--workers W] [--json]

For each configuration it prints the mean game length (turns per player), the Honor split
(cards / tokens / Treasure / coins / end-of-game card texts), the seat win rates, and a table
of cards: for every card, how often a player took it (acquired a Hero or Construct, defeated
a Monster, gained a Treasure card) and the win-rate difference between players who took it
and players who did not. A card is flagged as an outlier when its difference is both
statistically clear (|z| >= 3) and larger than ``--flag`` (default 0.12); designed cards are
also compared with the spread of the cards named in the rulebooks. Games that reach the
turn cap are counted as unfinished: a set where games never end is a bug.

Players (``--policy``):

* ``greedy``: plays every card, uses every ability, flips coin pairs, moves towards what its
  Crew can take, then spends Power on the Monster with the most Honor and Runes on the most
  expensive card (Crew on the card at its ship), banishes starting cards, always Raids and
  prevents Raids. A little noise (``--noise``) varies its picks so that every card is taken
  by some players and not others.
* ``random``: uniform over the legal actions (ending the turn only when nothing else is legal).
* ``heuristic``: the policy of ``ai_workers``' heuristic bot (``ai_workers.bots.policy``),
  taking a random action other than ending the turn with probability ``--eps`` (default 0.05)
  so that the games vary.
* ``mixed``: each seat of each game is greedy or random at random (greedy 3 times in 4).
  Greedy seats beat random ones and buy the dearer cards, so in this mode the card table
  mostly measures who the buyers were; use it to check that games end, not to judge cards.

These players read the game state directly (the benchmark measures cards, not hidden
information).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_service import rules
from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.state import COIN_ITEM, DEEP, KRAKEN_IN_DEEP, NEIGHBORS, State
from engine_service.rules.tables import Tables, default_tables

END = A.encode(A.END_TURN)
SKIP = A.encode(A.SKIP)
TURN_CAP = 150  # turns per player; a game still running then is "unfinished"
HONOR_PARTS = ("cards", "tokens", "treasure", "coins", "card_text")

# ---- card values the greedy player uses ---------------------------------------------------


@dataclass(slots=True)
class Values:
    acquire: list[float]  # value of acquiring a Hero/Construct
    defeat: list[float]  # value of defeating a Monster
    play_order: list[int]  # lower plays first
    banish: list[float]  # how glad we are to banish a card of ours (higher = banish first)


def _op_value(op: L.Op) -> float:
    code = op[0]
    if code == L.OP_GAIN:
        return float(op[2] * (1.0, 1.0, 0.6, 1.0, 1.2, 0.2)[op[1]])
    if code == L.OP_IF:
        return 0.5 * _op_value(op[3])  # type: ignore[arg-type,unused-ignore]
    if code == L.OP_RAID:
        return 0.8 * float(op[1])
    if code == L.OP_COIN:
        return 2.5 * float(op[1])
    if code in (L.OP_BANISH, L.OP_SKIPPER):
        return 0.8
    if code in (L.OP_ACQUIRE_FREE, L.OP_DEFEAT_FREE):
        return 2.0
    if code == L.OP_CHOOSE:
        return max(_op_value(o) for o in op[1:])  # type: ignore[arg-type,unused-ignore]
    return 0.3


def build_values(T: Tables) -> Values:
    n = len(T.type)
    acquire, defeat, order, banish = [0.0] * n, [0.0] * n, [5] * n, [0.0] * n
    for c in range(n):
        t = T.type[c]
        if t == L.MONSTER:
            defeat[c] = sum(_op_value(op) for op in T.reward[c]) + (3.0 if T.ongoing[c] else 0.0)
        else:
            acquire[c] = T.cost[c] + 0.5 * T.honor[c]
        if t == L.CONSTRUCT:
            order[c] = 0
        elif any(op[0] == L.OP_GAIN and op[1] == L.DRAW for op in T.play[c]):
            order[c] = 1
        elif any(op[0] in (L.OP_BANISH, L.OP_SKIPPER) for op in T.play[c]):
            order[c] = 9  # banish after the rest of the hand is played
        if T.starting[c]:
            banish[c] = 3.0 if T.play[c] == ((L.OP_GAIN, L.RUNES, 1),) else 2.0
            if any(op[1] == L.CREW for op in T.play[c] if op[0] == L.OP_GAIN):
                banish[c] = 1.0
    return Values(acquire, defeat, order, banish)


# ---- the greedy player --------------------------------------------------------------------


def _space_value(s: State, V: Values, p: int, sp: int) -> float:
    """What being on space sp is worth to p this turn: the card its Crew can take, the coin."""
    T = s.T
    v = 0.0
    crew = s.crew[p]
    if sp == DEEP:
        if s.kraken == KRAKEN_IN_DEEP:
            if T.cost[T.thukal] <= crew:
                v += 9.0
            elif s.treasures[p] or s.coins[p]:
                v -= 3.0
    else:
        c = s.center[sp]
        if c >= 0 and T.cost[c] <= crew:
            v += V.defeat[c] if T.type[c] == L.MONSTER else V.acquire[c]
        if s.board_coin >= 0 and s.board_coin // 6 == sp:
            v += 2.5
        if s.under[sp]:
            v += 0.5 * len(s.under[sp])
    if sp == s.ghost:
        v -= 0.7
    for q in range(s.n):
        if q != p and s.ship[q] == sp and (s.treasures[q] or s.coins[q]):
            v += 0.3
    return v


def _best_space(s: State, V: Values, p: int, spaces: list[int], rnd: random.Random) -> int:
    return max(spaces, key=lambda sp: _space_value(s, V, p, sp) + rnd.random() * 0.1)


def _item_value(s: State, item: int) -> float:
    return 2.0 if item >= COIN_ITEM else float(s.T.honor[item])


def greedy(s: State, legal: list[int], V: Values, rnd: random.Random, noise: float) -> int:
    T = s.T
    d = s.decision
    if d is None:
        return _greedy_main(s, legal, V, rnd, noise)
    kind = d[0]
    p = d[1]
    if kind == A.D_PLACE:
        return A.encode(A.PLACE_SHIP, _best_space(s, V, p, list(range(6)), rnd))
    if kind == A.D_MOVE:
        here = s.ship[p]
        best = _best_space(s, V, p, [here, *NEIGHBORS[here]], rnd)
        return SKIP if best == here else A.encode(A.MOVE_SHIP, best)
    if kind == A.D_BANISH:
        best_a, best_v = SKIP, 0.5
        for a in legal:
            k, arg = a >> 16, a & 0xFFFF
            if k == A.BANISH_HAND:
                v = V.banish[arg] - 0.5
            elif k == A.BANISH_DISCARD:
                v = V.banish[arg]
            elif k == A.BANISH_CENTER:
                c = s.center[arg]
                v = 0.1 * T.cost[c]  # deny the most expensive card
            else:
                continue
            if v > best_v:
                best_a, best_v = a, v
        return best_a
    if kind == A.D_RAID:
        takes = [a for a in legal if a != SKIP]
        return max(takes, key=lambda a: _item_value(s, (a & 0xFFFF) % 4096)) if takes else SKIP
    if kind == A.D_PREVENT:
        return legal[0]
    if kind == A.D_TRIBUTE:
        return min(legal, key=lambda a: _item_value(s, a & 0xFFFF))
    if kind == A.D_FREE:
        takes = [a for a in legal if a != SKIP]
        if not takes:
            return SKIP

        def free_value(a: int) -> float:
            t = a & 0xFFFF
            c = T.mystic if t == A.T_MYSTIC else T.heavy if t == A.T_HEAVY else s.center[t]
            return V.defeat[c] if T.type[c] == L.MONSTER else V.acquire[c]

        return max(takes, key=free_value)
    if kind == A.D_CHOOSE:
        ops = d[3][1:]

        def choose_value(i: int) -> float:
            op = ops[i]
            v = _op_value(op) + rnd.random() * 0.5
            if op[0] == L.OP_RAID:
                from engine_service.rules.effects import raid_victims

                v = 1.5 if raid_victims(s, p) else 0.0
            return v

        return A.encode(A.CHOOSE, max(range(len(ops)), key=choose_value))
    if kind == A.D_DESTROY:
        return min(legal, key=lambda a: T.cost[a & 0xFFFF])
    return legal[0]


def _greedy_main(s: State, legal: list[int], V: Values, rnd: random.Random, noise: float) -> int:
    T = s.T
    p = s.active
    plays = [a for a in legal if a >> 16 == A.PLAY]
    if plays:
        return min(plays, key=lambda a: V.play_order[a & 0xFFFF])
    for a in legal:
        k = a >> 16
        if k == A.USE or k == A.FLIP_COINS:
            return a
    moves = [a for a in legal if a >> 16 == A.MOVE]
    if moves:
        here = s.ship[p]
        best = _best_space(s, V, p, [here, *NEIGHBORS[here]], rnd)
        if best != here:
            return A.encode(A.MOVE, best)
    best_a, best_v = END, 0.0
    for a in legal:
        k, arg = a >> 16, a & 0xFFFF
        if k == A.DEFEAT or k == A.DEFEAT_CREW:
            c = T.cultist if arg == A.T_CULTIST else T.thukal if arg == DEEP else s.center[arg]
            v = (9.5 if c == T.thukal else V.defeat[c]) + 0.01 * T.cost[c]
            if k == A.DEFEAT_CREW:
                v -= 0.3  # Power is lost at the end of the turn; Crew is not
        elif k == A.DEFEAT_VOID:
            v = V.defeat[arg] - 0.2
        elif k == A.ACQUIRE or k == A.ACQUIRE_CREW:
            c = T.mystic if arg == A.T_MYSTIC else T.heavy if arg == A.T_HEAVY else s.center[arg]
            v = V.acquire[c] - (0.2 if arg >= A.T_MYSTIC else 0.0)
            if k == A.ACQUIRE_CREW:
                v -= 0.3
        else:
            continue
        if noise:
            v *= 1.0 + noise * (rnd.random() - 0.5)
        if v > best_v:
            best_a, best_v = a, v
    return best_a


def random_pick(s: State, legal: list[int], rnd: random.Random) -> int:
    if len(legal) > 1 and legal[0] == END:
        return rnd.choice(legal[1:])
    return rnd.choice(legal)


# ---- one game -----------------------------------------------------------------------------


@dataclass(slots=True)
class GameResult:
    turns: float  # turns per player
    finished: bool
    winner: int
    honor: dict[str, int]  # summed over seats
    took: list[list[int]]  # per seat: distinct card ids taken
    policies: list[str]
    first: int


def _heuristic() -> Any:
    """(best-action function, knowledge) of ai_workers' heuristic bot, imported on demand."""
    try:
        from ai_workers.bots.knowledge import knowledge
        from ai_workers.bots.policy import rollout_action
    except ImportError as e:  # pragma: no cover - depends on the ai_workers package
        raise SystemExit(f"--policy heuristic needs ai_workers.bots.policy: {e}") from None
    return rollout_action, knowledge(default_tables())


def play_game(sets: str, players: int, seed: int, policy: str, noise: float) -> GameResult:
    T = default_tables()
    V = _values(T)
    rnd = random.Random(seed * 7919 + 17)
    heuristic = _heuristic() if policy == "heuristic" else None
    s = rules.new_game(rules.GameConfig(sets=sets, players=players, seed=seed))
    if policy == "mixed":
        pols = ["greedy" if rnd.random() < 0.75 else "random" for _ in range(players)]
    else:
        pols = [policy] * players
    took: list[set[int]] = [set() for _ in range(players)]
    legal_actions, apply = rules.legal_actions, rules.apply_unchecked
    cap = TURN_CAP * players
    while not s.over and s.turn <= cap:
        seat = s.to_move()
        legal = legal_actions(s)
        if heuristic is not None:
            a = heuristic[0](s, legal, heuristic[1], rnd, noise)
        elif pols[seat] == "greedy":
            a = greedy(s, legal, V, rnd, noise)
        else:
            a = random_pick(s, legal, rnd)
        for e in apply(s, a):
            tag = e[0]
            if tag == "acquire" or tag == "defeat" or (tag == "treasure" and e[2] < COIN_ITEM):
                took[e[1]].add(e[2])
    honor = dict.fromkeys(HONOR_PARTS, 0)
    for q in range(players):
        b = rules.score_breakdown(s, q)
        for k in HONOR_PARTS:
            honor[k] += b[k]
    return GameResult(
        turns=s.turn / players,
        finished=s.over,
        winner=rules.winner(s) if s.over else -1,
        honor=honor,
        took=[sorted(t) for t in took],
        policies=pols,
        first=s.first,
    )


_VALUES: Values | None = None


def _values(T: Tables) -> Values:
    global _VALUES
    if _VALUES is None:
        _VALUES = build_values(T)
    return _VALUES


def _job(args: tuple[str, int, int, str, float]) -> GameResult:
    return play_game(*args)


# ---- statistics ---------------------------------------------------------------------------


@dataclass
class CardStat:
    key: str
    name: str
    set: str
    origin: str
    type: str
    took: int = 0
    cost: int = 0
    took_wins: int = 0
    diff: float = 0.0  # win rate of takers minus win rate of the others
    se: float = 0.0
    z: float = 0.0
    resid: float = 0.0  # diff minus what cards of its kind and cost get (see _adjust)
    rz: float = 0.0
    judged: bool = False  # a center-deck card taken by enough players and left by enough
    flagged: bool = False


@dataclass
class Report:
    sets: str
    players: int
    policy: str
    games: int
    unfinished: int
    mean_turns: float
    turns_p10: float
    turns_p90: float
    honor_split: dict[str, float]
    seat_win: list[float]
    cards: list[CardStat] = field(default_factory=list)
    named_range: tuple[float, float] = (0.0, 0.0)
    outliers: list[str] = field(default_factory=list)


def summarize(
    sets: str, players: int, policy: str, results: list[GameResult], flag: float, min_took: int
) -> Report:
    T = default_tables()
    cat = T.catalog
    done = [r for r in results if r.finished]
    turns = sorted(r.turns for r in done) or [0.0]
    total = {k: sum(r.honor[k] for r in done) for k in HONOR_PARTS}
    all_honor = sum(total.values()) or 1
    split = {k: total[k] / all_honor for k in HONOR_PARTS}
    seat_win = [0.0] * players
    for r in done:
        seat_win[(r.winner - r.first) % players] += 1
    seat_win = [w / max(1, len(done)) for w in seat_win]
    rep = Report(
        sets=sets, players=players, policy=policy, games=len(results),
        unfinished=len(results) - len(done), mean_turns=sum(turns) / len(turns),
        turns_p10=turns[len(turns) // 10], turns_p90=turns[(9 * len(turns)) // 10],
        honor_split=split, seat_win=seat_win,
    )  # fmt: skip
    in_game = {c for key in rules.GameConfig(sets=sets).set_keys for c in cat.sets[key].center}
    in_game |= {T.mystic, T.heavy, T.cultist}
    if rules.GameConfig(sets=sets).has_ss:
        in_game.add(T.thukal)
    samples = len(done) * players
    base = 1.0 / players
    took_n: dict[int, int] = dict.fromkeys(in_game, 0)
    took_w: dict[int, int] = dict.fromkeys(in_game, 0)
    for r in done:
        for q in range(players):
            won = r.winner == q
            for c in r.took[q]:
                if c in took_n:
                    took_n[c] += 1
                    took_w[c] += won
    for c in sorted(in_game):
        card = cat[c]
        st = CardStat(
            card.key, card.name, card.set, card.origin, L.TYPE_NAMES[card.type], cost=card.cost
        )
        n1 = took_n[c]
        n0 = samples - n1
        st.took = n1
        st.took_wins = took_w[c]
        if n1 >= min_took and n0 >= min_took:
            w1 = took_w[c] / n1
            w0 = (len(done) - took_w[c]) / n0 if n0 else base
            st.diff = w1 - w0
            pooled = base * (1 - base)
            st.se = math.sqrt(pooled * (1 / n1 + 1 / n0))
            st.z = st.diff / st.se
            st.judged = not (card.always or card.special)
        rep.cards.append(st)
    _adjust(rep.cards, cat, min_took)
    judged = [c for c in rep.cards if c.took >= min_took and c.judged]
    named = [c.resid for c in judged if c.origin == "rulebook"]
    rep.named_range = (min(named, default=0.0), max(named, default=0.0))
    lo, hi = rep.named_range
    for st in judged:
        clear = abs(st.rz) >= 3 and abs(st.resid) >= flag
        beyond = (
            st.origin == "designed"
            and (st.resid > hi + 0.02 or st.resid < lo - 0.02)
            and abs(st.rz) >= 2
        )
        if clear or beyond:
            st.flagged = True
            why = "beyond the named cards" if beyond else f"|resid| >= {flag:.2f}, |z| >= 3"
            rep.outliers.append(
                f"{st.name} [{st.origin}] {st.resid:+.3f} (raw {st.diff:+.3f}, z {st.rz:+.1f}; {why})"
            )
    return rep


def _group(st: CardStat) -> str:
    return "monster" if st.type == "monster" else "treasure" if st.type == "treasure" else "card"


def _adjust(cards: list[CardStat], cat: Any, min_took: int) -> None:
    """Taking an expensive card goes with winning whatever the card does (the player who
    can pay 7 is usually ahead), and a Monster's Honor is counted directly. So each card is
    judged against the cards of its group (Heroes and Constructs / Monsters / Treasure) and
    cost: ``resid`` is its difference minus a least-squares line (difference over cost)
    fitted to every judged card of the group. A card stands out when it does much better or
    worse than cards of its kind and price."""
    for g in ("card", "monster", "treasure"):
        pts = [c for c in cards if c.judged and _group(c) == g]
        if not pts:
            continue
        xs = [float(c.cost) for c in pts]
        ys = [c.diff for c in pts]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
        for c in pts:
            c.resid = c.diff - (my + slope * (c.cost - mx))
            c.rz = c.resid / c.se if c.se else 0.0


def print_report(rep: Report, top: int) -> None:
    h = rep.honor_split
    print(f"\n== {rep.sets}, {rep.players} players, {rep.policy}: {rep.games} games ==")
    print(
        f"game length: {rep.mean_turns:.1f} turns per player (p10 {rep.turns_p10:.0f}, "
        f"p90 {rep.turns_p90:.0f}); unfinished at {TURN_CAP} turns: {rep.unfinished}"
    )
    print("Honor split: " + ", ".join(f"{k} {100 * h[k]:.1f}%" for k in HONOR_PARTS))
    print("wins by seat in turn order: " + ", ".join(f"{100 * w:.1f}%" for w in rep.seat_win))
    lo, hi = rep.named_range
    print(
        f"adjusted difference (for kind and cost) of rulebook center cards: {lo:+.3f} .. {hi:+.3f}"
    )
    cards = sorted(rep.cards, key=lambda c: -c.resid if c.judged else 9.0)
    shown = cards if top <= 0 or len(cards) <= 2 * top else cards[:top] + cards[-top:]
    print(
        f"{'card':28} {'origin':8} {'type':9} {'cost':>4} {'taken':>6} {'diff':>7} {'adjusted':>8} {'z':>6}"
    )
    for i, c in enumerate(shown):
        if top > 0 and len(cards) > 2 * top and i == top:
            print(f"{'...':28}")
        mark = "  <-- outlier" if c.flagged else "" if c.judged else "  (not judged)"
        print(
            f"{c.name[:28]:28} {c.origin:8} {c.type:9} {c.cost:4d} {c.took:6d} {c.diff:+7.3f} "
            f"{c.resid:+8.3f} {c.rz:+6.1f}{mark}"
        )
    print("outliers: " + ("; ".join(rep.outliers) if rep.outliers else "none"))


def _progress(done: int, total: int, t0: float, label: str) -> None:
    """A progress line on stderr: redrawn in place on a terminal, every 10% otherwise."""
    rate = done / max(1e-9, time.time() - t0)
    line = f"{label}: {done}/{total} games ({rate:.0f}/s)"
    if sys.stderr.isatty():
        print(f"\r{line}", end="\n" if done == total else "", file=sys.stderr, flush=True)
    elif done == total or done % max(1, total // 10) < 50:
        print(line, file=sys.stderr, flush=True)


def run_config(
    sets: str, players: int, games: int, policy: str, seed: int, noise: float, pool: Any
) -> list[GameResult]:
    jobs = [(sets, players, seed + i, policy, noise) for i in range(games)]
    it: Iterator[GameResult] = (
        pool.imap_unordered(_job, jobs, chunksize=8) if pool else map(_job, jobs)
    )
    out = []
    t0 = time.time()
    label = f"{sets} {players}p {policy}"
    for r in it:
        out.append(r)
        if len(out) % 50 == 0 or len(out) == games:
            _progress(len(out), games, t0, label)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--games", type=int, default=2000, help="games per configuration")
    ap.add_argument("--sets", default="ss,cotgi,both", help="comma-separated: ss, cotgi, both")
    ap.add_argument("--players", default="2", help="comma-separated seat counts")
    ap.add_argument(
        "--policy", choices=["greedy", "heuristic", "random", "mixed"], default="greedy"
    )
    ap.add_argument("--noise", type=float, default=0.6, help="greedy pick noise (0 = none)")
    ap.add_argument("--eps", type=float, default=0.05, help="heuristic: chance of a random action")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=0, help="processes (default: every core)")
    ap.add_argument(
        "--flag", type=float, default=0.12, help="win-rate difference called an outlier"
    )
    ap.add_argument(
        "--min-taken", type=int, default=40, help="fewest takers for a card to be judged"
    )
    ap.add_argument(
        "--top", type=int, default=12, help="rows from each end of the card table (0 = all)"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()
    workers = args.workers or mp.cpu_count()
    reports = []
    pool = mp.get_context("fork").Pool(workers) if workers > 1 else None
    try:
        for sets in args.sets.split(","):
            for players in (int(x) for x in args.players.split(",")):
                rules.GameConfig(sets=sets, players=players)  # validate early
                results = run_config(
                    sets, players, args.games, args.policy, args.seed, args.noise, pool
                )
                rep = summarize(sets, players, args.policy, results, args.flag, args.min_taken)
                print_report(rep, args.top)
                reports.append(rep)
    finally:
        if pool:
            pool.close()
            pool.join()
    if args.json:
        out = []
        for rep in reports:
            d = {k: getattr(rep, k) for k in rep.__dataclass_fields__ if k != "cards"}
            d["cards"] = [c.__dict__ for c in rep.cards]
            out.append(d)
        print(json.dumps(out))


if __name__ == "__main__":
    main()

"""Rules-core speed: complete games between random players, and the cost of a clone.

Random player: uniform over the legal actions, except that ending the turn is chosen only
when nothing else is legal (so games end). Each counted action is one legal-action listing,
one pick and one apply.

    python benchmarks/engine.py [--games N] [--players P] [--sets ss|cotgi|both] [--seed S] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_service import rules
from engine_service.rules import actions as A

END = A.encode(A.END_TURN)


def play(config: rules.GameConfig, rnd: random.Random) -> tuple[int, int]:
    s = rules.new_game(config)
    n = 0
    legal, apply, choice = rules.legal_actions, rules.apply_unchecked, rnd.choice
    while not s.over:
        acts = legal(s)
        if len(acts) > 1 and acts[0] == END:
            a = choice(acts[1:]) if len(acts) > 1 else END
        else:
            a = choice(acts)
        apply(s, a)
        n += 1
    return n, s.turn


def mid_game(config: rules.GameConfig, rnd: random.Random, actions: int = 150) -> rules.State:
    s = rules.new_game(config)
    for _ in range(actions):
        if s.over:
            break
        acts = rules.legal_actions(s)
        rules.apply_unchecked(s, rnd.choice(acts[1:]) if len(acts) > 1 and acts[0] == END else rnd.choice(acts))
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--players", type=int, default=2)
    ap.add_argument("--sets", choices=["ss", "cotgi", "both"], default="both")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    total_actions = total_turns = 0
    t0 = time.perf_counter()
    for g in range(args.games):
        config = rules.GameConfig(sets=args.sets, players=args.players, seed=args.seed * 100_003 + g)
        n, turns = play(config, rnd)
        total_actions += n
        total_turns += turns
        if not args.json and (g + 1) % max(1, args.games // 10) == 0:
            print(f"  {g + 1}/{args.games} games", file=sys.stderr)
    dt = time.perf_counter() - t0
    state = mid_game(rules.GameConfig(sets=args.sets, players=args.players, seed=args.seed), rnd)
    reps = 20_000
    clone_us = min(timeit.repeat(state.clone, number=reps, repeat=5)) / reps * 1e6
    result = {
        "actions_per_s": round(total_actions / dt),
        "games_per_s": round(args.games / dt, 2),
        "mean_actions": round(total_actions / args.games, 1),
        "mean_turns": round(total_turns / args.games, 1),
        "clone_us": round(clone_us, 2),
        "rules_build": rules.BUILD,
        "games": args.games,
        "players": args.players,
        "sets": args.sets,
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"sets={args.sets} players={args.players} games={args.games} rules={rules.BUILD}")
        print(f"actions/s      {result['actions_per_s']:>10,}   (listing + pick + apply)")
        print(f"games/s        {result['games_per_s']:>10}")
        print(f"mean actions   {result['mean_actions']:>10}")
        print(f"mean turns     {result['mean_turns']:>10}")
        print(f"clone          {result['clone_us']:>10} us (mid-game state)")


if __name__ == "__main__":
    main()

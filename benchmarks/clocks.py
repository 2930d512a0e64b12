"""How late a timed-out seat is played for, with several engines sweeping one Redis.

    python benchmarks/clocks.py [--games 40] [--engines 2] [--turn 1] [--sweep 0.5]

Starts a redis-server and ``--engines`` ``ascension-engine serve`` processes on it (each
sweeping the clocks every ``--sweep`` seconds, the default ``ENGINE_CLOCK_SWEEP_SECONDS``),
creates ``--games`` two-human games with a ``--turn``-second allowance and the forced-move
policy, spread over the engines, and lets every seat time out until the clocks stop (each
seat away twice: six moves a game). Printed: how long after each deadline its first forced
move was committed (p50, p95, max: the update's own time against the deadline the game
showed), the moves made against those expected, and the timeouts the engines counted
against the seats' (one count per timeout, whichever engine enforced it). Loopback only;
bounded; stops by itself.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.api.ascension.v1 import game_pb2 as pb  # noqa: E402
from tests.service import support  # noqa: E402

MOVES = 6  # each seat: place its ship and end its turn, then end its second turn


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=40)
    ap.add_argument("--engines", type=int, default=2)
    ap.add_argument("--turn", type=int, default=1)
    ap.add_argument("--sweep", type=float, default=0.5)
    args = ap.parse_args()
    with support.redis_server() as url:
        engines = [
            support.start_engine(url, ENGINE_CLOCK_SWEEP_SECONDS=str(args.sweep))
            for _ in range(args.engines)
        ]
        try:
            stubs = [e.stub() for e in engines]
            clock = pb.ClockSettings(turn_seconds=args.turn,
                                     on_timeout=pb.TIMEOUT_POLICY_FORCED_MOVE)  # fmt: skip
            games = []
            for i in range(args.games):
                req = epb.CreateGameRequest(sets="ss", seats=support.human_seats(2), clock=clock)
                games.append(stubs[i % len(stubs)].CreateGame(req, timeout=10))
            print(f"{args.games} games, {args.engines} engines, {args.turn} s a turn, sweep "
                  f"{args.sweep} s: waiting for the clocks to stop", flush=True)  # fmt: skip
            deadline = time.monotonic() + 60 + args.games * args.turn
            late: list[float] = []
            moves = counted_by_seats = 0
            for n, g in enumerate(games, 1):
                while True:
                    v = stubs[0].GetGame(epb.GetGameRequest(game_id=g.game_id), timeout=10)
                    if v.clock.seat == -1 or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                moves += v.version - 1
                counted_by_seats += sum(v.clock.timeouts)
                ups = []
                for u in stubs[0].WatchGame(epb.WatchGameRequest(game_id=g.game_id), timeout=10):
                    ups.append(u)
                    if u.version >= v.version:
                        break
                due = g.view.clock.deadline_unix_ms
                for u in ups[1:]:
                    if u.clock.timeouts != ups[ups.index(u) - 1].clock.timeouts:
                        late.append(u.time_unix_ms - due)  # the first move of a stretch
                    due = u.clock.deadline_unix_ms
                if n % 10 == 0:
                    print(f"  {n}/{len(games)} games settled", flush=True)
            counted = sum(support.metric(e, "ascension_clock_timeouts_total") for e in engines)
        finally:
            for e in engines:
                e.stop()
    print(f"after the deadline, first forced move: p50 {pct(late, 0.5):.0f} ms, "
          f"p95 {pct(late, 0.95):.0f} ms, max {max(late):.0f} ms ({len(late)} timeouts)")
    print(f"moves: {moves} (expected {MOVES * args.games}); timeouts counted by the engines: "
          f"{counted:.0f}, by the seats' clocks: {counted_by_seats}")


if __name__ == "__main__":
    main()

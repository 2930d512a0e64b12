"""Bytes of Redis memory per live and per finished game, at 2, 4 and 6 players.

    python benchmarks/footprint.py [--games 2] [--population 9000] [--sets both] [--json]
                                   [--window N] [--redis-arg NAME VALUE ...]

Starts its own ``redis-server`` (free port, no persistence; ``--redis-arg`` adds server
settings, e.g. ``--redis-arg stream-node-max-bytes 1024``) and an ``ascension-engine serve``
on it, then plays games through the API (the quick-ending policy of the service tests, every
seat, each submit with an idempotency key):

- first ``--population`` idle 2-player games are created, so that the bucket indexes hold as
  many entries per bucket as a real deployment's (sorted sets past 128 entries change
  encoding and cost several times more per entry);
- then ``--games`` games per table size are played to their end. Every 10 actions, and at
  the end, ``MEMORY USAGE`` is summed over the game's keys (record, window, log,
  idempotency keys), plus its share of the indexes: each index's memory over the number of
  games it lists (a live game is in the games and active indexes, a finished one in the
  games index only).

A live game is measured over its whole life (mean and largest of the samples: live games are
spread over their lives, so the mean is what a population of them costs); a finished game as
it is kept for replay: the keys that outlive its window (a finished game keeps its window of
updates a few minutes, for watchers that fell a little behind at the end; the benchmark reads
each key's TTL rather than waiting). ``--json`` prints one object last: ``bytes_per_live_game``
(the largest over table sizes of the mean over a game's life), ``bytes_per_live_game_max``
(the largest sample) and ``bytes_per_finished_game`` (the largest over table sizes), with the
rows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped]  # noqa: E402
import redis  # noqa: E402

from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc  # noqa: E402
from engine_service.api.ascension.v1 import game_pb2 as pb  # noqa: E402
from engine_service.store import keys  # noqa: E402
from engine_service.store.base import DEFAULT_FINISHED_WINDOW_TTL  # noqa: E402
from tests.service import support  # noqa: E402
from tests.service.support import pick  # noqa: E402

TARGET = 8192
KINDS = ("record", "window", "log", "idempotency")
SAMPLE_EVERY = 10



def start_engine(redis_url: str, window: int | None) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "REDIS_URL": redis_url, "ENGINE_GRPC_PORT": "0", "ENGINE_HOST": "127.0.0.1",
           "ENGINE_METRICS_PORT": "0", "ENGINE_AI_DISPATCH": "off", "LOG_LEVEL": "WARNING",
           "ENGINE_SHUTDOWN_DRAIN_SECONDS": "0", "ENGINE_CALLER_SEEDS": "anyone"}  # fmt: skip
    if window is not None:
        env["ENGINE_STREAM_MAXLEN"] = str(window)
    exe = Path(sys.executable).parent / "ascension-engine"
    proc = subprocess.Popen([str(exe), "serve"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "listening on" in line:
            return proc, line.split("listening on ")[1].split()[0]
        if not line and proc.poll() is not None:
            break
    raise RuntimeError("the engine did not start")


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def seats(n: int) -> list[epb.SeatConfig]:
    return [epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name=f"P{i + 1}") for i in range(n)]


# ---- measuring --------------------------------------------------------------------------------


class Meter:
    def __init__(self, r: redis.Redis) -> None:
        self.r = r

    def keys_of(self, game_id: str, outliving: int = 0) -> dict[str, int]:
        """MEMORY USAGE of each key of the game (with ``outliving``: of the keys whose TTL is
        longer than that many seconds)."""
        out = {}
        for kind, key in zip(KINDS, keys.game_keys(game_id), strict=True):
            if outliving and int(self.r.ttl(key)) <= outliving:
                continue
            out[kind] = int(self.r.memory_usage(key, samples=0) or 0)
        return out

    def index_share(self) -> tuple[float, float]:
        """(bytes of the games index per game listed, bytes of the active index per game in it)."""
        totals = [0, 0]
        counts = [0, 0]
        for b in range(keys.BUCKETS):
            for i, key in enumerate(keys.index_keys(b)[:2]):
                totals[i] += int(self.r.memory_usage(key, samples=0) or 0)
                counts[i] += int(self.r.zcard(key))
        return totals[0] / max(1, counts[0]), totals[1] / max(1, counts[1])


@dataclass
class Row:
    players: int
    game_id: str
    versions: int
    live_mean: float
    live_max: int
    live_breakdown: dict[str, int]  # at the largest sample
    finished: int
    finished_breakdown: dict[str, int]
    samples: list[int] = field(default_factory=list)


def populate(stub: rpc.EngineStub, n: int, sets: str) -> None:
    def one(i: int) -> None:
        stub.CreateGame(epb.CreateGameRequest(sets=sets, seats=seats(2), seed=i), timeout=30)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(n)))


def play(stub: rpc.EngineStub, meter: Meter, players: int, sets: str, seed: int) -> Row:
    rng = random.Random(seed)
    game = stub.CreateGame(epb.CreateGameRequest(sets=sets, seats=seats(players), seed=seed), timeout=30)
    gid = game.game_id
    games_share, active_share = meter.index_share()
    samples: list[tuple[int, dict[str, int]]] = []

    def sample() -> None:
        per_key = meter.keys_of(gid)
        per_key["indexes"] = round(games_share + active_share)
        samples.append((sum(per_key.values()), per_key))

    sample()
    view = stub.GetGame(epb.GetGameRequest(game_id=gid, token=game.seat_tokens[game.view.to_move]), timeout=30)
    actions = 0
    while not view.over:
        seat = view.to_move
        if view.seat != seat:
            view = stub.GetGame(epb.GetGameRequest(game_id=gid, token=game.seat_tokens[seat]), timeout=30)
        req = epb.SubmitActionRequest(game_id=gid, token=game.seat_tokens[seat], expected_version=view.version,
                                      action=pick(view, rng), idempotency_key=f"{gid}-{view.version}")  # fmt: skip
        view = stub.SubmitAction(req, timeout=30).view
        actions += 1
        if actions % SAMPLE_EVERY == 0 and not view.over:
            sample()
    # A finished game as kept for replay: the keys that outlive its window.
    finished = meter.keys_of(gid, outliving=DEFAULT_FINISHED_WINDOW_TTL)
    finished["indexes"] = round(meter.index_share()[0])
    largest = max(samples, key=lambda s: s[0])
    return Row(
        players, gid, view.version, statistics.fmean(s[0] for s in samples), largest[0], largest[1],
        sum(finished.values()), finished, [s[0] for s in samples],
    )  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--games", type=int, default=2, help="games played per table size")
    ap.add_argument("--population", type=int, default=9000, help="idle games created first (index encoding)")
    ap.add_argument("--sets", default="both")
    ap.add_argument("--window", type=int, default=None, help="ENGINE_STREAM_MAXLEN (default: the engine's)")
    ap.add_argument("--redis-arg", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    settings = [arg for name, value in args.redis_arg for arg in (f"--{name}", value)]
    stack = contextlib.ExitStack()
    redis_url = stack.enter_context(support.redis_server(*settings))
    engine, address = start_engine(redis_url, args.window)
    r = redis.Redis.from_url(redis_url)
    channel = grpc.insecure_channel(address)
    try:
        stub = rpc.EngineStub(channel)
        meter = Meter(r)
        t0 = time.monotonic()
        populate(stub, args.population, args.sets)
        games_share, active_share = meter.index_share()
        print(f"{args.population} idle games created in {time.monotonic() - t0:.1f}s; index bytes per game: "
              f"games {games_share:.0f}, active {active_share:.0f}", flush=True)  # fmt: skip
        redis_version = r.info("server")["redis_version"]
        config = {k: v for k, v in r.config_get("stream-node-max-*").items()}
        print(f"redis {redis_version}, {config}, window {args.window or 'engine default'}, sets {args.sets}")
        rows: list[Row] = []
        for players in (2, 4, 6):
            for g in range(args.games):
                row = play(stub, meter, players, args.sets, args.seed + 100 * players + g)
                rows.append(row)
                print(f"{players} players, {row.versions:4d} versions: live mean {row.live_mean:6.0f} B, "
                      f"max {row.live_max:6d} B {row.live_breakdown}; finished {row.finished:6d} B "
                      f"{row.finished_breakdown}", flush=True)  # fmt: skip
    finally:
        channel.close()
        stop(engine)
        stack.close()

    by_size = {
        n: {
            "live_mean": max(row.live_mean for row in rows if row.players == n),
            "live_max": max(row.live_max for row in rows if row.players == n),
            "finished": max(row.finished for row in rows if row.players == n),
        }
        for n in (2, 4, 6)
    }
    print(f"{'players':>7} {'live mean':>10} {'live max':>9} {'finished':>9}   (bytes; target {TARGET})")
    for n, v in by_size.items():
        print(f"{n:>7} {v['live_mean']:>10.0f} {v['live_max']:>9} {v['finished']:>9}")
    if args.json:
        out = {
            "bytes_per_live_game": round(max(v["live_mean"] for v in by_size.values())),
            "bytes_per_live_game_max": max(v["live_max"] for v in by_size.values()),
            "bytes_per_finished_game": max(v["finished"] for v in by_size.values()),
            "target": TARGET,
            "by_players": by_size,
            "window": args.window,
            "redis_args": args.redis_arg,
            "sets": args.sets,
            "rows": [{k: v for k, v in asdict(row).items() if k != "samples"} for row in rows],
        }
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

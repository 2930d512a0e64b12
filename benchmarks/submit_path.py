"""The engine's work per SubmitAction, counted in one process: for instruction counts.

    python benchmarks/submit_path.py [--submits 500] [--games 8] [--redis-url URL] [--wire]
                                     [--redis-client hand|redis-py]
    valgrind --tool=callgrind --callgrind-out-file=/dev/null python benchmarks/submit_path.py ...
    python benchmarks/submit_path.py --script [--rounds 4] [--commits 2000]

Plays games of fixed seeds on a scratch ``redis-server`` (or ``--redis-url``) through the
engine's service layer (``EngineService`` with its metrics, cache and Redis store, as
``ascension-engine serve`` builds them), the way ``benchmarks/service.py`` loads the engine:
each game's table holds every seat's token and sends them all (``seat_tokens``: each answer is
the view of the seat to move), submits with full views, and would ask for the seat to move's
legal actions (ListLegalActions) were an answer another seat's. ``--wire`` adds what gRPC does
around each call in the server (parse the request, serialize the answer) and in the client
(parse the answer).

Timings on a shared machine drift by more than most changes to this path, so compare
instruction counts: run under callgrind twice, with ``--submits A`` and ``--submits B``
(same seeds, same setup), and divide the difference of the totals by ``B - A``: the
instructions of one submit, its share of ListLegalActions included. The script prints its
own wall time per submit too, which is only a rough figure.

``--script``: the commit script alone, on a scratch Redis: rounds of ``--commits`` commits
through ``RedisStore.commit`` (16 games, states and updates of a mid-game's size, an
idempotency key each, no AI seat), each round's ``usec_per_call`` of EVALSHA from Redis's
``INFO commandstats`` (the time Redis spent in the script, not the round trip), and the best.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine_service.api.ascension.v1 import engine_pb2 as epb  # noqa: E402
from engine_service.api.ascension.v1 import game_pb2 as pb  # noqa: E402


def pick(acts: Any, rng: random.Random) -> int:
    """benchmarks/service.py's policy (buy and defeat first, then play cards)."""
    for kinds in (("acquire", "defeat", "acquire_crew", "defeat_crew"), ("play",)):
        best: list[int] = [a.id for a in acts if a.kind in kinds]
        if best:
            return rng.choice(best)
    others: list[int] = [a.id for a in acts if a.kind != "end_turn"]
    if others and rng.random() < 0.7:
        return rng.choice(others)
    first: int = acts[0].id
    return first


class _Context:
    """What the handlers ask of a gRPC context on this path."""

    def peer(self) -> str:
        return "ipv4:127.0.0.1:1"

    def invocation_metadata(self) -> tuple[()]:
        return ()

    async def abort(self, code: Any, message: str, trailing_metadata: Any = ()) -> None:
        raise RuntimeError(f"{code}: {message}")


async def play(
    redis_url: str, submits: int, games: int, wire: bool, client: str = "hand"
) -> tuple[int, float]:
    from engine_service.server import app, config
    from engine_service.server.dispatch import NoDispatcher
    from engine_service.server.games import Games
    from engine_service.server.metrics import Metrics
    from engine_service.server.service import EngineService
    from engine_service.server.tokens import AiCredentials, CredentialedDispatcher

    settings = config.load({
        "REDIS_URL": redis_url, "ENGINE_MAX_LIVE_GAMES": "0", "ENGINE_CALLER_SEEDS": "anyone",
        "ENGINE_REDIS_CLIENT": client,
    })  # fmt: skip
    metrics = Metrics()
    store = app.build_store(settings, metrics)
    credentials = AiCredentials.generate()
    dispatcher = CredentialedDispatcher(NoDispatcher(), credentials)
    games_ = Games(store, dispatcher, metrics, "127.0.0.1:1", None, credentials)
    svc = EngineService(games_, metrics, settings.access(), settings.call_limits())
    ctx = _Context()

    async def call(method: Any, req: Any, resp_type: Any) -> Any:
        if not wire:
            return await method(req, ctx)
        req = type(req).FromString(req.SerializeToString())
        raw = (await method(req, ctx)).SerializeToString()
        return resp_type.FromString(raw)

    seat_kind = epb.SeatConfig(kind=pb.SeatInfo.HUMAN)
    tables: list[dict[str, Any]] = []
    seed = 0
    done = 0

    async def new_table(t: dict[str, Any]) -> None:
        nonlocal seed
        seed += 1
        req = epb.CreateGameRequest(sets="both", seats=[seat_kind] * 2, seed=seed)
        game = await call(svc.CreateGame, req, epb.CreateGameResponse)
        t.update(game_id=game.game_id, tokens=list(game.seat_tokens), seat=game.view.to_move,
                 rng=random.Random(seed))  # fmt: skip
        legal = await call(svc.ListLegalActions, epb.ListLegalActionsRequest(
            game_id=t["game_id"], token=t["tokens"][t["seat"]]), epb.ListLegalActionsResponse)  # fmt: skip
        t["version"], t["actions"] = legal.version, legal.actions

    for _ in range(games):
        t: dict[str, Any] = {}
        await new_table(t)
        tables.append(t)
    t0 = time.perf_counter()
    while done < submits:
        for t in tables:
            if done >= submits:
                break
            req = epb.SubmitActionRequest(
                game_id=t["game_id"], token=t["tokens"][t["seat"]], expected_version=t["version"],
                action=pick(t["actions"], t["rng"]), idempotency_key=f"{t['game_id']}:{t['version']}",
                seat_tokens=t["tokens"],
            )  # fmt: skip
            view = (await call(svc.SubmitAction, req, epb.SubmitActionResponse)).view
            done += 1
            t["version"], t["actions"], t["seat"] = view.version, view.legal_actions, view.to_move
            if view.over:
                await new_table(t)
            elif view.seat != t["seat"]:
                legal = await call(svc.ListLegalActions, epb.ListLegalActionsRequest(
                    game_id=t["game_id"], token=t["tokens"][t["seat"]]), epb.ListLegalActionsResponse)  # fmt: skip
                t["version"], t["actions"] = legal.version, legal.actions
    elapsed = time.perf_counter() - t0
    await store.close()
    return done, elapsed


async def script_rounds(redis_url: str, rounds: int, commits: int) -> list[float]:
    """EVALSHA's usec_per_call in each round of ``commits`` commits (16 games in turn)."""
    import redis.asyncio as aioredis

    from engine_service.store import Commit, NewGame, chained_commit_id, first_commit_id
    from engine_service.store.redis_store import RedisStore

    store = RedisStore(redis_url)
    admin: Any = aioredis.Redis.from_url(redis_url)
    rng = random.Random(1)
    state, update = rng.randbytes(1900), rng.randbytes(1500)  # (a mid-game's, about)
    games: dict[str, tuple[int, str]] = {}
    for i in range(16):
        gid = f"bench{i:04d}xxxxxxxxxxxxxx"
        cid = first_commit_id(gid)
        await store.create(NewGame(gid, cid, state, b'{"sets":"both"}', update, 0, 1, None, 0.0))
        games[gid] = (1, cid)
    out = []
    for _ in range(rounds):
        await admin.config_resetstat()
        for n in range(commits):
            gid = f"bench{n % 16:04d}xxxxxxxxxxxxxx"
            version, parent = games[gid]
            seat, action = version % 2, 0x10000 + n % 7
            cid = chained_commit_id(parent, seat, action)
            res = await store.commit(Commit(
                game_id=gid, expected_version=version, expected_commit_id=parent, commit_id=cid,
                state=state, update=update, seat=seat, action=action, idem_key=f"{gid}:{version}",
                fingerprint=f"{seat}:{version}:{action}".encode(), over=False, to_move=1 - seat,
                updated_ms=int(time.time() * 1000), ai_pending=None, enqueued_at=0.0))  # fmt: skip
            games[gid] = (res.version, res.commit_id)
        stats = await admin.info("commandstats")
        out.append(float(stats["cmdstat_evalsha"]["usec_per_call"]))
    await store.close()
    await admin.aclose()
    return out


def start_redis() -> tuple[subprocess.Popen[bytes], str]:
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(prefix="submit-path-redis-")
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", data],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    import redis

    r = redis.Redis(port=port)
    for _ in range(200):
        try:
            r.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--submits", type=int, default=500)
    ap.add_argument("--games", type=int, default=8, help="games played in turn (fixed seeds 1..)")
    ap.add_argument("--redis-url", default="", help="use this Redis (games are added to it)")
    ap.add_argument("--wire", action="store_true", help="also serialize and parse as gRPC does")
    ap.add_argument("--redis-client", default="hand", help="the store's Redis client (ENGINE_REDIS_CLIENT)")
    ap.add_argument(
        "--script", action="store_true", help="time the commit script alone (see above)"
    )
    ap.add_argument("--rounds", type=int, default=4, help="--script: rounds")
    ap.add_argument("--commits", type=int, default=2000, help="--script: commits per round")
    args = ap.parse_args()
    proc = None
    url = args.redis_url
    if not url:
        proc, url = start_redis()
    try:
        if args.script:
            per_round = asyncio.run(script_rounds(url, args.rounds, args.commits))
            print(f"commit script: {' '.join(f'{x:.1f}' for x in per_round)} us per EVALSHA "
                  f"(best {min(per_round):.1f})")  # fmt: skip
            return 0
        done, elapsed = asyncio.run(play(url, args.submits, args.games, args.wire, args.redis_client))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
    print(f"{done} submits, {elapsed / max(done, 1) * 1e6:.0f} us each (wall time, rough)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

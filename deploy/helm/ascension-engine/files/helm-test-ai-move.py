"""`helm test`: one AI move end to end (the chart runs this file with `python -c`).

Creates a game of two AI seats (the random bot) through the engine Service, waits until a
worker has played the first move (the game's version passes 1), then deletes the game.
Arguments: the engine's gRPC target and the seconds to wait. Exit 0 when the move arrived.
It connects as any client of the hardened engine does: TLS (and the client certificate of
mTLS) from the ASCENSION_TLS_* variables, and the first key of the operator keys file
ASCENSION_OPERATOR_KEYS_FILE (the engine's own ENGINE_OPERATOR_KEYS_FILE) when set.
"""

import os
import sys
import time

from clients.sdk.tls import TLS, channel, operator_metadata
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.auth import parse_keys

target, timeout = sys.argv[1], float(sys.argv[2])
key = None
keys_file = os.environ.get("ASCENSION_OPERATOR_KEYS_FILE", "")
if keys_file:
    with open(keys_file) as f:
        key = next(iter(parse_keys(f.read())), None)
    if key is None:
        sys.exit(f"{keys_file} holds no operator key")
operator = operator_metadata(key)
bot = epb.BotSettings(name="random", seed=1)
seats = [epb.SeatConfig(kind=pb.SeatInfo.AI, name=f"helm-test-{i}", bot=bot) for i in range(2)]
with channel(target, TLS.from_env(), []) as ch:
    stub = rpc.EngineStub(ch)
    request = epb.CreateGameRequest(sets="ss", seats=seats)
    game = stub.CreateGame(request, timeout=10, metadata=operator)
    print(f"{target}: game {game.game_id} created, seat {game.view.to_move} (AI) to move")
    deadline = time.monotonic() + timeout
    version = game.view.version
    try:
        while version <= 1 and time.monotonic() < deadline:
            time.sleep(0.5)
            view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id), timeout=10)
            version = view.version
    finally:
        stub.DeleteGame(
            epb.DeleteGameRequest(game_id=game.game_id, admin_token=game.admin_token),
            timeout=10,
            metadata=operator,
        )
if version <= 1:
    sys.exit(f"no AI move within {timeout:g}s: are workers running and reaching the engine?")
print(f"AI move played: the game reached version {version}")

"""An AI seat played from outside: any program holding a seat's token can play it through the
public gRPC API. This one uses the Python SDK (``clients.sdk``) and nothing of the engine: it
watches the game, and when its seat must act it picks one of the legal actions it was sent.

    # join a game as the seat whose token you hold
    python -m ai_workers.examples.external_bot --address HOST:PORT --game GAME_ID --token TOKEN
    # or create a game: this program in seat 1, the server's ISMCTS bot in seat 2
    python -m ai_workers.examples.external_bot --address HOST:PORT --new

Its policy is deliberately simple (play everything, then defeat, then acquire, first
listed); replace ``choose`` with yours.
"""

from __future__ import annotations

import argparse
import contextlib

from clients.sdk import Client, IllegalActionError, VersionConflictError, bot, human
from clients.sdk.types import GameView

PREFERENCE = (
    "place_ship", "play", "use", "flip_coins", "defeat", "defeat_crew", "acquire", "acquire_crew",
    "raid_take", "prevent_raid", "take_free", "give_treasure", "choose", "destroy", "skip",
)  # fmt: skip


def choose(view: GameView) -> int:
    """The first legal action of the most preferred kind (ending the turn when nothing else)."""
    rank = {kind: i for i, kind in enumerate(PREFERENCE)}
    best = min(view.legal_actions, key=lambda a: rank.get(a.kind, len(PREFERENCE)))
    return int(best.id)


def play_seat(client: Client, game_id: str, token: str) -> GameView:
    """Play the token's seat until the game is over; returns the final view."""
    view = client.wait_turn(game_id, token)  # this seat's move (or the end), whoever is first
    while not view.over:
        # if the game moved on meanwhile (a conflict), just look again
        with contextlib.suppress(VersionConflictError, IllegalActionError):
            client.submit(game_id, token, choose(view), expected_version=view.version,
                          retry_on_conflict=False)  # fmt: skip
        view = client.wait_turn(game_id, token)
    return view


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--address", default="localhost:50051")
    ap.add_argument("--game", help="game id")
    ap.add_argument("--token", help="the seat's secret token")
    ap.add_argument(
        "--new", action="store_true", help="create a game against the server's ISMCTS bot"
    )
    args = ap.parse_args(argv)
    with Client(args.address) as client:
        if args.new:
            game = client.create_game([human("external"), bot("ismcts", time_ms=200)], sets="ss")
            game_id, token = game.game_id, game.token(0)
            print(f"game {game_id}: this program is seat 1")
        elif args.game and args.token:
            game_id, token = args.game, args.token
        else:
            ap.error("give --game and --token, or --new")
        final = play_seat(client, game_id, token)
        print("scores:", [s.total for s in final.scores], "winner: seat", final.winner + 1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

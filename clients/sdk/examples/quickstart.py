"""A whole game against a bot through the engine's gRPC API, with the Python SDK.

Start an engine first; by default it keeps games in memory and plays bots in a local
process pool, so it needs no Redis and no broker:

    .venv/bin/ascension-engine serve

then run ``.venv/bin/python -m clients.sdk.examples.quickstart``. It connects to localhost:50051
(``ASCENSION_ADDRESS=HOST:PORT`` names another engine), lists the card catalog, creates a
game against the heuristic bot, watches the game's updates from a second thread, asks for
hints at its first choice, plays legal actions until the game ends (whoever moves first),
and prints the score. It takes a few seconds.
"""

import os
import threading

from clients.sdk import Client, GameView, UnavailableError, bot, human

ADDRESS = os.environ.get("ASCENSION_ADDRESS", "localhost:50051")


def choose(view: GameView) -> int:
    """A simple policy: play a card, else defeat, else acquire, else the first listed
    action (ending the turn, or the first answer to a choice)."""
    for kind in ("play", "defeat", "acquire"):
        for action in view.legal_actions:
            if action.kind == kind:
                return action.id
    return view.legal_actions[0].id


def spectate(client: Client, game_id: str, seen: list[str]) -> None:
    """What a spectator receives: every update, from the game's creation to its end."""
    with client.watch(game_id) as updates:
        for update in updates:
            seen.append(f"v{update.version} {update.description}")


def main() -> None:
    with Client(ADDRESS) as client:
        client.wait_ready(timeout=10)  # the engine answers its health check

        catalog = client.catalog()  # card ids in views refer to it
        mystic = catalog.find("Mystic")
        print(f"{len(catalog.cards)} cards; Mystic: {mystic.text if mystic else '?'}")

        game = client.create_game([human("You"), bot("heuristic")], sets="ss")
        token = game.token(0)  # your seat's secret: keep it to yourself
        print(f"game {game.game_id}: you are seat 1 against the heuristic bot")

        seen: list[str] = []
        watcher = threading.Thread(target=spectate, args=(client, game.game_id, seen), daemon=True)
        watcher.start()

        hint_tries = 0
        view = client.wait_turn(game.game_id, token)  # the bot may move first
        while not view.over:
            if hint_tries < 3 and len(view.legal_actions) > 1:
                hint_tries += 1
                try:
                    hints = client.analyze(game.game_id, token, budget_ms=300)
                except UnavailableError as e:  # no AI process answered in time: ask later
                    print(f"no hints this time: {e}")
                else:
                    for h in hints.candidates[:3]:  # best first
                        print(f"hint: {h.description} ({h.win_probability:.0%} to win)")
                    hint_tries = 3
            client.submit(game.game_id, token, choose(view), expected_version=view.version)
            view = client.wait_turn(game.game_id, token)  # your next move, or the end

        watcher.join(timeout=10)
        print(f"watched {len(seen)} updates; the last: {seen[-1]}")
        scores = [s.total for s in view.scores]
        print(f"final Honor {scores}: " + ("you win" if view.winner == 0 else "the bot wins"))


if __name__ == "__main__":
    main()

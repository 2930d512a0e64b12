"""Two people at one table, with clocks, through the Python SDK.

Start an engine first (``.venv/bin/ascension-engine serve``), then run
``.venv/bin/python -m clients.sdk.examples.two_players``. It connects to localhost:50051
(``ASCENSION_ADDRESS=HOST:PORT`` names another engine), creates a game of two human seats
with clocks (30 s a turn, then a 2-minute bank that gains 5 s a turn; a seat out of time has
its default played), opens each player's watch with their own token (which makes them
present) and asking for presence updates, plays both seats' turns for a while, printing each
seat's time left, and ends with the second player resigning. It takes a few seconds.
"""

import os
import threading

from clients.sdk import Client, Clock, GameView, human, time_left

ADDRESS = os.environ.get("ASCENSION_ADDRESS", "localhost:50051")
MOVES = 40  # then the second player resigns


def choose(view: GameView) -> int:
    """Play a card, else defeat, else acquire, else the first listed action."""
    for kind in ("play", "defeat", "acquire"):
        for action in view.legal_actions:
            if action.kind == kind:
                return action.id
    return view.legal_actions[0].id


def be_present(client: Client, game_id: str, token: str, seen: list[tuple[int, ...]]) -> None:
    """A player's watch: open with their token, so they count as here; it yields who is here
    (updates with presence_only) besides the game's updates."""
    with client.watch(game_id, token=token, presence=True) as updates:
        for update in updates:
            if update.presence_only:
                seen.append(tuple(update.present_seats))


def main() -> None:
    with Client(ADDRESS) as client:
        client.wait_ready(timeout=10)
        clock = Clock(turn_seconds=30, bank_seconds=120, increment_seconds=5)
        game = client.create_game([human("Ann"), human("Bob")], clock=clock)
        print(f"game {game.game_id}: Ann and Bob, {clock.turn_seconds} s a turn and a "
              f"{clock.bank_seconds} s bank (+{clock.increment_seconds} s a turn)")  # fmt: skip
        # In a real app each player's own device does this with its own token.
        seen: list[tuple[int, ...]] = []
        for seat in (0, 1):
            threading.Thread(
                target=be_present, args=(client, game.game_id, game.token(seat), seen), daemon=True
            ).start()

        view = client.get_view(game.game_id)
        for n in range(MOVES):
            seat = view.to_move
            mine = client.get_view(game.game_id, game.token(seat))
            if n % 10 == 0:
                left = [f"{time_left(mine.clock, q):.0f}s" for q in (0, 1)]
                print(f"move {n}: seat {seat + 1} to move; time left {left}")
            view = client.submit(game.game_id, game.token(seat), choose(mine)).view

        here = client.get_view(game.game_id)
        print("here now:", [s.name for s in here.seat_info if s.present])
        result = client.resign(game.game_id, game.token(1))
        print(f"{result.update.description}; over: {result.view.over}, "
              f"winner: seat {result.view.winner + 1}")  # fmt: skip
        print(f"presence updates seen: {len(seen)}, the last {seen[-1] if seen else None}")
        print(f"timeouts: {list(result.view.clock.timeouts)}")


if __name__ == "__main__":
    main()

"""``ascension watch GAME``: follow a game as a spectator (no hand is shown, nothing to choose)."""

from __future__ import annotations

import time

from rich.console import Console, Group
from rich.live import Live

from clients.sdk import Client
from clients.sdk.types import GameView
from clients.terminal import render
from clients.terminal.events import EventLog

REDRAW_EVERY_S = 0.2


def spectate(client: Client, console: Console, game_id: str) -> GameView:
    """Draw the table as it changes until the game ends; returns the final view."""
    view = client.get_view(game_id)
    catalog = client.catalog(view.catalog_fingerprint)
    log = EventLog()
    caught_up = view.version

    def frame(v: GameView) -> Group:
        size = console.size
        lines = log.lines(v, catalog, -1)
        layout = render.Layout(size.width, size.height)
        return render.screen(console, v, catalog, -1, lines, layout, show_actions=False, reserve=0)

    last_draw = 0.0
    with Live(frame(view), console=console, auto_refresh=False, transient=False) as live:
        with client.watch(game_id, after_version=0) as updates:
            for update in updates:
                log.add(update)
                if update.version < caught_up and not update.over:
                    continue
                now = time.monotonic()
                if update.over or now - last_draw >= REDRAW_EVERY_S:
                    view = client.get_view(game_id)
                    live.update(frame(view), refresh=True)
                    last_draw = now
        view = client.get_view(game_id)
        live.update(frame(view), refresh=True)
    if view.over:
        console.print(render.scores_table(view, -1))
        console.print(render.result_line(view, -1))
    return view

"""The SDK at a table of people, against a real engine: clocks at creation and their time left,
a watch that makes its seat present and says who is, resigning and handing a seat over (sync
and asyncio clients)."""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from urllib.parse import urlsplit

import pytest

from clients.embedded import EmbeddedEngine
from clients.sdk import (
    AsyncClient,
    Client,
    Clock,
    GameOverError,
    UnauthenticatedError,
    human,
    invitation_link,
    parse_invitation,
    time_left,
)
from engine_service.api.ascension.v1 import game_pb2 as pb


def test_a_clock_is_checked_before_it_is_sent() -> None:
    assert Clock(turn_seconds=5, on_timeout="bot", bot_difficulty="easy").to_proto().on_timeout == (
        pb.TIMEOUT_POLICY_BOT
    )
    with pytest.raises(ValueError, match="on_timeout"):
        Clock(turn_seconds=5, on_timeout="lose").to_proto()


def test_time_left_counts_down_for_the_seat_to_move_only() -> None:
    c = pb.ClockState(seat=0, deadline_unix_ms=100_000, bank_ms=[50_000, 60_000],
                      turn_ms=[10_000, 10_000])  # fmt: skip
    assert time_left(c, 0, now=90.0) == 10.0
    assert time_left(c, 0, now=200.0) == 0.0
    assert time_left(c, 1, now=90.0) == 70.0  # standing still: allowance and bank


def test_clocks_presence_and_resigning_through_the_sdk(client: Client) -> None:
    game = client.create_game([human("Ann"), human("Bob")],
                              clock=Clock(turn_seconds=60, bank_seconds=30))  # fmt: skip
    view = game.view
    assert view.clock.settings.turn_seconds == 60
    assert time_left(view.clock, view.to_move) > 80  # (a minute and the bank, counting down)
    here: queue.Queue[tuple[int, ...]] = queue.Queue()
    watch = client.watch(game.game_id, token=game.token(1), presence=True)

    def listen() -> None:
        for u in watch:
            if u.presence_only:
                here.put(tuple(u.present_seats))

    threading.Thread(target=listen, daemon=True).start()
    while here.get(timeout=30) != (1,):
        pass
    assert [s.present for s in client.get_view(game.game_id).seat_info] == [False, True]
    result = client.resign(game.game_id, game.token(1))
    assert result.view.over and result.view.winner == 0 and result.update.action_kind == "resign"
    with pytest.raises(GameOverError):
        client.resign(game.game_id, game.token(0))
    watch.cancel()


def test_handing_a_seat_over_through_the_sdk(client: Client) -> None:
    game = client.create_game([human("Ann"), human("Bob")])
    result = client.hand_over(game.game_id, game.admin_token, 1, human("Cy"))
    assert result.seat_token and result.view.seat_info[1].name == "Cy"
    with pytest.raises(UnauthenticatedError):
        client.get_view(game.game_id, game.token(1))
    assert client.get_view(game.game_id, result.seat_token).seat == 1


def test_the_async_client_does_the_same(engine: EmbeddedEngine) -> None:
    async def go() -> None:
        async with AsyncClient(engine.address) as c:
            game = await c.create_game([human("Ann"), human("Bob")], clock=Clock(turn_seconds=60))
            assert game.view.clock.seat == game.view.to_move
            async with c.watch(game.game_id, token=game.token(0), presence=True) as updates:
                async for u in updates:
                    if u.presence_only and tuple(u.present_seats) == (0,):
                        break
            handed = await c.hand_over(game.game_id, game.admin_token, 0, human("Dee"))
            resigned = await c.resign(game.game_id, handed.seat_token)
            assert resigned.view.over and resigned.view.winner == 1

    asyncio.run(asyncio.wait_for(go(), 60))


def test_an_invitation_link_holds_the_token_in_its_fragment_only() -> None:
    token = "3nyva1yz5NKBGXlzm5a14bbGh0DfpEUC"
    link = invitation_link("http://127.0.0.1:8080/?pace=0", "01m921vb8791yjx98v5vxv", token)
    parts = urlsplit(link)
    assert token in parts.fragment and token not in parts.path + parts.query
    assert parse_invitation(link) == ("01m921vb8791yjx98v5vxv", token)
    for bad in ("http://x/#/play/01m921vb8791yjx98v5vxv", "http://x/#/join/short/abc", ""):
        with pytest.raises(ValueError, match="invitation link"):
            parse_invitation(bad)


def test_ascension_join_says_what_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    from clients import cli

    assert cli.main(["join", "http://x/#/join/nope", "--address", "127.0.0.1:1"]) == 2
    assert "not an invitation link" in capsys.readouterr().out
    link = invitation_link("http://x/", "01m921vb8791yjx98v5vxv", "3nyva1yz5NKBGXlzm5a14bbGh0DfpEUC")
    os.environ.pop("ASCENSION_ADDRESS", None)
    assert cli.main(["join", link]) == 2
    assert "needs --address" in capsys.readouterr().out


def test_ascension_join_takes_the_seat_of_the_link(engine: EmbeddedEngine, client: Client) -> None:
    from clients import cli

    game = client.create_game([human("Ann"), human("Bob")])
    client.resign(game.game_id, game.token(0))  # (over: the session shows the end and returns)
    link = invitation_link("http://x/", game.game_id, game.token(1))
    assert cli.main(["join", link, "--address", engine.address, "--no-clear"]) == 0


def test_the_terminal_shows_the_clocks_and_who_is_here(client: Client) -> None:
    from clients.terminal import render

    game = client.create_game([human("Ann"), human("Bob")], clock=Clock(turn_seconds=90))
    view = client.get_view(game.game_id, game.token(game.view.to_move))
    head = render.header(view, view.seat, render.Layout(width=120, height=40)).plain
    assert "your time 1:" in head  # a minute and a half, counting down
    other = 1 - view.seat
    assert "clock 1:30" in render._seat_summary(view, other).plain
    assert render.clock_text(3725) == "1:02:05" and render.clock_text(9.2) == "0:10"

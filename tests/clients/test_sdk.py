"""The SDK against a real engine process: calls, errors, lost races, watching and resuming."""

from __future__ import annotations

import threading
import time

import pytest

from clients.embedded import EmbeddedEngine
from clients.sdk import (
    Client,
    GameNotFoundError,
    GameView,
    IllegalActionError,
    InvalidArgumentError,
    RetryPolicy,
    UnauthenticatedError,
    VersionConflictError,
    bot,
    human,
)
from clients.sdk.examples.quickstart import choose
from tests.clients.conftest import human_game, requires_ai, to_main_phase
from tests.clients.proxy import CuttableProxy


def test_create_view_actions_submit(client: Client) -> None:
    game = human_game(client)
    assert len(game.seat_tokens) == 2 and game.admin_token
    assert game.view.version == 1 and game.view.seat == -1
    view = client.get_view(game.game_id, game.token(game.view.to_move))
    assert view.seat == game.view.to_move
    assert len(view.board.seats[view.seat].hand) == 5
    listed = client.legal_actions(game.game_id, game.token(view.seat))
    assert listed.version == 1
    assert [a.id for a in listed.actions] == [a.id for a in view.legal_actions]
    assert all(a.kind == "place_ship" for a in listed.actions)

    resp = client.submit(game.game_id, game.token(view.seat), listed.actions[0].id)
    assert resp.update.version == 2 and resp.view.version == 2
    assert resp.update.seat == view.seat
    assert client.known_version(game.game_id) == 2


def test_catalog_names_the_cards_in_views(client: Client) -> None:
    game = human_game(client)
    cat = client.catalog(game.view.catalog_fingerprint)
    assert cat.fingerprint == game.view.catalog_fingerprint
    assert cat.find("mystic") is not None and cat.find("mystic").cost == 3  # type: ignore[union-attr]
    for space in game.view.board.center:
        assert cat[space.card].name != "?"
    assert client.catalog(cat.fingerprint) is cat  # cached


def test_errors_carry_the_servers_message(client: Client) -> None:
    game = human_game(client)
    with pytest.raises(GameNotFoundError):
        client.get_view("0" * 22)  # well formed, never created
    with pytest.raises(InvalidArgumentError, match="game_id"):
        client.get_view("no-such-game")
    with pytest.raises(UnauthenticatedError, match="token"):
        client.get_view(game.game_id, "not-a-token")
    seat = game.view.to_move
    other = game.token(1 - seat)
    with pytest.raises(IllegalActionError, match="not your turn"):
        client.submit(game.game_id, other, 1 << 16)
    with pytest.raises(IllegalActionError) as err:
        client.submit(game.game_id, game.token(seat), 1 << 16)  # End turn: ship not placed yet
    assert err.value.code == "FAILED_PRECONDITION" and err.value.message
    with pytest.raises(InvalidArgumentError):
        client.create_game([human()], sets="ss")  # one seat is too few


def test_lost_race_is_retried_on_the_new_version(client: Client, engine: EmbeddedEngine) -> None:
    game = human_game(client, seed=5)
    token, _ = to_main_phase(client, game)
    view = client.get_view(game.game_id, token)
    plays = [a for a in view.legal_actions if a.kind == "play"]
    assert len(plays) >= 2, "need two different cards to play"
    v = view.version
    with Client(engine.address) as other:
        first = other.submit(game.game_id, token, plays[0].id, expected_version=v)
    assert first.view.version == v + 1
    # This client still believes the game is at v: the server says ABORTED, the SDK reads the
    # new version and submits again, and the second card is still legal.
    second = client.submit(game.game_id, token, plays[1].id, expected_version=v)
    assert second.update.version == v + 2
    assert second.update.action == plays[1].id
    played = second.view.board.seats[second.view.seat].played
    assert len(played) == 2


def test_lost_race_without_retry_reports_the_current_version(client: Client) -> None:
    game = human_game(client, seed=6)
    token, _ = to_main_phase(client, game)
    view = client.get_view(game.game_id, token)
    plays = [a for a in view.legal_actions if a.kind == "play"]
    client.submit(game.game_id, token, plays[0].id, expected_version=view.version)
    with pytest.raises(VersionConflictError) as err:
        client.submit(
            game.game_id, token, plays[1].id, expected_version=view.version, retry_on_conflict=False
        )
    assert err.value.current_version == view.version + 1
    assert "version" in err.value.message


def test_lost_race_then_rules_error(client: Client, engine: EmbeddedEngine) -> None:
    """The other client ended the turn: the retried play is no longer legal, and the SDK says
    why (the rules' reason), after re-reading the version."""
    game = human_game(client, seed=7)
    token, _ = to_main_phase(client, game)
    view = client.get_view(game.game_id, token)
    play = next(a for a in view.legal_actions if a.kind == "play")
    end = next(a for a in view.legal_actions if a.kind == "end_turn")
    with Client(engine.address) as other:
        other.submit(game.game_id, token, end.id, expected_version=view.version)
    with pytest.raises(IllegalActionError, match="not your turn"):
        client.submit(game.game_id, token, play.id, expected_version=view.version)


def test_concurrent_submits_both_land(client: Client, engine: EmbeddedEngine) -> None:
    """Two clients race on the same version at the same moment: one wins, the other is
    retried by the SDK; both actions are applied, once each."""
    game = human_game(client, seed=8)
    token, _ = to_main_phase(client, game)
    view = client.get_view(game.game_id, token)
    plays = [a for a in view.legal_actions if a.kind == "play"][:2]
    assert len(plays) == 2
    barrier = threading.Barrier(2)
    results: dict[int, int] = {}
    errors: list[BaseException] = []

    def go(i: int) -> None:
        with Client(engine.address) as c:
            barrier.wait()
            try:
                r = c.submit(game.game_id, token, plays[i].id, expected_version=view.version)
                results[i] = r.update.version
            except BaseException as e:
                errors.append(e)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert sorted(results.values()) == [view.version + 1, view.version + 2]
    final = client.get_view(game.game_id, token)
    assert final.version == view.version + 2


def test_idempotency_key_applies_once(client: Client) -> None:
    game = human_game(client, seed=9)
    seat = game.view.to_move
    token = game.token(seat)
    action = client.get_view(game.game_id, token).legal_actions[0].id
    a = client.submit(game.game_id, token, action, expected_version=1, idempotency_key="k-1")
    b = client.submit(game.game_id, token, action, expected_version=1, idempotency_key="k-1")
    assert not a.replayed and b.replayed
    assert a.update.version == b.update.version == 2
    assert client.get_view(game.game_id).version == 2


def _advance(client: Client, game_id: str, tokens: tuple[str, ...], steps: int) -> None:
    """Apply ``steps`` actions, always the first legal non-end-turn action (or end turn)."""
    for _ in range(steps):
        spectator = client.get_view(game_id)
        token = tokens[spectator.to_move]
        view = client.get_view(game_id, token)
        acts = [a for a in view.legal_actions if a.kind != "end_turn"] or list(view.legal_actions)
        client.submit(game_id, token, acts[0].id)


def test_watch_from_a_version(client: Client) -> None:
    game = human_game(client, seed=12)
    _advance(client, game.game_id, game.seat_tokens, 6)  # versions 2..7
    with client.watch(game.game_id, after_version=0) as w:
        first = [next(w).version for _ in range(7)]
    assert first == list(range(1, 8))
    with client.watch(game.game_id, after_version=4) as w:
        got = [next(w) for _ in range(3)]
    assert [u.version for u in got] == [5, 6, 7]
    assert all(u.description for u in got)


def test_watch_resumes_after_the_connection_drops(engine: EmbeddedEngine) -> None:
    """Updates stream through a proxy; the proxy cuts every connection; the watch reconnects
    from the last version it received: no update lost, none repeated."""
    host, port = engine.address.rsplit(":", 1)
    proxy = CuttableProxy(host, int(port))
    fast = RetryPolicy(reconnects=20, backoff_s=0.05, max_backoff_s=0.2)
    try:
        with Client(engine.address) as direct, Client(proxy.address, retry=fast) as via_proxy:
            game = human_game(direct, seed=13)
            _advance(direct, game.game_id, game.seat_tokens, 3)  # versions 2..4
            watch = via_proxy.watch(game.game_id, after_version=0)
            seen = [next(watch).version for _ in range(4)]
            assert seen == [1, 2, 3, 4]
            proxy.cut()
            _advance(direct, game.game_id, game.seat_tokens, 4)  # versions 5..8, while cut
            seen += [next(watch).version for _ in range(4)]
            proxy.cut()
            _advance(direct, game.game_id, game.seat_tokens, 2)  # versions 9..10
            seen += [next(watch).version for _ in range(2)]
            watch.cancel()
            assert seen == list(range(1, 11))
            assert watch.reconnects >= 2
            assert proxy.accepted >= 2
            assert watch.last_version == 10
    finally:
        proxy.close()


def test_watch_ends_when_the_game_ends(client: Client) -> None:
    """A finished game's stream closes after its last update (game over)."""
    game = client.create_game([human(), human()], seed=21)
    tokens = game.seat_tokens
    # Play until the end with the first-listed action preference (a short, bounded game).
    deadline = time.monotonic() + 60
    while True:
        spectator = client.get_view(game.game_id)
        if spectator.over:
            break
        assert time.monotonic() < deadline, "the scripted game did not finish in time"
        token = tokens[spectator.to_move]
        view = client.get_view(game.game_id, token)
        pref = ("defeat", "acquire", "play")
        acts = sorted(
            view.legal_actions,
            key=lambda a: next((i for i, p in enumerate(pref) if a.kind.startswith(p)), 9),
        )
        acts = [a for a in acts if a.kind != "end_turn"] or acts
        client.submit(game.game_id, token, acts[0].id)
    final = client.get_view(game.game_id)
    # a finished game keeps its window of last updates a while (then GetGame has its end)
    updates = list(client.watch(game.game_id, after_version=final.version - 1))
    assert [u.version for u in updates] == [final.version]
    assert updates[-1].over
    assert list(client.watch(game.game_id, after_version=final.version)) == []


def test_bot_seat_settings_are_sent(client: Client) -> None:
    game = client.create_game(
        [human("Ann"), bot("random", time_ms=50, seed=3, display_name="Robo")], seed=1
    )
    info = {s.seat: s for s in game.view.seat_info}
    assert info[0].name == "Ann" and info[0].kind == info[0].HUMAN
    assert info[1].name == "Robo" and info[1].bot_name == "random" and info[1].kind == info[1].AI


def test_a_table_of_every_seat_follows_the_seat_to_move(client: Client) -> None:
    """With seat_tokens each answer is the view of the seat to move: the table plays on with
    submits alone (first moves, ship placements included, pass the move between seats)."""
    game = human_game(client, seed=31)
    view = client.get_view(game.game_id, game.token(game.view.to_move))
    seats_seen = set()
    for _ in range(40):
        assert view.seat == view.to_move and view.legal_actions
        seats_seen.add(view.seat)
        acts = [a for a in view.legal_actions if a.kind != "end_turn"] or list(view.legal_actions)
        view = client.submit(game.game_id, game.token(view.seat), acts[-1].id, seat_tokens=game.seat_tokens).view
    assert seats_seen == {0, 1}
    with pytest.raises(UnauthenticatedError, match=r"seat_tokens\[0\]"):
        client.submit(game.game_id, game.token(view.seat), view.legal_actions[0].id, seat_tokens=["y" * 32])


def test_wait_turn_returns_when_the_move_passes_to_the_seat(client: Client) -> None:
    """A seat not to move waits while the other plays; its own move returns at once."""
    game = human_game(client, seed=41)
    token_a, a = to_main_phase(client, game)
    b = 1 - a
    got: list[GameView] = []
    waiter = threading.Thread(target=lambda: got.append(client.wait_turn(game.game_id, game.token(b))))
    waiter.start()
    waiter.join(0.5)
    assert waiter.is_alive() and not got, "seat b's move came while seat a was in its turn"
    mine = client.wait_turn(game.game_id, token_a)
    assert mine.seat == mine.to_move == a and mine.legal_actions
    end = next(x for x in mine.legal_actions if x.kind == "end_turn")
    done = client.submit(game.game_id, token_a, end.id, expected_version=mine.version)
    waiter.join(10)
    assert got, "wait_turn did not return once the move passed to its seat"
    assert got[0].seat == got[0].to_move == b and got[0].legal_actions
    assert got[0].version >= done.view.version


def test_wait_turn_times_out_and_needs_a_seat(client: Client) -> None:
    game = human_game(client, seed=43)
    idle = game.token(1 - game.view.to_move)
    t0 = time.monotonic()
    with pytest.raises(TimeoutError):
        client.wait_turn(game.game_id, idle, timeout=0.5)
    assert 0.4 < time.monotonic() - t0 < 5
    with pytest.raises(ValueError, match="spectator"):
        client.wait_turn(game.game_id, "")


@requires_ai
def test_wait_turn_plays_a_whole_game_when_the_bot_moves_first(client: Client) -> None:
    """Every view wait_turn returns is the seat's move at the game's current version: each
    submit on it, with no retry, lands (never NOT_YOUR_TURN nor a lost race)."""
    game = next(
        g
        for g in (client.create_game([human("me"), bot("heuristic")], seed=s) for s in range(50, 70))
        if g.view.to_move == 1
    )
    token = game.token(0)
    view = client.wait_turn(game.game_id, token)
    assert view.version > 2, "the bot's first moves come before this seat's"
    moves = 0
    while not view.over:
        assert view.seat == view.to_move == 0 and view.legal_actions
        client.submit(game.game_id, token, choose(view), expected_version=view.version, retry_on_conflict=False)
        moves += 1
        view = client.wait_turn(game.game_id, token, timeout=60)
    assert moves > 20 and view.winner in (0, 1) and len(view.scores) == 2

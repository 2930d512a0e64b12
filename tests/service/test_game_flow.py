"""A full game played through the API, and what it leaves behind: updates, replay, listing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest

from clients.sdk.errors import rich_status
from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.ids import new_game_id
from engine_service.store import NewGame, StoreSettings, keys, new_commit_id
from engine_service.store.redis_store import RedisStore
from tests.service import support
from tests.service.support import CALL_TIMEOUT


def _resimulate(replay: epb.Replay) -> rules.State:
    s = rules.new_game(rules.GameConfig(sets=replay.sets, players=replay.players, seed=replay.seed))
    for step in replay.steps:
        assert s.to_move() == step.seat
        rules.apply(s, step.action)
    return s


@pytest.mark.parametrize("which", ["redis", "memory"])
def test_full_game_through_the_api(which: str, engine: support.Engine, memory_engine: support.Engine) -> None:
    stub = (engine if which == "redis" else memory_engine).stub()
    game = support.create(stub, sets="both", players=2, seed=11)
    assert game.view.version == 1 and len(game.seat_tokens) == 2 and game.admin_token
    assert len(set(game.seat_tokens) | {game.admin_token}) == 3
    assert game.view.seat == -1 and not game.view.legal_actions
    watcher = support.Watcher(stub, game.game_id)  # from the creation, while the game is played
    watcher.until(1)  # its stream is open before the moves start (they could outrun the window)
    final, responses = support.play_to_end(stub, game, seed=3)
    assert final.over and final.to_move == -1 and not final.legal_actions
    assert final.version == 1 + len(responses)
    assert [r.update.version for r in responses] == list(range(2, final.version + 1))
    assert len(final.scores) == 2 and final.winner in (0, 1)
    assert final.winner == max(final.scores, key=lambda sc: (sc.total, (sc.seat - final.board.first_seat) % 2)).seat

    # A watcher saw every version once, in order, ending with the game's end, each update
    # naming its parent: one unbroken history.
    updates = watcher.result()
    assert [u.version for u in updates] == list(range(1, final.version + 1))
    assert updates[-1].over and updates[0].seat == -1
    assert [(u.seat, u.action) for u in updates[1:]] == [(r.update.seat, r.update.action) for r in responses]
    assert all(u.events for u in updates[1:])
    assert [u.parent_commit_id for u in updates] == ["", *(u.commit_id for u in updates[:-1])]
    assert updates[-1].commit_id == final.commit_id
    # An update says when its action was the seat's only legal one (nothing was chosen)
    s = rules.new_game(rules.GameConfig(sets="both", players=2, seed=11))
    forced = []
    for u in updates[1:]:
        forced.append(len(rules.legal_actions(s)) == 1)
        rules.apply(s, u.action)
    assert [u.forced for u in updates[1:]] == forced and any(forced) and not all(forced)

    # A finished game keeps its last updates a while (its window); a later watcher gets the
    # older ones rebuilt from the game's log: the same updates, without time or commit ids.
    tail = list(stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id, after_version=final.version - 1),
                               timeout=CALL_TIMEOUT))  # fmt: skip
    assert [u.version for u in tail] == [final.version]
    late = list(stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT))
    assert [_untimed(u) for u in late] == [_untimed(u) for u in updates]
    assert late[-1].commit_id == final.commit_id

    # The replay re-simulates to exactly the server's final state.
    replay = stub.GetReplay(epb.GetReplayRequest(game_id=game.game_id), timeout=CALL_TIMEOUT)
    assert replay.seed == 11 and replay.version == final.version
    assert [s.version for s in replay.steps] == list(range(2, final.version + 1))
    s = _resimulate(replay)
    assert s.over
    assert rules.view(s, rules.SPECTATOR).serialize() == stub.GetGame(
        epb.GetGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT).rules_view  # fmt: skip
    assert [sc.total for sc in replay.scores] == rules.scores(s) == [sc.total for sc in final.scores]

    # Listing shows it as over; active_only leaves it out.
    listed = stub.ListGames(epb.ListGamesRequest(page_size=500), timeout=CALL_TIMEOUT)
    mine = [g for g in listed.games if g.game_id == game.game_id]
    assert mine and mine[0].over and mine[0].version == final.version
    active = stub.ListGames(epb.ListGamesRequest(page_size=500, active_only=True), timeout=CALL_TIMEOUT)
    assert game.game_id not in {g.game_id for g in active.games}


def test_view_carries_legal_actions_and_rules_view(stub: rpc.EngineStub) -> None:
    game = support.create(stub, sets="cotgi", players=3, seed=5)
    seat = game.view.to_move
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]), timeout=CALL_TIMEOUT)
    assert view.seat == seat and view.to_move == seat and view.version == 1
    assert {a.kind for a in view.legal_actions} == {"place_ship"}
    assert all(a.description and a.id >> 16 == rules.KIND_IDS[a.kind] for a in view.legal_actions)
    listed = stub.ListLegalActions(epb.ListLegalActionsRequest(game_id=game.game_id, token=game.seat_tokens[seat]),
                                   timeout=CALL_TIMEOUT)  # fmt: skip
    assert [a.id for a in listed.actions] == [a.id for a in view.legal_actions]
    other = (seat + 1) % 3
    not_mine = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[other]),
                            timeout=CALL_TIMEOUT)  # fmt: skip
    assert not not_mine.legal_actions and not_mine.to_move == seat
    rv = rules.View.deserialize(view.rules_view)
    assert rv.seat == seat and rules.legal_actions(rv.state) == [a.id for a in view.legal_actions]
    b = view.board
    assert len(b.center) == 6 and all(c.card >= 0 for c in b.center)
    assert b.ghost_pirate_space == 6 and b.board_coin_space >= 0 and b.board_coin.color
    assert not b.kraken.in_game and b.honor_pool == 90
    assert b.decision.kind == "place_ship" and b.decision.seat == seat
    assert view.catalog_fingerprint and view.seat_info[seat].name == f"P{seat + 1}"


def test_list_cards_names_every_card(stub: rpc.EngineStub) -> None:
    cards = stub.ListCards(epb.ListCardsRequest(), timeout=CALL_TIMEOUT)
    assert [c.id for c in cards.cards] == list(range(len(cards.cards)))
    by_key = {c.key: c for c in cards.cards}
    assert by_key["mystic"].name and by_key["mystic"].type == "hero" and by_key["mystic"].text
    assert by_key["cultist"].type == "monster"
    game = support.create(stub)
    assert game.view.catalog_fingerprint == cards.catalog_fingerprint
    assert all(0 <= c.card < len(cards.cards) for c in game.view.board.center)


def test_list_games_pages_newest_first(stub: rpc.EngineStub) -> None:
    ids = [support.create(stub, seed=i).game_id for i in range(5)]
    seen: list[str] = []
    token = ""
    while True:
        page = stub.ListGames(epb.ListGamesRequest(page_size=2, page_token=token, active_only=True),
                              timeout=CALL_TIMEOUT)  # fmt: skip
        assert len(page.games) <= 2
        seen += [g.game_id for g in page.games]
        token = page.next_page_token
        if not token:
            break
    assert seen == sorted(seen, reverse=True)
    assert seen[:5] == ids[::-1]
    first = stub.ListGames(epb.ListGamesRequest(page_size=5), timeout=CALL_TIMEOUT)
    assert all(g.players == 2 and g.version == 1 and not g.over and len(g.seats) == 2 for g in first.games)


def test_a_record_with_unreadable_metadata_does_not_take_the_listing_down(engine: support.Engine) -> None:
    """A game record whose metadata this engine cannot decode (written by another version, or
    damaged) is listed with what the store holds; the other games are listed as ever."""
    stub = engine.stub()
    good = support.create(stub)
    bad = new_game_id()
    store = RedisStore(engine.redis_url, StoreSettings(), timeout=2.0)

    async def put() -> None:
        try:
            await store.create(NewGame(bad, new_commit_id(), b"state", b'{"m":1}', b"u", 0, 1, None, time.time()))
        finally:
            await store.close()

    asyncio.run(put())
    listed = {g.game_id: g for g in stub.ListGames(epb.ListGamesRequest(page_size=500), timeout=CALL_TIMEOUT).games}
    assert listed[good.game_id].players == 2 and len(listed[good.game_id].seats) == 2
    assert listed[bad].version == 1 and listed[bad].players == 0 and not listed[bad].seats
    engine.wait_log("unreadable metadata")  # (rate-limited: maybe of another such game)
    # Every call on it is refused, saying why (UNREADABLE_GAME), not INTERNAL with a traceback.
    token = "t" * 32
    calls: list[tuple[Any, Any]] = [
        (stub.GetGame, epb.GetGameRequest(game_id=bad)),
        (stub.ListLegalActions, epb.ListLegalActionsRequest(game_id=bad, token=token)),
        (stub.SubmitAction, epb.SubmitActionRequest(game_id=bad, token=token, expected_version=1, action=1)),
        (stub.GetReplay, epb.GetReplayRequest(game_id=bad)),
        (stub.DeleteGame, epb.DeleteGameRequest(game_id=bad, admin_token=token)),
    ]
    for call, req in calls:
        err = support.rpc_error(call, req)
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, (req, err)
        assert rich_status(err).reason == "UNREADABLE_GAME" and "metadata does not decode" in err.details()
    assert "internal error" not in engine.log()
    assert stub.GetGame(epb.GetGameRequest(game_id=good.game_id), timeout=CALL_TIMEOUT).version == 1


def test_a_record_with_damaged_fields_is_refused_and_listed(engine: support.Engine) -> None:
    """A record whose version, or compressed metadata, is damaged in the store: every call on
    the game answers UNREADABLE_GAME (it was INTERNAL), the listing shows it, with zeros, and
    the other games as ever; watchers of other games are not held up by it."""
    import redis

    stub = engine.stub()
    r: Any = redis.Redis.from_url(engine.redis_url)
    good = support.create(stub)
    watcher = support.Watcher(stub, good.game_id)
    watcher.until(1)
    bad = [support.create(stub).game_id, new_game_id()]
    store = RedisStore(engine.redis_url, StoreSettings(), timeout=2.0)

    async def put() -> None:  # a game this engine has not seen (nothing of it cached)
        try:
            await store.create(NewGame(bad[1], new_commit_id(), b"state", b"{}", b"u", 0, 1, None, time.time()))
        finally:
            await store.close()

    asyncio.run(put())
    r.hset(keys.game_keys(bad[0])[0], "version", b"seven")
    r.hset(keys.game_keys(bad[1])[0], "meta", b"x-not-zlib")
    token = "t" * 32
    for gid in bad:
        for call, req in [
            (stub.GetGame, epb.GetGameRequest(game_id=gid)),
            (stub.SubmitAction, epb.SubmitActionRequest(game_id=gid, token=token, expected_version=1, action=1)),
            (stub.DeleteGame, epb.DeleteGameRequest(game_id=gid, admin_token=token)),
        ]:  # fmt: skip
            err = support.rpc_error(call, req)
            assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, (req, err)
            assert rich_status(err).reason == "UNREADABLE_GAME" and gid in err.details()
        with pytest.raises(grpc.RpcError) as e:
            list(stub.WatchGame(epb.WatchGameRequest(game_id=gid), timeout=CALL_TIMEOUT))
        assert rich_status(e.value).reason == "UNREADABLE_GAME"
    listed = {g.game_id: g for g in stub.ListGames(epb.ListGamesRequest(page_size=500), timeout=CALL_TIMEOUT).games}
    assert listed[bad[0]].version == 0 and listed[bad[1]].version == 1
    assert listed[good.game_id].version == 1 and len(listed[good.game_id].seats) == 2
    final, _ = support.play_to_end(stub, good, seed=2, max_actions=12)
    assert [u.version for u in watcher.until(final.version)][-1] == final.version
    assert "internal error" not in engine.log()
    r.close()


def test_damaged_updates_in_a_window_are_rebuilt_for_watchers(engine: support.Engine) -> None:
    """The window only keeps recent updates; the log and the state are the game. A watcher of
    a game whose window holds a damaged entry gets that version rebuilt from the log (it got
    UNAVAILABLE or INTERNAL), and a retry of the request that wrote it is answered with its
    version (as when it has left the window)."""
    import redis

    stub = engine.stub()
    game = support.create(stub, seed=3)
    _, sent = support.play_to_end(stub, game, seed=4, max_actions=5)  # versions 2..6
    r: Any = redis.Redis.from_url(engine.redis_url)
    window = keys.game_keys(game.game_id)[1]
    r.lset(window, 3, b"\x00\x00\x00\x04\x00\x09ab")  # version 4's entry
    got: list[pb.GameUpdate] = []
    for u in stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT):
        got.append(u)
        if u.version == 6:
            break
    assert [u.version for u in got] == [1, 2, 3, 4, 5, 6]
    assert [u.commit_id for u in got[1:]] == [s.update.commit_id for s in sent]
    assert got[3].events == sent[2].update.events and got[3].parent_commit_id == got[2].commit_id

    def retry(i: int) -> epb.SubmitActionResponse:  # the request that wrote version i + 2
        u = sent[i].update
        req = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[u.seat],
                                      expected_version=u.version - 1, action=u.action,
                                      idempotency_key=f"{game.game_id}-{u.version - 1}")  # fmt: skip
        resp: epb.SubmitActionResponse = stub.SubmitAction(req, timeout=CALL_TIMEOUT)
        return resp

    again = retry(2)
    assert again.replayed and again.update.version == 4 and again.view.version == 6
    idem = keys.game_keys(game.game_id)[3]  # a damaged idempotency record: said so
    r.hset(idem, f"{game.game_id}-1", b"two|x")
    err = support.rpc_error(stub.SubmitAction, epb.SubmitActionRequest(
        game_id=game.game_id, token=game.seat_tokens[sent[0].update.seat], expected_version=1,
        action=sent[0].update.action, idempotency_key=f"{game.game_id}-1"))  # fmt: skip
    assert rich_status(err).reason == "UNREADABLE_GAME" and "idempotency record" in err.details()
    entry = r.lindex(window, 4)  # version 5's: its update no longer parses
    assert isinstance(entry, bytes)
    update = keys.unpack_window_entry(entry)[4]
    r.lset(window, 4, entry[: len(entry) - len(update)] + b"\xff\xff")
    again = retry(3)
    assert again.replayed and again.update.version == 5 and not again.update.events
    assert retry(4).update == sent[4].update  # (an intact one: as first answered)
    assert "internal error" not in engine.log()
    r.close()


def test_a_damaged_replay_log_is_refused_saying_so(engine: support.Engine) -> None:
    """GetReplay of a finished game whose log is damaged: UNREADABLE_GAME (it was INTERNAL);
    a watcher from the start: OUT_OF_RANGE, as for any history that cannot be rebuilt."""
    import redis

    stub = engine.stub()
    r: Any = redis.Redis.from_url(engine.redis_url)
    for damage in (b"\x01\x02\x03", b"\xfe\x00\x00\x00\x09abc", b"\xffnot zlib"):
        game = support.create(stub, seed=5)
        final, _ = support.play_to_end(stub, game, seed=5)
        assert final.over
        r.set(keys.game_keys(game.game_id)[2], damage)
        err = support.rpc_error(stub.GetReplay, epb.GetReplayRequest(game_id=game.game_id))
        assert err.code() == grpc.StatusCode.FAILED_PRECONDITION, err
        assert rich_status(err).reason == "UNREADABLE_GAME" and "replay log is damaged" in err.details()
        with pytest.raises(grpc.RpcError) as e:
            list(stub.WatchGame(epb.WatchGameRequest(game_id=game.game_id), timeout=CALL_TIMEOUT))
        assert e.value.code() == grpc.StatusCode.OUT_OF_RANGE
    assert "internal error" not in engine.log()
    r.close()


def test_delete_game(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    stub.DeleteGame(epb.DeleteGameRequest(game_id=game.game_id, admin_token=game.admin_token), timeout=CALL_TIMEOUT)
    err = support.rpc_error(stub.GetGame, epb.GetGameRequest(game_id=game.game_id))
    assert err.code().name == "NOT_FOUND"
    listed = stub.ListGames(epb.ListGamesRequest(page_size=500), timeout=CALL_TIMEOUT)
    assert game.game_id not in {g.game_id for g in listed.games}


def test_submit_can_answer_with_legal_actions_only(stub: rpc.EngineStub) -> None:
    game = support.create(stub)
    seat = game.view.to_move
    view = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]), timeout=CALL_TIMEOUT)
    resp = stub.SubmitAction(epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat],
                                                     expected_version=1, action=view.legal_actions[0].id,
                                                     view_detail=epb.VIEW_DETAIL_LEGAL_ACTIONS),
                             timeout=CALL_TIMEOUT)  # fmt: skip
    light = resp.view
    assert not light.HasField("board") and not light.rules_view and light.version == 2
    full = stub.GetGame(epb.GetGameRequest(game_id=game.game_id, token=game.seat_tokens[seat]), timeout=CALL_TIMEOUT)
    assert (light.seat, light.to_move, light.over) == (full.seat, full.to_move, full.over)
    assert list(light.legal_actions) == list(full.legal_actions)
    bad = epb.SubmitActionRequest(game_id=game.game_id, token=game.seat_tokens[seat], expected_version=2,
                                  action=1 << 16, view_detail=7)  # type: ignore[arg-type]  # fmt: skip
    err = support.rpc_error(stub.SubmitAction, bad)
    assert err.code().name == "INVALID_ARGUMENT" and "view_detail" in err.details()


def _untimed(u: pb.GameUpdate) -> pb.GameUpdate:
    c = pb.GameUpdate()
    c.CopyFrom(u)
    c.time_unix_ms = 0
    c.commit_id = c.parent_commit_id = ""
    return c

"""Rules state -> protobuf messages. Hidden information stays hidden: a seat sees its own hand
only, a spectator sees no hand, but every view has the cards every seat knows to be in each
hand (``hand_known``); deck orders, the center deck and the Treasure Bag are counts."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.cards import language as L
from engine_service.rules import actions as A
from engine_service.rules.describe import COLORS
from engine_service.rules.state import (
    CENTER_SPACES,
    COIN_DOWN,
    DEEP,
    KRAKEN_ABSENT,
    KRAKEN_IN_DEEP,
    PILE_HEAVY,
    PILE_MYSTIC,
    State,
)
from engine_service.rules.tables import default_tables
from engine_service.rules.view import view_bytes
from engine_service.server.bots import difficulty_of
from engine_service.server.fallbacks import Fallbacks
from engine_service.server.meta import AI, GameMeta, Seat

SPECTATOR = rules.SPECTATOR


# Messages are filled in place (``repeated.add``, sub-message fields) rather than built and
# passed to a parent's constructor, which copies them: a full view is some 30 messages and is
# built on every submit.


def _set_coin(m: pb.Coin, code: int) -> None:
    c = code & (COIN_DOWN - 1)
    m.code = c
    m.color = COLORS[c // 6]
    m.resource = L.RESOURCE_NAMES[c % 6]
    m.face_down = bool(code & COIN_DOWN)


def add_legal_actions(out: Any, s: State, seat: int, legal: Sequence[int] | None = None) -> None:
    """Append ``seat``'s legal actions to the repeated LegalAction field ``out`` (``legal``:
    ``rules.legal_actions(s)`` when the caller has them)."""
    if s.over or seat < 0 or s.to_move() != seat:
        return
    names, describe, add = A.KIND_NAMES, rules.describe_action, out.add
    for a in rules.legal_actions(s) if legal is None else legal:
        m = add()
        m.id = a
        m.kind = names[a >> 16]
        m.description = describe(s, a)


# The center row's six messages as wire bytes (a Board's repeated field center), by content:
# adding them was a third of a board's cost (3,700 instructions a message added) and the row
# changes a few times a turn, while every answer carries a board. Parsed into each board.
_center_wires: dict[tuple[Any, ...], bytes] = {}
_CENTER_WIRES_KEPT = 4096


def _center_wire(center: list[int], under: list[list[int]]) -> bytes:
    key = (*center, *map(tuple, under[:CENTER_SPACES]))
    wire = _center_wires.get(key)
    if wire is None:
        one = pb.Board()
        add_space = one.center.add
        for sp in range(CENTER_SPACES):
            space = add_space()  # fields set one by one: half the cost of keyword arguments
            space.space = sp
            space.card = center[sp]
            if under[sp]:
                space.treasures_under.extend(under[sp])
        if len(_center_wires) >= _CENTER_WIRES_KEPT:
            _center_wires.clear()  # (one step: safe beside threads that read)
        wire = _center_wires[key] = one.SerializeToString()
    return wire


class _CoinWires(dict[int, bytes]):
    """Each coin's message as wire bytes of ``message``'s coin field ``field``, made when
    first asked for (parsed in rather than built: 6,000 instructions a coin)."""

    def __init__(self, message: Any, field: str) -> None:
        super().__init__()
        self.message, self.field = message, field

    def __missing__(self, code: int) -> bytes:
        one = self.message()
        coin = getattr(one, self.field)
        _set_coin(coin.add() if hasattr(coin, "add") else coin, code)
        wire: bytes = one.SerializeToString()
        self[code] = wire
        return wire


_SEAT_COINS = _CoinWires(pb.SeatState, "coins")
_BOARD_COIN = _CoinWires(pb.Board, "board_coin")

# The board's Kraken and decision as wire bytes too, by content (they change a few times a
# game): parsed into each board.
_kraken_wires: dict[tuple[Any, ...], bytes] = {}
_decision_wires: dict[tuple[Any, ...], bytes] = {}


def _kraken_wire(s: State) -> bytes:
    key = (s.kraken, *s.under[DEEP], -1, *s.kraken_coins)
    wire = _kraken_wires.get(key)
    if wire is None:
        one = pb.Board()
        k = one.kraken
        k.in_game = s.kraken != KRAKEN_ABSENT
        k.in_deep = s.kraken == KRAKEN_IN_DEEP
        k.owner_seat = s.kraken if s.kraken >= 0 else -1
        k.treasures_under.extend(s.under[DEEP])
        for c in s.kraken_coins:
            _set_coin(k.coins.add(), c)
        if len(_kraken_wires) >= _CENTER_WIRES_KEPT:
            _kraken_wires.clear()
        wire = _kraken_wires[key] = one.SerializeToString()
    return wire


def _decision_wire(d: tuple[Any, ...]) -> bytes:
    key = d[:3]
    wire = _decision_wires.get(key)
    if wire is None:
        one = pb.Board()
        one.decision.MergeFrom(
            pb.Decision(kind=A.DECISION_NAMES.get(d[0], str(d[0])), seat=d[1], source_card=d[2])
        )
        if len(_decision_wires) >= _CENTER_WIRES_KEPT:
            _decision_wires.clear()
        wire = _decision_wires[key] = one.SerializeToString()
    return wire


def _fill_board(b: pb.Board, s: State, viewer: int) -> None:
    # Fields set one by one, repeated ones only when not empty: a third of the cost of
    # keyword arguments (a view is built for every answer); scalars only when not 0 (700
    # instructions a field set: 0 is what an unset field reads).
    b.turn = s.turn
    if s.active:
        b.active_seat = s.active
    if s.first:
        b.first_seat = s.first
    if s.runes:
        b.runes = s.runes
    if s.power:
        b.power = s.power
    add_seat, coins, known = b.seats.add, s.coins, s.known
    for q in range(s.n):
        m = add_seat()
        m.seat = q
        hand, discard, deck = s.hands[q], s.discards[q], s.decks[q]
        if hand:
            if q == viewer:
                m.hand.extend(hand)
            m.hand_count = len(hand)
            if known[q]:
                m.hand_known.extend(known[q])
        if deck:
            m.deck_count = len(deck)
        if discard:
            m.discard_count = len(discard)
            m.discard.extend(discard)
        if s.constructs[q]:
            m.constructs.extend(s.constructs[q])
        if s.ongoing[q]:
            m.ongoing.extend(s.ongoing[q])
        if s.treasures[q]:
            m.treasures.extend(s.treasures[q])
        if s.played[q]:
            m.played.extend(s.played[q])
        if s.crew[q]:
            m.crew = s.crew[q]
        if s.tokens[q]:
            m.honor_tokens = s.tokens[q]
        if s.ship[q]:
            m.ship_space = s.ship[q]
        if coins[q]:
            m.MergeFromString(b"".join([_SEAT_COINS[c] for c in coins[q]]))
    b.MergeFromString(_center_wire(s.center, s.under) + _kraken_wire(s))
    b.ghost_pirate_space = s.ghost
    if s.board_coin >= 0:
        b.MergeFromString(_BOARD_COIN[s.board_coin])
        b.board_coin_space = (s.board_coin & (COIN_DOWN - 1)) // 6
    else:
        b.board_coin_space = -1
    if s.pool:
        b.honor_pool = s.pool
    if s.ending:
        b.final_round = s.ending
    if s.void:
        b.the_void.extend(s.void)
    if s.piles[PILE_MYSTIC]:
        b.mystic_pile = s.piles[PILE_MYSTIC]
    if s.piles[PILE_HEAVY]:
        b.heavy_infantry_pile = s.piles[PILE_HEAVY]
    if s.center_deck:
        b.center_deck_count = len(s.center_deck)
    if s.bag:
        b.treasure_bag_count = len(s.bag)
    d = s.decision
    if d is not None and not s.over:
        b.MergeFromString(_decision_wire(d))


def _seat_kind(s: Seat) -> pb.SeatInfo.Kind:
    return pb.SeatInfo.AI if s.kind == AI else pb.SeatInfo.HUMAN


def _add_seat_info(out: Any, meta: GameMeta, fallbacks: Fallbacks | None = None) -> None:
    add = out.add
    for i, s in enumerate(meta.seats):
        info = add(
            seat=i,
            kind=_seat_kind(s),
            name=s.name,
            bot_name=s.bot.name if s.bot is not None else "",
            difficulty=difficulty_of(s.bot) if s.bot is not None else "",
        )
        f = fallbacks.get(i) if fallbacks else None
        if f is not None:
            info.fallback_moves = f.count
            info.last_fallback_reason = f.reason
            info.last_fallback_version = f.version


def _seat_info_wire(meta: GameMeta, fallbacks: Fallbacks | None = None) -> bytes:
    """A view's seat info as wire bytes (elements of GameView.seat_info), made once per game's
    metadata: parsed into each view for a tenth of the cost of adding them (some 20,000
    instructions for two seats: 3,700 a message added, 700 a field set). With AI seats'
    fallback moves (rare: a failing bot), made for each view."""
    if fallbacks:
        v = pb.GameView()
        _add_seat_info(v.seat_info, meta, fallbacks)
        return v.SerializeToString()
    raw: bytes | None = meta.derived.get("seat_info")
    if raw is None:
        v = pb.GameView()
        _add_seat_info(v.seat_info, meta)
        raw = meta.derived["seat_info"] = v.SerializeToString()
    return raw


def seat_info(meta: GameMeta, fallbacks: Fallbacks | None = None) -> list[pb.SeatInfo]:
    v = pb.GameView()
    _add_seat_info(v.seat_info, meta, fallbacks)
    return list(v.seat_info)


def scores(s: State) -> list[pb.Score]:
    out = []
    for q in range(s.n):
        b = rules.score_breakdown(s, q)
        out.append(
            pb.Score(
                seat=q,
                cards=b["cards"],
                tokens=b["tokens"],
                treasure=b["treasure"],
                coins=b["coins"],
                card_text=b["card_text"],
                total=b["total"],
            )
        )
    return out


def fill_game_view(
    v: pb.GameView,
    game_id: str,
    version: int,
    s: State,
    meta: GameMeta,
    seat: int,
    legal: Sequence[int] | None = None,
    fallbacks: Fallbacks | None = None,
) -> None:
    """Fill the empty view ``v`` (e.g. a response's field: no copy) with what ``seat`` sees
    (``legal``: as for ``add_legal_actions``; ``fallbacks``: the AI seats', for their seat
    info)."""
    v.game_id = game_id
    v.version = version
    v.seat = seat
    v.to_move = s.to_move()
    v.over = s.over
    add_legal_actions(v.legal_actions, s, seat, legal)
    _fill_board(v.board, s, seat)
    v.MergeFromString(_seat_info_wire(meta, fallbacks))
    v.sets = meta.sets
    v.players = s.n
    v.winner = rules.winner(s) if s.over else -1
    v.catalog_fingerprint = s.T.catalog.fingerprint
    v.rules_view = view_bytes(s, seat)
    if s.over:
        v.scores.extend(scores(s))
    if meta.origin is not None:
        fill_origin(v.practice, meta)


def fill_origin(out: pb.PracticeOrigin, meta: GameMeta) -> None:
    """Where a practice game started (``meta.origin``)."""
    o = meta.origin
    if o is not None:
        out.game_id, out.version, out.seat, out.turn = o.game_id, o.version, o.seat, o.turn


def game_view(
    game_id: str,
    version: int,
    s: State,
    meta: GameMeta,
    seat: int,
    fallbacks: Fallbacks | None = None,
) -> pb.GameView:
    v = pb.GameView()
    fill_game_view(v, game_id, version, s, meta, seat, None, fallbacks)
    return v


def fill_light_view(
    v: pb.GameView,
    game_id: str,
    version: int,
    s: State,
    seat: int,
    legal: Sequence[int] | None = None,
) -> None:
    """The view without board, seat info or rules view: what a client needs to act next."""
    v.game_id = game_id
    v.version = version
    v.seat = seat
    v.to_move = s.to_move()
    v.over = s.over
    add_legal_actions(v.legal_actions, s, seat, legal)
    v.players = s.n
    v.winner = rules.winner(s) if s.over else -1
    if s.over:
        v.scores.extend(scores(s))


_json = json.JSONEncoder(separators=(",", ":")).encode  # built once, unlike json.dumps(...)
_json_str = json.encoder.encode_basestring_ascii  # what that encoder does to a str


def _event_json(e: tuple[Any, ...]) -> str:
    """``json.dumps(e, separators=(",", ":"))``. Events are tuples of ints and strings: those
    are written directly, a third of the encoder's cost; anything else goes to the encoder."""
    parts = []
    for x in e:
        t = type(x)
        if t is int:
            parts.append(str(x))
        elif t is str:
            parts.append(_json_str(x))
        else:
            return _json(e)
    return "[" + ",".join(parts) + "]"


def _add_events(out: Any, s: State, evs: Sequence[tuple[Any, ...]]) -> None:
    add, describe = out.add, rules.describe_event
    for e in evs:
        m = add()
        m.kind = str(e[0])
        m.text = describe(s, e)
        m.data = _event_json(e)


# An event's message depends on the event and the card names alone (describe_event reads
# nothing else of the state): kept as wire bytes (an element of GameUpdate.events), by catalog
# and event, and parsed into each update with the others in one call. Building each was most
# of an update's cost (3,700 instructions a message added, 700 a field set); events repeat
# (the same card played, the same coin gained). Events hold ints and strings only (tests/
# service/test_convert.py checks), so equal keys are equal events (True == 1 would not be).
_event_wires: dict[str, dict[tuple[Any, ...], bytes]] = {}
_EVENT_WIRES_KEPT = 1 << 15


def _fill_events(u: pb.GameUpdate, s: State, evs: Sequence[tuple[Any, ...]]) -> None:
    """``_add_events(u.events, s, evs)``."""
    if not evs:
        return
    fingerprint = s.T.catalog.fingerprint
    kept = _event_wires.get(fingerprint)
    if kept is None or len(kept) >= _EVENT_WIRES_KEPT:
        kept = _event_wires[fingerprint] = {}  # (one step: safe beside threads that read)
    parts = []
    try:
        for e in evs:
            wire = kept.get(e)
            if wire is None:
                one = pb.GameUpdate()
                _add_events(one.events, s, (e,))
                wire = kept[e] = one.SerializeToString()
            parts.append(wire)
    except TypeError:  # an event holding a list (unhashable): built in place
        _add_events(u.events, s, evs)
        return
    u.MergeFromString(b"".join(parts))


def fill_update(
    u: pb.GameUpdate,
    game_id: str,
    version: int,
    seat: int,
    action: int,
    description: str,
    s: State,
    evs: Sequence[tuple[Any, ...]],
) -> None:
    """Fill the empty update ``u`` (e.g. a response's field: no copy)."""
    u.game_id = game_id
    u.version = version
    u.seat = seat
    u.action = action
    u.action_kind = A.KIND_NAMES.get(action >> 16, "") if version > 1 else ""
    u.description = description
    _fill_events(u, s, evs)
    u.to_move = s.to_move()
    u.over = s.over
    u.time_unix_ms = int(time.time() * 1000)


def update(
    game_id: str,
    version: int,
    seat: int,
    action: int,
    description: str,
    s: State,
    evs: Sequence[tuple[Any, ...]],
) -> pb.GameUpdate:
    u = pb.GameUpdate()
    fill_update(u, game_id, version, seat, action, description, s, evs)
    return u


@lru_cache(maxsize=1)
def card_catalog() -> epb.ListCardsResponse:
    cat = default_tables().catalog
    return epb.ListCardsResponse(
        catalog_fingerprint=cat.fingerprint,
        cards=[
            pb.Card(
                id=c.id,
                key=c.key,
                name=c.name,
                type=L.TYPE_NAMES[c.type],
                faction=L.FACTION_NAMES[c.faction],
                cost=c.cost,
                honor=c.honor,
                text=c.text,
                set=c.set,
                copies=c.copies,
            )
            for c in cat.cards
        ],
    )

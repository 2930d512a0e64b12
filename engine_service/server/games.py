"""The engine's use cases, free of gRPC: create, view, submit, watch, list, replay, delete.

Stateless: every call loads what it needs from the store, applies the rules and writes back
only by compare-and-set on the version and commit id it loaded, so any number of replicas can
share one store and none ever builds on a state the store does not hold. A submit loads
through the replica's cache (``fresh=False``): what it refuses on a cached record it judges
again after a fresh load, so every answer is the one a fresh read gives.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from asyncio import FIRST_COMPLETED
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from google.protobuf.message import DecodeError

from engine_service import rules, telemetry
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.rules import actions as A
from engine_service.server import (
    clocks,
    convert,
    errors,
    fallbacks,
    history,
    seats,
    tokens,
    validate,
)
from engine_service.server.bots import for_difficulty
from engine_service.server.dispatch import Dispatcher, trace_attributes
from engine_service.server.errors import Code, ServiceError, invalid, not_found
from engine_service.server.ids import new_game_id
from engine_service.server.limits import LogLimiter
from engine_service.server.meta import AI, GameMeta, MetaCache, Origin, Seat, UnreadableMeta
from engine_service.server.metrics import Metrics
from engine_service.server.presence import Presence
from engine_service.server.state_cache import StateCache
from engine_service.server.sweeper import encode_payload
from engine_service.server.watch import WatchHub
from engine_service.store import (
    Commit,
    CommitStatus,
    GameRecord,
    IdempotentRecord,
    NewGame,
    Store,
    UnreadableData,
    chain_ids,
    chained_commit_id,
    first_commit_id,
)

log = logging.getLogger("ascension.engine.games")
TABLE_EVENT_TRIES = 5  # a resignation or a hand-over retried on the newer version
unreadable_log = LogLimiter(log)


def require_turn(s: rules.State, seat: int, why: str = "") -> None:
    """Refuse (GAME_OVER, NOT_YOUR_TURN naming who is to move and for what) unless ``seat`` is
    to move in ``s``; ``why`` is added to the message."""
    if s.over:
        raise errors.game_over()
    to_move = s.to_move()
    if seat != to_move:
        d = s.decision
        what = f"to answer {A.DECISION_NAMES[d[0]]}" if d is not None else "to play"
        raise errors.not_your_turn(to_move, what + why)


class Games:
    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        metrics: Metrics,
        engine_address: str,
        hub: WatchHub | None = None,
        ai_credentials: tokens.AiCredentials | None = None,
    ) -> None:
        self.store = store
        # AI seats act with per-move credentials minted when a move is dispatched (the
        # dispatcher is a tokens.CredentialedDispatcher with the same credentials)
        self.ai_credentials = ai_credentials or tokens.AiCredentials.generate()
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.engine_address = engine_address
        self.meta = MetaCache()
        self.states = StateCache()
        self.hub = hub or WatchHub(store, metrics)
        self.losses = self.hub.losses
        self.presence = Presence(store)

    # ---- helpers ------------------------------------------------------------------------

    async def _load(self, game_id: str, fresh: bool = True) -> tuple[GameRecord, GameMeta]:
        rec = await self.store.load(game_id, fresh=fresh)
        if rec is None:
            raise await self.losses.missing(game_id)  # NOT_FOUND, or GAME_LOST
        return rec, self._meta(rec)

    def _meta(self, rec: GameRecord) -> GameMeta:
        """The game's metadata, with its seats as they are now (some may have been handed
        over: the table record)."""
        meta = self._created(rec)
        if not rec.state.endswith(fallbacks.MARK):  # (no record: no seat handed over)
            return meta
        return seats.effective(meta, self._table(rec))

    def _created(self, rec: GameRecord) -> GameMeta:
        """The metadata the game was created with."""
        try:
            return self.meta.get(rec.game_id, rec.meta)
        except UnreadableMeta as e:
            raise errors.unreadable_game(rec.game_id, f"its metadata does not decode ({e})") from e

    def _state(self, rec: GameRecord) -> rules.State:
        """The record's state, shared with the cache: clone it before changing it."""
        s = self.states.get(rec.game_id, rec.commit_id)
        if s is not None:
            return s
        try:
            s = rules.deserialize(fallbacks.split(rec.state)[0])
        except (rules.SerializationError, fallbacks.DamagedRecord) as e:
            raise errors.unreadable_game(rec.game_id, str(e)) from e
        self.states.put(rec.game_id, rec.commit_id, s)
        return s

    @staticmethod
    def _fallbacks(rec: GameRecord) -> fallbacks.Fallbacks:
        """The AI seats' fallback moves, stored with the record's state."""
        return Games._table(rec).fallbacks

    @staticmethod
    def _table(rec: GameRecord) -> fallbacks.Table:
        """The table record stored with the record's state: fallback moves, clocks, seats
        resigned and handed over."""
        try:
            return fallbacks.split_table(rec.state)[1]
        except fallbacks.DamagedRecord as e:
            raise errors.unreadable_game(rec.game_id, str(e)) from e

    def _dress(
        self, v: pb.GameView, meta: GameMeta, table: fallbacks.Table, s: rules.State
    ) -> None:
        """What a view holds beyond the rules' state: the clocks and the seats that resigned
        (the game over, and who won, when resignations decide it)."""
        if meta.clock is not None and table.clock is not None:
            clocks.fill(v.clock, meta.clock, table.clock)
        if not table.resigned:
            return
        for q in table.resigned:
            if q < len(v.seat_info):
                v.seat_info[q].resigned = True
        if not s.over and seats.ended(meta, table.resigned):
            v.over, v.to_move = True, -1
            del v.legal_actions[:]
            v.board.ClearField("decision")
            v.scores.extend(convert.scores(s))
        if v.over:
            v.winner = seats.winner(s, meta, table.resigned)

    @staticmethod
    def _may_act(token: str, meta: GameMeta, seat: int, run: clocks.ClockRun | None) -> bool:
        """Who plays ``seat`` now: while it is an AI seat, only its worker, with the move
        credential the engine sent it (a stored token, seat's or admin's, never: whoever
        created the game holds them); a human seat whose time ran out, only the engine (a
        credential it minted: its forced move, or its bot's); otherwise its seat token.
        True when the move is played for a human seat whose time ran out."""
        ai_seat = meta.is_ai(seat)
        ran_out = (
            not ai_seat and run is not None and run.ran_out(seat, int(time.time() * 1000))
        )
        if tokens.is_ai_credential(token):
            if not ai_seat and not ran_out:
                raise errors.unknown_token(
                    f"an AI move credential plays an AI seat only, and seat {seat} is not one"
                )
        elif ai_seat:
            raise errors.ai_seat_played_by_worker(seat)
        elif ran_out:
            raise errors.time_ran_out(seat)
        return ran_out

    def _seat(
        self, token: str, meta: GameMeta, game_id: str, version: int, *, required: bool
    ) -> int:
        """The token's seat at ``version``; SPECTATOR for no token where that is allowed (and
        for an AI move credential of another version: it acts only at its own)."""
        if not token:
            if required:
                raise errors.token_required()
            return rules.SPECTATOR
        if tokens.is_ai_credential(token):
            seat = self.ai_credentials.seat(token, game_id, version, acting=required)
            return rules.SPECTATOR if seat is None else seat
        seat = tokens.seat_of(token, meta.token_digests)
        if seat is None:
            raise errors.unknown_token()
        return seat

    def caller_of(self, game_id: str, token: str) -> str | None:
        """``game:<id>`` when ``token`` is a seat token (or an AI move credential) of that game
        whose metadata this replica holds: the identity a SubmitAction's rate limit counts
        (its seats share a bucket); None when that is not known without reading the store."""
        if not token or not game_id:
            return None
        if tokens.is_ai_credential(token):
            try:
                self.ai_credentials.grant(token, game_id)
            except ServiceError:
                return None
            return f"game:{game_id}"
        meta = self.meta.peek(game_id)
        if meta is None or tokens.seat_of(token, meta.token_digests) is None:
            return None
        return f"game:{game_id}"

    @staticmethod
    def _held(req: epb.SubmitActionRequest, meta: GameMeta, seat: int) -> tuple[int, ...]:
        """The seats of ``req.seat_tokens`` (the acting ``seat`` when its token is among them),
        each of which must be a seat token of this game; empty entries (CreateGame's for AI
        seats: ``seat_tokens`` passed back whole) are no token and skipped."""
        held = []
        for i, t in enumerate(req.seat_tokens):
            if not t:
                continue
            s = seat if t == req.token else tokens.seat_of(t, meta.token_digests)
            if s is None:
                raise errors.unknown_token(f"seat_tokens[{i}] does not match any seat of this game")
            held.append(s)
        return tuple(held)

    @staticmethod
    def _viewer(seat: int, held: tuple[int, ...], to_move: int) -> int:
        """Whose view answers a submit of ``seat``: the seat to move when the caller holds its
        token too (``held``), else the acting seat's."""
        return to_move if to_move != seat and to_move in held else seat

    def _ai_payload(
        self, game_id: str, meta: GameMeta, seat: int, version: int, now: float
    ) -> dict[str, Any]:
        bot = meta.seats[seat].bot
        if bot is None:  # a human seat whose time ran out, played by the clock's bot
            assert meta.clock is not None
            bot = for_difficulty(meta.clock.bot_difficulty, meta.seed ^ version)
        return {  # the dispatcher adds the move's credential ("token") as it sends it
            "game_id": game_id,
            "seat": seat,
            "version": version,
            "bot": bot.as_payload(),
            "engine_address": self.engine_address,
            "enqueued_at": now,
        }

    async def _dispatch(self, payload: dict[str, Any] | None) -> None:
        if payload is None:
            return
        try:
            with telemetry.new_trace("ascension.ai_move", trace_attributes(payload)):
                await self.dispatcher.dispatch(payload)
        except Exception:
            return  # logged by the dispatcher; the sweeper sends it again
        self.metrics.ai_enqueued.labels("turn").inc()

    # ---- use cases ----------------------------------------------------------------------

    async def create(self, req: epb.CreateGameRequest) -> epb.CreateGameResponse:
        sets = validate.sets(req.sets)
        seats = validate.seats(req)
        seed = validate.seed(req)
        clock = validate.clock(req, seats)
        if seed is None:
            seed = secrets.randbits(63)
        try:
            config = rules.GameConfig(sets=sets, players=len(seats), seed=seed)
        except rules.ConfigError as e:
            raise invalid("seats", str(e)) from e
        state = rules.new_game(config)
        game_id, meta, seat_tokens, admin_token, run = await self._open(
            state, GameMeta(sets, len(seats), seed, seats, (), "", 0, clock)
        )
        resp = epb.CreateGameResponse(
            game_id=game_id, seat_tokens=seat_tokens, admin_token=admin_token
        )
        convert.fill_game_view(resp.view, game_id, 1, state, meta, rules.SPECTATOR)
        resp.view.commit_id = first_commit_id(game_id)
        self._fill_clock(resp.view.clock, meta, run)
        return resp

    async def practice(
        self, start: rules.State, seed: int, seats: tuple[Seat, ...], origin: Origin, sets: str
    ) -> epb.PracticeFromHereResponse:
        """A new game from ``start`` (a practice game: PracticeFromHere, practice.py), the
        origin's seat human and the other seats ``seats``' bots; no clocks."""
        meta = GameMeta(sets, len(seats), seed, seats, (), "", 0, None,
                        rules.serialize(start), origin)  # fmt: skip
        game_id, meta, seat_tokens, admin_token, _ = await self._open(start, meta)
        resp = epb.PracticeFromHereResponse(
            game_id=game_id,
            seat_token=seat_tokens[origin.seat],
            admin_token=admin_token,
            seat=origin.seat,
        )
        convert.fill_game_view(resp.view, game_id, 1, start, meta, origin.seat)
        resp.view.commit_id = first_commit_id(game_id)
        return resp

    async def _open(
        self, state: rules.State, draft: GameMeta
    ) -> tuple[str, GameMeta, list[str], str, clocks.ClockRun | None]:
        """Store a new game at ``state`` (version 1) whose metadata is ``draft`` with tokens
        and the time filled in: (game id, metadata, seat tokens, admin token, its clocks)."""
        now = time.time()
        now_ms = int(now * 1000)
        game_id = new_game_id(now_ms)
        seats = draft.seats
        # No token for an AI seat: its worker plays it with a credential per move (tokens.py).
        seat_tokens = ["" if s.kind == AI else tokens.new_token() for s in seats]
        admin_token = tokens.new_token()
        meta = replace(
            draft,
            token_digests=tuple(tokens.digest(t) if t else "" for t in seat_tokens),
            admin_digest=tokens.digest(admin_token),
            created_ms=now_ms,
        )
        commit_id = first_commit_id(game_id)
        first = history.created(game_id, state)
        first.commit_id = commit_id
        clock = meta.clock
        run = None if clock is None else clocks.start(clock, state, meta.humans(), now_ms)
        self._fill_clock(first.clock, meta, run)
        to_move = state.to_move()
        payload = self._ai_payload(game_id, meta, to_move, 1, now) if meta.is_ai(to_move) else None
        await self.store.create(
            NewGame(
                game_id=game_id,
                commit_id=commit_id,
                state=fallbacks.join_table(rules.serialize(state), fallbacks.Table(clock=run)),
                meta=meta.encode(),
                update=first.SerializeToString(),
                to_move=to_move,
                created_ms=now_ms,
                ai_pending=None if payload is None else encode_payload(payload),
                enqueued_at=now,
                clock_deadline_ms=0 if run is None else run.deadline_ms(),
            )
        )
        self.states.put(game_id, commit_id, state)
        self.metrics.games_created.inc()
        origin = "" if meta.origin is None else f" practice of {meta.origin.game_id}"
        log.info("game %s created: sets=%s seats=%s%s", game_id, meta.sets,
                 ",".join(s.kind for s in seats), origin)  # fmt: skip
        await self._dispatch(payload)
        return game_id, meta, seat_tokens, admin_token, run

    @staticmethod
    def _fill_clock(out: pb.ClockState, meta: GameMeta, run: clocks.ClockRun | None) -> None:
        if meta.clock is not None and run is not None:
            clocks.fill(out, meta.clock, run)

    async def view(self, game_id: str, token: str) -> pb.GameView:
        validate.game_id(game_id)
        validate.token(token)
        rec, meta = await self._load(game_id)
        seat = self._seat(token, meta, game_id, rec.version, required=False)
        state = self._state(rec)
        table = self._table(rec)
        v = convert.game_view(game_id, rec.version, state, meta, seat, table.fallbacks)
        v.commit_id = rec.commit_id
        self._dress(v, meta, table, state)
        for i in await self.presence.present(game_id):
            if 0 <= i < len(v.seat_info) and not meta.is_ai(i):
                v.seat_info[i].present = True
        return v

    async def legal_actions(self, game_id: str, token: str) -> epb.ListLegalActionsResponse:
        validate.game_id(game_id)
        validate.token(token)
        rec, meta = await self._load(game_id)
        seat = self._seat(token, meta, game_id, rec.version, required=False)
        s = self._state(rec)
        resp = epb.ListLegalActionsResponse(
            game_id=game_id, version=rec.version, seat=seat, to_move=s.to_move()
        )
        legal = self.states.legal_actions(game_id, rec.commit_id, s)
        convert.add_legal_actions(resp.actions, s, seat, legal)
        return resp

    async def position(self, game_id: str, token: str) -> tuple[int, rules.State, int]:
        """(version, state, seat) of the game for a seat's token, which is required; the state
        is shared with the cache: never change it (AnalyzePosition reads it)."""
        rec, meta = await self._load(game_id)
        seat = self._seat(token, meta, game_id, rec.version, required=True)
        return rec.version, self._state(rec), seat

    async def _replayed(
        self,
        game_id: str,
        seat: int,
        fingerprint: bytes,
        prior: IdempotentRecord,
        held: tuple[int, ...] = (),
    ) -> epb.SubmitActionResponse:
        if prior.fingerprint != fingerprint:
            raise invalid(
                "idempotency_key",
                "was already used for a different request (seat, version or action)",
                reason="IDEMPOTENCY_KEY_REUSED",
            )
        first = await self.store.update_at(game_id, prior.version)
        rec, meta = await self._load(game_id)
        resp = epb.SubmitActionResponse(replayed=True)
        try:
            if first is not None:
                resp.update.ParseFromString(first.update)
        except DecodeError:  # damaged in the store: answered as if it had left the window
            log.warning("game %s: its update %d does not parse", game_id, prior.version)
            first = None
        if first is None:  # left the window meanwhile: the version is all that is known of it
            resp.update.Clear()
            resp.update.game_id, resp.update.version = game_id, prior.version
        state = self._state(rec)
        viewer = self._viewer(seat, held, state.to_move())
        table = self._table(rec)
        convert.fill_game_view(
            resp.view, game_id, rec.version, state, meta, viewer, None, table.fallbacks
        )
        resp.view.commit_id = rec.commit_id
        self._dress(resp.view, meta, table, state)
        return resp

    @staticmethod
    def _aborted(current: int, expected: int, commit_id: str = "") -> ServiceError:
        return errors.version_mismatch(current, expected, commit_id)

    async def _commit_at(self, rec: GameRecord, version: int) -> str | None:
        """The commit id of ``version`` (below the record's) in the store's history: from its
        window, else along its replay log; None if neither tells."""
        kept = await self.store.update_at(rec.game_id, version)
        if kept is not None and kept.commit_id:
            return kept.commit_id
        try:
            entries = await self.store.action_log(rec.game_id)
        except UnreadableData:
            return None
        if len(entries) < rec.version - 1:
            return None
        ids = chain_ids(rec.game_id, entries[: rec.version - 1])
        return ids[version - 1] if ids[-1] == rec.commit_id else None

    async def _refusal(self, req: epb.SubmitActionRequest, rec: GameRecord) -> ServiceError:
        """Why a submit naming another version (or commit id) than the store's is refused: the
        game went on (VERSION_MISMATCH), or the store lost what the caller decided on
        (DATA_LOSS, naming the versions): a version above the store's, or a commit id that is
        not the store's at that version."""
        expected, named = req.expected_version, req.expected_commit_id
        lost = expected > rec.version or (expected == rec.version and named != rec.commit_id)
        if not lost and named:  # behind: on the store's history, or on a lost one?
            lost = await self._commit_at(rec, expected) not in (named, None)
        if lost:
            return await self.losses.data_loss(
                req.game_id, expected, named, rec.version, rec.commit_id, watching=False
            )
        return self._aborted(rec.version, expected, rec.commit_id)

    async def submit(self, req: epb.SubmitActionRequest) -> epb.SubmitActionResponse:
        validate.submit(req)
        if not req.token:
            raise errors.token_required()
        rec, meta = await self._load(req.game_id, fresh=False)
        try:
            return await self._submit(req, rec, meta, fresh=False)
        except ServiceError:
            pass  # judged on what may be a cached record: judge again on a fresh read
        rec, meta = await self._load(req.game_id)
        return await self._submit(req, rec, meta, fresh=True)

    async def _submit(
        self, req: epb.SubmitActionRequest, rec: GameRecord, meta: GameMeta, *, fresh: bool
    ) -> epb.SubmitActionResponse:
        seat = self._seat(req.token, meta, req.game_id, req.expected_version, required=True)
        table = self._table(rec)
        timed_out = self._may_act(req.token, meta, seat, table.clock)
        if req.fallback_reason and not meta.is_ai(seat) and not timed_out:
            raise invalid(
                "fallback_reason",
                f"seat {seat} is not an AI seat: only the workers playing an AI seat report "
                "fallback moves",
            )
        held = self._held(req, meta, seat) if req.seat_tokens else ()
        stale = rec.version != req.expected_version
        if stale or (req.expected_commit_id and req.expected_commit_id != rec.commit_id):
            if not fresh:  # (a cached record may be behind the store: read it first)
                raise self._aborted(rec.version, req.expected_version)
            if req.idempotency_key:  # a retry of a request that was applied: answer as then
                prior = await self.store.idempotent(req.game_id, req.idempotency_key)
                if prior is not None:
                    return await self._replayed(
                        req.game_id, seat, self._fingerprint(seat, req), prior, held
                    )
            raise await self._refusal(req, rec)
        if table.resigned:
            if seats.ended(meta, table.resigned):
                raise errors.game_over()
            if seat in table.resigned:
                raise errors.seat_resigned(seat)
        state = self._state(rec)
        legal = self.states.legal_actions(rec.game_id, rec.commit_id, state)
        s = self._playable(state, seat, req.action, legal)
        timeout = self._timeout_reason(meta, req.fallback_reason) if timed_out else ""
        return await self._apply(req, rec, meta, seat, s, held, len(legal), timeout)

    @staticmethod
    def _timeout_reason(meta: GameMeta, fallback_reason: str = "") -> str:
        """What a move played for a seat whose time ran out is marked with (who, why)."""
        assert meta.clock is not None
        if meta.clock.policy == clocks.BOT:
            why = f"time ran out: played by the {meta.clock.bot_difficulty} bot"
            return f"{why} ({fallback_reason})" if fallback_reason else why
        return "time ran out: the engine played the seat's default"

    @staticmethod
    def _fingerprint(seat: int, req: epb.SubmitActionRequest) -> bytes:
        return f"{seat}:{req.expected_version}:{req.action}".encode()

    @staticmethod
    def _playable(state: rules.State, seat: int, action: int, legal: list[int]) -> rules.State:
        """A copy of ``state`` (which stays as it was: it may be shared with the cache) on which
        ``seat`` may play ``action`` (``legal``: the state's legal actions); else the error to
        answer with."""
        s = state.clone()
        require_turn(s, seat)
        if action not in legal:
            try:
                rules.apply(s, action)  # raises with the rules' reason, changing nothing
            except rules.MalformedActionError as e:
                raise invalid("action", str(e)) from e
            except rules.RulesError as e:
                raise errors.illegal_action(str(e)) from e
            raise ServiceError(
                Code.INTERNAL, f"action {action} is not listed as legal but the rules accepted it"
            )
        return s

    async def _apply(
        self,
        req: epb.SubmitActionRequest,
        rec: GameRecord,
        meta: GameMeta,
        seat: int,
        s: rules.State,
        held: tuple[int, ...],
        choices: int,
        timeout: str = "",
    ) -> epb.SubmitActionResponse:
        """Play ``req.action`` on ``s`` (the record's state, checked playable) and write the
        result if the game is still at the record's version and commit id; answer with the
        view of ``seat``, or of the seat to move if it is ``held`` too (``choices``: how many
        legal actions the seat had; ``timeout``: why the move was played for a seat whose
        time ran out)."""
        game_id, key, action = req.game_id, req.idempotency_key, req.action
        fingerprint = self._fingerprint(seat, req)
        version = rec.version + 1
        commit_id = chained_commit_id(rec.commit_id, seat, action)
        resp = epb.SubmitActionResponse()  # filled in place: its fields are not copied
        upd = resp.update
        history.played(upd, game_id, version, seat, action, s, choices)
        upd.commit_id = commit_id
        upd.parent_commit_id = rec.commit_id
        now = time.time()
        now_ms = int(now * 1000)
        nxt = s.to_move()
        payload = self._ai_payload(game_id, meta, nxt, version, now) if meta.is_ai(nxt) else None
        table = self._table(rec)
        if req.fallback_reason and not timeout:
            table = replace(
                table, fallbacks=fallbacks.add(table.fallbacks, seat, version, req.fallback_reason)
            )
        upd.timeout = timeout
        deadline = 0
        run = table.clock
        if meta.clock is not None and run is not None:
            out_of_time = bool(timeout) and seat not in table.resigned
            run = clocks.advance(
                meta.clock, run, s, meta.humans(), now_ms, version, seat, timed_out=out_of_time
            )
            table = replace(table, clock=run)
            if run.ran_out(nxt, now_ms) and meta.clock.policy == clocks.BOT:
                # out of time for the rest of its turn: the bot goes on with it
                payload = self._ai_payload(game_id, meta, nxt, version, now)
            else:
                deadline = run.deadline_ms()
            clocks.fill(upd.clock, meta.clock, run)
        if nxt in table.resigned:  # (out: the sweeper plays its default at once)
            payload, deadline = None, now_ms
        res = await self.store.commit(
            Commit(
                game_id=game_id,
                expected_version=rec.version,
                expected_commit_id=rec.commit_id,
                commit_id=commit_id,
                state=fallbacks.join_table(rules.serialize(s), table),
                update=upd.SerializeToString(),
                seat=seat,
                action=action,
                idem_key=key,
                fingerprint=fingerprint,
                over=s.over,
                to_move=nxt,
                updated_ms=int(now * 1000),
                ai_pending=None if payload is None else encode_payload(payload),
                enqueued_at=now,
                clock_deadline_ms=deadline,
            )
        )
        if res.status is CommitStatus.MISSING:
            raise await self.losses.missing(game_id)
        if res.status is CommitStatus.DUPLICATE:
            assert res.prior is not None
            return await self._replayed(game_id, seat, fingerprint, res.prior, held)
        if res.status is CommitStatus.CONFLICT:
            self.metrics.cas_conflicts.inc()
            raise self._aborted(res.version, req.expected_version, res.commit_id)
        self.states.put(game_id, commit_id, s)
        legal = self.states.legal_actions(game_id, commit_id, s)  # (kept: the next submit's)
        self.metrics.action_applied(A.KIND_NAMES[action >> 16])
        if s.over:
            self.metrics.games_finished.inc()
            log.info("game %s over at version %d: scores %s", game_id, version, rules.scores(s))
        await self._dispatch(payload)
        viewer = self._viewer(seat, held, nxt)
        if req.view_detail == epb.VIEW_DETAIL_LEGAL_ACTIONS:
            convert.fill_light_view(resp.view, game_id, version, s, viewer, legal)
        else:
            convert.fill_game_view(
                resp.view, game_id, version, s, meta, viewer, legal, table.fallbacks
            )
        self._dress(resp.view, meta, table, s)
        resp.view.commit_id = commit_id
        return resp

    async def resign(self, req: epb.ResignRequest) -> epb.ResignResponse:
        """The token's seat resigns: it is out (seats.py); the game ends when resignations
        leave fewer than two seats, or no human seat, in play."""
        validate.game_id(req.game_id)
        validate.token(req.token)
        if not req.token:
            raise errors.token_required()
        if tokens.is_ai_credential(req.token):
            raise errors.unknown_token("a seat resigns with its own token")
        for _ in range(TABLE_EVENT_TRIES):
            rec, meta = await self._load(req.game_id)
            seat = self._seat(req.token, meta, req.game_id, rec.version, required=True)
            table = self._table(rec)
            if rec.over or seats.ended(meta, table.resigned):
                raise errors.game_over()
            if seat in table.resigned:
                raise errors.seat_resigned(seat)
            after = replace(table, resigned=(*table.resigned, seat))
            try:
                upd, view = await self._table_event(rec, meta, after, meta, seat, seats.RESIGN)
            except ServiceError as e:
                if e.code is Code.ABORTED:
                    continue  # a move came in between: resign on the new version
                raise
            log.info("game %s: seat %d resigned at version %d", req.game_id, seat, upd.version)
            return epb.ResignResponse(update=upd, view=view)
        raise self._aborted(rec.version, rec.version)

    async def hand_over(
        self, req: epb.HandOverSeatRequest, *, operator: bool = False
    ) -> epb.HandOverSeatResponse:
        """Hand ``req.seat`` to a bot or to a new player (the admin token, or an operator key,
        checked by the caller): the seat's old token stops working with this version."""
        validate.game_id(req.game_id)
        validate.token(req.admin_token, "admin_token")
        for _ in range(TABLE_EVENT_TRIES):
            rec, meta = await self._load(req.game_id)
            if not operator:
                self._check_admin(req.admin_token, meta)
            if not 0 <= req.seat < meta.players:
                raise invalid("seat", f"must be 0..{meta.players - 1}, got {req.seat}")
            to = validate.seat(req.to, "to", meta.seats[req.seat].name)
            table = self._table(rec)
            if rec.over or seats.ended(meta, table.resigned):
                raise errors.game_over()
            if req.seat in table.resigned:
                raise errors.seat_resigned(req.seat)
            token = "" if to.kind == AI else tokens.new_token()
            change = fallbacks.SeatChange(
                to.kind,
                tokens.digest(token) if token else "",
                None if to.bot is None else to.bot.as_payload(),
                to.name,
            )
            after = seats.handed(table, req.seat, change)
            if to.kind != AI and meta.clock is not None and table.clock is not None:
                after = replace(after, clock=clocks.seated(meta.clock, table.clock, req.seat))
            meta_after = seats.effective(self._created(rec), after)
            action = seats.HAND_OVER | (1 if to.kind == AI else 0)
            try:
                upd, view = await self._table_event(
                    rec, meta, after, meta_after, req.seat, action, viewer=rules.SPECTATOR
                )
            except ServiceError as e:
                if e.code is Code.ABORTED:
                    continue
                raise
            log.info("game %s: seat %d handed to a %s", req.game_id, req.seat, to.kind)
            return epb.HandOverSeatResponse(seat_token=token, update=upd, view=view)
        raise self._aborted(rec.version, rec.version)

    async def _table_event(
        self,
        rec: GameRecord,
        meta: GameMeta,
        table: fallbacks.Table,
        meta_after: GameMeta,
        seat: int,
        action: int,
        viewer: int | None = None,
        timeout: str = "",
    ) -> tuple[pb.GameUpdate, pb.GameView]:
        """Write the table event ``action`` of ``seat`` as the version after ``rec``'s (no card
        moves), with ``table`` as the table record from then on (``meta_after``: the seats as
        it has them); the update and the view of ``viewer`` (the seat's by default)."""
        game_id = rec.game_id
        s = self._state(rec)  # (shared with the cache: read only, the rules' state is unchanged)
        version, now = rec.version + 1, time.time()
        now_ms = int(now * 1000)
        commit_id = chained_commit_id(rec.commit_id, seat, action)
        over = s.over or seats.ended(meta_after, table.resigned)
        upd = pb.GameUpdate()
        history.table_event(upd, game_id, version, seat, action, s, over)
        upd.commit_id, upd.parent_commit_id = commit_id, rec.commit_id
        upd.timeout = timeout
        nxt = -1 if over else s.to_move()
        payload = None
        if meta_after.is_ai(nxt):
            payload = self._ai_payload(game_id, meta_after, nxt, version, now)
        deadline = now_ms if nxt in table.resigned else 0
        run = table.clock
        if meta.clock is not None and run is not None:
            run = clocks.advance(meta.clock, run, s, meta_after.humans(), now_ms, version, -1,
                                 timed_out=bool(timeout))  # fmt: skip
            run = replace(run, seat=-1) if over or nxt in table.resigned else run
            table = replace(table, clock=run)
            deadline = deadline or run.deadline_ms()
            clocks.fill(upd.clock, meta.clock, run)
        res = await self.store.commit(
            Commit(
                game_id=game_id,
                expected_version=rec.version,
                expected_commit_id=rec.commit_id,
                commit_id=commit_id,
                state=fallbacks.join_table(rules.serialize(s), table),
                update=upd.SerializeToString(),
                seat=seat,
                action=action,
                idem_key="",
                fingerprint=b"",
                over=over,
                to_move=nxt,
                updated_ms=now_ms,
                ai_pending=None if payload is None else encode_payload(payload),
                enqueued_at=now,
                clock_deadline_ms=deadline,
            )
        )
        if res.status is CommitStatus.MISSING:
            raise await self.losses.missing(game_id)
        if res.status is not CommitStatus.OK:
            raise self._aborted(res.version, rec.version, res.commit_id)
        self.states.put(game_id, commit_id, s)
        if over and not s.over:
            self.metrics.games_finished.inc()
        await self._dispatch(payload)
        view = convert.game_view(
            game_id, version, s, meta_after, seat if viewer is None else viewer, table.fallbacks
        )
        view.commit_id = commit_id
        self._dress(view, meta_after, table, s)
        return upd, view

    def _check_admin(self, admin_token: str, meta: GameMeta) -> None:
        if not admin_token:
            raise errors.token_required("admin_token", "the admin token CreateGame returned")
        if not tokens.matches(admin_token, meta.admin_digest):
            if tokens.seat_of(admin_token, meta.token_digests) is not None:
                raise errors.refused(
                    Code.PERMISSION_DENIED,
                    "ADMIN_TOKEN_REQUIRED",
                    "a seat token cannot do this: use the admin token",
                )
            raise errors.unknown_token("admin_token does not match this game")

    async def time_out(self, game_id: str) -> int:
        """Play for the game's seat to move if its time ran out, or if it resigned (the sweeper
        calls it for each game whose deadline passed): what the game's policy says, its
        forced moves until its part of the turn is over or its bot's move, dispatched; a
        resigned seat's forced moves. Each forced move is a commit on the version read, and
        the bot's hand-over a compare-and-set on it too, so however many replicas try, it
        happens once. Returns how many moves were played or dispatched (0: the game moved on,
        or its time had not run out by this clock)."""
        done = 0
        while True:
            rec = await self.store.load(game_id)
            if rec is None or rec.over:  # (gone: its index entry left with it, or soon will)
                return done
            meta = self._meta(rec)
            table = self._table(rec)
            state = self._state(rec)
            seat, run, now = state.to_move(), table.clock, time.time()
            if seats.ended(meta, table.resigned):
                return done
            if seat in table.resigned:
                reason = "resigned: the engine played the seat's default"
            elif meta.clock is not None and run is not None and run.ran_out(seat, int(now * 1000)):
                reason = self._timeout_reason(meta)
                if meta.clock.policy == clocks.BOT:
                    return done + await self._hand_to_bot(rec, meta, seat, now)
                if meta.clock.policy == clocks.FORFEIT:
                    return done + await self._forfeit(rec, meta, table, seat)
            else:
                return done
            legal = self.states.legal_actions(game_id, rec.commit_id, state)
            action = clocks.forced_move(state, legal)
            req = epb.SubmitActionRequest(
                game_id=game_id,
                expected_version=rec.version,
                expected_commit_id=rec.commit_id,
                action=action,
                view_detail=epb.VIEW_DETAIL_LEGAL_ACTIONS,
            )
            s = self._playable(state, seat, action, legal)
            try:
                await self._apply(req, rec, meta, seat, s, (), len(legal), reason)
            except ServiceError as e:
                if e.code is Code.ABORTED:
                    return done  # another replica (or the player, in time) got there first
                raise
            first = run is not None and run.turn_left[seat] + run.bank[seat] > 0
            if seat not in table.resigned and first:
                self.metrics.clock_timeouts.labels(clocks.FORCED_MOVE).inc()
                log.info("game %s: seat %d's time ran out: its default is played", game_id, seat)
            done += 1

    async def _forfeit(
        self, rec: GameRecord, meta: GameMeta, table: fallbacks.Table, seat: int
    ) -> int:
        """``seat``, its time run out, resigns (the clock's forfeit policy); 1 if this replica
        wrote it (another may have first: a compare-and-set on the version read)."""
        after = replace(table, resigned=(*table.resigned, seat))
        why = "time ran out: the seat forfeits"
        try:
            await self._table_event(rec, meta, after, meta, seat, seats.RESIGN, timeout=why)
        except ServiceError as e:
            if e.code is Code.ABORTED:
                return 0
            raise
        self.metrics.clock_timeouts.labels(clocks.FORFEIT).inc()
        log.info("game %s: seat %d's time ran out: it forfeits", rec.game_id, seat)
        return 1

    async def _hand_to_bot(self, rec: GameRecord, meta: GameMeta, seat: int, now: float) -> int:
        """The clock's bot plays for ``seat``, its time run out: a pending AI move in place of
        the clock, if no other replica made it so first; 1 if this one did."""
        payload = self._ai_payload(rec.game_id, meta, seat, rec.version, now)
        claimed = await self.store.claim_clock_bot(
            rec.game_id, rec.version, rec.commit_id, encode_payload(payload), now
        )
        if not claimed:
            return 0
        self.metrics.clock_timeouts.labels(clocks.BOT).inc()
        log.info("game %s: seat %d's time ran out: its bot plays", rec.game_id, seat)
        await self._dispatch(payload)
        return 1

    async def watch(
        self,
        game_id: str,
        after_version: int,
        after_commit_id: str,
        peer: str,
        active: Callable[[], bool],
        token: str = "",
        with_presence: bool = False,
    ) -> AsyncIterator[bytes]:
        """Serialized updates (``GameUpdate``) after ``after_version`` (see ``WatchHub``), and
        ``with_presence``, an update of who is here (``presence_only``) at the start and at
        each change; with a seat ``token``, that seat is here while the stream is open."""
        validate.game_id(game_id)
        validate.token(token)
        last = validate.after_version(after_version)
        seat = rules.SPECTATOR
        if token and not tokens.is_ai_credential(token):
            _, meta = await self._load(game_id)
            seat = self._seat(token, meta, game_id, 0, required=False)
        updates = aiter(self.hub.watch(game_id, last, after_commit_id, peer, active))
        if seat == rules.SPECTATOR and not with_presence:  # (the stream as it always was)
            async for plain in updates:
                yield plain.update
            return
        async with self.presence.attend(game_id, seat) as here:
            next_update: asyncio.Task[Any] | None = None
            next_here: asyncio.Task[tuple[int, ...]] | None = None
            try:
                while True:
                    next_update = next_update or asyncio.ensure_future(anext(updates))
                    next_here = next_here or asyncio.ensure_future(here.get())
                    await asyncio.wait((next_update, next_here), return_when=FIRST_COMPLETED)
                    if next_here.done():
                        here_now = pb.GameUpdate(game_id=game_id, version=last, presence_only=True)
                        here_now.present_seats.extend(next_here.result())
                        next_here = None
                        if with_presence:
                            yield here_now.SerializeToString()
                    if next_update.done():
                        try:
                            stored = next_update.result()
                        except StopAsyncIteration:
                            return
                        next_update = None
                        last = stored.version
                        yield stored.update
            finally:
                pending = [t for t in (next_update, next_here) if t is not None and not t.done()]
                for t in pending:
                    t.cancel()
                for done in (next_update, next_here):  # (a result nobody will read: read here)
                    if done is not None and done.done() and not done.cancelled():
                        done.exception()
                # (the generator cannot be closed while a task still runs its next step)
                await asyncio.gather(*pending, return_exceptions=True)
                await updates.aclose()  # type: ignore[attr-defined]

    async def list_games(self, req: epb.ListGamesRequest) -> epb.ListGamesResponse:
        size = validate.page_size(req.page_size)
        before = validate.page_token(req.page_token)
        rows = await self.store.list_games(before, size, req.active_only)
        out = epb.ListGamesResponse()
        for r in rows:
            g = out.games.add(
                game_id=r.game_id,
                version=r.version,
                to_move=r.to_move,
                over=r.over,
                updated_unix_ms=r.updated_ms,
            )
            try:
                meta = self.meta.get(r.game_id, r.meta)
            except UnreadableMeta as e:
                # One record this engine cannot read (written by another version, or damaged)
                # must not take the listing down for every caller: listed with what it holds.
                unreadable_log.warning(
                    "game %s: unreadable metadata (%r): listed without", r.game_id, e
                )
                continue
            g.sets, g.players, g.created_unix_ms = meta.sets, meta.players, meta.created_ms
            g.seats.extend(convert.seat_info(meta))
        if len(rows) == size:
            out.next_page_token = rows[-1].game_id
        return out

    async def replay(self, game_id: str) -> epb.Replay:
        validate.game_id(game_id)
        rec, meta = await self._load(game_id)
        if not rec.over:
            raise errors.refused(
                Code.FAILED_PRECONDITION,
                "GAME_NOT_OVER",
                "the game is not over: its replay (seed and actions) would reveal hidden cards",
            )
        log_entries = await self.store.action_log(game_id)  # (damaged: UNREADABLE_GAME)
        s = self._state(rec)
        table = self._table(rec)
        steps = [
            epb.ReplayStep(version=i + 2, seat=seat, action=action)
            for i, (seat, action) in enumerate(log_entries)
        ]
        replay = epb.Replay(
            game_id=game_id,
            sets=meta.sets,
            players=meta.players,
            seed=meta.seed,
            steps=steps,
            catalog_fingerprint=s.T.catalog.fingerprint,
            version=rec.version,
            scores=convert.scores(s),
            winner=seats.winner(s, meta, table.resigned) if table.resigned else rules.winner(s),
            seats=convert.seat_info(meta, table.fallbacks),
        )
        for q in table.resigned:
            replay.seats[q].resigned = True
        if meta.start:  # a practice game: its steps start from this state, not the seed's
            replay.start_state = meta.start
            convert.fill_origin(replay.practice, meta)
        return replay

    async def delete(self, game_id: str, admin_token: str, *, operator: bool = False) -> None:
        """Needs the game's admin token, or an operator credential (checked by the caller)."""
        validate.game_id(game_id)
        validate.token(admin_token, "admin_token")
        if not operator:  # (an operator may delete a game this engine cannot read: no load)
            _, meta = await self._load(game_id)
            self._check_admin(admin_token, meta)
        await self.losses.deleting(game_id)  # (its absence is then no loss, on any replica)
        if not await self.store.delete(game_id):
            raise not_found(game_id)
        self.meta.forget(game_id)
        self.states.forget(game_id)
        log.info("game %s deleted", game_id)

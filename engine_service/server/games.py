"""The engine's use cases, free of gRPC: create, view, submit, watch, list, replay, delete.

Stateless: every call loads what it needs from the store (a submit naming the version this
replica last wrote or read goes straight to the commit), and a submit writes back only by
compare-and-set, so any number of replicas can share one store.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.rules import actions as A
from engine_service.server import convert, tokens, validate
from engine_service.server.dispatch import Dispatcher
from engine_service.server.errors import Code, ServiceError, invalid, not_found
from engine_service.server.ids import new_game_id
from engine_service.server.meta import AI, GameMeta, MetaCache
from engine_service.server.metrics import Metrics
from engine_service.server.state_cache import StateCache
from engine_service.server.sweeper import encode_payload
from engine_service.store import Commit, CommitStatus, GameRecord, NewGame, Store

log = logging.getLogger("ascension.engine.games")
WATCH_BLOCK_MS = 1000


class Games:
    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        metrics: Metrics,
        engine_address: str,
        game_ttl_seconds: int,
    ) -> None:
        self.store = store
        self.dispatcher = dispatcher
        self.metrics = metrics
        self.engine_address = engine_address
        self.ttl = game_ttl_seconds
        self.meta = MetaCache()
        self.states = StateCache()
        self.stopping = asyncio.Event()

    # ---- helpers ------------------------------------------------------------------------

    async def _load(self, game_id: str) -> tuple[GameRecord, GameMeta]:
        rec = await self.store.load(game_id)
        if rec is None:
            raise not_found(game_id)
        return rec, self.meta.get(game_id, rec.meta)

    def _state(self, rec: GameRecord) -> rules.State:
        """The record's state, shared with the cache: clone it before changing it."""
        s = self.states.get(rec.game_id, rec.version)
        if s is not None:
            return s
        try:
            s = rules.deserialize(rec.state)
        except rules.SerializationError as e:
            raise ServiceError(
                Code.FAILED_PRECONDITION, f"game {rec.game_id} cannot be read by this engine: {e}"
            ) from e
        self.states.put(rec.game_id, rec.version, s)
        return s

    @staticmethod
    def _seat(token: str, meta: GameMeta, *, required: bool) -> int:
        """The token's seat; SPECTATOR for no token where that is allowed."""
        if not token:
            if required:
                raise ServiceError(
                    Code.UNAUTHENTICATED,
                    "token is required: pass the seat token CreateGame returned",
                )
            return rules.SPECTATOR
        seat = tokens.seat_of(token, meta.token_digests)
        if seat is None:
            raise ServiceError(Code.UNAUTHENTICATED, "token does not match any seat of this game")
        return seat

    def _ai_payload(
        self, game_id: str, meta: GameMeta, seat: int, version: int, now: float
    ) -> dict[str, Any]:
        bot = meta.seats[seat].bot
        assert bot is not None
        return {
            "game_id": game_id,
            "seat": seat,
            "version": version,
            "token": meta.ai_tokens[seat],
            "bot": bot.as_payload(),
            "engine_address": self.engine_address,
            "enqueued_at": now,
        }

    async def _dispatch(self, payload: dict[str, Any] | None) -> None:
        if payload is None:
            return
        try:
            await self.dispatcher.dispatch(payload)
        except Exception:
            return  # logged by the dispatcher; the sweeper sends it again
        self.metrics.ai_enqueued.labels("turn").inc()

    # ---- use cases ----------------------------------------------------------------------

    async def create(self, req: epb.CreateGameRequest) -> epb.CreateGameResponse:
        sets = validate.sets(req.sets)
        seats = validate.seats(req)
        seed = validate.seed(req)
        if seed is None:
            seed = secrets.randbits(63)
        try:
            config = rules.GameConfig(sets=sets, players=len(seats), seed=seed)
        except rules.ConfigError as e:
            raise invalid("seats", str(e)) from e
        state = rules.new_game(config)
        now = time.time()
        now_ms = int(now * 1000)
        game_id = new_game_id(now_ms)
        seat_tokens = [tokens.new_token() for _ in seats]
        admin_token = tokens.new_token()
        meta = GameMeta(
            sets=sets,
            players=len(seats),
            seed=seed,
            seats=seats,
            token_digests=tuple(tokens.digest(t) for t in seat_tokens),
            admin_digest=tokens.digest(admin_token),
            ai_tokens={i: seat_tokens[i] for i, s in enumerate(seats) if s.kind == AI},
            created_ms=now_ms,
        )
        first = convert.update(game_id, 1, -1, 0, "Game created", state, [])
        to_move = state.to_move()
        payload = self._ai_payload(game_id, meta, to_move, 1, now) if meta.is_ai(to_move) else None
        await self.store.create(
            NewGame(
                game_id=game_id,
                state=rules.serialize(state),
                meta=meta.encode(),
                update=first.SerializeToString(),
                to_move=to_move,
                created_ms=now_ms,
                ai_pending=None if payload is None else encode_payload(payload),
                enqueued_at=now,
            )
        )
        self.states.put(game_id, 1, state)
        self.metrics.games_created.inc()
        log.info(
            "game %s created: sets=%s seats=%s", game_id, sets, ",".join(s.kind for s in seats)
        )
        await self._dispatch(payload)
        return epb.CreateGameResponse(
            game_id=game_id,
            seat_tokens=seat_tokens,
            admin_token=admin_token,
            view=convert.game_view(game_id, 1, state, meta, rules.SPECTATOR),
        )

    async def view(self, game_id: str, token: str) -> pb.GameView:
        validate.game_id(game_id)
        validate.token(token)
        rec, meta = await self._load(game_id)
        seat = self._seat(token, meta, required=False)
        return convert.game_view(game_id, rec.version, self._state(rec), meta, seat)

    async def legal_actions(self, game_id: str, token: str) -> epb.ListLegalActionsResponse:
        validate.game_id(game_id)
        validate.token(token)
        rec, meta = await self._load(game_id)
        seat = self._seat(token, meta, required=False)
        s = self._state(rec)
        resp = epb.ListLegalActionsResponse(
            game_id=game_id, version=rec.version, seat=seat, to_move=s.to_move()
        )
        convert.add_legal_actions(resp.actions, s, seat)
        return resp

    async def _replayed(
        self, game_id: str, seat: int, fingerprint: bytes, prior: bytes
    ) -> epb.SubmitActionResponse:
        stored_fp, _, update = prior.partition(b"\n")
        if stored_fp != fingerprint:
            raise invalid(
                "idempotency_key",
                "was already used for a different request (seat, version or action)",
            )
        rec, meta = await self._load(game_id)
        return epb.SubmitActionResponse(
            update=pb.GameUpdate.FromString(update),
            view=convert.game_view(game_id, rec.version, self._state(rec), meta, seat),
            replayed=True,
        )

    @staticmethod
    def _aborted(current: int, expected: int) -> ServiceError:
        return ServiceError(
            Code.ABORTED,
            f"the game is at version {current}, not {expected}: another action was applied first; "
            "get the game again and decide anew",
            (("current-version", str(current)),),
        )

    async def submit(self, req: epb.SubmitActionRequest) -> epb.SubmitActionResponse:
        validate.submit(req)
        game_id, key = req.game_id, req.idempotency_key
        if not req.token:
            raise ServiceError(
                Code.UNAUTHENTICATED, "token is required: pass the seat token CreateGame returned"
            )
        cached_meta = self.meta.peek(game_id)
        cached = self.states.get(game_id, req.expected_version)
        if cached_meta is not None and cached is not None:
            # This replica holds the version the caller saw (it wrote or read it last): no need
            # to read the game first, the commit's compare-and-set checks the version anyway.
            # A request the checks refuse is judged again after a read, so every answer is the
            # one the read-first path below gives (an applied retry, a newer version, a game
            # deleted meanwhile are all told apart there or by the commit).
            try:
                seat = self._seat(req.token, cached_meta, required=True)
                s = self._playable(cached, seat, req.action)
            except ServiceError:
                pass
            else:
                return await self._apply(req, cached_meta, seat, req.expected_version, s)
        rec, meta = await self._load(game_id)
        seat = self._seat(req.token, meta, required=True)
        if rec.version != req.expected_version:
            if key:  # a retry of a request that was applied: answer as the first time
                prior = await self.store.idempotent_result(game_id, key)
                if prior is not None:
                    fingerprint = self._fingerprint(seat, req)
                    return await self._replayed(game_id, seat, fingerprint, prior)
            raise self._aborted(rec.version, req.expected_version)
        s = self._playable(self._state(rec), seat, req.action)
        return await self._apply(req, meta, seat, rec.version, s)

    @staticmethod
    def _fingerprint(seat: int, req: epb.SubmitActionRequest) -> bytes:
        return f"{seat}:{req.expected_version}:{req.action}".encode()

    @staticmethod
    def _playable(state: rules.State, seat: int, action: int) -> rules.State:
        """A copy of ``state`` (which stays as it was: it may be shared with the cache) on which
        ``seat`` may play ``action``; else the error to answer with."""
        s = state.clone()
        if s.over:
            raise ServiceError(Code.FAILED_PRECONDITION, "the game is over")
        to_move = s.to_move()
        if seat != to_move:
            d = s.decision
            what = f"to answer {A.DECISION_NAMES[d[0]]}" if d is not None else "to play"
            raise ServiceError(
                Code.FAILED_PRECONDITION, f"it is not your turn: seat {to_move} is {what}"
            )
        if action not in rules.legal_actions(s):
            try:
                rules.apply(s, action)  # raises with the rules' reason, changing nothing
            except rules.MalformedActionError as e:
                raise invalid("action", str(e)) from e
            except rules.RulesError as e:
                raise ServiceError(Code.FAILED_PRECONDITION, str(e)) from e
            raise ServiceError(
                Code.INTERNAL, f"action {action} is not listed as legal but the rules accepted it"
            )
        return s

    async def _apply(
        self,
        req: epb.SubmitActionRequest,
        meta: GameMeta,
        seat: int,
        expected: int,
        s: rules.State,
    ) -> epb.SubmitActionResponse:
        """Play ``req.action`` on ``s`` (the state at version ``expected``, checked playable)
        and write the result if the game is still at that version."""
        game_id, key, action = req.game_id, req.idempotency_key, req.action
        fingerprint = self._fingerprint(seat, req)
        description = rules.describe_action(s, action)
        evs = rules.apply_unchecked(s, action)
        version = expected + 1
        resp = epb.SubmitActionResponse()  # filled in place: its fields are not copied
        upd = resp.update
        convert.fill_update(upd, game_id, version, seat, action, description, s, evs)
        upd_bytes = upd.SerializeToString()
        now = time.time()
        nxt = s.to_move()
        payload = self._ai_payload(game_id, meta, nxt, version, now) if meta.is_ai(nxt) else None
        res = await self.store.commit(
            Commit(
                game_id=game_id,
                expected_version=expected,
                state=rules.serialize(s),
                update=upd_bytes,
                log_entry=f"{seat},{action}".encode(),
                idem_key=key,
                idem_value=fingerprint + b"\n" + upd_bytes,
                over=s.over,
                to_move=nxt,
                updated_ms=int(now * 1000),
                ttl_seconds=self.ttl,
                ai_pending=None if payload is None else encode_payload(payload),
                enqueued_at=now,
            )
        )
        if res.status is CommitStatus.MISSING:
            raise not_found(game_id)
        if res.status is CommitStatus.DUPLICATE:
            assert res.prior is not None
            return await self._replayed(game_id, seat, fingerprint, res.prior)
        if res.status is CommitStatus.CONFLICT:
            self.metrics.cas_conflicts.inc()
            raise self._aborted(res.version, req.expected_version)
        self.states.put(game_id, version, s)
        self.metrics.action_applied(A.KIND_NAMES[action >> 16])
        if s.over:
            self.metrics.games_finished.inc()
            log.info("game %s over at version %d: scores %s", game_id, version, rules.scores(s))
        await self._dispatch(payload)
        if req.view_detail == epb.VIEW_DETAIL_LEGAL_ACTIONS:
            convert.fill_light_view(resp.view, game_id, version, s, seat)
        else:
            convert.fill_game_view(resp.view, game_id, version, s, meta, seat)
        return resp

    async def watch(
        self, game_id: str, after_version: int, active: Callable[[], bool]
    ) -> AsyncIterator[pb.GameUpdate]:
        validate.game_id(game_id)
        last = validate.after_version(after_version)
        rec, _ = await self._load(game_id)
        if rec.over and rec.version <= last:
            return
        first = await self.store.first_update_version(game_id)
        if first is not None and last + 1 < first:
            raise ServiceError(
                Code.OUT_OF_RANGE,
                f"updates before version {first} are no longer kept; "
                f"watch from after_version={first - 1} (GetGame has the current state)",
            )
        idle = 0
        while True:
            if self.stopping.is_set():
                raise ServiceError(
                    Code.UNAVAILABLE,
                    f"the server is shutting down: watch again with after_version={last}",
                )
            if not active():
                return  # the caller went away
            ups = await self.store.updates(game_id, last, WATCH_BLOCK_MS)
            if not ups:
                idle += 1
                if idle % 5 == 0 and await self.store.load(game_id) is None:
                    return  # deleted, or expired
                continue
            idle = 0
            if ups[0][0] > last + 1:
                raise ServiceError(
                    Code.OUT_OF_RANGE,
                    f"updates {last + 1}..{ups[0][0] - 1} were trimmed before "
                    f"they could be sent; GetGame has the current state",
                )
            for version, raw in ups:
                u = pb.GameUpdate.FromString(raw)
                yield u
                last = version
                if u.over:
                    return

    async def list_games(self, req: epb.ListGamesRequest) -> epb.ListGamesResponse:
        size = validate.page_size(req.page_size)
        before = validate.page_token(req.page_token)
        rows = await self.store.list_games(before, size, req.active_only)
        out = epb.ListGamesResponse()
        for r in rows:
            meta = self.meta.get(r.game_id, r.meta)
            out.games.append(
                epb.GameSummary(
                    game_id=r.game_id,
                    sets=meta.sets,
                    players=meta.players,
                    version=r.version,
                    to_move=r.to_move,
                    over=r.over,
                    seats=convert.seat_info(meta),
                    created_unix_ms=meta.created_ms,
                    updated_unix_ms=r.updated_ms,
                )
            )
        if len(rows) == size:
            out.next_page_token = rows[-1].game_id
        return out

    async def replay(self, game_id: str) -> epb.Replay:
        validate.game_id(game_id)
        rec, meta = await self._load(game_id)
        if not rec.over:
            raise ServiceError(
                Code.FAILED_PRECONDITION,
                "the game is not over: its replay (seed and actions) would reveal hidden cards",
            )
        log_entries = await self.store.action_log(game_id)
        s = self._state(rec)
        steps = []
        for i, entry in enumerate(log_entries):
            seat, _, action = entry.partition(b",")
            steps.append(epb.ReplayStep(version=i + 2, seat=int(seat), action=int(action)))
        return epb.Replay(
            game_id=game_id,
            sets=meta.sets,
            players=meta.players,
            seed=meta.seed,
            steps=steps,
            catalog_fingerprint=s.T.catalog.fingerprint,
            version=rec.version,
            scores=convert.scores(s),
            winner=rules.winner(s),
            seats=convert.seat_info(meta),
        )

    async def delete(self, game_id: str, admin_token: str) -> None:
        validate.game_id(game_id)
        validate.token(admin_token, "admin_token")
        _, meta = await self._load(game_id)
        if not admin_token:
            raise ServiceError(
                Code.UNAUTHENTICATED,
                "admin_token is required: pass the admin token CreateGame returned",
            )
        if not tokens.matches(admin_token, meta.admin_digest):
            if tokens.seat_of(admin_token, meta.token_digests) is not None:
                raise ServiceError(
                    Code.PERMISSION_DENIED,
                    "a seat token cannot delete the game: use the admin token",
                )
            raise ServiceError(Code.UNAUTHENTICATED, "admin_token does not match this game")
        if not await self.store.delete(game_id):
            raise not_found(game_id)
        self.meta.forget(game_id)
        self.states.forget(game_id)
        log.info("game %s deleted", game_id)

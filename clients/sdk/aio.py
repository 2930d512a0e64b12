"""The asyncio SDK client (:class:`AsyncClient`): the same calls as :class:`Client`, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import Any, Protocol, TypeVar, cast

from clients.sdk._grpc import grpc
from clients.sdk._requests import (
    DEFAULT_RETRY,
    RetryPolicy,
    analysis_timeout,
    create_game_request,
    new_idempotency_key,
    submit_request,
)
from clients.sdk.errors import (
    RESYNC_CODES,
    TRANSIENT_CODES,
    AscensionError,
    DataLossError,
    Resync,
    UnavailableError,
    VersionConflictError,
    from_rpc_error,
    newer,
    status_name,
)
from clients.sdk.review import AioReviewCall, DecisionReview, aiterate, review_request
from clients.sdk.tls import TLS, aio_channel, operator_metadata
from clients.sdk.tracing import aio_interceptors
from clients.sdk.types import (
    BotSpec,
    Catalog,
    Clock,
    CreatedGame,
    PracticeGame,
    SeatSpec,
    practice_request,
)
from engine_service.api.ascension.v1 import engine_pb2, engine_pb2_grpc, game_pb2

T = TypeVar("T")
_Req = TypeVar("_Req", contravariant=True)
_Resp = TypeVar("_Resp", covariant=True)


class _Unary(Protocol[_Req, _Resp]):
    def __call__(
        self, request: _Req, *, timeout: float | None = ..., metadata: Any = ...
    ) -> Awaitable[_Resp]: ...


class _AioStream(Protocol):
    def __aiter__(self) -> AsyncIterator[game_pb2.GameUpdate]: ...
    def cancel(self) -> bool: ...


class _Streaming(Protocol):
    def __call__(self, request: engine_pb2.WatchGameRequest) -> _AioStream: ...


class _ReviewStreaming(Protocol):
    def __call__(
        self, request: engine_pb2.ReviewGameRequest, *, timeout: float | None, metadata: Any
    ) -> AioReviewCall: ...


class _AioStub(Protocol):
    """The generated stub as it behaves on a grpc.aio channel (calls return awaitables)."""

    CreateGame: _Unary[engine_pb2.CreateGameRequest, engine_pb2.CreateGameResponse]
    GetGame: _Unary[engine_pb2.GetGameRequest, game_pb2.GameView]
    ListLegalActions: _Unary[
        engine_pb2.ListLegalActionsRequest, engine_pb2.ListLegalActionsResponse
    ]
    SubmitAction: _Unary[engine_pb2.SubmitActionRequest, engine_pb2.SubmitActionResponse]
    WatchGame: _Streaming
    ListGames: _Unary[engine_pb2.ListGamesRequest, engine_pb2.ListGamesResponse]
    GetReplay: _Unary[engine_pb2.GetReplayRequest, engine_pb2.Replay]
    DeleteGame: _Unary[engine_pb2.DeleteGameRequest, engine_pb2.DeleteGameResponse]
    ListCards: _Unary[engine_pb2.ListCardsRequest, engine_pb2.ListCardsResponse]
    AnalyzePosition: _Unary[engine_pb2.AnalyzePositionRequest, engine_pb2.AnalyzePositionResponse]
    ReviewGame: _ReviewStreaming
    Resign: _Unary[engine_pb2.ResignRequest, engine_pb2.ResignResponse]
    HandOverSeat: _Unary[engine_pb2.HandOverSeatRequest, engine_pb2.HandOverSeatResponse]
    PracticeFromHere: _Unary[engine_pb2.PracticeFromHereRequest, engine_pb2.PracticeFromHereResponse]


class AsyncClient:
    """asyncio twin of :class:`clients.sdk.Client` (same methods, awaited; ``watch`` is an
    async iterator). Use ``async with AsyncClient(address) as c: ...``."""

    def __init__(
        self,
        address: str = "localhost:50051",
        *,
        timeout: float | None = 30.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        channel: Any = None,
        tls: TLS | bool | None = None,
        operator_key: str | None = None,
    ) -> None:
        """``tls``: a :class:`~clients.sdk.tls.TLS` (or True: TLS with the system's CAs);
        unset: plaintext. ``operator_key``: sent as ``authorization: Bearer <key>`` with the
        calls that need one on a server with operator keys (create, list, delete)."""
        self.address = address
        self.timeout = timeout
        self.retry = retry
        self._operator = operator_metadata(operator_key)
        # A channel of its own gets a client span per call when OpenTelemetry is installed.
        self._channel: Any = (
            channel
            if channel is not None
            else aio_channel(address, tls, [], interceptors=aio_interceptors())
        )
        self._stub = cast(_AioStub, engine_pb2_grpc.EngineStub(self._channel))
        self._versions: dict[str, tuple[int, str]] = {}  # game -> (version, its commit id)
        self._catalogs: dict[str, Catalog] = {}

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def wait_ready(self, timeout: float = 30.0) -> None:
        """Wait until the server's health check answers SERVING (or raise UnavailableError)."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        health = health_pb2_grpc.HealthStub(self._channel)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last = "no answer"
        while True:
            try:
                reply = await health.Check(health_pb2.HealthCheckRequest(service=""), timeout=2.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
                last = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            except grpc.RpcError as e:
                last = f"{status_name(e)}: {e.details()}"
            if loop.time() >= deadline:
                raise UnavailableError(f"engine at {self.address} is not serving ({last})")
            await asyncio.sleep(0.1)

    async def _call(
        self, fn: Callable[[], Awaitable[T]], *, transient_retries: int | None = None
    ) -> T:
        retries = self.retry.transient if transient_retries is None else transient_retries
        attempt = 0
        while True:
            try:
                return await fn()
            except grpc.RpcError as e:
                if status_name(e) in TRANSIENT_CODES and attempt < retries:
                    await asyncio.sleep(self.retry.delay(attempt))
                    attempt += 1
                    continue
                raise from_rpc_error(e) from None

    def _seen(self, game_id: str, version: int, commit_id: str = "") -> None:
        if newer(self._versions.get(game_id), version, commit_id):
            self._versions[game_id] = (version, commit_id)

    def _reset_seen(self, game_id: str, version: int, commit_id: str = "") -> None:
        """The store's version, even below what was seen (it lost versions)."""
        self._versions[game_id] = (version, commit_id)

    def known_version(self, game_id: str) -> int | None:
        known = self._versions.get(game_id)
        return None if known is None else known[0]

    def _known_commit(self, game_id: str, version: int) -> str:
        known = self._versions.get(game_id)
        return known[1] if known is not None and known[0] == version else ""

    async def create_game(
        self,
        seats: Sequence[SeatSpec],
        *,
        sets: str = "ss",
        seed: int | None = None,
        clock: Clock | None = None,
    ) -> CreatedGame:
        req = create_game_request(seats, sets, seed, clock)
        resp = await self._call(
            lambda: self._stub.CreateGame(req, timeout=self.timeout, metadata=self._operator),
            transient_retries=0,
        )
        self._seen(resp.game_id, resp.view.version, resp.view.commit_id)
        return CreatedGame(resp.game_id, tuple(resp.seat_tokens), resp.admin_token, resp.view)

    async def get_view(self, game_id: str, token: str = "") -> game_pb2.GameView:
        req = engine_pb2.GetGameRequest(game_id=game_id, token=token)
        view = await self._call(lambda: self._stub.GetGame(req, timeout=self.timeout))
        self._seen(game_id, view.version, view.commit_id)
        return view

    async def legal_actions(self, game_id: str, token: str) -> engine_pb2.ListLegalActionsResponse:
        req = engine_pb2.ListLegalActionsRequest(game_id=game_id, token=token)
        resp = await self._call(lambda: self._stub.ListLegalActions(req, timeout=self.timeout))
        self._seen(game_id, resp.version)
        return resp

    async def submit(
        self,
        game_id: str,
        token: str,
        action: int,
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        retry_on_conflict: bool = True,
        seat_tokens: Sequence[str] = (),
    ) -> engine_pb2.SubmitActionResponse:
        """See :meth:`clients.sdk.Client.submit`."""
        key = idempotency_key or new_idempotency_key()
        version = expected_version if expected_version is not None else self.known_version(game_id)
        if version is None:
            version = (await self.get_view(game_id, token)).version
        commit_id = self._known_commit(game_id, version)
        conflicts = 0
        while True:
            req = submit_request(game_id, token, version, action, key, seat_tokens, commit_id)
            try:
                resp = await self._call(self._submit_once(req))
            except DataLossError as e:
                if e.current_version is not None:  # (go on from what the store holds)
                    self._reset_seen(game_id, e.current_version, e.metadata.get("commit_id", ""))
                raise
            except VersionConflictError as e:
                if not retry_on_conflict or conflicts >= self.retry.conflicts:
                    raise
                conflicts += 1
                current, commit_id = e.current_version, e.metadata.get("commit_id", "")
                if current is None or current <= version:
                    view = await self.get_view(game_id, token)
                    current, commit_id = view.version, view.commit_id
                self._seen(game_id, current, commit_id)
                version = current
                key = new_idempotency_key()
                continue
            self._seen(game_id, resp.view.version, resp.view.commit_id)
            return resp

    def _submit_once(
        self, req: engine_pb2.SubmitActionRequest
    ) -> Callable[[], Awaitable[engine_pb2.SubmitActionResponse]]:
        return lambda: self._stub.SubmitAction(req, timeout=self.timeout)

    async def wait_turn(
        self, game_id: str, token: str, *, timeout: float | None = None
    ) -> game_pb2.GameView:
        """Wait until the token's seat must act, or the game is over; return its view then
        (as :meth:`Client.wait_turn`: updates watched in between, none missed).
        ``timeout`` (seconds): raise :class:`TimeoutError` if the seat's move has not come."""
        async with asyncio.timeout(timeout):
            while True:
                view = await self.get_view(game_id, token)
                if view.over or view.to_move == view.seat:
                    return view
                if view.seat < 0:
                    raise ValueError("wait_turn needs a seat's token: a spectator never moves")
                async with self.watch(game_id, after_version=view.version) as updates:
                    async for update in updates:
                        if update.over or update.to_move == view.seat:
                            break

    def watch(
        self,
        game_id: str,
        after_version: int = 0,
        *,
        reconnect: bool = True,
        resync: bool = True,
        after_commit_id: str = "",
        token: str = "",
        presence: bool = False,
    ) -> AsyncWatch:
        """Updates after ``after_version``, then each new one, until the game ends."""
        return AsyncWatch(
            self, game_id, after_version, reconnect=reconnect, resync=resync,
            after_commit_id=after_commit_id, token=token, presence=presence,
        )  # fmt: skip

    async def resign(self, game_id: str, token: str) -> engine_pb2.ResignResponse:
        """The token's seat resigns (docs/clients.md, "Resigning and seats that change
        hands"): it is out; a two-seat game ends and the other seat wins."""
        req = engine_pb2.ResignRequest(game_id=game_id, token=token)
        resp: engine_pb2.ResignResponse = await self._call(
            lambda: self._stub.Resign(req, timeout=self.timeout), transient_retries=0
        )
        self._seen(game_id, resp.update.version, resp.update.commit_id)
        return resp

    async def hand_over(
        self, game_id: str, admin_token: str, seat: int, to: SeatSpec
    ) -> engine_pb2.HandOverSeatResponse:
        """Hand ``seat`` to a bot or to a new player (``to``; the admin token, or an operator
        key with ``admin_token=""``): the answer has the new player's token; the old one stops
        working at once."""
        req = engine_pb2.HandOverSeatRequest(
            game_id=game_id, admin_token=admin_token, seat=seat, to=to.to_proto()
        )
        metadata = self._operator if not admin_token else None
        resp: engine_pb2.HandOverSeatResponse = await self._call(
            lambda: self._stub.HandOverSeat(req, timeout=self.timeout, metadata=metadata),
            transient_retries=0,
        )
        self._seen(game_id, resp.update.version, resp.update.commit_id)
        return resp

    async def practice(
        self,
        game_id: str,
        token: str = "",
        version: int = 0,
        *,
        seat: int | None = None,
        opponents: SeatSpec | BotSpec | None = None,
    ) -> PracticeGame:
        """Practice from here: a new game that starts at a decision of a seat (``version``: one
        at which the seat was to move, e.g. a review's ``DecisionReview.version``; 0 = now),
        the seat's player against bots, every card the seat could not see then dealt again at
        random. ``token``: the seat's own (or the admin token / the client's operator key with
        ``seat``, once the game is over), as for :meth:`review`. ``opponents``: the other
        seats' bot (``bot(difficulty="hard")``); by default an AI seat keeps its bot and a
        person's seat gets the "normal" level. Returns a :class:`PracticeGame` (its ``token``
        plays the new game). Not retried by itself (each call makes a game)."""
        req = practice_request(game_id, token, version, seat, opponents)
        metadata = self._operator if not token else None
        resp: engine_pb2.PracticeFromHereResponse = await self._call(
            lambda: self._stub.PracticeFromHere(req, timeout=self.timeout, metadata=metadata),
            transient_retries=0,
        )
        return PracticeGame.from_proto(resp)

    async def list_games(
        self, *, page_size: int = 50, page_token: str = "", active_only: bool = False
    ) -> engine_pb2.ListGamesResponse:
        req = engine_pb2.ListGamesRequest(
            page_size=page_size, page_token=page_token, active_only=active_only
        )
        return await self._call(
            lambda: self._stub.ListGames(req, timeout=self.timeout, metadata=self._operator)
        )

    async def get_replay(self, game_id: str) -> engine_pb2.Replay:
        req = engine_pb2.GetReplayRequest(game_id=game_id)
        return await self._call(lambda: self._stub.GetReplay(req, timeout=self.timeout))

    async def delete_game(self, game_id: str, admin_token: str) -> None:
        req = engine_pb2.DeleteGameRequest(game_id=game_id, admin_token=admin_token)
        await self._call(
            lambda: self._stub.DeleteGame(req, timeout=self.timeout, metadata=self._operator)
        )

    async def analyze(
        self, game_id: str, token: str, budget_ms: int = 0, *, timeout: float | None = None
    ) -> engine_pb2.AnalyzePositionResponse:
        """Hints for the token's seat (see :meth:`clients.sdk.Client.analyze`)."""
        req = engine_pb2.AnalyzePositionRequest(game_id=game_id, token=token, budget_ms=budget_ms)
        wait = timeout if timeout is not None else analysis_timeout(budget_ms, self.timeout)
        resp = await self._call(
            lambda: self._stub.AnalyzePosition(req, timeout=wait), transient_retries=0
        )
        self._seen(game_id, resp.version)
        return resp

    def review(
        self,
        game_id: str,
        token: str = "",
        seat: int | None = None,
        budget_ms: int = 0,
        *,
        with_views: bool = False,
        timeout: float | None = None,
    ) -> AsyncGenerator[DecisionReview, None]:
        """A review of one seat's past decisions, as an async iterator (see
        :meth:`clients.sdk.Client.review`): ``async for r in c.review(game_id, token): ...``."""
        req = review_request(game_id, token, seat, budget_ms, with_views)
        metadata = self._operator if not token else None
        return aiterate(self._stub.ReviewGame(req, timeout=timeout, metadata=metadata))

    async def catalog(self, fingerprint: str = "") -> Catalog:
        cached = self._catalogs.get(fingerprint) if fingerprint else None
        if cached is not None:
            return cached
        req = engine_pb2.ListCardsRequest()
        resp = await self._call(lambda: self._stub.ListCards(req, timeout=self.timeout))
        cat = Catalog.from_proto(resp)
        self._catalogs[cat.fingerprint] = cat
        return cat

    def _open_watch(
        self,
        game_id: str,
        after_version: int,
        after_commit_id: str = "",
        token: str = "",
        presence: bool = False,
    ) -> _AioStream:
        req = engine_pb2.WatchGameRequest(
            game_id=game_id, after_version=after_version, after_commit_id=after_commit_id,
            token=token, with_presence=presence,
        )  # fmt: skip
        return self._stub.WatchGame(req)


class AsyncWatch:
    """An async iterator of a game's updates that survives dropped connections
    (``last_version`` is where to resume from)."""

    def __init__(
        self,
        client: AsyncClient,
        game_id: str,
        after_version: int,
        *,
        reconnect: bool,
        resync: bool = True,
        after_commit_id: str = "",
        token: str = "",
        presence: bool = False,
    ) -> None:
        self._client = client
        self.token = token  # a seat's: it is present while the watch is open
        self.presence = presence  # also yield who is here (updates with presence_only)
        self.game_id = game_id
        self.last_version = after_version
        self.last_commit_id = after_commit_id
        self.resyncs: list[Resync] = []  # as Watch.resyncs
        self._reconnect = reconnect
        self._resync = resync
        self._call: _AioStream | None = None
        self._iter: AsyncIterator[game_pb2.GameUpdate] | None = None
        self._cancelled = False
        self._done = False
        self.reconnects = 0

    def __aiter__(self) -> AsyncWatch:
        return self

    @property
    def closed(self) -> bool:
        """True once cancelled, or after the game's last update."""
        return self._cancelled or self._done

    def cancel(self) -> None:
        self._cancelled = True
        self._drop()

    def _drop(self) -> None:
        call, self._call, self._iter = self._call, None, None
        if call is not None:
            call.cancel()

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cancel()

    async def __anext__(self) -> game_pb2.GameUpdate:
        failures = 0
        while True:
            if self._cancelled or self._done:
                raise StopAsyncIteration
            if self._iter is None:
                self._call = self._client._open_watch(
                    self.game_id, self.last_version, self.last_commit_id, self.token,
                    self.presence,
                )
                self._iter = self._call.__aiter__()
            try:
                update = await self._iter.__anext__()
            except StopAsyncIteration:
                self._drop()
                if await self._game_over():
                    self._done = True
                    raise
                failures = await self._backoff(failures, None)
                continue
            except (grpc.RpcError, asyncio.CancelledError) as e:
                self._drop()
                if self._cancelled:
                    raise StopAsyncIteration from None
                if isinstance(e, asyncio.CancelledError):
                    raise
                if self._resync and status_name(e) in RESYNC_CODES:
                    await self._resynchronise(from_rpc_error(e))
                    continue
                failures = await self._backoff(failures, e)
                continue
            if update.presence_only:
                return update  # who is here: no version of its own (asked for: presence)
            if update.version <= self.last_version:
                continue
            failures = 0
            self.last_version, self.last_commit_id = update.version, update.commit_id
            self._client._seen(self.game_id, update.version, update.commit_id)
            if update.over:
                self._done = True
                self._drop()
            return update

    async def _resynchronise(self, error: AscensionError) -> None:
        """Go on from the game as the server holds it now."""
        view = await self._client.get_view(self.game_id)
        self.resyncs.append(Resync(error, self.last_version, view.version))
        self._client._reset_seen(self.game_id, view.version, view.commit_id)
        self.last_version, self.last_commit_id = view.version, view.commit_id
        if view.over:
            self._done = True

    async def _game_over(self) -> bool:
        try:
            view = await self._client.get_view(self.game_id)
        except UnavailableError:
            return False
        return bool(view.over) and view.version <= self.last_version

    async def _backoff(self, failures: int, error: grpc.RpcError | None) -> int:
        retryable = TRANSIENT_CODES | {"INTERNAL", "UNKNOWN", "CANCELLED"}
        if error is not None and status_name(error) not in retryable:
            raise from_rpc_error(error) from None
        if not self._reconnect or failures >= self._client.retry.reconnects:
            if error is not None:
                raise from_rpc_error(error) from None
            raise AscensionError(
                "the event stream closed before the game ended", code="UNAVAILABLE"
            )
        await asyncio.sleep(self._client.retry.delay(failures))
        self.reconnects += 1
        return failures + 1

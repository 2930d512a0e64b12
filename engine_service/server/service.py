"""The gRPC face of :class:`Games`: status codes with machine reasons, metrics per method and
code, operator credentials and limits, requests that cannot be parsed, no tokens in logs.

Requests are parsed by deserializers that cannot fail (:func:`safe_deserializer`): bytes that
are not the method's message become :class:`Undecodable`, which the handler answers with
INVALID_ARGUMENT (reason ``UNDECODABLE_REQUEST``) and a rate-limited log line, instead of
gRPC's UNKNOWN and a traceback per request. :class:`GuardedServer` gives the other services
(health, reflection) the same deserializers.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server import errors
from engine_service.server.analysis import Analyses
from engine_service.server.auth import Access
from engine_service.server.callers import Callers
from engine_service.server.errors import ServiceError
from engine_service.server.games import Games
from engine_service.server.grpc_compat import grpc
from engine_service.server.limits import CallLimits, LiveGamesCap, LogLimiter
from engine_service.server.metrics import Metrics
from engine_service.server.practice import Practices
from engine_service.server.review import Reviews
from engine_service.store import StoreError, UnreadableData

log = logging.getLogger("ascension.engine.rpc")
bad_requests = LogLimiter(logging.getLogger("ascension.engine.badrequests"))
SERVICE = "ascension.v1.Engine"

Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[Any, Req, Any], Awaitable[Resp]]
Item = TypeVar("Item")
StreamHandler = Callable[[Any, Req, Any], AsyncIterator[Item]]


class Undecodable:
    """What a request deserializer gives for bytes that are not the method's request message."""

    __slots__ = ()


UNDECODABLE = Undecodable()


def safe_deserializer(parse: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def deserialize(raw: bytes) -> Any:
        try:
            return parse(raw)
        except Exception:  # DecodeError: bad wire format, invalid UTF-8, truncated, too deep
            return UNDECODABLE

    return deserialize


def _undecodable(method: str, context: Any) -> ServiceError:
    bad_requests.warning("undecodable %s request from %s", method, context.peer())
    return errors.undecodable(method)


async def _fail(context: Any, err: ServiceError) -> None:
    await context.abort(
        grpc.StatusCode[err.code.value], err.message, trailing_metadata=err.wire_trailers()
    )


def _error_of(e: BaseException) -> ServiceError:
    if isinstance(e, ServiceError):
        return e
    if isinstance(e, StoreError):
        log.warning("store unavailable: %s", e)
        return errors.store_unavailable()
    if isinstance(e, UnreadableData):  # (damaged bytes of one game in the store)
        log.warning("game %s: %s", e.game_id, e)
        return errors.unreadable_game(e.game_id, str(e))
    log.exception("internal error")
    return errors.internal()


def unary(method: str) -> Callable[[Handler[Req, Resp]], Handler[Req, Resp]]:
    def wrap(fn: Handler[Req, Resp]) -> Handler[Req, Resp]:
        @functools.wraps(fn)
        async def handler(self: EngineService, request: Req, context: Any) -> Resp:
            t0 = time.perf_counter()
            code = "OK"
            try:
                self._admit(method, request, context)
                return await fn(self, request, context)
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except Exception as e:
                err = self._refusal(e)
                code = err.code.value
                await _fail(context, err)
                raise  # not reached: abort raises
            finally:
                self.metrics.observe_rpc(method, code, t0)

        return handler

    return wrap


def streaming(
    method: str,
) -> Callable[[StreamHandler[Req, Item]], StreamHandler[Req, Item]]:
    """:func:`unary` for a server-streaming method: the same refusal of undecodable requests,
    error answers, refusal counts and metrics, around every item the method yields."""

    def wrap(fn: StreamHandler[Req, Item]) -> StreamHandler[Req, Item]:
        @functools.wraps(fn)
        async def handler(self: EngineService, request: Req, context: Any) -> AsyncIterator[Item]:
            t0 = time.perf_counter()
            code = "OK"
            try:
                self._admit(method, request, context)
                async for item in fn(self, request, context):
                    yield item
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except Exception as e:
                err = self._refusal(e)
                code = err.code.value
                await _fail(context, err)
            finally:
                self.metrics.observe_rpc(method, code, t0)

        return handler

    return wrap


class EngineService:
    """The Engine service's handlers; :func:`add_to_server` registers them."""

    def __init__(
        self,
        games: Games,
        metrics: Metrics,
        access: Access | None = None,
        limits: CallLimits | None = None,
        analyses: Analyses | None = None,
        callers: Callers | None = None,
        reviews: Reviews | None = None,
    ) -> None:
        self.games = games
        self.metrics = metrics
        self.access = access or Access()
        self.limits = limits or CallLimits()
        self.callers = callers or Callers()
        self.analyses = analyses or Analyses(games)
        self.reviews = reviews or Reviews(self.analyses, access=self.access)
        self.practices = Practices(games, self.access)
        cap = self.limits.max_live_games
        self._live_games = LiveGamesCap(cap, games.store.active_games) if cap else None

    def _count_refusal(self, err: ServiceError) -> None:
        if err.code is errors.Code.RESOURCE_EXHAUSTED:
            self.metrics.refused(err.reason, err.metadata.get("limit", ""))

    def _admit(self, method: str, request: object, context: Any) -> None:
        """What every method checks first: a request that decoded, and a gateway key, if the
        call carries one, that this engine knows."""
        if request is UNDECODABLE:
            raise _undecodable(method, context)
        self.callers.gateway(context.invocation_metadata())  # (a wrong key: refused)

    def _refusal(self, e: Exception) -> ServiceError:
        """The error ``e`` stands for (an abort already sent passes through), counted if it is
        a limit's refusal."""
        if isinstance(e, grpc.aio.AbortError):
            raise e
        err = _error_of(e)
        self._count_refusal(err)
        return err

    def _caller(self, context: Any) -> str:
        """Who the call counts as for the per-caller limits (callers.py): an operator by its
        key, else the client's address."""
        return self.access.operator_id(context) or self.callers.key(context)

    @unary("CreateGame")
    async def CreateGame(
        self, request: epb.CreateGameRequest, context: Any
    ) -> epb.CreateGameResponse:
        operator = self.access.operator(
            context, "CreateGame", required=not self.access.public_create
        )
        self.access.check_seed(request, operator)
        if self.limits.create is not None and not operator:
            self.limits.create.take(self.callers.key(context))
        if self._live_games is not None:
            await self._live_games.check()
        return await self.games.create(request)

    @unary("GetGame")
    async def GetGame(self, request: epb.GetGameRequest, context: Any) -> pb.GameView:
        return await self.games.view(request.game_id, request.token)

    @unary("ListLegalActions")
    async def ListLegalActions(
        self, request: epb.ListLegalActionsRequest, context: Any
    ) -> epb.ListLegalActionsResponse:
        return await self.games.legal_actions(request.game_id, request.token)

    @unary("SubmitAction")
    async def SubmitAction(
        self, request: epb.SubmitActionRequest, context: Any
    ) -> epb.SubmitActionResponse:
        if self.limits.submit is not None:
            who = self.games.caller_of(request.game_id, request.token)
            self.limits.submit.take(who or self.callers.key(context))
        return await self.games.submit(request)

    @unary("ListGames")
    async def ListGames(self, request: epb.ListGamesRequest, context: Any) -> epb.ListGamesResponse:
        self.access.operator(context, "ListGames", required=True)
        return await self.games.list_games(request)

    @unary("GetReplay")
    async def GetReplay(self, request: epb.GetReplayRequest, context: Any) -> epb.Replay:
        return await self.games.replay(request.game_id)

    @unary("DeleteGame")
    async def DeleteGame(
        self, request: epb.DeleteGameRequest, context: Any
    ) -> epb.DeleteGameResponse:
        operator = self.access.operator(context, "DeleteGame", required=True)
        await self.games.delete(request.game_id, request.admin_token, operator=operator)
        return epb.DeleteGameResponse()

    @unary("Resign")
    async def Resign(self, request: epb.ResignRequest, context: Any) -> epb.ResignResponse:
        return await self.games.resign(request)

    @unary("HandOverSeat")
    async def HandOverSeat(
        self, request: epb.HandOverSeatRequest, context: Any
    ) -> epb.HandOverSeatResponse:
        operator = self.access.operator(context, "HandOverSeat", required=False)
        return await self.games.hand_over(request, operator=operator)

    @unary("PracticeFromHere")
    async def PracticeFromHere(
        self, request: epb.PracticeFromHereRequest, context: Any
    ) -> epb.PracticeFromHereResponse:
        if self.limits.practice is not None:
            self.limits.practice.take(self.callers.key(context))
        if self._live_games is not None:
            await self._live_games.check()
        return await self.practices.start(request, context)

    @unary("ListCards")
    async def ListCards(self, request: epb.ListCardsRequest, context: Any) -> epb.ListCardsResponse:
        from engine_service.server.convert import card_catalog

        return card_catalog()

    @unary("AnalyzePosition")
    async def AnalyzePosition(
        self, request: epb.AnalyzePositionRequest, context: Any
    ) -> epb.AnalyzePositionResponse:
        return await self.analyses.analyze(request)

    @unary("SubmitAnalysis")
    async def SubmitAnalysis(
        self, request: epb.SubmitAnalysisRequest, context: Any
    ) -> epb.SubmitAnalysisResponse:
        await self.analyses.deliver(request)
        return epb.SubmitAnalysisResponse()

    @streaming("ReviewGame")
    async def ReviewGame(
        self, request: epb.ReviewGameRequest, context: Any
    ) -> AsyncIterator[epb.DecisionReview]:
        """Yields each decision's review as it is rated (``Reviews.review``)."""
        async for r in self.reviews.review(request, context):
            yield r

    @streaming("WatchGame")
    async def WatchGame(
        self, request: epb.WatchGameRequest, context: Any
    ) -> AsyncIterator[bytes]:
        """Yields each update as the store keeps it, serialized (see ``_bytes_or``): a watched
        update is sent to every watcher without being parsed and serialized again for each."""
        active = lambda: not context.done()  # noqa: E731
        updates = self.games.watch(
            request.game_id,
            request.after_version,
            request.after_commit_id,
            self._caller(context),
            active,
            request.token,
            request.with_presence,
        )
        async for raw in updates:
            yield raw


def _bytes_or(serialize: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """A streaming method's response serializer that sends bytes as they are (already the
    response message, serialized) and serializes messages."""

    def serializer(message: Any) -> bytes:
        return message if isinstance(message, bytes) else serialize(message)

    return serializer


def _message_class(name: str) -> Any:
    return getattr(epb, name, None) or getattr(pb, name)


def method_handlers(service: EngineService) -> dict[str, Any]:
    """The Engine's handlers, with deserializers that cannot fail."""
    handlers: dict[str, Any] = {}
    for m in epb.DESCRIPTOR.services_by_name["Engine"].methods:
        parse = safe_deserializer(_message_class(m.input_type.name).FromString)
        serialize = _message_class(m.output_type.name).SerializeToString
        if m.server_streaming:
            serialize = _bytes_or(serialize)
        make = (
            grpc.unary_stream_rpc_method_handler
            if m.server_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        handlers[m.name] = make(
            getattr(service, m.name), request_deserializer=parse, response_serializer=serialize
        )
    return handlers


def add_to_server(service: EngineService, server: Any) -> None:
    """Register the Engine service (instead of the generated ``add_EngineServicer_to_server``,
    whose deserializers turn bad bytes into UNKNOWN and a logged traceback)."""
    handlers = method_handlers(service)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    server.add_registered_method_handlers(SERVICE, handlers)


# ---- the other services (health, reflection) ------------------------------------------------


async def _refuse_bytes(context: Any, method: str) -> None:
    await _fail(context, _undecodable(method, context))


def guard(handler: Any, method: str) -> Any:
    """The same handler with a deserializer that cannot fail; undecodable requests are
    answered INVALID_ARGUMENT. For asyncio behaviours; a streaming one keeps its shape (an
    async generator, or a coroutine that writes with ``context.write``)."""
    if handler is None or handler.request_deserializer is None:
        return handler
    parse = safe_deserializer(handler.request_deserializer)

    async def checked(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for r in requests:
            if r is UNDECODABLE:
                await _refuse_bytes(context, method)
            yield r

    if handler.unary_unary is not None:
        uu = handler.unary_unary

        async def unary_unary(request: Any, context: Any) -> Any:
            if request is UNDECODABLE:
                await _refuse_bytes(context, method)
            return await uu(request, context)

        return handler._replace(request_deserializer=parse, unary_unary=unary_unary)
    if handler.unary_stream is not None:
        us = handler.unary_stream
        if not inspect.isasyncgenfunction(us):  # writes with context.write (grpc's Health)

            async def unary_stream_writer(request: Any, context: Any) -> Any:
                if request is UNDECODABLE:
                    await _refuse_bytes(context, method)
                return await us(request, context)

            return handler._replace(request_deserializer=parse, unary_stream=unary_stream_writer)

        async def unary_stream(request: Any, context: Any) -> AsyncIterator[Any]:
            if request is UNDECODABLE:
                await _refuse_bytes(context, method)
            async for r in us(request, context):
                yield r

        return handler._replace(request_deserializer=parse, unary_stream=unary_stream)
    if handler.stream_unary is not None:
        su = handler.stream_unary

        async def stream_unary(requests: AsyncIterator[Any], context: Any) -> Any:
            return await su(checked(requests, context), context)

        return handler._replace(request_deserializer=parse, stream_unary=stream_unary)
    ss = handler.stream_stream
    if not inspect.isasyncgenfunction(ss):

        async def stream_stream_writer(requests: AsyncIterator[Any], context: Any) -> Any:
            return await ss(checked(requests, context), context)

        return handler._replace(request_deserializer=parse, stream_stream=stream_stream_writer)

    async def stream_stream(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for r in ss(checked(requests, context), context):
            yield r

    return handler._replace(request_deserializer=parse, stream_stream=stream_stream)


class _GuardedGeneric(grpc.GenericRpcHandler):  # type: ignore[misc]
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self._cache: dict[str, Any] = {}

    def service(self, details: Any) -> Any:
        method = details.method
        h = self._cache.get(method)
        if h is None:
            h = guard(self.inner.service(details), method)
            if h is not None:  # only methods that exist: callers choose the names
                self._cache[method] = h
        return h


class GuardedServer:
    """Stands in for the server when other services register themselves
    (``add_HealthServicer_to_server(servicer, GuardedServer(server))``)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    def add_generic_rpc_handlers(self, handlers: tuple[Any, ...]) -> None:
        self.server.add_generic_rpc_handlers(tuple(_GuardedGeneric(h) for h in handlers))

    def add_registered_method_handlers(self, service: str, handlers: Mapping[str, Any]) -> None:
        self.server.add_registered_method_handlers(
            service, {name: guard(h, f"/{service}/{name}") for name, h in handlers.items()}
        )

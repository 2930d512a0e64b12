"""The gRPC face of :class:`Games`: status codes, metrics per method and code, no tokens in logs."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.errors import ServiceError
from engine_service.server.games import Games
from engine_service.server.grpc_compat import grpc
from engine_service.server.metrics import Metrics
from engine_service.store import StoreError

log = logging.getLogger("ascension.engine.rpc")
SERVICE = "ascension.v1.Engine"

Req = TypeVar("Req")
Resp = TypeVar("Resp")
Handler = Callable[[Any, Req, Any], Awaitable[Resp]]


async def _fail(
    context: Any, code: str, message: str, trailers: tuple[tuple[str, str], ...] = ()
) -> None:
    if trailers:
        context.set_trailing_metadata(trailers)
    await context.abort(grpc.StatusCode[code], message)


def _code_of(e: BaseException) -> tuple[str, str, tuple[tuple[str, str], ...]]:
    if isinstance(e, ServiceError):
        return e.code.value, e.message, e.trailers
    if isinstance(e, StoreError):
        log.warning("store unavailable: %s", e)
        return "UNAVAILABLE", "the game store is unavailable; try again", ()
    log.exception("internal error")
    return "INTERNAL", "internal error", ()


def unary(method: str) -> Callable[[Handler[Req, Resp]], Handler[Req, Resp]]:
    def wrap(fn: Handler[Req, Resp]) -> Handler[Req, Resp]:
        @functools.wraps(fn)
        async def handler(self: EngineService, request: Req, context: Any) -> Resp:
            t0 = time.perf_counter()
            code = "OK"
            try:
                return await fn(self, request, context)
            except asyncio.CancelledError:
                code = "CANCELLED"
                raise
            except Exception as e:
                if isinstance(e, grpc.aio.AbortError):
                    raise
                code, message, trailers = _code_of(e)
                await _fail(context, code, message, trailers)
                raise  # not reached: abort raises
            finally:
                self.metrics.observe_rpc(method, code, t0)

        return handler

    return wrap


class EngineService:
    """Registered with ``add_EngineServicer_to_server`` (duck-typed: the generated servicer
    base class is synchronous)."""

    def __init__(self, games: Games, metrics: Metrics) -> None:
        self.games = games
        self.metrics = metrics

    @unary("CreateGame")
    async def CreateGame(
        self, request: epb.CreateGameRequest, context: Any
    ) -> epb.CreateGameResponse:
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
        return await self.games.submit(request)

    @unary("ListGames")
    async def ListGames(self, request: epb.ListGamesRequest, context: Any) -> epb.ListGamesResponse:
        return await self.games.list_games(request)

    @unary("GetReplay")
    async def GetReplay(self, request: epb.GetReplayRequest, context: Any) -> epb.Replay:
        return await self.games.replay(request.game_id)

    @unary("DeleteGame")
    async def DeleteGame(
        self, request: epb.DeleteGameRequest, context: Any
    ) -> epb.DeleteGameResponse:
        await self.games.delete(request.game_id, request.admin_token)
        return epb.DeleteGameResponse()

    @unary("ListCards")
    async def ListCards(self, request: epb.ListCardsRequest, context: Any) -> epb.ListCardsResponse:
        from engine_service.server.convert import card_catalog

        return card_catalog()

    async def WatchGame(
        self, request: epb.WatchGameRequest, context: Any
    ) -> AsyncIterator[pb.GameUpdate]:
        t0 = time.perf_counter()
        code = "OK"
        try:
            active = lambda: not context.done()  # noqa: E731
            updates = self.games.watch(
                request.game_id,
                request.after_version,
                request.after_commit_id,
                context.peer(),
                active,
            )
            async for raw in updates:
                yield pb.GameUpdate.FromString(raw)
        except asyncio.CancelledError:
            code = "CANCELLED"
            raise
        except Exception as e:
            if isinstance(e, grpc.aio.AbortError):
                raise
            code, message, trailers = _code_of(e)
            await _fail(context, code, message, trailers)
        finally:
            self.metrics.observe_rpc("WatchGame", code, t0)

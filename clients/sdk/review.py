"""Game reviews (``ReviewGame``): a seat's past decisions, each rated by a search of what that
seat could see then, as typed values.

``Client.review`` and ``AsyncClient.review`` give an iterator of :class:`DecisionReview`, one
per decision with a real choice, in the order the game went, each as soon as the server has
rated it (``index`` of ``total`` is the progress). Asking again is answered from the server's
store at once; stopping the iteration cancels the review (what it rated is kept).
"""

from __future__ import annotations

import enum
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from dataclasses import dataclass
from typing import Any, Protocol

from clients.sdk._grpc import grpc
from clients.sdk.errors import from_rpc_error
from engine_service.api.ascension.v1 import engine_pb2, game_pb2


class ReviewLabel(enum.Enum):
    """How much a decision lowered the seat's chance to win against the best action found
    (docs/bots.md, "Game review", gives the thresholds)."""

    BEST = engine_pb2.REVIEW_LABEL_BEST
    GOOD = engine_pb2.REVIEW_LABEL_GOOD
    INACCURACY = engine_pb2.REVIEW_LABEL_INACCURACY
    MISTAKE = engine_pb2.REVIEW_LABEL_MISTAKE
    BLUNDER = engine_pb2.REVIEW_LABEL_BLUNDER

    @property
    def title(self) -> str:
        return self.name.capitalize()


@dataclass(frozen=True, slots=True)
class DecisionReview:
    """One rated decision of the reviewed seat."""

    version: int  # the version the seat decided at (its action made version + 1)
    turn: int
    seat: int
    action: int
    description: str
    best_action: int  # the action the search rates best (= action when it agrees)
    best_description: str
    win_probability: float  # the seat's estimated chance to win after its action, 0..1
    best_win_probability: float  # the same after the best action
    label: ReviewLabel
    win_probabilities: tuple[float, ...]  # every seat's chance after the action (index = seat)
    index: int  # 1-based place among the reviewed decisions
    total: int  # how many decisions the review rates
    budget_ms: int  # search time per decision granted
    iterations: int
    stored: bool  # answered from the server's store (rated before)
    view: game_pb2.GameView | None = None  # with_views: the board as the seat saw it then

    @property
    def differs(self) -> bool:
        """True when the search prefers another action than the one played."""
        return self.best_action != self.action

    @property
    def drop(self) -> float:
        """How much the seat's chance to win fell against the best action (0 if none)."""
        return max(0.0, self.best_win_probability - self.win_probability)

    @staticmethod
    def from_proto(r: engine_pb2.DecisionReview) -> DecisionReview:
        try:
            label = ReviewLabel(r.label)
        except ValueError:  # a label this SDK does not know: judged by the drop alone
            label = ReviewLabel.GOOD
        return DecisionReview(
            r.version, r.turn, r.seat, r.action, r.description, r.best_action,
            r.best_description, r.win_probability, r.best_win_probability, label,
            tuple(r.win_probabilities), r.index, r.total, r.budget_ms, r.iterations, r.stored,
            r.view if r.HasField("view") else None,
        )  # fmt: skip


def review_request(
    game_id: str, token: str, seat: int | None, budget_ms: int, with_views: bool = False
) -> engine_pb2.ReviewGameRequest:
    req = engine_pb2.ReviewGameRequest(
        game_id=game_id, token=token, budget_ms=budget_ms, with_views=with_views
    )
    if seat is not None:
        req.seat = seat
    return req


def iterate(call: Any) -> Generator[DecisionReview, None, None]:
    """The reviews of a synchronous ``ReviewGame`` call; cancels it when the caller stops."""
    try:
        for r in call:
            yield DecisionReview.from_proto(r)
    except grpc.RpcError as e:
        raise from_rpc_error(e) from None
    finally:
        cancel = getattr(call, "cancel", None)  # (a channel given to the client may wrap it)
        if cancel is not None:
            cancel()


class AioReviewCall(Protocol):
    def __aiter__(self) -> AsyncIterator[engine_pb2.DecisionReview]: ...
    def cancel(self) -> bool: ...


async def aiterate(call: AioReviewCall) -> AsyncGenerator[DecisionReview, None]:
    """The reviews of an asyncio ``ReviewGame`` call; cancels it when the caller stops."""
    try:
        async for r in call:
            yield DecisionReview.from_proto(r)
    except grpc.RpcError as e:
        raise from_rpc_error(e) from None
    finally:
        call.cancel()


def sparkline(values: list[float]) -> str:
    """``values`` (0..1) as a line of block characters, low to high."""
    bars = "▁▂▃▄▅▆▇█"
    return "".join(bars[min(len(bars) - 1, max(0, int(v * len(bars))))] for v in values)

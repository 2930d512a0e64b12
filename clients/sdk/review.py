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
class ReviewOption:
    """One legal action of a reviewed decision as the search rated it."""

    action: int
    description: str
    visits: int
    win_probability: float
    standard_error: float  # of win_probability (0 under two visits)


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
    visits: int = 0  # search iterations that tried the seat's action first
    best_visits: int = 0
    standard_error: float = 0.0  # of win_probability
    best_standard_error: float = 0.0
    undersearched: bool = False  # too few visits to tell the action from the best one
    explanation: str = ""  # why, for mistakes and blunders, in a player's words
    options: tuple[ReviewOption, ...] = ()  # every legal action, best first
    # early in the game (less than a third of the Honor pool taken): the chances are an
    # estimate, not yet a forecast; show them as such
    chance_is_guess: bool = False

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
            r.view if r.HasField("view") else None, r.visits, r.best_visits,
            r.standard_error, r.best_standard_error, r.undersearched, r.explanation,
            tuple(ReviewOption(c.action, c.description, c.visits, c.win_probability,
                               c.standard_error) for c in r.candidates),
            r.chance_is_guess,
        )  # fmt: skip

    @property
    def worse(self) -> bool:
        """Whether to show "better: ...": an inaccuracy or worse (a GOOD or BEST move is as
        good as the best one, within what the search can tell)."""
        return self.label in (ReviewLabel.INACCURACY, ReviewLabel.MISTAKE, ReviewLabel.BLUNDER)


# A decision's accuracy falls linearly from 100 (BEST: no drop beyond the search's noise) to 0
# at this drop of the chance to win (where BLUNDER starts).
ACCURACY_ZERO_AT = 0.10


def decision_accuracy(r: DecisionReview) -> float:
    """0..100: 100 for BEST, ``100 * (1 - drop / 0.10)`` otherwise, 0 from a drop of 0.10."""
    if r.label is ReviewLabel.BEST:
        return 100.0
    return 100.0 * max(0.0, 1.0 - r.drop / ACCURACY_ZERO_AT)


def accuracy(reviews: list[DecisionReview]) -> float | None:
    """A seat's accuracy for the game, 0..100: the mean of its rated decisions'
    :func:`decision_accuracy` (None with no rated decision)."""
    if not reviews:
        return None
    return sum(decision_accuracy(r) for r in reviews) / len(reviews)


def key_moments(reviews: list[DecisionReview], n: int = 3) -> list[DecisionReview]:
    """The ``n`` decisions after which the seat's chance moved most against the decision
    before (the game's biggest swings, either way; the first against 0.5), in game order."""
    prev = 0.5
    swings = []
    for r in reviews:
        swings.append((abs(r.win_probability - prev), r.version, r))
        prev = r.win_probability
    top = sorted(swings, key=lambda x: (-x[0], x[1]))[:n]
    return [r for _, _, r in sorted(top, key=lambda x: x[1])]


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

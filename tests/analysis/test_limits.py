"""The engine's side of AnalyzePosition in one event loop, with a dispatcher that, like Celery,
returns nothing and lets the answer come back by SubmitAnalysis: one analysis at a time per
seat, the cap per process, and what the engine makes of a worker's answer."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from engine_service import rules
from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import game_pb2 as pb
from engine_service.server.analysis import Analyses, AnalysisSettings
from engine_service.server.dispatch import AnalysisFuture, Dispatcher, Payload
from engine_service.server.errors import ServiceError
from engine_service.server.games import Games
from engine_service.server.metrics import Metrics
from engine_service.server.tokens import AiCredentials, CredentialedDispatcher
from engine_service.store import MemoryStore


class Held(Dispatcher):
    """Sends analyses nowhere (the test answers them), keeping each payload."""

    name = "held"

    def __init__(self) -> None:
        self.sent: list[Payload] = []

    async def dispatch(self, payload: Payload) -> None:
        return None

    async def analyse(self, payload: Payload) -> AnalysisFuture | None:
        self.sent.append(payload)
        return None


async def scenario() -> dict[str, Any]:
    creds = AiCredentials.generate()
    held = Held()
    games = Games(MemoryStore(), CredentialedDispatcher(held, creds), Metrics(), "127.0.0.1:1",
                  None, creds)  # fmt: skip
    analyses = Analyses(games, AnalysisSettings(max_in_flight=1, per_minute=0))
    seats = [epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name=n) for n in ("A", "B")]
    g1 = await games.create(epb.CreateGameRequest(seats=seats, seed=1))
    g2 = await games.create(epb.CreateGameRequest(seats=seats, seed=2))

    def ask(g: epb.CreateGameResponse) -> epb.AnalyzePositionRequest:
        token = g.seat_tokens[g.view.to_move]
        return epb.AnalyzePositionRequest(game_id=g.game_id, token=token, budget_ms=50)

    async def refusal(req: epb.AnalyzePositionRequest) -> str:
        with pytest.raises(ServiceError) as e:
            await analyses.analyze(req)
        return e.value.reason

    first = asyncio.ensure_future(analyses.analyze(ask(g1)))
    while not held.sent:  # until it has been handed out
        await asyncio.sleep(0.001)
    out: dict[str, Any] = {"same_seat": await refusal(ask(g1)), "other_game": await refusal(ask(g2))}
    payload = held.sent[0]
    _, state, _ = await games.position(g1.game_id, ask(g1).token)
    legal = rules.legal_actions(state)
    answer = epb.SubmitAnalysisRequest(game_id=g1.game_id, analysis_id=payload["analysis_id"],
                                       token=payload["token"], iterations=30)  # fmt: skip
    for action, visits, p in [(legal[0], 10, 0.4), (legal[1], 20, 1.7), (99 << 16, 50, 0.5),
                              (legal[0], 30, 0.9)]:  # fmt: skip
        answer.candidates.add(action=action, visits=visits, win_probability=p)
    forged = epb.SubmitAnalysisRequest()
    forged.CopyFrom(answer)
    forged.token = creds.mint_reply(g1.game_id, "0" * 16, 10)
    with pytest.raises(ServiceError) as e:
        await analyses.deliver(forged)
    out["forged"] = e.value.reason
    await analyses.deliver(answer)
    out["answer"] = await first
    out["legal"], out["state"], out["payload"] = legal, state, payload
    return out


def test_limits_and_what_a_worker_answer_becomes() -> None:
    out = asyncio.run(scenario())
    assert out["same_seat"] == "ANALYSIS_IN_PROGRESS"
    assert out["other_game"] == "ANALYSIS_CAPACITY"
    assert out["forged"] == "UNKNOWN_TOKEN"
    a: epb.AnalyzePositionResponse = out["answer"]
    legal, state = out["legal"], out["state"]
    # only legal actions, each once (the first time it is named), best first, p clamped to 1
    assert [(c.action, c.visits, c.win_probability) for c in a.candidates] == [
        (legal[1], 20, 1.0), (legal[0], 10, 0.4)
    ]
    described = [rules.describe_action(state, x) for x in (legal[1], legal[0])]
    assert [c.description for c in a.candidates] == described
    assert (a.iterations, a.budget_ms) == (30, 50)
    # what went to the workers: the seat's view, never the state
    payload = out["payload"]
    sent = rules.View.deserialize(base64.b64decode(payload["view"]))
    assert sent == rules.view(state, a.seat) and "state" not in payload


async def cancelled_hint() -> dict[str, Any]:
    creds = AiCredentials.generate()
    held = Held()
    games = Games(MemoryStore(), CredentialedDispatcher(held, creds), Metrics(), "127.0.0.1:1",
                  None, creds)  # fmt: skip
    analyses = Analyses(games, AnalysisSettings(per_minute=0, refusal_pause=0.0))
    seats = [epb.SeatConfig(kind=pb.SeatInfo.HUMAN, name=n) for n in ("A", "B")]
    g = await games.create(epb.CreateGameRequest(seats=seats, seed=3))
    req = epb.AnalyzePositionRequest(game_id=g.game_id, token=g.seat_tokens[g.view.to_move],
                                     budget_ms=50)  # fmt: skip
    call = asyncio.ensure_future(analyses.analyze(req))
    while not held.sent:
        await asyncio.sleep(0.001)
    call.cancel()  # the player gave up; its search is still on its way
    with pytest.raises(asyncio.CancelledError):
        await call
    out: dict[str, Any] = {}
    with pytest.raises(ServiceError) as e:
        await analyses.analyze(req)
    out["while_searching"] = e.value.reason
    payload = held.sent[0]
    await analyses.deliver(epb.SubmitAnalysisRequest(
        game_id=g.game_id, analysis_id=payload["analysis_id"], token=payload["token"],
        iterations=1))  # fmt: skip
    for _ in range(5000):  # until the search's end has been seen (bounded)
        if not analyses._running:
            break
        await asyncio.sleep(0.001)
    again = asyncio.ensure_future(analyses.analyze(req))
    for _ in range(5000):
        if len(held.sent) == 2 or again.done():
            break
        await asyncio.sleep(0.001)
    out["sent"] = len(held.sent)
    again.cancel()
    return out


def test_a_cancelled_hint_holds_its_seats_slot_until_its_search_ends() -> None:
    out = asyncio.run(cancelled_hint())
    assert out == {"while_searching": "ANALYSIS_IN_PROGRESS", "sent": 2}

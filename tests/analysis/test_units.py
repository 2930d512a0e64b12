"""The pieces of AnalyzePosition without a server: the search reads only the seat's view, the
reply credential answers for one analysis only, and the worker's reply message."""

from __future__ import annotations

import base64

import pytest

from ai_workers.analysis import analyse_payload, analyse_view
from ai_workers.analysis_task import TASK_NAME, reply
from engine_service import rules
from engine_service.server.dispatch import ANALYSIS_TASK_NAME, describe_analysis
from engine_service.server.errors import ServiceError
from engine_service.server.tokens import AiCredentials
from tests.ai.positions import mid_game_states
from tests.ai.test_hidden_information import differs_in_hidden_cards, other_deal

POSITIONS = mid_game_states(3)


@pytest.mark.parametrize("index", range(len(POSITIONS)))
def test_the_analysis_is_the_same_when_hidden_cards_are_dealt_again(index: int) -> None:
    s = POSITIONS[index]
    seat = s.to_move()
    alt = other_deal(s, seat, index)
    assert differs_in_hidden_cards(s, alt, seat)
    legal = rules.legal_actions(s)
    first = analyse_view(rules.view(s, seat), legal, 60_000, iterations=300, seed=7)
    again = analyse_view(rules.view(alt, seat), legal, 60_000, iterations=300, seed=7)
    assert first["candidates"] == again["candidates"] and first["iterations"] == 300
    # and the seed matters (the test is not vacuous)
    other = analyse_view(rules.view(s, seat), legal, 60_000, iterations=300, seed=8)
    assert other["candidates"] != first["candidates"]


def test_a_payload_as_the_engine_sends_it() -> None:
    s = POSITIONS[0]
    seat = s.to_move()
    legal = rules.legal_actions(s)
    view = base64.b64encode(rules.view(s, seat).serialize()).decode()
    out = analyse_payload(view=view, legal=legal, budget_ms=5000, iterations=50, seed=1,
                          analysis_id="0" * 16, token="an1.x", game_id="g")  # fmt: skip
    assert sorted(a for a, *_ in out["candidates"]) == sorted(legal)
    expired = analyse_payload(view=view, legal=legal, budget_ms=5000, expires_at=1.0)
    assert expired["error"] and not expired["candidates"]


def test_a_reply_credential_answers_for_its_analysis_only() -> None:
    now = [1000.0]
    creds = AiCredentials(["a" * 40], 900.0, clock=lambda: now[0])
    token = creds.mint_reply("game1", "00aa" * 4, 10.0)
    creds.check_reply(token, "game1", "00aa" * 4)
    refusals = [
        (token, "game2", "00aa" * 4),  # another game
        (token, "game1", "00bb" * 4),  # another analysis
        (creds.mint("game1", 0, 3), "game1", "00aa" * 4),  # a move credential
        ("an1.99999999999.AAAA", "game1", "00aa" * 4),  # malformed
    ]
    for t, game, analysis in refusals:
        with pytest.raises(ServiceError) as e:
            creds.check_reply(t, game, analysis)
        assert e.value.reason == "UNKNOWN_TOKEN"
    other_key = AiCredentials(["b" * 40], 900.0, clock=lambda: now[0])
    with pytest.raises(ServiceError):
        other_key.check_reply(token, "game1", "00aa" * 4)
    with pytest.raises(ServiceError):  # and it never acts for a seat
        creds.grant(token, "game1")
    now[0] += 12
    with pytest.raises(ServiceError) as e:
        creds.check_reply(token, "game1", "00aa" * 4)
    assert e.value.reason == "AI_CREDENTIAL_EXPIRED"


def test_the_worker_task_is_the_one_the_engine_sends_and_shows_no_secret() -> None:
    assert TASK_NAME == ANALYSIS_TASK_NAME
    payload = {"analysis_id": "ab" * 8, "game_id": "g", "seat": 1, "version": 9,
               "token": "an1.secret", "view": "SECRETVIEW"}  # fmt: skip
    shown = describe_analysis(payload)
    assert "secret" not in shown and "SECRETVIEW" not in shown and "ab" * 8 in shown
    req = reply(payload, {"candidates": [[65536, 10, 0.25]], "iterations": 10})
    assert (req.analysis_id, req.token, req.iterations) == ("ab" * 8, "an1.secret", 10)
    assert [(c.action, c.visits, c.win_probability) for c in req.candidates] == [(65536, 10, 0.25)]

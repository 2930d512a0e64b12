"""A bot that fails never stops the game: it is logged and a legal fallback move is played."""

from __future__ import annotations

import logging

import pytest

from ai_workers.bots import BotSettings, registry
from ai_workers.bots import decide as D
from ai_workers.bots.knowledge import knowledge
from ai_workers.bots.policy import best_action
from engine_service import rules
from tests.ai.positions import mid_game_states


class Raises:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        raise RuntimeError("boom")


class Illegal:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        return max(legal) + 1


class NotAnInt:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> object:
        return str(legal[0])


class Mutates:
    """Returns a legal action but scribbles on the list it was given."""

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        a = legal[-1]
        legal.clear()
        return a


@pytest.fixture
def position() -> tuple[rules.View, list[int]]:
    s = mid_game_states(1)[0]
    return rules.view(s, s.to_move()), rules.legal_actions(s)


@pytest.mark.parametrize(
    ("bot", "reason"),
    [
        (Raises(), "bot_raised: RuntimeError"),
        (Illegal(), "illegal_action"),
        (NotAnInt(), "illegal_action"),
    ],
)
def test_a_failing_bot_is_replaced_by_the_fallback(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    position: tuple[rules.View, list[int]],
    bot: object,
    reason: str,
) -> None:
    view, legal = position
    monkeypatch.setitem(registry._cache, "flaky", bot)
    with caplog.at_level(logging.ERROR, logger="ascension.worker.decide"):
        d = D.decide(view, legal, BotSettings(name="flaky"))
    assert d.fallback_text == reason  # (never the exception's message: players see this)
    assert d.action in legal
    assert d.action == best_action(view.state, legal, knowledge(view.state.T))
    assert "flaky" in caplog.text and "fallback" in caplog.text


def test_unknown_bot_and_missing_view_fall_back(position: tuple[rules.View, list[int]]) -> None:
    view, legal = position
    d = D.decide(view, legal, BotSettings(name="not-installed"))
    assert d.fallback == D.LOAD_FAILED and d.action in legal
    assert d.detail.startswith("UnknownBotError: unknown bot 'not-installed'")
    d = D.decide(None, legal, BotSettings(name="heuristic"))
    assert d.fallback == D.NO_RULES_VIEW and d.action == legal[0]


class RaisesHere:
    """Raises at one line, or at another on odd calls."""

    def __init__(self) -> None:
        self.calls = 0

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        self.calls += 1
        if self.calls % 2:
            raise KeyError("first place")
        raise ValueError("second place")


def test_a_repeated_traceback_is_logged_once_then_counted(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    position: tuple[rules.View, list[int]],
) -> None:
    view, legal = position
    now = [1000.0]
    monkeypatch.setattr(D, "_repeats", D._Repeats(clock=lambda: now[0]))
    monkeypatch.setitem(registry._cache, "raiser", RaisesHere())
    with caplog.at_level(logging.ERROR, logger="ascension.worker.decide"):
        for _ in range(10):  # within a minute: two tracebacks, one per place it raised
            assert D.decide(view, legal, BotSettings(name="raiser")).fallback == D.BOT_RAISED
        assert [r.exc_info is not None for r in caplog.records] == [True, True]
        assert "the same failure again is counted" in caplog.records[0].getMessage()
        now[0] += D.REPEAT_LOG_SECONDS
        D.decide(view, legal, BotSettings(name="raiser"))  # a KeyError: summed up, no traceback
    last = caplog.records[-1]
    assert len(caplog.records) == 3 and last.exc_info is None
    assert "raised KeyError at " in last.getMessage() and "again, 5 time(s) in the last 60s" in (
        last.getMessage()
    )


def test_the_bot_gets_a_copy_of_the_legal_actions(
    monkeypatch: pytest.MonkeyPatch, position: tuple[rules.View, list[int]]
) -> None:
    view, legal = position
    before = list(legal)
    monkeypatch.setitem(registry._cache, "mutates", Mutates())
    d = D.decide(view, legal, BotSettings(name="mutates"))
    assert legal == before and d.action == before[-1] and not d.fallback


def test_a_good_bot_is_used_and_its_search_reported(position: tuple[rules.View, list[int]]) -> None:
    view, legal = position
    d = D.decide(view, legal, BotSettings(name="ismcts", iterations=30))
    assert not d.fallback and d.action in legal and d.iterations == 30 and d.search_seconds > 0


class IntLike:
    """An ML bot's answer: an integer type of its own library (as NumPy's int64)."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


class AnswersIntLike:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> object:
        return IntLike(legal[-1])


class AnswersTrue:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> object:
        return True


def test_an_int_like_answer_is_the_bots_own_a_bool_is_not(
    monkeypatch: pytest.MonkeyPatch, position: tuple[rules.View, list[int]]
) -> None:
    view, legal = position
    monkeypatch.setitem(registry._cache, "int-like", AnswersIntLike())
    d = D.decide(view, legal, BotSettings(name="int-like"))
    assert (d.action, d.fallback) == (legal[-1], "") and type(d.action) is int
    monkeypatch.setitem(registry._cache, "boolean", AnswersTrue())
    assert D.decide(view, legal, BotSettings(name="boolean")).fallback == "illegal_action"


def test_a_fallback_reason_is_one_short_line() -> None:
    """What the engine accepts (SubmitActionRequest.fallback_reason): a load error's message
    may hold newlines and be long."""
    d = D.Decision(0, "b", 0.0, D.LOAD_FAILED, detail="ImportError: no\nmodule " + "x" * 300)
    assert d.fallback_text.startswith("load_failed: ImportError: no module x")
    assert len(d.fallback_text) == D.MAX_REASON and d.fallback_text.isprintable()

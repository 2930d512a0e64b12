"""The bot plugin interface: a class with one method.

A bot is constructed with no arguments and asked, for each decision of its seat::

    bot.choose(view, legal, settings) -> action

``view`` is what the seat may know (``rules.View``: its own hand, public zones, every hidden
zone as a multiset), ``legal`` the legal action ids, ``settings`` the seat's
:class:`~ai_workers.bots.settings.BotSettings`. The answer must be one of ``legal``.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ai_workers.bots.settings import BotSettings
from engine_service import rules


@runtime_checkable
class Bot(Protocol):
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int: ...

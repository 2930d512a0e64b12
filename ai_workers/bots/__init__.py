"""Bots: ``random``, ``heuristic``, ``ismcts`` and any plugin of the ``ascension.bots`` group."""

from ai_workers.bots.base import Bot
from ai_workers.bots.registry import UnknownBotError, available_bots, load_bot
from ai_workers.bots.settings import BotSettings, BotSettingsError, validate_bot_settings

__all__ = [
    "Bot",
    "BotSettings",
    "BotSettingsError",
    "UnknownBotError",
    "available_bots",
    "load_bot",
    "validate_bot_settings",
]

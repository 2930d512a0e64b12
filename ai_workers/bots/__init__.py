"""Bots: ``random``, ``heuristic``, ``ismcts`` and any plugin of the ``ascension.bots`` group.

``BUILD`` says which build of the search's modules runs (ISMCTS, its policy, evaluation and
sampling, and the expert bot; engine_service/_build.py lists them): ``"compiled"`` (with the rules, by mypyc: engine_service/_build.py) or ``"python"``
(engine_service/native.py).
"""

from pathlib import Path

from engine_service import rules
from engine_service.native import CompiledPackage

NATIVE = CompiledPackage(__name__, Path(__file__).resolve().parent)
# (before any other module of the package is imported; compiled, the search calls the compiled
# rules directly, so it runs compiled only with them)
BUILD = NATIVE.choose("" if rules.BUILD == "compiled" else "the rules it calls run as Python")

# ruff: noqa: E402

from ai_workers.bots.base import Bot
from ai_workers.bots.registry import (
    UnknownBotError,
    available_bots,
    load_bot,
    validate_bot_settings,
)
from ai_workers.bots.settings import BotSettings, BotSettingsError

__all__ = [
    "BUILD",
    "Bot",
    "BotSettings",
    "BotSettingsError",
    "UnknownBotError",
    "available_bots",
    "load_bot",
    "validate_bot_settings",
]

"""Finding bots by name: the ``ascension.bots`` entry-point group, then the built-ins.

A package registers a bot in its ``pyproject.toml``::

    [project.entry-points."ascension.bots"]
    mybot = "mypackage.mybot:MyBot"

The built-ins (``random``, ``heuristic``, ``expert``, ``ismcts``) are registered the same way and are
also known here directly, so they load even when package metadata is missing.

The group is read when a process first needs it (a worker, a bot host, the engine at start),
and again by :func:`load_bot` when asked for a name it does not list: a bot installed later
is found; a module already imported is not imported again (a changed bot needs a new process).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from ai_workers.bots.base import Bot
from ai_workers.bots.settings import BotSettings, BotSettingsError
from engine_service import bot_plugins

BUILTINS = {
    "random": "ai_workers.bots.random_bot:RandomBot",
    "heuristic": "ai_workers.bots.heuristic:HeuristicBot",
    "ismcts": "ai_workers.bots.ismcts:ISMCTSBot",
    "expert": "ai_workers.bots.expert:ExpertBot",
}
log = logging.getLogger(__name__)
_cache: dict[str, Bot] = {}


class UnknownBotError(LookupError):
    """No bot of that name is installed."""


def _registered() -> dict[str, str]:
    return {**BUILTINS, **bot_plugins.scan()[0]}


def available_bots() -> list[str]:
    """Names of every installed bot, sorted."""
    return sorted(_registered())


def describe_bots() -> str:
    """What a worker logs at start."""
    return bot_plugins.describe(available_bots(), bot_plugins.WORKER)


def unknown_bot_message(name: str, known: Iterable[str]) -> str:
    return bot_plugins.unknown_message(name, known)


def _import(target: str) -> type:
    module_name, _, attr = target.partition(":")
    obj: object = importlib.import_module(module_name.strip())
    for part in attr.strip().split("."):
        obj = getattr(obj, part)
    if not isinstance(obj, type):
        raise TypeError(f"{target} is not a class")
    return obj


def load_bot(name: str) -> Bot:
    """An instance of the bot registered under ``name`` (one instance per process)."""
    bot = _cache.get(name)
    if bot is not None:
        return bot
    target = _registered().get(name)
    if target is None:  # installed since the group was read?
        bot_plugins.scan.cache_clear()
        importlib.invalidate_caches()
        target = _registered().get(name)
    if target is None:
        raise UnknownBotError(unknown_bot_message(name, available_bots()))
    try:
        cls = _import(target)
    except Exception:
        if name not in BUILTINS or target == BUILTINS[name]:
            raise
        log.exception("bot %r from %s failed to load; using the built-in", name, target)
        cls = _import(BUILTINS[name])
    instance = cls()
    if not callable(getattr(instance, "choose", None)):
        raise TypeError(f"bot {name!r} ({target}) has no choose(view, legal, settings) method")
    _cache[name] = instance
    return instance  # type: ignore[no-any-return]


def validate_bot_settings(
    raw: Mapping[str, Any], known_bots: Iterable[str] | None = None
) -> BotSettings:
    """Validate settings for a seat at ``CreateGame``: fields, ranges, and the bot's name
    against the installed bots (``ascension.bots`` entry points and the built-ins)."""
    settings = BotSettings.from_payload(raw)
    names = available_bots() if known_bots is None else sorted(set(known_bots))
    if settings.name not in names:
        raise BotSettingsError(unknown_bot_message(settings.name, names))
    return settings

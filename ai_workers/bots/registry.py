"""Finding bots by name: the ``ascension.bots`` entry-point group, then the built-ins.

A package registers a bot in its ``pyproject.toml``::

    [project.entry-points."ascension.bots"]
    mybot = "mypackage.mybot:MyBot"

The built-ins (``random``, ``heuristic``, ``expert``, ``ismcts``) are registered the same way and are
also known here directly, so they load even when package metadata is missing.

The group is read once per process, when it first needs it (a worker, a bot host, the engine
at start): a bot installed or changed later is seen after a restart.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from typing import Any

from ai_workers.bots.base import Bot
from ai_workers.bots.settings import BotSettings, BotSettingsError

GROUP = "ascension.bots"
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


@functools.cache
def _scan() -> tuple[dict[str, str], tuple[str, ...]]:
    """(name -> target of every bot, the distributions that register bots), read once."""
    found = dict(BUILTINS)
    providers: set[str] = set()
    try:
        for ep in entry_points(group=GROUP):
            found[ep.name] = ep.value
            dist = getattr(ep, "dist", None)
            if dist is not None:
                providers.add(f"{dist.name} {dist.version}")
    except Exception:  # broken metadata must not take the built-ins down with it
        log.exception("could not read the %s entry points; using the built-in bots", GROUP)
    return found, tuple(sorted(providers))


def _registered() -> dict[str, str]:
    return _scan()[0]


def available_bots() -> list[str]:
    """Names of every installed bot, sorted."""
    return sorted(_registered())


def where_bots_come_from() -> str:
    """Where the names were read, for messages: the entry-point group and the installed
    distributions that provide it."""
    providers = _scan()[1]
    of = f" (provided by {', '.join(providers)})" if providers else " (no package provides it)"
    return f"the entry-point group {GROUP!r}{of}, and the built-ins"


def describe_bots() -> str:
    """What a worker logs at start."""
    return (
        f"bots: {', '.join(available_bots())}, from {where_bots_come_from()}; read at start: "
        "restart to see bots installed or changed later"
    )


def unknown_bot_message(name: str, known: Iterable[str]) -> str:
    return (
        f"unknown bot {name!r}; installed bots: {', '.join(sorted(set(known)))}. Bots are read "
        f"when the engine and the workers start, from {where_bots_come_from()}: install the "
        "bot's package where both run, then restart them"
    )


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

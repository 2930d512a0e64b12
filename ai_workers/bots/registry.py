"""Finding bots by name: the ``ascension.bots`` entry-point group, then the built-ins.

A package registers a bot in its ``pyproject.toml``::

    [project.entry-points."ascension.bots"]
    mybot = "mypackage.mybot:MyBot"

The built-ins (``random``, ``heuristic``, ``expert``, ``ismcts``) are registered the same way and are
also known here directly, so they load even when package metadata is missing.
"""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import entry_points

from ai_workers.bots.base import Bot

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


def _registered() -> dict[str, str]:
    found = dict(BUILTINS)
    try:
        for ep in entry_points(group=GROUP):
            found[ep.name] = ep.value
    except Exception:  # broken metadata must not take the built-ins down with it
        log.exception("could not read the %s entry points; using the built-in bots", GROUP)
    return found


def available_bots() -> list[str]:
    """Names of every installed bot, sorted."""
    return sorted(_registered())


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
        raise UnknownBotError(
            f"unknown bot {name!r}; installed bots: {', '.join(available_bots())}"
        )
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

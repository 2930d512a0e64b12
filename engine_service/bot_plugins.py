"""Where bots come from: the ``ascension.bots`` entry-point group, read once per process.

The engine reads only the names (it never imports bot code), once: a bot installed later is
accepted after a restart of the engine. The workers load the classes in their bot processes,
which read the group again when asked for a name they do not know: a bot installed later is
found without a restart, but a bot's changed code is loaded only by new bot processes (restart
the workers). Both say so at start, and where they looked.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from importlib.metadata import entry_points

GROUP = "ascension.bots"
log = logging.getLogger(__name__)


@functools.cache
def scan() -> tuple[dict[str, str], tuple[str, ...]]:
    """(name -> ``module:Class`` of every registered bot, the distributions that register
    them as "name version"), read once; broken package metadata gives none."""
    found: dict[str, str] = {}
    providers: set[str] = set()
    try:
        for ep in entry_points(group=GROUP):
            found[ep.name] = ep.value
            dist = getattr(ep, "dist", None)
            if dist is not None:
                providers.add(f"{dist.name} {dist.version}")
    except Exception:  # broken metadata must not take the built-ins down with it
        log.exception("could not read the %s entry points", GROUP)
    return found, tuple(sorted(providers))


def origin() -> str:
    """Where the names were read: the group and the installed distributions providing it."""
    providers = scan()[1]
    of = f"provided by {', '.join(providers)}" if providers else "which no package provides here"
    return f"the entry-point group {GROUP!r} ({of})"


ENGINE, WORKER = "engine", "worker"
LATER = {
    ENGINE: "read at start: restart the engine to accept bots installed later",
    WORKER: "a bot installed later is found when first asked for; restart the worker to load "
    "a bot's changed code (its bot processes keep the code they loaded)",
}


def describe(names: Iterable[str], process: str = ENGINE) -> str:
    """What the engine (``ENGINE``) and each worker (``WORKER``) log at start."""
    return f"bots: {', '.join(names)}, from {origin()}; {LATER[process]}"


def unknown_message(name: str, names: Iterable[str]) -> str:
    return (
        f"unknown bot {name!r}; installed bots: {', '.join(sorted(set(names)))}. Bots are read "
        f"when the engine and the workers start, from {origin()}: install the bot's package "
        "where both run, then restart them"
    )

"""Bots named by a *spec*, for benchmarks: ``name[@budget][:option=value]...``.

For example ``heuristic``, ``ismcts@1s``, ``ismcts@250ms:backup=paranoid:reuse=1``,
``ismcts@3000it``. The budget (``ms`` or ``s``) is the bot's thinking time per decision (else
the tournament's); ``it`` gives a search a fixed number of iterations instead, with no time
limit, so that comparisons do not depend on the machine's load; options are passed to the
bot's class (``ISMCTSBot(**options)``), so variants of one bot can meet in one run.
"""

from __future__ import annotations

from dataclasses import dataclass

from ai_workers.bots.base import Bot
from ai_workers.bots.registry import load_bot


@dataclass(frozen=True, slots=True)
class BotSpec:
    label: str  # the spec as written: how results name this player
    name: str  # the registered bot
    time_ms: int | None  # None: the tournament's budget
    options: tuple[tuple[str, str], ...] = ()
    iterations: int = 0  # > 0: this many search iterations per decision, no time limit


def parse_spec(text: str) -> BotSpec:
    label = text.strip()
    head, *opts = label.split(":")
    name, _, budget = head.partition("@")
    time_ms: int | None = None
    iterations = 0
    if budget:
        b = budget.strip().lower()
        if b.endswith("it"):
            iterations = int(b[:-2])
            if iterations <= 0:
                raise ValueError(f"bot spec {text!r}: iterations must be > 0")
        elif b.endswith("ms"):
            time_ms = int(float(b[:-2]))
        elif b.endswith("s"):
            time_ms = int(float(b[:-1]) * 1000)
        else:
            time_ms = int(float(b))
    options = []
    for o in opts:
        k, eq, v = o.partition("=")
        if not eq or not k.strip():
            raise ValueError(f"bot spec {text!r}: option {o!r} is not key=value")
        options.append((k.strip(), v.strip()))
    if not name.strip():
        raise ValueError(f"bot spec {text!r} names no bot")
    return BotSpec(label, name.strip(), time_ms, tuple(options), iterations)


def make_bot(spec: BotSpec) -> Bot:
    """A fresh instance of the spec's bot (load_bot checks the name and caches a prototype)."""
    cls = type(load_bot(spec.name))
    return cls(**dict(spec.options)) if spec.options else cls()


def options_key(spec: BotSpec) -> str:
    """The name a bot process knows a spec's bot by: the bot's name, and its options if any
    (``ismcts:backup=paranoid``); the budget is the seat's settings, not the bot's."""
    return ":".join([spec.name, *(f"{k}={v}" for k, v in spec.options)])


_made: dict[str, Bot] = {}


def load_spec(key: str) -> Bot:
    """The bot of an :func:`options_key`, one instance per process (as :func:`load_bot`):
    a plain name is the registered bot, options make an instance of its class with them."""
    spec = parse_spec(key)
    if not spec.options:
        return load_bot(spec.name)
    bot = _made.get(key)
    if bot is None:
        bot = _made[key] = make_bot(spec)
    return bot

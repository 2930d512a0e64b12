"""Bot plugins that misbehave, for tests/reliability/test_bad_bots.py and
benchmarks/bad_bots.py. They are registered like any separately installed package: a
``*.dist-info`` directory on PYTHONPATH (:func:`install_entry_points`).

- ``sleeper`` never answers (a bot stuck on I/O or a lock);
- ``stubborn`` ignores every signal it can and swallows every exception, Celery's
  ``SoftTimeLimitExceeded`` included, and never answers;
- ``exiter`` ends its process with ``os._exit`` (a crash in native code looks the same);
- ``worker-killer`` kills the process that runs it and then that process's parent (in a worker,
  the bot host and the pool process: the supervisor cannot shield the pool process from a bot
  that hunts it down, so this exercises the dead letter);
- ``chatty`` prints on stdout before answering legally (it must not break the protocol);
- ``slow-load`` never finishes loading (its constructor hangs);
- ``snoop`` answers its last legal action when it can see the broker URL or a secret in its
  environment, its first otherwise;
- ``raiser`` raises on every decision (a bug: the game goes on with fallback moves);
- ``cheater`` answers an action that is not one of the legal ones.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from ai_workers.bots import BotSettings
from engine_service import rules

ENTRY_POINTS = {
    "sleeper": "tests.ai.bad_bots:Sleeper",
    "stubborn": "tests.ai.bad_bots:Stubborn",
    "exiter": "tests.ai.bad_bots:Exiter",
    "worker-killer": "tests.ai.bad_bots:WorkerKiller",
    "chatty": "tests.ai.bad_bots:Chatty",
    "slow-load": "tests.ai.bad_bots:SlowLoad",
    "snoop": "tests.ai.bad_bots:Snoop",
    "raiser": "tests.ai.bad_bots:Raiser",
    "cheater": "tests.ai.bad_bots:Cheater",
}


class Sleeper:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        time.sleep(3600)
        return legal[0]


class Stubborn:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1, signal.SIGALRM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        while True:
            try:
                time.sleep(0.5)
            except BaseException:  # swallowing everything is the point
                continue


class Exiter:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        os._exit(3)


class WorkerKiller:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        parent = os.getppid()
        if parent > 1:
            os.kill(parent, signal.SIGKILL)
        time.sleep(3600)
        return legal[0]


class Chatty:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        print("thinking about", legal, flush=True)
        sys.stdout.write("\x00\x00\x00\x05junk")
        sys.stdout.flush()
        return legal[-1]


class SlowLoad:
    def __init__(self) -> None:
        time.sleep(3600)

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        return legal[0]


class Snoop:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        seen = [k for k in os.environ if "BROKER" in k or "PASSWORD" in k or "KEY" in k]
        return legal[-1] if seen else legal[0]


class Raiser:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        raise ValueError(f"a bug, on a hand of {view.state.hands[view.seat]}")


class Cheater:
    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        return max(legal) + 1


def install_entry_points(directory: Path, entries: dict[str, str] | None = None) -> Path:
    """Write a dist-info that registers these bots (or ``entries``) in ``ascension.bots``."""
    info = directory / "ascension_bad_bots-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ascension-bad-bots\nVersion: 0.0\n"
    )
    lines = "".join(f"{name} = {target}\n" for name, target in (entries or ENTRY_POINTS).items())
    (info / "entry_points.txt").write_text(f"[ascension.bots]\n{lines}")
    return directory

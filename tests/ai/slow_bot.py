"""A test plugin, registered at run time through a ``*.dist-info`` directory on PYTHONPATH
(like any separately installed package): ISMCTS that thinks for the seat's whole ``time_ms``
while placing its ship, and 5 ms afterwards, so a test can kill a worker in mid-search and
still finish the game quickly."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ai_workers.bots import BotSettings
from ai_workers.bots.ismcts import ISMCTSBot
from engine_service import rules
from engine_service.rules.actions import D_PLACE

ENTRY_POINT = "slow-opening = tests.ai.slow_bot:SlowOpening"


class SlowOpening:
    def __init__(self) -> None:
        self.search = ISMCTSBot()

    def choose(self, view: rules.View, legal: list[int], settings: BotSettings) -> int:
        d = view.state.decision
        slow = d is not None and d[0] == D_PLACE
        budget = settings if slow else dataclasses.replace(settings, time_ms=5, iterations=0)
        return self.search.choose(view, legal, budget)


def install_entry_point(directory: Path) -> Path:
    """Write a dist-info that registers ``slow-opening`` in the ``ascension.bots`` group."""
    info = directory / "ascension_test_bots-0.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ascension-test-bots\nVersion: 0.0\n"
    )
    (info / "entry_points.txt").write_text(f"[ascension.bots]\n{ENTRY_POINT}\n")
    return directory

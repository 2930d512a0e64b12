"""A worker node's bot records (ai_workers/slots.py): slot caps per bot name, held by flock
across processes, and the quarantine of a bot that keeps overrunning."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ai_workers.slots import BotRecords


def test_one_bot_cannot_take_more_than_its_slots(tmp_path: Path) -> None:
    records = BotRecords(tmp_path, slots_per_bot=2, quarantine_failures=3, quarantine_seconds=60)
    a, b = records.acquire("sleeper"), records.acquire("sleeper")
    assert a is not None and b is not None
    assert records.acquire("sleeper") is None  # its cap
    assert records.in_use("sleeper") == 2
    other = records.acquire("heuristic")  # other bots are not affected
    assert other is not None
    a.release()
    c = records.acquire("sleeper")
    assert c is not None
    for slot in (b, c, other):
        slot.release()
    assert records.in_use("sleeper") == 0


def test_slots_are_shared_by_the_nodes_processes_and_freed_when_one_dies(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from pathlib import Path; from ai_workers.slots import BotRecords; "
         f"s = BotRecords(Path({str(tmp_path)!r}), 1, 3, 60).acquire('sleeper'); "
         "print(s is not None, flush=True); time.sleep(60)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        records = BotRecords(
            tmp_path, slots_per_bot=1, quarantine_failures=3, quarantine_seconds=60
        )
        assert records.acquire("sleeper") is None
    finally:
        holder.kill()
        holder.wait()
    slot = records.acquire("sleeper")  # the kernel dropped the dead process's lock
    assert slot is not None
    slot.release()


def test_a_misbehaving_bot_gets_one_slot_then_quarantine(tmp_path: Path) -> None:
    records = BotRecords(tmp_path, slots_per_bot=3, quarantine_failures=2, quarantine_seconds=60)
    assert records.cap("stubborn") == 3 and not records.quarantined("stubborn")
    records.misbehaved("stubborn")
    assert records.cap("stubborn") == 1 and not records.quarantined("stubborn")
    held = records.acquire("stubborn")
    assert held is not None and records.acquire("stubborn") is None
    held.release()
    # every process of the node sees the same record
    other = BotRecords(tmp_path, slots_per_bot=3, quarantine_failures=2, quarantine_seconds=60)
    other.misbehaved("stubborn")
    assert records.quarantined("stubborn") and records.record("stubborn").failures == 2
    assert not records.quarantined("stubborn", now=time.time() + 61)  # tried again later
    records.behaved("stubborn")  # one good answer clears the count, not the one-slot period
    assert not records.quarantined("stubborn") and records.cap("stubborn") == 1
    assert records.cap("heuristic") == 3


def test_without_a_directory_records_stay_in_the_process() -> None:
    records = BotRecords(None, slots_per_bot=1, quarantine_failures=1, quarantine_seconds=60)
    a, b = records.acquire("x"), records.acquire("x")
    assert a is not None and b is not None  # no node to share: slots are not limited
    records.misbehaved("x")
    assert records.quarantined("x")
    assert BotRecords(None, 1, 0, 60).quarantined("x") is False  # each process its own


def test_built_in_bots_may_use_every_slot_until_they_misbehave(tmp_path: Path) -> None:
    records = BotRecords(tmp_path, slots_per_bot=1, quarantine_failures=3, quarantine_seconds=60,
                         all_slots=2)  # fmt: skip
    held = [records.acquire("heuristic"), records.acquire("heuristic")]
    assert all(held) and records.acquire("heuristic") is None
    plugin = records.acquire("sleeper")
    assert plugin is not None and records.acquire("sleeper") is None  # a plug-in: one of two
    for slot in (*held, plugin):
        assert slot is not None
        slot.release()
    records.misbehaved("heuristic")
    assert records.cap("heuristic") == 1

"""Driving ``ascension`` through a real pseudo-terminal (pexpect), as a person would."""

from __future__ import annotations

import io
import os
import re
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
PROMPT = r"Your choice \(([\d, -]+)[^)]*\): "  # group 1: the menu's numbers, "1-4, 7"
CONFIRM = r"\(y/n\) "  # after a question asked before a move (sailing, ending a turn)
MENU_ITEM = re.compile(r"(?:^|\s)(\d{1,2}) (\S.*?)(?=\s{2,}\d{1,2} \S|\s*$)", re.M)
# Which action a scripted player takes first: fights and buys end games sooner.
PREFERENCE = ("Defeat", "Acquire", "Play", "Place", "Reveal", "Raid", "Put", "Choose", "Banish")


def ascension_command() -> list[str]:
    script = Path(sys.executable).with_name("ascension")
    return [str(script)] if script.exists() else [sys.executable, "-m", "clients.cli"]


def plain(text: str) -> str:
    return ANSI.sub("", text).replace("\r", "")


class Terminal:
    """``ascension ARGS`` in an 80x24 pseudo-terminal; ``output`` is everything it printed."""

    def __init__(
        self,
        args: list[str],
        *,
        rows: int = 24,
        cols: int = 80,
        timeout: float = 60,
        preexec_fn: Callable[[], None] | None = None,
    ):
        cmd = ascension_command()
        env = dict(os.environ, TERM="xterm-256color", COLUMNS=str(cols), LINES=str(rows))
        env.pop("NO_COLOR", None)
        self._out = io.StringIO()
        self.child = pexpect.spawn(
            cmd[0], [*cmd[1:], *args], env=env, dimensions=(rows, cols), encoding="utf-8",
            codec_errors="replace", timeout=timeout, preexec_fn=preexec_fn,
        )  # fmt: skip
        self.child.logfile_read = self._out

    @property
    def output(self) -> str:
        return plain(self._out.getvalue())

    def expect(self, patterns: list[object], timeout: float | None = None) -> int:
        return int(self.child.expect(patterns, timeout=timeout))

    def send(self, line: str) -> None:
        self.child.sendline(line)

    def menu(self) -> dict[int, str]:
        """The numbered actions of the screen just shown (the text before the prompt)."""
        before = plain(self.child.before or "")
        section = before.rsplit("Your move", 1)[-1]
        return {int(n): d.strip() for n, d in MENU_ITEM.findall(section)}

    def wait_exit(self, timeout: float = 30) -> int:
        self.child.expect(pexpect.EOF, timeout=timeout)
        self.child.close()
        status = self.child.exitstatus
        if status is None and self.child.signalstatus is not None:
            return -int(self.child.signalstatus)
        return int(status if status is not None else -1)

    def kill(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)


def numbers(described: str) -> set[int]:
    """The numbers a prompt names: "1-3, 5" -> {1, 2, 3, 5}."""
    out: set[int] = set()
    for part in filter(None, (p.strip() for p in described.split(","))):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def choose(menu: dict[int, str]) -> int:
    """A scripted player: the first action by PREFERENCE, else anything but ending the turn."""
    for verb in PREFERENCE:
        for n, desc in sorted(menu.items()):
            if desc.startswith(verb):
                return n
    others = [n for n, d in sorted(menu.items()) if not d.startswith("End")]
    return others[0] if others else min(menu)


def port_open(address: str) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1):
            return True
    except OSError:
        return False


def wait_closed(address: str, seconds: float = 15) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not port_open(address):
            return True
        time.sleep(0.2)
    return False

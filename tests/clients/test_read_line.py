"""The terminal client's prompt gives way to Ctrl-C however the signal arrives.

Python runs a signal handler only between bytecodes. A SIGINT taken by another thread (gRPC's
threads do not block it) or arriving just before the blocking read() starts sets the handler's
flag but does not interrupt the read: ``input()`` alone would then wait for the next Enter.
(A client started with SIGINT ignored by its parent: ``test_terminal_e2e.py``.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time

SCRIPT = """
import signal, sys, threading, time
from rich.console import Console
from clients.terminal.play import read_line

def interrupt_from_another_thread():
    time.sleep(0.5)
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # this thread, not the main one

signal.signal(signal.SIGINT, signal.default_int_handler)  # as the CLI does (the parent may ignore it)
threading.Thread(target=interrupt_from_another_thread).start()
try:
    read_line(Console(), "Your choice: ")
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
print("read a line", flush=True)
"""


def test_ctrl_c_taken_by_another_thread_still_stops_the_prompt() -> None:
    t0 = time.monotonic()
    # stdin: a pipe that stays open and empty, as a terminal where nobody types.
    r, w = os.pipe()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", SCRIPT], stdin=r, stdout=subprocess.PIPE, text=True
        )
        try:
            out, _ = proc.communicate(timeout=20)
        finally:
            proc.kill()
    finally:
        os.close(r)
        os.close(w)
    assert proc.returncode == 130, out
    assert "interrupted" in out
    assert time.monotonic() - t0 < 15


def test_a_typed_line_is_read() -> None:
    script = "from rich.console import Console\nfrom clients.terminal.play import read_line\n"
    script += "print(repr(read_line(Console(), 'Your choice: ')))"
    out = subprocess.run(
        [sys.executable, "-c", script], input="12\n", capture_output=True, text=True, timeout=20
    ).stdout
    assert out.endswith("'12'\n"), out
    ended = subprocess.run(
        [sys.executable, "-c", script], input="", capture_output=True, text=True, timeout=20
    )
    assert "EOFError" in ended.stderr

"""The README's quickstart, timed: from a fresh clone to the first prompt of ``ascension play``.

Clones this repository's HEAD (``git clone``, no network) into a temporary directory, runs the
README's first command there in a pseudo-terminal (as a person types it: a fresh venv, the
install, then ``ascension play``), and times it to the first prompt of the game; then quits
the game. The build's own lines (``ascension-engine build: ...``) and the game's line about
the compile it started in the background are shown as they come; then it waits for that
compile (``python -m engine_service.native_build`` waits for it) and times the second start,
compiled. pip's download cache is whatever this machine has (say so beside the figure).

How busy the machine was goes with the figures: the load average (1 minute) before and
after, and the time of a 20-million-step Python loop just before (about 1-2 s on this
project's 2-core machine when idle).

    python benchmarks/quickstart.py [--timeout 900] [--keep] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parents[1]
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>78]")
PROMPT = r"Your choice \("
BUILD_LINE = r"ascension-engine build: ([^\r\n]*)"


def readme_command(readme: Path) -> str:
    """The first ```sh block under the README's "Quickstart" heading: one line."""
    text = readme.read_text()
    start = text.index("## Quickstart")
    m = re.search(r"```sh\n(.*?)\n```", text[start:], re.S)
    if m is None:
        raise SystemExit("no ```sh block under ## Quickstart in README.md")
    return m.group(1).strip()


def loop_seconds(steps: int = 20_000_000) -> float:
    """How long a plain Python loop takes here now: how busy the machine is."""
    t0 = time.perf_counter()
    n = 0
    for i in range(steps):
        n += i
    return time.perf_counter() - t0


def to_first_prompt(
    command: str,
    clone: Path,
    env: dict[str, str],
    timeout: float,
    t0: float,
    compiling: bool = True,
) -> tuple[float, bool]:
    """Run ``command`` in a pseudo-terminal until the game's first prompt, then leave the game;
    the seconds from ``t0`` to the prompt, and whether a compile was started in the
    background (its log is there)."""
    child = pexpect.spawn(
        "bash", ["-c", command], cwd=str(clone), env=env, dimensions=(40, 100),
        encoding="utf-8", codec_errors="replace", timeout=timeout,
    )  # fmt: skip
    try:
        while True:
            i = child.expect([BUILD_LINE, PROMPT, pexpect.EOF])
            now = time.monotonic() - t0
            if i == 0:
                line = ANSI.sub("", child.match.group(1)).strip()
                print(f"[{now:6.1f} s] build: {line}", flush=True)
            elif i == 1:
                print(f"[{now:6.1f} s] first prompt of `ascension play`", flush=True)
                break
            else:
                print(ANSI.sub("", child.before or "")[-3000:])
                raise SystemExit("the command ended before the game's first prompt")
        child.sendline("q")
        child.expect([r"\(y/n\)", pexpect.EOF], timeout=30)
        child.sendline("y")
        child.expect(pexpect.EOF, timeout=60)
    finally:
        child.close(force=True)
    background = (clone / "build" / "ascension-native" / "compile.log").exists()
    if background and compiling:
        print(f"[{now:6.1f} s] the game started the compile in the background", flush=True)
    return now, background


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before giving up")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()

    command = readme_command(ROOT / "README.md")
    workdir = Path(tempfile.mkdtemp(prefix="ascension-quickstart-"))
    clone = workdir / "repo"
    load_before = os.getloadavg()[0]
    loop = loop_seconds()
    print(f"README's first command: {command}")
    print(f"load {load_before:.1f}; a 20-million-step Python loop: {loop:.1f} s", flush=True)
    t0 = time.monotonic()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    env.update(TERM="xterm-256color", COLUMNS="100", LINES="40")
    compiled_at: float | None = None
    second: float | None = None
    try:
        first, background = to_first_prompt(command, clone, env, args.timeout, t0)
        load_after = os.getloadavg()[0]
        if background:
            subprocess.run(
                [str(clone / ".venv/bin/python"), "-m", "engine_service.native_build"],
                cwd=clone, env=env, check=False, timeout=args.timeout,
            )  # fmt: skip
            compiled_at = time.monotonic() - t0
            print(f"[{compiled_at:6.1f} s] the background compile is done", flush=True)
            t1 = time.monotonic()
            second, _ = to_first_prompt(
                ".venv/bin/ascension play", clone, env, args.timeout, t1, compiling=False
            )  # fmt: skip
    finally:
        if args.keep:
            print(f"clone kept in {clone}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nfresh clone to the first prompt: {first:.0f} s at load {load_before:.1f} "
          f"(then {load_after:.1f}; the 20-million-step loop {loop:.1f} s)")  # fmt: skip
    if compiled_at is not None and second is not None:
        print(f"the compile in the background done {compiled_at:.0f} s after the clone; "
              f"the next start, compiled, to its first prompt: {second:.0f} s")  # fmt: skip
    if args.json:
        print(json.dumps({
            "benchmark": "quickstart", "command": command, "first_prompt_s": round(first, 1),
            "load_before": round(load_before, 2), "load_after": round(load_after, 2),
            "loop_s": round(loop, 2), "background_compile_done_s": compiled_at and round(compiled_at, 1),
            "second_start_s": second and round(second, 1), "cpus": os.cpu_count(),
        }))  # fmt: skip


if __name__ == "__main__":
    main()

"""The README's quickstart, timed: from a fresh clone to the first prompt of ``ascension play``.

Clones this repository's HEAD (``git clone``, no network) into a temporary directory, runs the
README's first command there in a pseudo-terminal (as a person types it: a fresh venv, the
install with its compile, then ``ascension play``), and times it to the first prompt of the
game; then quits the game. The build's own lines (``ascension-engine build: ...``) are shown
as they come. pip's download cache is whatever this machine has (say so beside the figure).

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
DONE_PATTERN = re.compile(r"compiled in (\d+) s")


def readme_command(readme: Path) -> str:
    """The first ```sh block under the README's "Quickstart" heading: one line."""
    text = readme.read_text()
    start = text.index("## Quickstart")
    m = re.search(r"```sh\n(.*?)\n```", text[start:], re.S)
    if m is None:
        raise SystemExit("no ```sh block under ## Quickstart in README.md")
    return m.group(1).strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds before giving up")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    args = ap.parse_args()

    command = readme_command(ROOT / "README.md")
    workdir = Path(tempfile.mkdtemp(prefix="ascension-quickstart-"))
    clone = workdir / "repo"
    print(f"README's first command: {command}")
    t0 = time.monotonic()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p
    )
    env.update(TERM="xterm-256color", COLUMNS="100", LINES="40")
    child = pexpect.spawn(
        "bash", ["-c", command], cwd=str(clone), env=env, dimensions=(40, 100),
        encoding="utf-8", codec_errors="replace", timeout=args.timeout,
    )  # fmt: skip
    build_s: float | None = None
    compiled: int | None = None
    first_prompt: float | None = None
    try:
        while True:
            i = child.expect([BUILD_LINE, PROMPT, pexpect.EOF])
            now = time.monotonic() - t0
            if i == 0:
                line = ANSI.sub("", child.match.group(1)).strip()
                print(f"[{now:6.1f} s] build: {line}", flush=True)
                done = DONE_PATTERN.search(line)
                if done:
                    compiled, build_s = int(done.group(1)), now
            elif i == 1:
                first_prompt = now
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
        if args.keep:
            print(f"clone kept in {clone}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"\nfresh clone to the first prompt: {first_prompt:.0f} s"
          + (f" (the compile: {compiled} s, the install done at {build_s:.0f} s)" if compiled else ""))  # fmt: skip
    if args.json:
        print(json.dumps({
            "benchmark": "quickstart", "command": command, "first_prompt_s": round(first_prompt, 1),
            "compile_s": compiled, "cpus": os.cpu_count(),
        }))  # fmt: skip


if __name__ == "__main__":
    main()

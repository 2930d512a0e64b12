"""The code in the docs runs: every ```python, ```sh, ```bash and ```console block of README.md
and docs/*.md either runs here, or says on the line before its fence why it does not
(``<!-- not run: the reason -->``).

Blocks run as a reader would run them in a new shell, from the repository root, in an
environment of their own: a new shell's PATH (no virtualenv on it, no ``VIRTUAL_ENV`` or
``PYTHONPATH`` inherited), so a block that runs the project's commands names them by the
virtualenv's path (``.venv/bin/ascension``, ``.venv/bin/python``), as the pages tell readers
to; each within a time bound:

- Python blocks run as a script against a real engine started for them: a default
  ``ascension-engine serve`` (games in memory, bots in its local process pool, no operator
  credentials) on a free loopback port. The address a block names, ``localhost:50051``, is
  replaced by that engine's, and ``ASCENSION_ADDRESS`` names it too.
- Shell blocks run with ``bash -e``. A block that starts an engine itself (``ascension-engine
  serve``) gets a free loopback port for it through the engine's own variables
  (``ENGINE_GRPC_PORT``, ``ENGINE_HOST``; metrics off), and ``ASCENSION_ADDRESS`` names that
  port for the clients it runs. Whatever a block leaves running is stopped at its end.
- ``console`` blocks run their ``$ `` lines as a shell block.
- A Python block whose text is a file of the repository that a shell block of the same page
  runs (``python -m module`` or ``python path``) is run by that block: its text is checked to
  be the file's, byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from clients.embedded import free_port
from clients.sdk import Client, UnavailableError

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = ("python", "sh", "bash", "console")
NOT_RUN = re.compile(r"<!-- not run: (\S.*\S) -->")
SHOWN_ADDRESS = "localhost:50051"
BLOCK_SECONDS = 180  # one block, engine start included: a whole game on a busy 2-core machine


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    before: str  # the line before the fence

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def reason_not_run(self) -> str | None:
        match = NOT_RUN.fullmatch(self.before.strip())
        return match.group(1) if match else None


def blocks(page: Path) -> Iterator[Block]:
    lines = page.read_text().splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)", lines[i])
        if not fence:
            i += 1
            continue
        indent, marks, language = fence.groups()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(marks):
            end += 1
        if language in LANGUAGES:
            body = [line.removeprefix(indent) for line in lines[i + 1 : end]]
            yield Block(page, i + 1, language, "\n".join(body) + "\n", lines[i - 1] if i else "")
        i = end + 1


ALL = [b for page in PAGES for b in blocks(page)]
RUN = [b for b in ALL if b.reason_not_run is None]


def files_run_by(block: Block) -> set[Path]:
    """Repository files a shell block runs with ``python -m module`` or ``python path``."""
    found = set()
    for module in re.findall(r"\bpython3? -m ([\w.]+)", block.code):
        path = ROOT.joinpath(*module.split("."))
        found |= {p for p in (path.with_suffix(".py"), path / "__main__.py") if p.is_file()}
    for script in re.findall(r"\bpython3? ([\w./-]+\.py)\b", block.code):
        if (ROOT / script).is_file():
            found.add(ROOT / script)
    return found


def run_by_a_shell_block(block: Block) -> Path | None:
    """The file a shell block of the same page runs whose text this Python block is."""
    for other in RUN:
        if other.page == block.page and other.language != "python":
            for path in files_run_by(other):
                if path.read_text() == block.code:
                    return path
    return None


# A new shell's PATH: the system's directories, without any virtualenv's
NEW_SHELL_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
NOT_INHERITED = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "CONDA_PREFIX")
# The project's commands, at a command's place in a shell line
PROJECT_COMMAND = re.compile(
    r"(?:^|&&|\|\||;|\||\bnice|\btime|\bexec)\s*(?:[A-Z_]+=\S+\s+)*"
    r"(python3?|pip3?|ascension-engine|ascension-worker|ascension|pytest)(?=\s|$)"
)
# Pages, or sections of them, about the installed package on a server or in the image (whose
# commands are on its PATH), not about this checkout
INSTALLED = {"operations.md": "", "bots.md": "## Running workers"}


def environment(address: str, port: int | None = None) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items()
        if not k.startswith(("ENGINE_", "REDIS_", "CELERY_")) and k not in NOT_INHERITED
    }  # fmt: skip
    env["PATH"] = NEW_SHELL_PATH
    env["ASCENSION_ADDRESS"] = address
    env["PYTHONUNBUFFERED"] = "1"
    if port is not None:  # for a block that starts its own engine
        env.update(ENGINE_GRPC_PORT=str(port), ENGINE_HOST="127.0.0.1", ENGINE_METRICS_PORT="0")
    return env


def stop_session(proc: subprocess.Popen[str]) -> None:
    """SIGTERM to every process of the session, SIGKILL to what is left after 10 s."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        proc.poll()  # reap the session's leader once it exits
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run(args: list[str], env: dict[str, str], name: str, log: Path) -> str:
    """Run in a session of its own, then stop the session whole (an engine a block started in
    the background included). Output goes to a file: a process left running keeps no pipe
    open to wait on."""
    with log.open("w") as out:
        proc = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, text=True,
        )  # fmt: skip
        try:
            proc.wait(timeout=BLOCK_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        finally:
            stop_session(proc)
    text = log.read_text(errors="replace")
    assert proc.returncode is not None and proc.returncode == 0, (
        f"{name} failed or did not finish within {BLOCK_SECONDS} s "
        f"(exit {proc.returncode}):\n{text[-4000:]}"
    )
    return text


@pytest.fixture(scope="module")
def engine() -> Iterator[str]:
    """A default ``ascension-engine serve`` on a free loopback port; its address."""
    port = free_port()
    env = environment(f"127.0.0.1:{port}", port)
    script = Path(sys.executable).with_name("ascension-engine")
    proc = subprocess.Popen(
        [str(script), "serve"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        with Client(f"127.0.0.1:{port}", timeout=5) as client:
            try:
                client.wait_ready(timeout=60)
            except UnavailableError:
                pytest.fail(f"the engine did not start (exit code {proc.poll()})")
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_every_block_runs_or_says_why() -> None:
    assert len(ALL) >= 10, "the doc blocks were not found"
    unclear = [
        b.name for b in ALL if b.before.strip().startswith("<!--") and b.reason_not_run is None
    ]
    assert not unclear, (
        f"a comment before these blocks is not `<!-- not run: the reason -->`: {unclear}"
    )
    for block in RUN:
        if block.language == "console":
            assert "$ " in block.code, f"{block.name}: a console block with no `$ ` command to run"


def section_of(block: Block) -> str:
    """The ``## `` heading a block is under."""
    above = block.page.read_text().splitlines()[: block.line]
    return next((line for line in reversed(above) if line.startswith("## ")), "")


def test_shell_commands_name_the_virtualenv() -> None:
    """Every block's command that runs the project (run or not) says where it is:
    ``.venv/bin/ascension``, not ``ascension`` (a new shell has no virtualenv on its PATH:
    "command not found", or another Python without the project's packages)."""
    bare = []
    for block in ALL:
        installed = INSTALLED.get(block.page.name)
        if block.language == "python" or (
            installed is not None and (not installed or section_of(block) == installed)
        ):
            continue
        for n, line in enumerate(block.code.splitlines()):
            command = line.strip()
            if block.language == "console":
                if not command.startswith("$ "):
                    continue
                command = command[2:]
            if command.startswith("#") or command.startswith("python3 -m venv"):
                continue
            if PROJECT_COMMAND.search(command.split(" #")[0]):
                bare.append(f"{block.name}+{n + 1}: {command}")
    assert not bare, "commands without .venv/bin/ (a new shell has no virtualenv):\n" + "\n".join(
        bare
    )


@pytest.mark.parametrize("example", ["quickstart.py", "two_players.py"])
def test_the_sdk_examples_are_shown_whole_and_run(example: str) -> None:
    """docs/clients.md shows each SDK example script whole, and runs it."""
    script = ROOT / "clients" / "sdk" / "examples" / example
    shown = [b for b in RUN if b.page.name == "clients.md" and b.language == "python"]
    assert any(run_by_a_shell_block(b) == script for b in shown), (
        f"docs/clients.md must show clients/sdk/examples/{example} as it is, run by a shell block"
    )


@pytest.mark.parametrize("block", RUN, ids=lambda b: b.name)
def test_block_runs(block: Block, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if block.language == "python":
        if run_by_a_shell_block(block) is not None:
            return  # that shell block runs it, and this is its text
        address: str = request.getfixturevalue("engine")
        script = tmp_path / "block.py"
        script.write_text(block.code.replace(SHOWN_ADDRESS, address))
        run([sys.executable, str(script)], environment(address), block.name, tmp_path / "out.txt")
        return
    code = block.code
    if block.language == "console":
        code = "\n".join(line[2:] for line in code.splitlines() if line.startswith("$ ")) + "\n"
    port = free_port()
    address = f"127.0.0.1:{port}"
    run(
        ["bash", "-e", "-c", code.replace(SHOWN_ADDRESS, address)],
        environment(address, port), block.name, tmp_path / "out.txt",
    )  # fmt: skip

"""Bots are untrusted code with a deadline: the move task runs them in a supervised process.

Each worker process (a Celery pool process, or the engine's embedded AI process) keeps one
*bot host*: a child process (``python -m ai_workers.supervisor``) that loads bots by name and
answers one decision at a time over a pipe. It is reused from move to move and replaced when
it dies or overruns. The supervising side (:class:`BotHost`) allows

- ``WORKER_BOT_LOAD_SECONDS`` to start a host and load a bot into it (a plugin may take a
  while to import: that time is not taken from a decision);
- the seat's budget (``BotSettings.budget_ms``) plus ``WORKER_DECISION_GRACE_SECONDS`` for a
  decision.

Past either, the host's whole process group is killed with SIGKILL (a bot that sleeps, spins,
ignores signals or swallows ``SoftTimeLimitExceeded`` cannot outlast it) and
:class:`BotFailed` is raised: the caller plays the fallback move itself. A host that exits
(``os._exit``, a crash) raises the same. Bot code thus never blocks nor kills the worker
process. The host dies with its parent (``engine_service/lifeline.py``: ``PR_SET_PDEATHSIG``
on Linux, and a thread that notices being orphaned), so a lost worker leaves no bot behind.

Protocol: each message is a 4-byte big-endian length and a JSON object, one request then one
answer. ``{"op": "load", "bot": name}`` -> ``{"ok": true}`` or ``{"ok": false, "error": ...}``;
``{"op": "choose", "view": base64 rules view, "legal": [...], "settings": {...}}`` ->
``{"action", "fallback", "iterations", "search_seconds", "detail"}``. The host keeps the protocol on
private descriptors: whatever a bot prints goes to the worker's log (stderr).
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

from ai_workers.bots.decide import (
    BOT_RAISED,
    ILLEGAL_ACTION,
    LOAD_FAILED,
    NO_RULES_VIEW,
    Decision,
    decide,
    fallback_action,
    log_failure,
)
from ai_workers.bots.registry import load_bot
from ai_workers.bots.settings import BotSettings
from ai_workers.bots.specs import load_spec
from ai_workers.slots import BotRecords
from engine_service import rules
from engine_service.lifeline import die_with_parent

log = logging.getLogger("ascension.worker.supervisor")
decide_log = logging.getLogger("ascension.worker.decide")

MAX_FRAME = 64 * 1024 * 1024
PARENT_ENV = "ASCENSION_BOT_HOST_PARENT"
SPECS_ENV = "ASCENSION_BOT_HOST_SPECS"  # "1": bot names are specs with options (benchmarks)
# Why a decision got no answer from the bot (with decide's own reasons: the bot raised, ...).
DEADLINE, LOAD_TIMEOUT, BOT_DIED, BAD_ANSWER = "deadline", "load_timeout", "bot_died", "bad_answer"
# The bot was not asked: it misbehaved too often in a row lately (the reason's detail is the
# latest misbehaviour's own reason: "quarantined: deadline: no answer within 6.0s").
QUARANTINED = "quarantined"
# The fallbacks that are the bot's doing count as misbehaviour (ai_workers/slots.py: in a row,
# quarantine; lately, one slot): overruns and crashes, which cost time, and bots that raise,
# fail to load or answer nonsense on every decision, which would log a traceback each time.
MISBEHAVIOUR = frozenset(
    {DEADLINE, LOAD_TIMEOUT, BOT_DIED, BAD_ANSWER, LOAD_FAILED, BOT_RAISED, ILLEGAL_ACTION}
)


# Variables a bot host does not inherit from its worker: the bot has no use for the broker's
# URL (which carries its password) nor for any key. Defence in depth only: the host runs as
# the worker's user (docs/reliability.md, "Not promised").
SECRET_HINTS = ("PASSWORD", "SECRET", "TOKEN", "CREDENTIAL", "_KEY", "BROKER_URL", "REDIS_URL")


def secret_name(name: str) -> bool:
    upper = name.upper()
    return any(hint in upper for hint in SECRET_HINTS)


class BotFailed(Exception):
    """The bot host gave no usable answer; ``reason`` is one of the constants above."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class _Timeout(Exception):
    pass


class _Closed(Exception):
    pass


@dataclass(frozen=True, slots=True)
class Answer:
    action: int
    fallback: str  # set when the host's own decide() fell back (the bot raised, ...)
    iterations: int
    search_seconds: float
    detail: str = ""  # Decision.detail


# ---- framing ---------------------------------------------------------------------------------


def _frame(obj: dict[str, Any]) -> bytes:
    data = json.dumps(obj, separators=(",", ":")).encode()
    return len(data).to_bytes(4, "big") + data


def _read_exactly(fd: int, n: int, deadline: float | None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                raise _Timeout
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            raise _Closed
        buf += chunk
    return bytes(buf)


def _read_frame(fd: int, deadline: float | None) -> dict[str, Any]:
    n = int.from_bytes(_read_exactly(fd, 4, deadline), "big")
    if n > MAX_FRAME:
        raise ValueError(f"frame of {n} bytes")
    obj = json.loads(_read_exactly(fd, n, deadline))
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    return obj


def _write_all(fd: int, data: bytes, deadline: float) -> None:
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise _Timeout
        _, ready, _ = select.select([], [fd], [], remaining)
        if not ready:
            raise _Timeout
        try:
            n = os.write(fd, view[: 1 << 16])
        except BrokenPipeError:
            raise _Closed from None
        view = view[n:]


# ---- the supervising side --------------------------------------------------------------------


class BotHost:
    """One bot host process, started on demand; not thread-safe (one decision at a time)."""

    def __init__(self, load_seconds: float, log_level: str = "INFO", specs: bool = False) -> None:
        self.load_seconds = load_seconds
        self.log_level = log_level
        self.specs = specs  # bot names are specs (``name:option=value``): benchmarks' bots
        self._proc: subprocess.Popen[bytes] | None = None
        self._loaded: set[str] = set()
        self.started = 0  # hosts started by this object (a restart after a kill counts)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _start(self) -> subprocess.Popen[bytes]:
        env = {k: v for k, v in os.environ.items() if not secret_name(k)}
        env.update({PARENT_ENV: str(os.getpid()), "LOG_LEVEL": self.log_level})
        env[SPECS_ENV] = "1" if self.specs else ""
        # Its own process group, so that a kill reaches whatever the bot started too.
        proc = subprocess.Popen(
            [sys.executable, "-m", "ai_workers.supervisor"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        self._proc = proc
        self._loaded = set()
        self.started += 1
        return proc

    def close(self) -> None:
        """Kill the host (and its process group) and reap it."""
        proc, self._proc = self._proc, None
        self._loaded = set()
        if proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)

    def _ask(self, request: dict[str, Any], seconds: float, on_timeout: str) -> dict[str, Any]:
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        deadline = time.monotonic() + seconds
        try:
            _write_all(proc.stdin.fileno(), _frame(request), deadline)
            return _read_frame(proc.stdout.fileno(), deadline)
        except _Timeout:
            self.close()
            raise BotFailed(
                on_timeout, f"no answer within {seconds:.1f}s; bot process killed"
            ) from None
        except _Closed:
            try:
                code: int | None = proc.wait(1.0)  # the pipe closes just before the exit
            except subprocess.TimeoutExpired:
                code = None
            self.close()
            raise BotFailed(BOT_DIED, f"the bot process exited (status {code})") from None
        except (ValueError, OSError) as e:
            self.close()
            raise BotFailed(BAD_ANSWER, f"unreadable answer ({e}); bot process killed") from None
        except BaseException:  # e.g. Celery's SoftTimeLimitExceeded while waiting
            self.close()
            raise

    def _ensure(self, bot: str) -> None:
        """A live host with ``bot`` loaded, within the load allowance."""
        if self._proc is not None and self._proc.poll() is not None:
            self.close()  # died between decisions
        fresh = self._proc is None
        if fresh:
            self._start()
        if bot in self._loaded:
            return
        reply = self._ask({"op": "load", "bot": bot}, self.load_seconds, LOAD_TIMEOUT)
        if not reply.get("ok") and not fresh:
            # Installed since this process started? (an editable install's path is read
            # only when a process starts): once more, in a new one.
            self.close()
            self._start()
            reply = self._ask({"op": "load", "bot": bot}, self.load_seconds, LOAD_TIMEOUT)
        if not reply.get("ok"):
            raise BotFailed(LOAD_FAILED, str(reply.get("error", "unknown error")))
        self._loaded.add(bot)

    def choose(
        self,
        settings: dict[str, Any],
        rules_view: bytes,
        legal: list[int],
        seconds: float,
    ) -> Answer:
        """The bot's answer within ``seconds`` (after loading), or :class:`BotFailed`."""
        self._ensure(str(settings["name"]))
        reply = self._ask(
            {
                "op": "choose",
                "view": base64.b64encode(rules_view).decode(),
                "legal": legal,
                "settings": settings,
            },
            seconds,
            DEADLINE,
        )
        try:
            action = reply["action"]
            if isinstance(action, bool) or not isinstance(action, int):
                raise TypeError(f"action {action!r}")
            return Answer(
                action,
                str(reply.get("fallback", "")),
                int(reply.get("iterations", 0) or 0),
                float(reply.get("search_seconds", 0.0) or 0.0),
                str(reply.get("detail", ""))[:200],
            )
        except (KeyError, TypeError, ValueError) as e:
            self.close()
            raise BotFailed(BAD_ANSWER, f"unreadable answer ({e}); bot process killed") from None


def deadline_seconds(settings: BotSettings, grace: float) -> float:
    """How long a decision may take: the seat's budget plus the grace."""
    return settings.budget_ms / 1000 + grace


def supervised_decide(
    view: rules.View | None,
    rules_view: bytes,
    legal: list[int],
    settings: BotSettings,
    host: BotHost,
    grace: float,
    where: str = "",
) -> Decision:
    """What a worker does: the bot's move, asked of ``host`` within ``deadline_seconds``, or
    a legal fallback played here when the bot overruns, kills its process or answers nonsense
    (logged at WARNING; counted by the caller). ``where`` names the decision in log lines
    (game, seat, version)."""
    if not legal:
        raise ValueError("no legal action to choose from")
    start = time.perf_counter()
    if view is None:
        return Decision(fallback_action(None, legal), settings.name, 0.0, NO_RULES_VIEW)
    seconds = deadline_seconds(settings, grace)
    try:
        a = host.choose(settings.to_payload(), rules_view, list(legal), seconds)
    except BotFailed as e:
        decide_log.warning(
            "bot %r %s: %s (deadline %.1fs = budget %.1fs + grace %.1fs); playing a fallback move",
            settings.name,
            where or f"seat {view.seat}",
            e,
            seconds,
            settings.budget_ms / 1000,
            grace,
        )
        action = fallback_action(view, legal)
        detail = f"no answer within {seconds:.1f}s" if e.reason == DEADLINE else e.detail[:200]
        return Decision(action, settings.name, time.perf_counter() - start, e.reason,
                        detail=detail)  # fmt: skip
    if a.action not in legal:
        decide_log.error(
            "bot %r answered %r, not a legal action of seat %s; playing a fallback move",
            settings.name,
            a.action,
            view.seat,
        )
        action = fallback_action(view, legal)
        return Decision(action, settings.name, time.perf_counter() - start, ILLEGAL_ACTION)
    return Decision(
        a.action,
        settings.name,
        time.perf_counter() - start,
        a.fallback,
        a.iterations,
        a.search_seconds,
        a.detail,
    )


def quarantine_fallback(
    records: BotRecords, view: rules.View | None, legal: list[int], settings: BotSettings
) -> Decision | None:
    """The fallback move a quarantined bot's seat gets at once, saying why the bot is
    quarantined; None when the bot may be asked."""
    if not records.quarantined(settings.name):
        return None
    start = time.perf_counter()
    action = fallback_action(view, legal)
    cause = records.record(settings.name).cause
    return Decision(action, settings.name, time.perf_counter() - start, QUARANTINED,
                    detail=cause)  # fmt: skip


def record_outcome(records: BotRecords, d: Decision, where: str = "on this worker") -> None:
    """Count a decision of the bot's for or against it: a misbehaviour (with its reason, the
    cause a quarantine will give) or a good answer, which clears the count. Logs the
    quarantine, with how many misbehaviours in a row led to it and the latest one."""
    if d.fallback in MISBEHAVIOUR:
        r = records.misbehaved(d.bot, d.fallback_text)
        if records.quarantined(d.bot):
            decide_log.warning(
                "bot %r misbehaved %d times in a row: quarantined %s for %.0fs "
                "(its seats play the fallback move; the latest: %s)",
                d.bot,
                r.failures,
                where,
                records.quarantine_seconds,
                r.cause,
            )
    elif not d.fallback:
        records.behaved(d.bot)


_host: BotHost | None = None


def host(load_seconds: float, log_level: str = "INFO") -> BotHost:
    """This process's bot host (one per worker process; killed when the process exits)."""
    global _host
    if _host is None or _host.load_seconds != load_seconds:
        if _host is not None:
            _host.close()
        _host = BotHost(load_seconds, log_level)
        import atexit

        atexit.register(_host.close)
    return _host


# ---- the host process ------------------------------------------------------------------------


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    load = load_spec if os.environ.get(SPECS_ENV) == "1" else load_bot
    if op == "load":
        try:
            load(str(request["bot"]))
        except Exception as e:
            log_failure(str(request.get("bot")), e, "failed to load")
            return {"ok": False, "error": f"{type(e).__name__}: {e}"}
        return {"ok": True}
    if op == "choose":
        view = rules.View.deserialize(base64.b64decode(request["view"]))
        settings = BotSettings.from_payload(request["settings"])
        d = decide(view, [int(a) for a in request["legal"]], settings, load)
        return {
            "action": d.action,
            "fallback": d.fallback,
            "iterations": d.iterations,
            "search_seconds": d.search_seconds,
            "detail": d.detail,
        }
    raise ValueError(f"unknown op {op!r}")


def serve() -> int:
    """The host's loop: one request, one answer, until the parent closes the pipe."""
    inp, out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)  # a bot's print() lands in the worker's log, not in the protocol
    parent = int(os.environ.get(PARENT_ENV, "0") or 0)
    if parent:
        die_with_parent(parent)  # SIGKILL: a lost worker leaves no bot behind
    logging.basicConfig(
        level=os.environ.get("LOG_LEVEL", "INFO").upper(),
        format="%(asctime)s %(levelname)s %(name)s [bot host %(process)d]: %(message)s",
    )
    while True:
        try:
            request = _read_frame(inp, None)
        except _Closed:
            return 0
        try:
            reply = _answer(request)
        except Exception as e:  # not the bot's doing: a request this host cannot read
            log.exception("bot host: bad request")
            reply = {"error": f"{type(e).__name__}: {e}"}
        data = _frame(reply)
        view = memoryview(data)
        while view:
            view = view[os.write(out, view) :]


if __name__ == "__main__":
    sys.exit(serve())

"""What the engine's and the worker's /metrics endpoints export besides their own metrics:
process and platform collectors, no `_created` series, counters at 0 before the first event,
names that end with their unit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ai_workers import metrics as worker_metrics
from ai_workers import runner
from ai_workers.bots.registry import available_bots
from engine_service.rules import KIND_NAMES
from engine_service.server.metrics import Metrics
from tests.deploy.deploy_support import CONTRACT, REPO, rpc_methods
from tests.service.support import free_port

PROCESS_SERIES = (
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_open_fds",
    "process_max_fds",
    "process_start_time_seconds",
    "python_info",
)
UNITS = (("seconds",), ("bytes",), ("per", "second"), ("ratio",))


def samples(text: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """{series name: {sorted labels: value}} of an exposition text."""
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            out.setdefault(sample.name, {})[key] = sample.value
    return out


def test_engine_exports_process_collectors_and_no_created_series() -> None:
    text = generate_latest(Metrics().registry).decode()
    found = samples(text)
    for name in PROCESS_SERIES:
        assert name in found, name
    assert not [name for name in found if name.endswith("_created")]
    assert not re.search(r"_created(\{| )", text)


def test_engine_counters_start_at_zero() -> None:
    found = samples(generate_latest(Metrics().registry).decode())
    requests = found["ascension_grpc_requests_total"]
    for method in rpc_methods():
        for code in ("OK", "INTERNAL", "UNAVAILABLE"):
            assert requests[(("code", code), ("method", method))] == 0.0, (method, code)
    actions = found["ascension_actions_applied_total"]
    assert {dict(k)["kind"] for k in actions} == set(KIND_NAMES.values())
    assert set(actions.values()) == {0.0}
    for series in ("ascension_games_created_total", "ascension_cas_conflicts_total"):
        assert found[series] == {(): 0.0}


def test_metric_names_end_with_their_unit() -> None:
    for family in CONTRACT.families:
        words = family.name.split("_")
        for unit in UNITS:
            at = [i for i in range(len(words)) if tuple(words[i : i + len(unit)]) == unit]
            for i in at:
                assert i + len(unit) == len(words), (
                    f"{family.name}: the unit ({'_'.join(unit)}) must end the name"
                )
    assert "ascension_worker_mcts_search_iterations_per_second" in {
        f.name for f in CONTRACT.families
    }


def test_worker_outcomes_and_fallback_reasons_are_the_runners() -> None:
    assert set(worker_metrics.OUTCOMES) == {
        runner.PLAYED,
        runner.STALE,
        runner.LOST_RACE,
        runner.REPLAYED,
        runner.GONE,
        runner.EXPIRED,
        runner.DEFERRED,
    }
    assert worker_metrics.fallback_reason("deadline") == "deadline"  # the supervisor's reasons
    assert worker_metrics.fallback_reason("raised ZeroDivisionError") == "bot_raised"
    assert worker_metrics.fallback_reason("illegal action") == "illegal_action"
    assert worker_metrics.fallback_reason("no rules view") == "no_rules_view"


# The worker's metrics endpoint as `ascension-worker run` serves it (cli._serve_metrics), in
# its own process with a multiprocess directory and one child process standing in for a
# pool process (Celery itself is exercised in tests/ai).
_WORKER_METRICS = """
import multiprocessing, os, sys, time
from ai_workers import cli
cli._multiproc_dir()
cli._serve_metrics(int(sys.argv[1]))
child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
child.start()
print("ready", flush=True)
sys.stdin.read()
child.kill()
"""


def test_worker_endpoint_exports_process_pool_and_zero_counters(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", _WORKER_METRICS, str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while True:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
            found = samples(text.decode())
            if found.get("ascension_worker_pool_processes", {}).get((), 0) >= 1:
                break
            assert time.monotonic() < deadline, "the pool collector never saw the child"
            time.sleep(0.2)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    for name in PROCESS_SERIES:
        assert name in found, name
    assert not [name for name in found if name.endswith("_created")]
    assert found["ascension_worker_pool_cpu_seconds_total"][()] >= 0
    assert found["ascension_worker_pool_resident_memory_bytes"][()] > 0
    outcomes = found["ascension_worker_move_outcomes_total"]
    assert {dict(k)["outcome"] for k in outcomes} == set(worker_metrics.OUTCOMES)
    fallbacks = found["ascension_worker_fallback_moves_total"]
    assert {(dict(k)["bot"], dict(k)["reason"]) for k in fallbacks} == {
        (bot, reason) for bot in available_bots() for reason in worker_metrics.FALLBACK_REASONS
    }
    assert set(fallbacks.values()) == {0.0}
    assert {dict(k)["bot"] for k in found["ascension_worker_moves_total"]} == set(available_bots())
    assert found["ascension_worker_task_failures_total"] == {(): 0.0}
    assert re.search(r"^process_start_time_seconds \d", text.decode(), flags=re.M)

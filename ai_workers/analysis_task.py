"""``ascension.analyze_position``: a seat's analysis on a Celery worker, handed back to the
engine over gRPC (``SubmitAnalysis``, with the credential that came in the payload).

It runs on the queue ``ascension.analyses``, in the analyses node of ``ascension-worker run``
(processes of their own, at a lower CPU priority than the moves'). The engine waits for the
answer only until the budget plus its grace: the message expires when a search started then
could no longer answer in time (Celery's ``expires``, and ``expires_at`` checked here), it is
acknowledged on receipt and never retried nor delivered again (a late answer is worth
nothing), and a failed search is reported as such so that the player hears at once instead of
at the deadline.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from ai_workers import engine_client as ec
from ai_workers.analysis import analyse_payload
from ai_workers.celery_app import app
from ai_workers.config import ANALYSIS_TASK_NAME
from ai_workers.runner import DEFAULT_ENGINE_ADDRESS
from engine_service.api.ascension.v1 import engine_pb2

log = logging.getLogger("ascension.worker.analysis")
TASK_NAME = ANALYSIS_TASK_NAME


def reply(payload: dict[str, Any], result: dict[str, Any]) -> engine_pb2.SubmitAnalysisRequest:
    req = engine_pb2.SubmitAnalysisRequest(
        game_id=str(payload.get("game_id", "")),
        analysis_id=str(payload.get("analysis_id", "")),
        token=str(payload.get("token", "")),
        iterations=int(result.get("iterations", 0)),
        error=str(result.get("error", ""))[:1000],
    )
    for action, visits, p, *rest in result.get("candidates", []):
        req.candidates.add(
            action=int(action),
            visits=int(visits),
            win_probability=float(p),
            seat_win_probabilities=[float(x) for x in (rest[0] if rest else ())],
            standard_error=float(rest[1]) if len(rest) > 1 else 0.0,
        )
    return req


@app.task(  # type: ignore[untyped-decorator]
    name=TASK_NAME, acks_late=False, ignore_result=True, max_retries=0
)
def analyze_position(**payload: Any) -> str:
    where = f"analysis {payload.get('analysis_id')} of game {payload.get('game_id')}"
    expires_at = float(payload.get("expires_at") or 0.0)
    if expires_at and time.time() > expires_at:
        log.info("%s expired %.1fs ago unsearched; dropped", where, time.time() - expires_at)
        return "expired"
    try:
        result = analyse_payload(**payload)
    except Exception as e:  # told to the engine, which answers the player at once
        log.exception("%s failed", where)
        result = {"candidates": [], "iterations": 0, "error": f"{type(e).__name__}: {e}"}
    address = str(payload.get("engine_address") or "") or os.environ.get(
        "ENGINE_ADDRESS", DEFAULT_ENGINE_ADDRESS
    )
    try:
        ec.stub(address).SubmitAnalysis(reply(payload, result), timeout=ec.CALL_TIMEOUT)
    except Exception as e:
        log.warning("%s: the engine at %s took no answer (%s)", where, address, ec.status_name(e))
        return "undelivered"
    log.info("%s: %d iterations in %.2fs", where, result.get("iterations", 0),
             result.get("seconds", 0.0))  # fmt: skip
    return "failed" if result.get("error") else "answered"

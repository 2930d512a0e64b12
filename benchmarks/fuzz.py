"""A longer fuzz of the Engine API than CI's (tests/security/test_fuzz.py): random (not
derandomized) hypothesis cases over every request message and raw bytes to every method, on an
in-process server with the real store, service and registration; bounded in time.

    python benchmarks/fuzz.py [--minutes 5] [--cases-per-round 300] [--redis]

``--redis`` runs on a redis-server of its own (free port, persistence off) instead of the
in-process store. Checks after every case (see tests/security/fuzzing.py): a defined status,
never UNKNOWN or INTERNAL; no traceback nor ERROR in the log; games change only by accepted
calls; at the end of each round every game replays from its seed and action log. Prints
progress, then the answers by code.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from engine_service.store import Store  # noqa: E402
from tests.security.fuzzing import METHODS, Checker, Harness, Known, raw_bytes, request  # noqa: E402


@contextlib.contextmanager
def store(use_redis: bool) -> Iterator[Store | None]:
    if not use_redis:
        yield None
        return
    from engine_service.store.redis_store import RedisStore
    from tests.service.support import redis_server

    with redis_server() as url:
        yield RedisStore(url)


def case(c: Checker, method: str, raw: bool) -> Callable[[st.DataObject], None]:
    def run(data: st.DataObject) -> None:
        if raw:
            c.call_raw(method, data.draw(raw_bytes(method, c.known)))
        else:
            c.call(method, data.draw(request(method, c.known)))

    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=5.0, help="stop after this long (default 5)")
    ap.add_argument("--cases-per-round", type=int, default=300, help="cases per method and round")
    ap.add_argument("--redis", action="store_true", help="a Redis store instead of the in-process one")
    args = ap.parse_args()
    deadline = time.monotonic() + args.minutes * 60
    cfg = settings(max_examples=args.cases_per_round, deadline=None, database=None,
                   suppress_health_check=list(HealthCheck))  # fmt: skip
    with store(args.redis) as s, Harness(s) as h:
        c = Checker(h, Known())
        c.setup(games=6)
        rounds = 0
        while time.monotonic() < deadline:
            rounds += 1
            for method in sorted(METHODS):
                if time.monotonic() >= deadline:
                    break
                for raw in (False, True):
                    cfg(given(st.data())(case(c, method, raw)))()
            bad = list(c.all_replay())
            assert not bad, f"games that no longer replay: {bad}"
            left = max(0.0, deadline - time.monotonic())
            print(f"round {rounds}: {c.cases} cases, {len(h.versions())} games, all replay; "
                  f"{left / 60:.1f} min left", flush=True)  # fmt: skip
    print("answers by code: " + ", ".join(f"{k} {v}" for k, v in sorted(c.answers.items())))
    print(f"{c.cases} cases, no UNKNOWN/INTERNAL, no traceback, every game replays")
    return 0


if __name__ == "__main__":
    sys.exit(main())

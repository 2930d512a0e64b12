"""What following renewed TLS files costs (engine_service/tls_files.py): CPU per check of
unchanged files, per renewed set validated, and per call of a client channel that follows
them when no check is due (clients/sdk/reloading.py).

    python benchmarks/tls_files.py

An ECDSA P-256 certificate, its key and a CA (as cert-manager issues them by default in the
chart), in a temporary directory. Prints the figures and, to compare machines, the time of a
20-million-step Python loop.
"""

from __future__ import annotations

import sys
import tempfile
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine_service.tls_files import Paths, Watched, check, read_raw  # noqa: E402
from tests.security.pki import Authority  # noqa: E402


def per_call(fn: object, number: int) -> float:
    return timeit.timeit(fn, number=number) / number  # type: ignore[arg-type]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ca = Authority(Path(tmp), "ca")
        leaf = ca.server("engine")
        paths = Paths(str(leaf.cert), str(leaf.key), str(ca.path))
        files = Watched(paths, "server", 30.0)
        raw = read_raw(paths)
        assert raw is not None
        unchanged = per_call(files.check, 2000)
        validated = per_call(lambda: check(paths, raw), 2000)
        not_due = per_call(files.check_if_due, 200_000)
    i = 0
    start = time.perf_counter()
    while i < 20_000_000:
        i += 1
    loop = time.perf_counter() - start
    print(f"check of unchanged files (read twice, compared): {unchanged * 1e6:.0f} us")
    print(f"renewed set validated (parsed, key matched):     {validated * 1e6:.0f} us")
    print(f"a client call's look when no check is due:        {not_due * 1e9:.0f} ns")
    print(f"20-million-step Python loop:                      {loop:.2f} s")


if __name__ == "__main__":
    main()

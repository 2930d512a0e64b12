"""The development extras of pyproject.toml (``dev``, with the extras it names of this project
expanded), one requirement a line: what tests/dev-venv installs into .venv beside the project.

    python tests/dev_requirements.py            # print them
    python tests/dev_requirements.py --check F  # exit 0 when F holds this list and each is installed

Stdlib only: it runs in a venv that has nothing but the project.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)(\[([^\]]*)\])?")


def requirements(extra: str = "dev") -> list[str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    extras: dict[str, list[str]] = project.get("optional-dependencies", {})
    own = project["name"]
    out: list[str] = []

    def add(name: str) -> None:
        if name not in extras:
            raise SystemExit(f"pyproject.toml has no extra {name!r}")
        for req in extras[name]:
            m = NAME.match(req)
            if m and m.group(1) == own:  # e.g. "ascension-engine[tracing]": that extra's list
                for sub in (m.group(3) or "").split(","):
                    add(sub.strip())
            elif req not in out:
                out.append(req)

    add(extra)
    return out


def installed(req: str) -> bool:
    m = NAME.match(req)
    if not m:
        return False
    try:
        importlib.metadata.distribution(m.group(1))
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", metavar="STAMP", help="the list as last installed")
    args = ap.parse_args()
    reqs = requirements()
    if args.check is None:
        print("\n".join(reqs))
        return 0
    stamp = Path(args.check)
    same = stamp.exists() and stamp.read_text().splitlines() == reqs
    return 0 if same and all(installed(r) for r in reqs) else 1


if __name__ == "__main__":
    sys.exit(main())

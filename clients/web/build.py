"""Build the browser client: TypeScript stubs from ``proto/``, then the page into ``static/``.

    python -m clients.web.build           # npm ci (when needed), regenerate src/gen, build static/
    python -m clients.web.build --check   # exit 1 if src/gen or static/ differ from a fresh build

Needs Node.js >= 20.19 and npm (the packages come from ``app/package-lock.json``); installing
the Python package does not (``static/`` is committed and shipped as package data). The check
builds into a temporary directory and leaves the work tree as it is.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
APP = HERE / "app"
STATIC = HERE / "static"
GEN = APP / "src" / "gen"
PROTO = HERE.parent.parent / "proto"


class BuildError(RuntimeError):
    pass


def _run(args: list[str], cwd: Path = APP) -> None:
    done = subprocess.run(
        args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    if done.returncode != 0:
        raise BuildError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-4000:]}")


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise BuildError("npm is not installed: the web client needs Node.js >= 20.19 to build")
    return found


def ensure_node_modules() -> None:
    """``npm ci`` unless node_modules was installed from this very lockfile.

    (``node_modules/.lockfile`` is a copy of the package-lock.json it came from; tests/run
    keeps the same stamp. File times would not do: a checkout touches the lockfile.)"""
    stamp = APP / "node_modules" / ".lockfile"
    lock = APP / "package-lock.json"
    if not stamp.exists() or stamp.read_bytes() != lock.read_bytes():
        _run([npm(), "ci", "--no-audit", "--no-fund"])
        shutil.copyfile(lock, stamp)


def _bin(name: str) -> str:
    return str(APP / "node_modules" / ".bin" / name)


def generate(out_base: Path | None = None) -> Path:
    """Run buf with protoc-gen-es; the stubs land in ``<out_base>/src/gen`` (default: app/)."""
    args = [_bin("buf"), "generate", "--template", "buf.gen.yaml"]
    if out_base is not None:
        args += ["--output", str(out_base)]
    env_path = f"{APP / 'node_modules' / '.bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [*args, str(PROTO)], cwd=APP, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, env={**os.environ, "PATH": env_path},
    )  # fmt: skip
    if done.returncode != 0:
        raise BuildError(f"buf generate failed:\n{done.stdout[-4000:]}")
    return (out_base or APP) / "src" / "gen"


def build(out_dir: Path | None = None) -> Path:
    """Type-check, then bundle with Vite into ``out_dir`` (default: static/)."""
    _run([_bin("tsc"), "--noEmit"])
    args = [_bin("vite"), "build", "--logLevel", "warn"]
    if out_dir is not None:
        args += ["--outDir", str(out_dir), "--emptyOutDir"]
    _run(args)
    return out_dir or STATIC


def differences(committed: Path, fresh: Path) -> list[str]:
    """Files added, missing or changed between two trees (relative paths)."""
    out: list[str] = []

    def walk(cmp: filecmp.dircmp[str], rel: str) -> None:
        out.extend(f"missing: {rel}{n}" for n in cmp.right_only)
        out.extend(f"not built any more (stale?): {rel}{n}" for n in cmp.left_only)
        out.extend(f"differs: {rel}{n}" for n in cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            walk(sub, f"{rel}{name}/")

    if not committed.exists():
        return [f"missing: {committed}"]
    walk(filecmp.dircmp(committed, fresh, ignore=[]), "")
    return out


def check() -> list[str]:
    """Drift of the committed stubs and page from a fresh generation and build."""
    ensure_node_modules()
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="ascension-web-") as tmp:
        gen = generate(Path(tmp) / "gen")
        problems += [f"clients/web/app/src/gen: {p}" for p in differences(GEN, gen)]
        static = build(Path(tmp) / "static")
        problems += [f"clients/web/static: {p}" for p in differences(STATIC, static)]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m clients.web.build", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="fail if src/gen or static/ drifted")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = check()
            if problems:
                print("The web client's stubs or built page are out of date:", file=sys.stderr)
                for p in problems:
                    print("  " + p, file=sys.stderr)
                print(
                    "Run: python -m clients.web.build  (and commit clients/web/)", file=sys.stderr
                )
                return 1
            print(
                "web client up to date (stubs in clients/web/app/src/gen, page in clients/web/static)"
            )
            return 0
        ensure_node_modules()
        generate()
        build()
    except BuildError as e:
        print(e, file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in STATIC.rglob("*") if p.is_file())
    print(f"built clients/web/static ({size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

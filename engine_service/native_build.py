"""Compiling the rules and the search of an editable install, after the install.

``pip install -e .`` installs the sources as Python in seconds (engine_service/_build.py); the
C compile (minutes on a busy machine) comes afterwards, so that a first game never waits for
it:

- ``ascension`` starts it in the background, at the lowest CPU priority, the first time it
  starts a private engine on sources that are not compiled (``start_in_background``): that
  game runs the Python sources, the next start the compiled build;
- ``python -m engine_service.native_build`` compiles at once and waits (tests/dev-venv, CI),
  or waits for the compile already running.

The compile is pip's own build of a wheel of this source tree (an isolated environment with
the build's requirements, mypyc pinned: the same build as ``pip install .``). Its compiled
modules then go beside their sources in three steps, so that a half-built library is never
loaded: the packages' manifests are removed (from then on a start runs the Python sources:
engine_service/native.py), each compiled file is replaced whole (os.replace: a process that
has the old one loaded keeps it), and the manifests, which name the digests of the sources
compiled, come last. A compile that failed is not retried by itself for the same sources.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.machinery
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from engine_service.native import GROUP, MANIFEST, PACKAGES, PURE_ENV, ROOT, CompiledPackage

BUILD_ENV = "ASCENSION_BUILD_NATIVE"  # "0": never compile (docs/configuration.md)
STATE = ROOT / "build" / "ascension-native"  # the lock, the log, a failed attempt
LOG = STATE / "compile.log"
FAILED = STATE / "failed"  # the sources' digest of a compile that failed
ESTIMATE = "2-5 minutes at low priority on a 2-core machine, longer under heavy load"


class CompileFailed(Exception):
    """The compile did not produce every compiled module; the log says why."""


def packages(root: Path = ROOT) -> list[CompiledPackage]:
    """The compiled packages of the tree at ``root``: the rules first (the search needs them)."""
    return [CompiledPackage(p.replace("/", "."), root / p) for p in PACKAGES]


def unavailable(root: Path = ROOT) -> str:
    """Why the compiled build would not run: "" when both packages would run compiled."""
    for package in packages(root):
        why = package.unavailable()
        if why:
            return f"{package.name}: {why}"
    return ""


def sources_digest(root: Path = ROOT) -> str:
    """One digest of every compiled module's source (what a failed attempt is remembered by)."""
    h = hashlib.sha256()
    for package, modules in PACKAGES.items():
        for m in modules:
            path = root / package / f"{m}.py"
            h.update(path.as_posix().encode() + b"\0")
            h.update(path.read_bytes() if path.exists() else b"")
    return h.hexdigest()


def source_tree() -> Path | None:
    """The source tree of an editable install ("None" for an installed wheel: compiled when
    it was built, or deliberately not)."""
    if (ROOT / "pyproject.toml").exists() and (ROOT / "engine_service" / "_build.py").exists():
        return ROOT
    return None


def has_compiler() -> bool:
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    return bool(cc) and shutil.which(cc[0]) is not None


@contextmanager
def _lock(wait: bool) -> Iterator[bool]:
    """The tree's compile lock: yields whether it is held (``wait``: until it is)."""
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / "lock", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _running() -> bool:
    """Whether a compile holds the lock now."""
    with _lock(wait=False) as held:
        return not held


def start_in_background() -> str:
    """Start compiling in the background if the sources are not compiled and can be; returns
    a line for the player ("" when there is nothing to say)."""
    tree = source_tree()
    if (
        tree is None
        or os.environ.get(PURE_ENV, "") not in ("", "0")
        or os.environ.get(BUILD_ENV, "1") == "0"
        or not unavailable()
        or not os.access(tree, os.W_OK)
        or not has_compiler()
    ):
        return ""
    slower = "the rules and the bots' search run as Python this time (the same games, slower)"
    if _running():
        return f"{slower}: their compile is still running in the background (log: {LOG})."
    if FAILED.exists() and FAILED.read_text().strip() == sources_digest():
        return (
            f"{slower}: their compile failed (log: {LOG}); "
            f"`{sys.executable} -m engine_service.native_build` tries again."
        )
    STATE.mkdir(parents=True, exist_ok=True)
    with open(LOG, "w") as log:
        subprocess.Popen(
            [sys.executable, "-m", "engine_service.native_build", "--background"],
            cwd=tree, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this command; Ctrl-C here does not stop it
        )  # fmt: skip
    return (
        f"{slower}: they are being compiled in the background ({ESTIMATE}; log: {LOG}), "
        "and run compiled from the next start."
    )


def build(tree: Path, log: IO[str]) -> None:
    """Compile the tree's packages (pip's build of a wheel) and put the compiled modules beside
    their sources; CompileFailed if anything is missing (the tree is then left as Python)."""
    with tempfile.TemporaryDirectory(prefix="ascension-native-") as tmp:
        env = {**os.environ, BUILD_ENV: "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", tmp, str(tree)]
        log.write(f"$ {' '.join(cmd)}\n")
        log.flush()
        done = subprocess.run(cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
        wheels = list(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not wheels:
            raise CompileFailed(f"pip wheel exited with {done.returncode}")
        install(wheels[0], tree)


def compiled_files(wheel: zipfile.ZipFile) -> list[str]:
    """The wheel's compiled modules for this interpreter: the shared library and each
    package's, with the manifests (CompileFailed unless every one is there)."""
    names = set(wheel.namelist())
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    wanted = [f"{GROUP}{suffix}"]
    for package, modules in PACKAGES.items():
        if f"{package}/{MANIFEST}" not in names:
            raise CompileFailed(f"the build wrote no {package}/{MANIFEST}: not compiled")
        wanted += [f"{package}/{m}{suffix}" for m in modules]
    missing = [n for n in wanted if n not in names]
    if missing:
        raise CompileFailed(f"the build is missing {', '.join(missing)}")
    return wanted


def install(wheel_path: Path, tree: Path) -> None:
    """Put a wheel's compiled modules beside the tree's sources, the manifests last."""
    with zipfile.ZipFile(wheel_path) as wheel:
        files = compiled_files(wheel)
        # 1. No manifest: from here on a start runs the Python sources (engine_service/native.py)
        for package in PACKAGES:
            (tree / package / MANIFEST).unlink(missing_ok=True)
        # 2. Each compiled file replaced whole: a process that loaded the old one keeps it
        for name in files:
            _replace(tree / name, wheel.read(name))
        # 3. The manifests (the digests of the sources compiled); the rules' last: the
        # search's compiled modules are used only with the rules'
        for package in reversed(PACKAGES):
            _replace(tree / package / MANIFEST, wheel.read(f"{package}/{MANIFEST}"))


def _replace(target: Path, data: bytes) -> None:
    part = target.with_name(f".{target.name}.{os.getpid()}.part")
    part.write_bytes(data)
    os.chmod(part, 0o755 if target.suffix == ".so" else 0o644)
    os.replace(part, target)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m engine_service.native_build",
        description="Compile the rules and the bots' search of this editable install to C "
        "(mypyc), or wait for the compile already running; nothing to do when they are "
        "compiled from the sources there now.",
    )  # fmt: skip
    ap.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    tree = source_tree()
    if tree is None:
        print("not an editable install: the build compiled it, or it runs as Python")
        return 0 if not unavailable() else 1
    if args.background:
        os.nice(19)  # the player's game comes first
    elif _running():
        print(f"waiting for the compile running in the background (log: {LOG})", flush=True)
    with _lock(wait=not args.background) as held:
        if not held:
            return 0  # (background) another compile holds the lock
        why = unavailable()
        if not why:
            print("compiled: the rules and the search run compiled")
            return 0
        digest = sources_digest()
        started = time.monotonic()
        print(f"compiling the rules and the bots' search ({why}); log: {LOG}", flush=True)
        log: IO[str] = sys.stdout if args.background else open(LOG, "w")  # noqa: SIM115
        try:
            build(tree, log)
        except (CompileFailed, OSError) as e:
            FAILED.write_text(digest)
            print(f"the compile failed: {e} (log: {LOG}); the rules run as Python", flush=True)
            return 1
        finally:
            if log is not sys.stdout:
                log.close()
        FAILED.unlink(missing_ok=True)
        why = unavailable()
        if why:  # a source edited while compiling: its manifest does not vouch for it
            print(f"compiled, but not usable: {why}", flush=True)
            return 1
        print(
            f"compiled in {time.monotonic() - started:.0f} s: used from the next start", flush=True
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""TLS files renewed under a running process: a certificate, its key and a CA bundle that
cert-manager (through a Secret volume), certbot or an operator replaces while the engine, the
workers, the browser gateway and SDK clients keep running.

A holder of such files checks them every ``interval`` seconds: it reads them again by path
(through any symlinks: a Kubernetes Secret volume renews its files by writing a new
``..<timestamp>`` directory and swapping the ``..data`` symlink that ``tls.crt`` and
``tls.key`` point through, which an inotify watch on the files does not see) and compares
the bytes with those in use. A changed set is taken only when it is whole: every certificate
readable, the key that of the (first) certificate. A certificate renewed before its key is
written (a copy by hand, file by file) is refused: the set in use stays, the refusal is
logged once per content and reported (``on_refused``), and the next check takes the pair as
soon as it matches. Files read while they change (two reads differ) wait for the next check.

``interval`` 0: the files are read once, at start.

The engine (``engine_service.server.tls``), the workers and the SDK (``clients.sdk.tls``)
share this module; each exports what it holds in its own way (metrics, logs).
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization

log = logging.getLogger("ascension.tls")

DEFAULT_RELOAD_SECONDS = 30.0
ROLE_SERVER = "server"  # the certificate a server serves
ROLE_CLIENT = "client"  # the certificate a client presents (mutual TLS), or its CA alone
_READS = 5  # tries at two equal reads in a row before a check gives up until the next


class TlsFilesError(ValueError):
    """The files cannot be used; the message names the file and what is wrong with it."""


@dataclass(frozen=True, slots=True)
class Paths:
    """Where the files are ("" = none): a certificate (chain) with its key, a CA bundle."""

    cert: str = ""
    key: str = ""
    ca: str = ""

    def __bool__(self) -> bool:
        return bool(self.cert or self.key or self.ca)


@dataclass(frozen=True, slots=True)
class Pem:
    """One whole set of files as read (None: not configured)."""

    cert: bytes | None
    key: bytes | None
    ca: bytes | None
    not_after: float | None  # the certificate's notAfter (the first of its chain), Unix time
    subject: str  # the certificate's subject, for logs ("" without one)
    ca_not_after: float | None = None  # the soonest notAfter in the CA bundle, Unix time

    @property
    def raw(self) -> tuple[bytes | None, bytes | None, bytes | None]:
        return self.cert, self.key, self.ca

    def describe(self) -> str:
        if self.not_after is None:
            return "CA bundle only"
        end = datetime.datetime.fromtimestamp(self.not_after, datetime.UTC)
        return f"{self.subject or 'no subject'}, valid until {end:%Y-%m-%d %H:%M:%S} UTC"


Raw = tuple[bytes | None, bytes | None, bytes | None]


def read_raw(paths: Paths) -> Raw | None:
    """The files' bytes, read until two reads in a row agree (a swap of the ``..data`` link
    between reading the certificate and the key shows as a difference); None if they kept
    changing. Raises TlsFilesError when a file cannot be read."""

    def once() -> Raw:
        out: list[bytes | None] = []
        for path in (paths.cert, paths.key, paths.ca):
            if not path:
                out.append(None)
                continue
            try:
                out.append(Path(path).read_bytes())
            except OSError as e:
                raise TlsFilesError(f"cannot read {path!r}: {e.strerror or e}") from None
        return out[0], out[1], out[2]

    last = once()
    for _ in range(_READS):
        again = once()
        if again == last:
            return again
        last = again
    return None


def _certificates(path: str, data: bytes) -> list[x509.Certificate]:
    try:
        return x509.load_pem_x509_certificates(data)
    except ValueError:
        raise TlsFilesError(f"{path!r} holds no readable PEM certificate") from None


def _public(key: object) -> bytes:
    return key.public_bytes(  # type: ignore[attr-defined, no-any-return]
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def check(paths: Paths, raw: Raw) -> Pem:
    """``raw`` as a whole set, or TlsFilesError saying what is wrong with it."""
    try:
        return _check(paths, raw)
    except TlsFilesError:
        raise
    except Exception as e:  # what a parser may raise on a file nobody foresaw: refuse it too
        raise TlsFilesError(f"{paths.cert or paths.ca!r} and its files: {e!r}") from None


def _check(paths: Paths, raw: Raw) -> Pem:
    cert, key, ca = raw
    not_after: float | None = None
    subject = ""
    if cert is not None:
        leaf = _certificates(paths.cert, cert)[0]
        not_after = leaf.not_valid_after_utc.timestamp()
        subject = leaf.subject.rfc4514_string()
        if key is None:
            raise TlsFilesError(f"{paths.cert!r} has no key file")
        try:
            private = serialization.load_pem_private_key(key, password=None)
        except TypeError:
            raise TlsFilesError(f"{paths.key!r} is encrypted") from None
        except (ValueError, UnsupportedAlgorithm):
            raise TlsFilesError(f"{paths.key!r} holds no readable PEM private key") from None
        if _public(private.public_key()) != _public(leaf.public_key()):
            raise TlsFilesError(
                f"{paths.key!r} is not the key of the certificate in {paths.cert!r}"
            )
    ca_not_after: float | None = None
    if ca is not None:
        # (the soonest: once any CA of the bundle ends, what it signed is refused)
        ca_not_after = min(c.not_valid_after_utc.timestamp() for c in _certificates(paths.ca, ca))
    return Pem(cert, key, ca, not_after, subject, ca_not_after)


def load(paths: Paths) -> Pem:
    """The files as one whole set, now (TlsFilesError if they are not)."""
    raw = read_raw(paths)
    if raw is None:
        raise TlsFilesError(
            f"{paths.cert or paths.ca!r} and the files beside it kept changing while read"
        )
    return check(paths, raw)


class Watched:
    """The TLS files of one role in one process: the set in use, and a check for renewed files.

    ``on_loaded(pem)`` is called with the first set and each renewed set taken;
    ``on_refused(problem)`` once per refused content, ``on_state(refused)`` after every check
    (True while the files on disk differ from those in use and cannot be used). Thread-safe:
    checks may come from any thread (a gRPC handshake's, a caller's, a timer's)."""

    def __init__(
        self,
        paths: Paths,
        role: str,
        interval: float = DEFAULT_RELOAD_SECONDS,
        *,
        on_loaded: Callable[[Pem], None] | None = None,
        on_refused: Callable[[str], None] | None = None,
        on_state: Callable[[bool], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.paths = paths
        self.role = role
        self.interval = interval
        self._on_loaded = on_loaded
        self._on_refused = on_refused
        self._on_state = on_state
        self._clock = clock
        self._lock = threading.Lock()
        self._pem = load(paths)  # TlsFilesError: the caller says which setting is at fault
        self._generation = 0
        # What was refused last (the files' bytes, None if unreadable; and why), until the
        # files hold a set in use or taken again.
        self._refused: tuple[Raw | None, str] | None = None
        self._next = clock() + interval
        if on_loaded is not None:
            on_loaded(self._pem)
        if on_state is not None:
            on_state(False)

    @property
    def pem(self) -> Pem:
        return self._pem

    def snapshot(self) -> tuple[int, Pem]:
        """(generation, set in use): the generation grows by one with each renewed set."""
        with self._lock:
            return self._generation, self._pem

    @property
    def refused(self) -> bool:
        return self._refused is not None

    def due(self) -> bool:
        return self.interval > 0 and self._clock() >= self._next

    def check_if_due(self) -> bool:
        """:meth:`check` when ``interval`` has passed since the last one (cheap otherwise;
        of callers arriving together, one checks)."""
        return self._check(only_if_due=True) if self.due() else False

    def check(self) -> bool:
        """Read the files now; True when a renewed set was taken."""
        return self._check(only_if_due=False)

    def _check(self, only_if_due: bool) -> bool:
        with self._lock:
            if only_if_due and not self.due():
                return False  # another caller checked meanwhile
            self._next = self._clock() + self.interval
            try:
                raw = read_raw(self.paths)
            except TlsFilesError as e:
                return self._refuse(None, str(e))
            if raw is None or raw == self._pem.raw:
                if raw is not None and self._refused is not None:
                    self._refused = None  # the files went back to those in use
                self._report_state()
                return False
            if self._refused is not None and raw == self._refused[0]:
                self._report_state()
                return False
            try:
                pem = check(self.paths, raw)
            except TlsFilesError as e:
                return self._refuse(raw, str(e))
            self._pem = pem
            self._generation += 1
            self._refused = None
        log.info("TLS %s: renewed files taken (%s)", self.role, pem.describe())
        if self._on_loaded is not None:
            self._on_loaded(pem)
        self._report_state()
        return True

    def _refuse(self, raw: Raw | None, problem: str) -> bool:
        """(Called holding the lock.) Keep the set in use; tell once per content."""
        first = self._refused != (raw, problem)
        self._refused = (raw, problem)
        if first:
            log.warning(
                "TLS %s: renewed files refused, still using the set in use (%s): %s",
                self.role,
                self._pem.describe(),
                problem,
            )
            if self._on_refused is not None:
                self._on_refused(problem)
        self._report_state()
        return False

    def _report_state(self) -> None:
        if self._on_state is not None:
            self._on_state(self._refused is not None)


def metric_hooks(
    role: str, expiry: Any, reloads: Any, refused: Any, ca_expiry: Any
) -> dict[str, Any]:
    """The hooks of :class:`Watched` that keep a process's TLS metrics (prometheus_client
    metrics, labelled as docs/configuration.md says): ``expiry`` (role) the notAfter in
    use, ``reloads`` (role, result) renewed sets loaded and refused, ``refused`` (role) 1
    while the files on disk are refused, ``ca_expiry`` (role) the soonest notAfter of the CA
    bundle in use."""
    for result in ("loaded", "refused"):
        reloads.labels(role, result)
    sets = [0]

    def on_loaded(pem: Pem) -> None:
        if pem.not_after is not None:
            expiry.labels(role).set(pem.not_after)
        if pem.ca_not_after is not None:
            ca_expiry.labels(role).set(pem.ca_not_after)
        if sets[0]:  # not the first set, read at start
            reloads.labels(role, "loaded").inc()
        sets[0] += 1

    return {
        "on_loaded": on_loaded,
        "on_refused": lambda _: reloads.labels(role, "refused").inc(),
        "on_state": lambda bad: refused.labels(role).set(int(bad)),
    }

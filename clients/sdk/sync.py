"""The synchronous SDK client (:class:`Client`) and its event iterator (:class:`Watch`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

from clients.sdk._grpc import grpc
from clients.sdk._requests import (
    DEFAULT_RETRY,
    RetryPolicy,
    analysis_timeout,
    create_game_request,
    new_idempotency_key,
    submit_request,
)
from clients.sdk.errors import (
    RESYNC_CODES,
    TRANSIENT_CODES,
    AscensionError,
    DataLossError,
    Resync,
    UnavailableError,
    VersionConflictError,
    from_rpc_error,
    newer,
    status_name,
)
from clients.sdk.review import DecisionReview, iterate, review_request
from clients.sdk.tls import TLS, operator_metadata
from clients.sdk.tls import channel as tls_channel
from clients.sdk.tracing import traced_channel
from clients.sdk.types import (
    BotSpec,
    Catalog,
    Clock,
    CreatedGame,
    PracticeGame,
    SeatSpec,
    practice_request,
)
from engine_service.api.ascension.v1 import engine_pb2, engine_pb2_grpc, game_pb2

T = TypeVar("T")


class Client:
    """A connection to an Ascension engine.

    >>> with Client("localhost:50051") as c:
    ...     game = c.create_game([human("Ann"), bot("ismcts", time_ms=300)], sets="ss")
    ...     view = c.wait_turn(game.game_id, game.token(0))  # the bot may move first
    ...     c.submit(game.game_id, game.token(0), view.legal_actions[0].id)

    Versions are handled for you: ``submit`` uses the last version this client saw of the
    game (or reads it), and when someone else moved first (ABORTED) it reads the new version
    and submits again; the rules then accept the action or say why not
    (:class:`~clients.sdk.errors.IllegalActionError`).
    """

    def __init__(
        self,
        address: str = "localhost:50051",
        *,
        timeout: float | None = 30.0,
        retry: RetryPolicy = DEFAULT_RETRY,
        channel: Any = None,
        tls: TLS | bool | None = None,
        operator_key: str | None = None,
    ) -> None:
        """``tls``: a :class:`~clients.sdk.tls.TLS` (or True: TLS with the system's CAs);
        unset: plaintext. ``operator_key``: sent as ``authorization: Bearer <key>`` with the
        calls that need one on a server with operator keys (create, list, delete)."""
        self.address = address
        self.timeout = timeout
        self.retry = retry
        self._operator = operator_metadata(operator_key)
        # A channel of its own gets a client span per call when OpenTelemetry is installed.
        self._channel: Any = (
            channel if channel is not None else traced_channel(tls_channel(address, tls, []))
        )
        self._stub = engine_pb2_grpc.EngineStub(self._channel)
        self._versions: dict[str, tuple[int, str]] = {}  # game -> (version, its commit id)
        self._lock = threading.Lock()
        self._catalogs: dict[str, Catalog] = {}

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until the server's health check answers SERVING (or raise UnavailableError)."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        health = health_pb2_grpc.HealthStub(self._channel)
        deadline = time.monotonic() + timeout
        last = "no answer"
        while True:
            try:
                reply = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=2.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
                last = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
            except grpc.RpcError as e:
                last = f"{status_name(e)}: {e.details()}"
            if time.monotonic() >= deadline:
                raise UnavailableError(f"engine at {self.address} is not serving ({last})")
            time.sleep(0.1)

    # -- calls -------------------------------------------------------------------------------

    def _call(self, fn: Callable[[], T], *, transient_retries: int | None = None) -> T:
        retries = self.retry.transient if transient_retries is None else transient_retries
        attempt = 0
        while True:
            try:
                return fn()
            except grpc.RpcError as e:
                if status_name(e) in TRANSIENT_CODES and attempt < retries:
                    time.sleep(self.retry.delay(attempt))
                    attempt += 1
                    continue
                raise from_rpc_error(e) from None

    def _seen(self, game_id: str, version: int, commit_id: str = "") -> None:
        with self._lock:
            if newer(self._versions.get(game_id), version, commit_id):
                self._versions[game_id] = (version, commit_id)

    def _reset_seen(self, game_id: str, version: int, commit_id: str = "") -> None:
        """The store's version, even below what was seen (it lost versions)."""
        with self._lock:
            self._versions[game_id] = (version, commit_id)

    def known_version(self, game_id: str) -> int | None:
        """The newest version of the game this client has seen, if any."""
        with self._lock:
            known = self._versions.get(game_id)
        return None if known is None else known[0]

    def _known_commit(self, game_id: str, version: int) -> str:
        """The commit id of ``version`` if it is the newest this client saw ("" if unknown)."""
        with self._lock:
            known = self._versions.get(game_id)
        return known[1] if known is not None and known[0] == version else ""

    def create_game(
        self,
        seats: Sequence[SeatSpec],
        *,
        sets: str = "ss",
        seed: int | None = None,
        clock: Clock | None = None,
    ) -> CreatedGame:
        """Create a game; returns its id and the seats' secret tokens."""
        req = create_game_request(seats, sets, seed, clock)
        resp = self._call(
            lambda: self._stub.CreateGame(req, timeout=self.timeout, metadata=self._operator),
            transient_retries=0,
        )
        self._seen(resp.game_id, resp.view.version, resp.view.commit_id)
        return CreatedGame(resp.game_id, tuple(resp.seat_tokens), resp.admin_token, resp.view)

    def get_view(self, game_id: str, token: str = "") -> game_pb2.GameView:
        """The game as the token's seat sees it (a spectator's view without a token)."""
        req = engine_pb2.GetGameRequest(game_id=game_id, token=token)
        view = self._call(lambda: self._stub.GetGame(req, timeout=self.timeout))
        self._seen(game_id, view.version, view.commit_id)
        return view

    def legal_actions(self, game_id: str, token: str) -> engine_pb2.ListLegalActionsResponse:
        """The seat's legal actions now (empty unless it must act), with the version."""
        req = engine_pb2.ListLegalActionsRequest(game_id=game_id, token=token)
        resp = self._call(lambda: self._stub.ListLegalActions(req, timeout=self.timeout))
        self._seen(game_id, resp.version)
        return resp

    def submit(
        self,
        game_id: str,
        token: str,
        action: int,
        *,
        expected_version: int | None = None,
        idempotency_key: str | None = None,
        retry_on_conflict: bool = True,
        seat_tokens: Sequence[str] = (),
    ) -> engine_pb2.SubmitActionResponse:
        """Apply one action of the token's seat.

        Without ``expected_version`` the last version this client saw is used (read from the
        server if none). On ABORTED the new version is read and the action submitted again, up
        to ``retry.conflicts`` times (unless ``retry_on_conflict`` is False); the rules then
        apply it or reject it with IllegalActionError. An idempotency key (generated if not
        given) makes transport retries safe. ``seat_tokens``: the other seats' tokens this
        caller holds (e.g. ``game.seat_tokens`` for a table of every seat); when the move passes
        to one of them, the answer's view is that seat's, its legal actions included.
        """
        key = idempotency_key or new_idempotency_key()
        version = expected_version if expected_version is not None else self.known_version(game_id)
        if version is None:
            version = self.get_view(game_id, token).version
        commit_id = self._known_commit(game_id, version)
        conflicts = 0
        while True:
            req = submit_request(game_id, token, version, action, key, seat_tokens, commit_id)
            try:
                resp = self._call(partial(self._stub.SubmitAction, req, timeout=self.timeout))
            except DataLossError as e:
                self._lost(game_id, e)
                raise
            except VersionConflictError as e:
                if not retry_on_conflict or conflicts >= self.retry.conflicts:
                    raise
                conflicts += 1
                current, commit_id = e.current_version, e.metadata.get("commit_id", "")
                if current is None or current <= version:
                    view = self.get_view(game_id, token)
                    current, commit_id = view.version, view.commit_id
                self._seen(game_id, current, commit_id)
                version = current
                key = new_idempotency_key()  # a new attempt, on a new version
                continue
            self._seen(game_id, resp.view.version, resp.view.commit_id)
            return resp

    def wait_turn(
        self, game_id: str, token: str, *, timeout: float | None = None
    ) -> game_pb2.GameView:
        """Wait until the token's seat must act, or the game is over; return its view then.

        The seat must act on its own turn and whenever it is asked a choice during another
        seat's turn (a Fate's banish, a Raid to prevent): the view's ``legal_actions`` are
        then its options. Between two such moments the game's updates are watched from the
        version read, so none is missed, and the view is read again once an update hands the
        move to this seat. ``timeout`` (seconds): raise :class:`TimeoutError` if the seat's
        move has not come by then (a bot that thinks long, a human who is away).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            view = self.get_view(game_id, token)
            if view.over or view.to_move == view.seat:
                return view
            if view.seat < 0:
                raise ValueError("wait_turn needs a seat's token: a spectator never moves")
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(
                    f"seat {view.seat + 1} was not to move in game {game_id} within {timeout} s"
                )
            with self.watch(game_id, after_version=view.version) as updates:
                timer = None if left is None else threading.Timer(left, updates.cancel)
                if timer is not None:
                    timer.daemon = True
                    timer.start()
                try:
                    for update in updates:
                        if update.over or update.to_move == view.seat:
                            break
                finally:
                    if timer is not None:
                        timer.cancel()

    def _lost(self, game_id: str, e: DataLossError) -> None:
        """The store lost what a submit was decided on: go on from what it holds."""
        current = e.current_version
        if current is not None:
            self._reset_seen(game_id, current, e.metadata.get("commit_id", ""))

    def watch(
        self,
        game_id: str,
        after_version: int = 0,
        *,
        reconnect: bool = True,
        resync: bool = True,
        after_commit_id: str = "",
        token: str = "",
        presence: bool = False,
    ) -> Watch:
        """Updates after ``after_version``, then each new one, until the game ends.

        Iterate the returned :class:`Watch`; a broken stream is reconnected from the last
        update received, naming its commit id (no update is lost or repeated). When the server
        no longer holds what the watch needs (OUT_OF_RANGE: too old, or fell behind; DATA_LOSS:
        the store lost versions this watch received), the watch resynchronises (``resync``):
        it reads the game again and goes on from its current version, noting it in
        ``watch.resyncs``; with ``resync=False`` it raises. ``watch.cancel()`` stops it.
        """
        return Watch(
            self, game_id, after_version, reconnect=reconnect, resync=resync,
            after_commit_id=after_commit_id, token=token, presence=presence,
        )  # fmt: skip

    def resign(self, game_id: str, token: str) -> engine_pb2.ResignResponse:
        """The token's seat resigns (docs/clients.md, "Resigning and seats that change
        hands"): it is out; a two-seat game ends and the other seat wins."""
        req = engine_pb2.ResignRequest(game_id=game_id, token=token)
        resp: engine_pb2.ResignResponse = self._call(
            lambda: self._stub.Resign(req, timeout=self.timeout), transient_retries=0
        )
        self._seen(game_id, resp.update.version, resp.update.commit_id)
        return resp

    def hand_over(
        self, game_id: str, admin_token: str, seat: int, to: SeatSpec
    ) -> engine_pb2.HandOverSeatResponse:
        """Hand ``seat`` to a bot or to a new player (``to``; the admin token, or an operator
        key with ``admin_token=""``): the answer has the new player's token; the old one stops
        working at once."""
        req = engine_pb2.HandOverSeatRequest(
            game_id=game_id, admin_token=admin_token, seat=seat, to=to.to_proto()
        )
        metadata = self._operator if not admin_token else None
        resp: engine_pb2.HandOverSeatResponse = self._call(
            lambda: self._stub.HandOverSeat(req, timeout=self.timeout, metadata=metadata),
            transient_retries=0,
        )
        self._seen(game_id, resp.update.version, resp.update.commit_id)
        return resp

    def practice(
        self,
        game_id: str,
        token: str = "",
        version: int = 0,
        *,
        seat: int | None = None,
        opponents: SeatSpec | BotSpec | None = None,
    ) -> PracticeGame:
        """Practice from here: a new game that starts at a decision of a seat (``version``: one
        at which the seat was to move, e.g. a review's ``DecisionReview.version``; 0 = now),
        the seat's player against bots, every card the seat could not see then dealt again at
        random. ``token``: the seat's own (or the admin token / the client's operator key with
        ``seat``, once the game is over), as for :meth:`review`. ``opponents``: the other
        seats' bot (``bot(difficulty="hard")``); by default an AI seat keeps its bot and a
        person's seat gets the "normal" level. Returns a :class:`PracticeGame` (its ``token``
        plays the new game). Not retried by itself (each call makes a game)."""
        req = practice_request(game_id, token, version, seat, opponents)
        metadata = self._operator if not token else None
        resp: engine_pb2.PracticeFromHereResponse = self._call(
            lambda: self._stub.PracticeFromHere(req, timeout=self.timeout, metadata=metadata),
            transient_retries=0,
        )
        return PracticeGame.from_proto(resp)

    def list_games(
        self, *, page_size: int = 50, page_token: str = "", active_only: bool = False
    ) -> engine_pb2.ListGamesResponse:
        req = engine_pb2.ListGamesRequest(
            page_size=page_size, page_token=page_token, active_only=active_only
        )
        return self._call(
            lambda: self._stub.ListGames(req, timeout=self.timeout, metadata=self._operator)
        )

    def get_replay(self, game_id: str) -> engine_pb2.Replay:
        req = engine_pb2.GetReplayRequest(game_id=game_id)
        return self._call(lambda: self._stub.GetReplay(req, timeout=self.timeout))

    def delete_game(self, game_id: str, admin_token: str) -> None:
        req = engine_pb2.DeleteGameRequest(game_id=game_id, admin_token=admin_token)
        self._call(
            lambda: self._stub.DeleteGame(req, timeout=self.timeout, metadata=self._operator)
        )

    def analyze(
        self, game_id: str, token: str, budget_ms: int = 0, *, timeout: float | None = None
    ) -> engine_pb2.AnalyzePositionResponse:
        """Hints for the token's seat, which must be the one to move: its legal actions rated
        by a search of what it may know, best first (``candidates``: ``action``, ``visits``,
        ``win_probability``, ``description``). ``budget_ms``: search time (0 = the server's
        cap, which also bounds it). Never retried by itself: the server limits analyses per
        seat (``RateLimitedError``, ``ResourceExhaustedError``). ``timeout`` defaults to the
        budget plus the client's timeout."""
        req = engine_pb2.AnalyzePositionRequest(game_id=game_id, token=token, budget_ms=budget_ms)
        wait = timeout if timeout is not None else analysis_timeout(budget_ms, self.timeout)
        resp = self._call(
            lambda: self._stub.AnalyzePosition(req, timeout=wait), transient_retries=0
        )
        self._seen(game_id, resp.version)
        return resp

    def review(
        self,
        game_id: str,
        token: str = "",
        seat: int | None = None,
        budget_ms: int = 0,
        *,
        with_views: bool = False,
        timeout: float | None = None,
    ) -> Generator[DecisionReview, None, None]:
        """A review of one seat's past decisions (:mod:`clients.sdk.review`): an iterator of
        :class:`~clients.sdk.review.DecisionReview`, each as the server rates it. ``token``: the
        seat's own (``seat`` may then be left out), or the admin token, or empty with the
        client's operator key (those two review any seat, once the game is over).
        ``budget_ms``: search time per decision (0 = the server's default; the server caps
        it). ``with_views``: each review also holds the board as the seat saw it then
        (``view``). ``timeout``: for the whole review (default: none). Not retried by itself:
        asking again later is answered from what the server kept."""
        req = review_request(game_id, token, seat, budget_ms, with_views)
        metadata = self._operator if not token else None
        return iterate(self._stub.ReviewGame(req, timeout=timeout, metadata=metadata))

    def catalog(self, fingerprint: str = "") -> Catalog:
        """The card catalog (cached per fingerprint)."""
        cached = self._catalogs.get(fingerprint) if fingerprint else None
        if cached is not None:
            return cached
        req = engine_pb2.ListCardsRequest()
        cat = Catalog.from_proto(
            self._call(lambda: self._stub.ListCards(req, timeout=self.timeout))
        )
        self._catalogs[cat.fingerprint] = cat
        return cat

    # -- used by Watch -----------------------------------------------------------------------

    def _open_watch(
        self,
        game_id: str,
        after_version: int,
        after_commit_id: str = "",
        token: str = "",
        presence: bool = False,
    ) -> Any:
        req = engine_pb2.WatchGameRequest(
            game_id=game_id, after_version=after_version, after_commit_id=after_commit_id,
            token=token, with_presence=presence,
        )  # fmt: skip
        return self._stub.WatchGame(req)


class Watch(Iterator[game_pb2.GameUpdate]):
    """An iterator of a game's updates that survives dropped connections.

    ``last_version`` is the version of the last update received: pass it as
    ``after_version`` to ``Client.watch`` to resume later from exactly there.
    """

    def __init__(
        self,
        client: Client,
        game_id: str,
        after_version: int,
        *,
        reconnect: bool,
        resync: bool = True,
        after_commit_id: str = "",
        token: str = "",
        presence: bool = False,
    ) -> None:
        self._client = client
        self.token = token  # a seat's: it is present while the watch is open
        self.presence = presence  # also yield who is here (updates with presence_only)
        self.game_id = game_id
        self.last_version = after_version
        self.last_commit_id = after_commit_id
        self.resyncs: list[Resync] = []  # each time the watch had to start again from the game
        self._reconnect = reconnect
        self._resync = resync
        self._call: Any = None
        self._cancelled = False
        self._done = False
        self.reconnects = 0  # how many times the stream was reopened

    def __iter__(self) -> Watch:
        return self

    @property
    def closed(self) -> bool:
        """True once cancelled, or after the game's last update."""
        return self._cancelled or self._done

    def cancel(self) -> None:
        self._cancelled = True
        call = self._call
        if call is not None:
            call.cancel()

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cancel()

    def __next__(self) -> game_pb2.GameUpdate:
        failures = 0
        while True:
            if self._cancelled or self._done:
                raise StopIteration
            if self._call is None:
                self._call = self._client._open_watch(
                    self.game_id, self.last_version, self.last_commit_id, self.token,
                    self.presence,
                )
            try:
                update: game_pb2.GameUpdate = next(self._call)
            except StopIteration:
                self._call = None
                if self._game_over():
                    self._done = True
                    raise StopIteration from None
                failures = self._backoff(failures, None)
                continue
            except grpc.RpcError as e:
                self._call = None
                if self._cancelled:
                    raise StopIteration from None
                if self._resync and status_name(e) in RESYNC_CODES:
                    self._resynchronise(from_rpc_error(e))
                    continue
                failures = self._backoff(failures, e)
                continue
            if update.presence_only:
                return update  # who is here: no version of its own (asked for: presence)
            if update.version <= self.last_version:
                continue  # already delivered before a reconnect
            failures = 0
            self.last_version, self.last_commit_id = update.version, update.commit_id
            self._client._seen(self.game_id, update.version, update.commit_id)
            if update.over:
                self._done = True
                self.cancel_stream()
            return update

    def _resynchronise(self, error: AscensionError) -> None:
        """Go on from the game as the server holds it now."""
        view = self._client.get_view(self.game_id)
        self.resyncs.append(Resync(error, self.last_version, view.version))
        self._client._reset_seen(self.game_id, view.version, view.commit_id)
        self.last_version, self.last_commit_id = view.version, view.commit_id
        if view.over:
            self._done = True

    def cancel_stream(self) -> None:
        call, self._call = self._call, None
        if call is not None:
            call.cancel()

    def _game_over(self) -> bool:
        """After the server closed the stream: is the game over (else the stream broke)?"""
        try:
            view = self._client.get_view(self.game_id)
        except UnavailableError:
            return False
        return bool(view.over) and view.version <= self.last_version

    def _backoff(self, failures: int, error: grpc.RpcError | None) -> int:
        if error is not None and status_name(error) not in TRANSIENT_CODES | {
            "INTERNAL",
            "UNKNOWN",
            "CANCELLED",
        }:
            raise from_rpc_error(error) from None
        if not self._reconnect or failures >= self._client.retry.reconnects:
            if error is not None:
                raise from_rpc_error(error) from None
            raise AscensionError(
                "the event stream closed before the game ended", code="UNAVAILABLE"
            )
        time.sleep(self._client.retry.delay(failures))
        self.reconnects += 1
        return failures + 1

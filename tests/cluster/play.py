"""Playing through a store outage: a player that retries what it may retry and keeps the list
of the actions the server acknowledged, and a watcher that records what a stream told it."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

import grpc  # type: ignore[import-untyped]

from engine_service.api.ascension.v1 import engine_pb2 as epb
from engine_service.api.ascension.v1 import engine_pb2_grpc as rpc
from engine_service.api.ascension.v1 import game_pb2 as pb
from tests.service import support

CALL_TIMEOUT = 15.0
# The store may answer UNAVAILABLE for a while during a failover (or DEADLINE_EXCEEDED when a
# call waited that long): the same request (same idempotency key) is sent again.
RETRIED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)


def call(fn: object, request: object, patience: float = 60.0) -> tuple[object, int]:
    """(reply, retries) of ``fn(request)``, sent again on RETRIED codes for ``patience`` s."""
    deadline = time.monotonic() + patience
    retries = 0
    while True:
        try:
            return fn(request, timeout=CALL_TIMEOUT), retries  # type: ignore[operator]
        except grpc.RpcError as e:
            if e.code() not in RETRIED or time.monotonic() > deadline:
                raise
            retries += 1
            time.sleep(0.1)


@dataclass
class Acked:
    version: int
    seat: int
    action: int
    commit_id: str
    replayed: bool


@dataclass
class Player:
    """Plays every seat of one game (the quick-ending policy of the service tests), each
    action with an idempotency key, retried on UNAVAILABLE; ``acked`` lists what the server
    acknowledged. ``step`` plays one action; ``play`` goes on in a thread until told to stop,
    the game ends or ``max_actions`` were played."""

    stub: rpc.EngineStub
    game: epb.CreateGameResponse
    seed: int = 1
    acked: list[Acked] = field(default_factory=list)
    retries: int = 0
    error: BaseException | None = None
    view: pb.GameView | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @property
    def game_id(self) -> str:
        return str(self.game.game_id)

    def refresh(self) -> pb.GameView:
        spectator, r1 = call(self.stub.GetGame, epb.GetGameRequest(game_id=self.game_id))
        assert isinstance(spectator, pb.GameView)
        seat = spectator.to_move if spectator.to_move >= 0 else 0
        view, r2 = call(
            self.stub.GetGame,
            epb.GetGameRequest(game_id=self.game_id, token=self.game.seat_tokens[seat]),
        )
        assert isinstance(view, pb.GameView)
        self.retries += r1 + r2
        self.view = view
        return view

    def request(self) -> epb.SubmitActionRequest:
        view = self.view if self.view is not None else self.refresh()
        if view.seat != view.to_move:
            view = self.refresh()
        return epb.SubmitActionRequest(
            game_id=self.game_id, token=self.game.seat_tokens[view.seat], expected_version=view.version,
            expected_commit_id=view.commit_id, action=support.pick(view, self.rng),
            idempotency_key=f"{self.game_id}-{view.version}",
        )  # fmt: skip

    def send(
        self, req: epb.SubmitActionRequest, patience: float = 60.0
    ) -> epb.SubmitActionResponse:
        resp, retries = call(self.stub.SubmitAction, req, patience)
        assert isinstance(resp, epb.SubmitActionResponse)
        self.retries += retries
        u = resp.update
        assert u.version == req.expected_version + 1 and (u.seat, u.action) == (
            resp.view.seat,
            req.action,
        )
        self.acked.append(Acked(u.version, u.seat, u.action, u.commit_id, resp.replayed))
        self.view = resp.view
        return resp

    def step(self) -> epb.SubmitActionResponse:
        return self.send(self.request())

    @property
    def over(self) -> bool:
        return self.view is not None and self.view.over

    def play(self, max_actions: int = 10_000) -> threading.Thread:
        def run() -> None:
            try:
                while not self.stop.is_set() and not self.over and len(self.acked) < max_actions:
                    self.step()
            except BaseException as e:  # reported by the test
                self.error = e
            finally:
                self.done.set()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        return t

    def wait_for(self, actions: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < actions and not self.done.is_set():
            assert time.monotonic() < deadline, (
                f"{self.game_id}: {len(self.acked)} of {actions} actions"
            )
            time.sleep(0.02)
        assert self.error is None, self.error


@dataclass
class Follower:
    """WatchGame from the start to the game's end, resuming with the last version and commit
    id it has after UNAVAILABLE, and from the game's current version (GetGame) when told it
    fell behind the window (OUT_OF_RANGE: a reader that was cut off while the game went on). A
    DATA_LOSS or any other error ends it and is kept."""

    stub: rpc.EngineStub
    game_id: str
    updates: list[pb.GameUpdate] = field(default_factory=list)
    resumed: int = 0
    skipped: int = 0  # times it fell behind the window and went on from GetGame
    error: grpc.RpcError | None = None
    done: threading.Event = field(default_factory=threading.Event)

    def start(self, timeout: float = 120.0) -> Follower:
        threading.Thread(target=self._run, args=(timeout,), daemon=True).start()
        return self

    def _run(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        after, after_id = 0, ""
        try:
            while time.monotonic() < deadline:
                req = epb.WatchGameRequest(
                    game_id=self.game_id, after_version=after, after_commit_id=after_id
                )
                try:
                    for u in self.stub.WatchGame(
                        req, timeout=max(1.0, deadline - time.monotonic())
                    ):
                        self.updates.append(u)
                        after, after_id = u.version, u.commit_id
                        if u.over:
                            return
                    return
                except grpc.RpcError as e:
                    if e.code() in RETRIED and time.monotonic() < deadline:
                        self.resumed += 1
                        time.sleep(0.1)
                        continue
                    if e.code() == grpc.StatusCode.OUT_OF_RANGE:
                        view, _ = call(self.stub.GetGame, epb.GetGameRequest(game_id=self.game_id))
                        assert isinstance(view, pb.GameView)
                        self.skipped += 1
                        if view.over:
                            return
                        after, after_id = view.version, view.commit_id
                        continue
                    self.error = e
                    return
        finally:
            self.done.set()


def check_watched(f: Follower, acked: list[Acked]) -> None:
    """One history: every update ``f`` watched is the acknowledged one of its version, in
    order, up to the game's end (a watcher whose reader was held up longer than the window
    lasts was told so and went on from GetGame)."""
    assert f.done.wait(30) and f.error is None, f.error
    versions = [u.version for u in f.updates]
    assert versions == sorted(set(versions)) and versions[0] == 1
    by_version = {a.version: a.commit_id for a in acked}
    wrong = [
        (u.version, u.commit_id, u.parent_commit_id, by_version.get(u.version))
        for u in f.updates[1:]
        if by_version.get(u.version) != u.commit_id
    ]
    assert not wrong, f"(version, watched commit, its parent, acked commit): {wrong[:8]}; " \
        f"resumed {f.resumed}, skipped {f.skipped}"
    assert f.skipped or (f.updates[-1].over and f.updates[-1].version == acked[-1].version)


def check_history(stub: rpc.EngineStub, player: Player) -> None:
    """The game holds exactly the acknowledged actions, each once, in order: its replay (or,
    if it goes on, its current version) follows the list of acknowledgements."""
    versions = [a.version for a in player.acked]
    assert versions == list(range(2, 2 + len(versions))), versions  # one answer per version
    if player.over:
        replay, _ = call(stub.GetReplay, epb.GetReplayRequest(game_id=player.game_id))
        assert isinstance(replay, epb.Replay)
        assert [(s.version, s.seat, s.action) for s in replay.steps] == [
            (a.version, a.seat, a.action) for a in player.acked
        ]
    view = player.refresh()
    assert view.version == 1 + len(player.acked)
    assert view.commit_id == player.acked[-1].commit_id

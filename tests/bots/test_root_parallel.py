"""Root parallelism (``ismcts:workers=N``): one decision searched by N processes, their root
visits summed. Real helper processes (a process pool), no stand-ins."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import pytest

from ai_workers.bots import BotSettings
from ai_workers.bots.ismcts import ISMCTSBot, SearchOptions, parallel_search, search
from ai_workers.bots.root_parallel import _share_settings, shutdown
from engine_service import rules
from tests.ai.positions import mid_game_states


def test_shares_split_an_iteration_budget_and_merge_every_visit() -> None:
    s = mid_game_states(1)[0]
    view, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    settings = BotSettings(name="ismcts", iterations=120, seed=5)
    r = parallel_search(view, legal, settings, SearchOptions(workers=3))
    assert r.action in legal
    assert r.iterations == 120  # 40 in each of the three processes
    assert sum(r.visits.values()) == 120  # every iteration went through one root action
    assert set(r.visits) <= set(legal)
    assert all(0.0 <= v <= 1.0 for v in r.values.values())
    # the local share is the plain search with its own seed: the helpers' visits come on top
    local = search(view, legal, _share_settings(settings, 0, 3), SearchOptions())
    assert local.iterations == 40
    assert all(r.visits[a] >= n for a, n in local.visits.items())
    assert r.visits != local.visits


def test_the_same_seed_gives_the_same_parallel_decision() -> None:
    s = mid_game_states(2)[1]
    view, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    settings = BotSettings(name="ismcts", iterations=80, seed=9)
    a = parallel_search(view, legal, settings, SearchOptions(workers=2))
    b = parallel_search(view, legal, settings, SearchOptions(workers=2))
    assert (a.action, a.visits) == (b.action, b.visits)


def test_a_time_budget_gives_every_share_the_whole_time() -> None:
    s = mid_game_states(1)[0]
    view, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    bot = ISMCTSBot(workers=2)
    settings = BotSettings(name="ismcts", time_ms=150, seed=1)
    bot.choose(view, legal, settings)  # the first call starts the helper process
    action = bot.choose(view, legal, settings)
    assert action in legal and bot.last is not None
    assert bot.last.seconds < 0.150 + 2.0  # the helpers stop on their own clock
    assert sum(bot.last.visits.values()) == bot.last.iterations > 0


def test_forced_and_single_actions_take_no_helper() -> None:
    s = rules.new_game(rules.GameConfig(sets="ss", players=2, seed=3))
    while s.decision is not None:
        rules.apply(s, rules.legal_actions(s)[0])
    legal = rules.legal_actions(s)  # playing cards: answered without a search
    r = parallel_search(rules.view(s, s.to_move()), legal, BotSettings(name="ismcts", iterations=50),
                        SearchOptions(workers=4))  # fmt: skip
    assert r.iterations == 0 and r.action in legal


def test_a_forked_bot_process_gets_pool_of_its_own() -> None:
    """A pool is per process: a child forked after the parent made its pool (a worker pool's
    process) starts its own instead of writing to the parent's."""
    s = mid_game_states(1)[0]
    view, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    settings = BotSettings(name="ismcts", iterations=40, seed=2)
    want = parallel_search(view, legal, settings, SearchOptions(workers=2)).visits
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: same search, its own helper
        try:
            os.close(read)
            got = parallel_search(view, legal, settings, SearchOptions(workers=2)).visits
            shutdown()  # its helper inherited the pipe: stopped, so the parent's read ends
            os.write(write, repr(sorted(got.items())).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = f.read()
    os.waitpid(pid, 0)
    assert child == repr(sorted(want.items()))


def _search_with_helpers(view_bytes: bytes, legal: list[int], pid_file: str) -> None:
    view = rules.View.deserialize(view_bytes)
    settings = BotSettings(name="ismcts", iterations=40, seed=3)
    parallel_search(view, legal, settings, SearchOptions(workers=2))
    helpers = [p for p in _descendants(os.getpid()) if p != os.getpid()]
    Path(pid_file).write_text(" ".join(map(str, helpers)))


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


@pytest.mark.parametrize("kind", ["multiprocessing", "billiard"])
def test_a_child_process_that_searched_in_parallel_exits(kind: str, tmp_path: Path) -> None:
    """A benchmark's game process or a pool's worker that used helpers exits on its own, and
    its helpers with it: a multiprocessing child joins its children before atexit hooks, so
    helpers left waiting for work kept it alive for ever (a strength run hung at its end this
    way). A Celery prefork child is a billiard process: billiard runs multiprocessing's
    finalizers at its exit too (it imports their registry), so the helpers stop there as well."""
    import billiard  # type: ignore[import-untyped]

    s = mid_game_states(1)[0]
    view, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    ctx = (multiprocessing if kind == "multiprocessing" else billiard).get_context("fork")
    pid_file = tmp_path / "helpers"
    # No helpers of this process's own (earlier tests') for the child to inherit: a billiard
    # child keeps multiprocessing's list of its parent's children, and would try to join them
    # at exit (a Celery worker's main process has none).
    shutdown()
    child = ctx.Process(target=_search_with_helpers, args=(view.serialize(), legal, str(pid_file)))
    child.start()
    child.join(30)
    stuck = child.is_alive()
    if stuck:  # leave nothing behind: the child and its helpers
        for pid in _descendants(child.pid or 0):
            os.kill(pid, signal.SIGKILL)
        child.join(5)
    assert not stuck, "the child did not exit within 30 s after its search"
    assert child.exitcode == 0
    helpers = [int(p) for p in pid_file.read_text().split()]
    assert helpers  # it did search with a helper
    deadline = time.monotonic() + 10
    while not all(_gone(p) for p in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in helpers if not _gone(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    assert not left, f"helpers {left} outlived the child"


def test_a_larger_pool_replaces_the_smaller_and_searches() -> None:
    """More workers than the pool has: a larger pool is made and used (the stop-at-exit hook
    of the one it replaces must not stop it)."""
    s = mid_game_states(1)[0]
    view, legal = rules.view(s, s.to_move()), rules.legal_actions(s)
    settings = BotSettings(name="ismcts", iterations=60, seed=4)
    try:
        parallel_search(view, legal, settings, SearchOptions(workers=2))
        r = parallel_search(view, legal, settings, SearchOptions(workers=3))
        assert r.iterations == 60 and sum(r.visits.values()) == 60
        again = parallel_search(view, legal, settings, SearchOptions(workers=3))
        assert (again.action, again.visits) == (r.action, r.visits)
    finally:
        shutdown()


def _descendants(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return [pid]
    return [pid, *(d for k in kids for d in _descendants(int(k)))]


@pytest.mark.parametrize("bad", [{"workers": 0}, {"workers": 65}, {"workers": 2, "reuse": True}])
def test_bad_worker_counts_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="workers"):
        SearchOptions(**bad)  # type: ignore[arg-type]

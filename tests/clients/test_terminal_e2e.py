"""The terminal client end to end: a real pseudo-terminal, a real engine, a real bot.

``ascension play`` starts its own engine (embedded store, local AI pool) as a new user's
machine would; the test reads each numbered menu off the screen and types a choice.
"""

from __future__ import annotations

import re
import signal
import time

import pexpect
import pytest

from clients.embedded import EmbeddedEngine
from clients.sdk import Client, bot, human
from tests.clients.conftest import requires_ai
from tests.clients.tty import (
    CONFIRM,
    PROMPT,
    Terminal,
    choose,
    numbers,
    port_open,
    wait_closed,
)

ENGINE_AT = re.compile(r"on the engine at (127\.0\.0\.1:\d+)")
REVIEW_OFFER = r"Review your decisions with the engine's search\? \(y/N\) "

pytestmark = [requires_ai, pytest.mark.timeout(120)]


def _engine_address(term: Terminal) -> tuple[str, dict[int, str]]:
    """At the first prompt, read the menu, then ask for help: it names the game's engine."""
    term.expect([PROMPT], timeout=60)
    menu = term.menu()
    term.send("?")
    term.expect([ENGINE_AT], timeout=10)
    address = term.child.match.group(1)
    term.expect([PROMPT], timeout=10)
    return str(address), menu


@pytest.mark.parametrize("bot_name", ["random", "ismcts"])
def test_play_a_whole_game_against_a_bot(bot_name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # the review offered at the end: short searches (the private engine reads these)
    monkeypatch.setenv("ENGINE_REVIEW_BUDGET_MS", "20")
    monkeypatch.setenv("ENGINE_ANALYSIS_MAX_ITERATIONS", "20")
    t0 = time.monotonic()
    args = ["play", "--players", "2", "--bot", bot_name, "--seed", "1", "--budget-ms", "40"]
    term = Terminal(args)
    try:
        address, menu = _engine_address(term)
        assert port_open(address)
        moves = 0
        assert menu, "the first screen lists numbered actions"
        term.send(str(choose(menu)))
        while True:
            i = term.expect([PROMPT, CONFIRM, "Final score", pexpect.EOF], timeout=60)
            if i == 0:
                menu = term.menu()
                assert menu and set(menu) == numbers(term.child.match.group(1))
                term.send(str(choose(menu)))
                moves += 1
            elif i == 1:
                term.send("y")
            elif i == 2:
                break
            else:
                pytest.fail("the client exited before the end of the game:\n" + term.output[-3000:])
            assert time.monotonic() - t0 < 100, "the game takes too long"
        term.expect([REVIEW_OFFER], timeout=30)
        reviewed = bot_name == "ismcts"  # (one of the two games says yes)
        term.send("y" if reviewed else "n")
        if reviewed:
            term.expect(["Win chance over the game:"], timeout=60)
            # then a practice game from the first key moment: the same engine, the same seat
            term.expect([r"Practise from a key moment against the bots\? \(1-\d, or N\) "],
                        timeout=30)  # fmt: skip
            term.send("1")
            term.expect(["Practice from turn"], timeout=30)
            term.expect([PROMPT], timeout=60)
            term.send("q")
            term.expect([CONFIRM], timeout=30)  # leaving asks first
            term.send("y")
        code = term.wait_exit()
    finally:
        term.kill()
    out = term.output
    assert code == 0, out[-2000:]
    assert moves > 10
    # The board: the ring of spaces with The Deep, ships, the piles, seats and Honor.
    for shown in ("The Deep", "Honor pool", "Hand:", "[YOU]", "Mystic 3R", "Cultist 2P"):
        assert shown in out, shown
    assert re.search(rf"Seat \d \({bot_name}\): Crew \d+ · Honor \d+", out)
    # What the bot did between our turns.
    assert re.search(rf"R\d+ Seat \d \({bot_name}\): (played|acquired|defeated)", out)
    # The final score table and the result.
    tail = out[out.rindex("Final score") :]
    assert "Total" in tail and re.search(rf"★ (You|Seat \d \({bot_name}\))\s+\d+", tail)
    assert re.search(rf"You win!|Seat \d \({bot_name}\) wins\.", tail)
    assert re.search(r"You\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+", tail)
    # The review, when asked for: rated decisions and the win chance over the game.
    if reviewed:
        review = out[out.rindex("Review of your decisions") :]
        assert re.search(r"Round \d+\s+\S+ (Best|Good|Inaccuracy|Mistake|Blunder)\s", review)
        assert re.search(r"You\s+[▁▂▃▄▅▆▇█]+\s+\d+% → \d+%", review)
    else:
        assert "Review of your decisions" not in out
    # The private engine is gone with the client.
    assert wait_closed(address), f"the engine at {address} still answers"


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("how", ["ctrl-c", "ctrl-c, started with it ignored", "hangup"])
def test_interrupt_quits_and_stops_the_engine(how: str) -> None:
    # "started with it ignored": as from a non-interactive shell's `ascension play &`; Python
    # then leaves SIGINT ignored unless the client sets it.
    ignored = _ignore_sigint if "ignored" in how else None
    term = Terminal(
        ["play", "--bot", "random", "--budget-ms", "50", "--seed", "3"], preexec_fn=ignored
    )
    try:
        address, _ = _engine_address(term)
        if how.startswith("ctrl-c"):
            term.child.sendintr()
        else:  # the terminal window was closed
            term.child.kill(signal.SIGHUP)
        code = term.wait_exit()
    finally:
        term.kill()
    assert code == 130
    if how.startswith("ctrl-c"):
        assert "Stopped." in term.output
    assert wait_closed(address)


def test_q_leaves_the_game() -> None:
    term = Terminal(["play", "--bot", "random", "--budget-ms", "50", "--seed", "4"])
    try:
        address, _ = _engine_address(term)
        term.send("c")  # card texts, then still at the prompt
        term.expect([PROMPT], timeout=10)
        term.send("17")  # not an action: told so, asked again
        term.expect(["There is no action 17"], timeout=10)
        term.send("q")  # asks first: "n" stays in the game
        term.expect([r"Leave this game\? The game stops here"], timeout=10)
        term.send("n")
        term.expect([PROMPT], timeout=10)
        term.send("q")
        term.expect([r"Leave this game\?"], timeout=10)
        term.send("y")
        term.expect(["You left game"], timeout=10)
        code = term.wait_exit()
    finally:
        term.kill()
    assert code == 0
    assert wait_closed(address)


def test_join_an_existing_game_and_watch_it() -> None:
    """`play --game/--token` joins a game on a running engine; `watch` spectates another."""
    with EmbeddedEngine(ai_processes=2) as engine, Client(engine.address) as c:
        mine = c.create_game([human("Ann"), bot("random", time_ms=20)], seed=9)
        term = Terminal(
            ["play", "--address", engine.address, "--game", mine.game_id, "--token", mine.token(0)]
        )
        try:
            term.expect([PROMPT], timeout=60)
            term.send("q")
            term.expect([r"Leave this game\? You can rejoin it"], timeout=10)
            term.send("y")
            term.expect(["Rejoin it with this command"], timeout=10)
            assert term.wait_exit() == 0
        finally:
            term.kill()
        assert "Ann" not in term.output or "You" in term.output
        # the command on a line of its own, unbroken (the terminal folds it, the text does
        # not: a copy of it is the whole command), the token whole
        command = (
            f"ascension play --address {engine.address} --game {mine.game_id} "
            f"--token {mine.token(0)}"
        )
        assert re.search(r"(?m)^" + re.escape(command) + r"\r?$", term.output), term.output[-600:]

        # `ascension games` at 80 columns: every game id whole
        listing = Terminal(["games", "--address", engine.address], cols=80)
        try:
            assert listing.wait_exit() == 0
        finally:
            listing.kill()
        assert mine.game_id in listing.output, listing.output

        bots_game = c.create_game(
            [bot("random", time_ms=20, seed=1), bot("heuristic", time_ms=20, seed=2)], seed=10
        )
        spectator = Terminal(["watch", bots_game.game_id, "--address", engine.address])
        try:
            spectator.expect(["Final score"], timeout=90)
            assert spectator.wait_exit() == 0
        finally:
            spectator.kill()
        out = spectator.output
        assert "The Deep" in out and "Honor pool" in out and "★ Seat" in out
        assert c.get_view(bots_game.game_id).over


def test_bots_runner_prints_a_results_table() -> None:
    term = Terminal(
        ["bots", "--games", "3", "--bots", "random,heuristic", "--budget-ms", "20", "--seed", "5"],
        cols=100,
    )
    try:
        term.expect(["Mean margin"], timeout=110)
        code = term.wait_exit()
    finally:
        term.kill()
    out = term.output
    assert code == 0, out[-2000:]
    assert "3/3 games" in out and "Win rate" in out
    rows = {m.group(1): m for m in re.finditer(r"(random|heuristic)\W+(\d+)\W+(\d+)\W+(\d+)%", out)}
    assert set(rows) == {"random", "heuristic"}
    assert sum(int(m.group(2)) for m in rows.values()) == 6  # 3 games x 2 seats
    assert sum(int(m.group(3)) for m in rows.values()) == 3  # one winner per game
    assert "games" in out and "3/3" in out  # the progress bar


def _key(menu: dict[int, str], starts: str) -> int:
    return next(k for k, d in sorted(menu.items()) if d.startswith(starts))


def test_a_newcomers_turn_numbers_stay_and_risky_moves_ask_first() -> None:
    """The same number typed twice plays the same card twice; ending a turn with cards to
    play, or sailing, asks first, and "n" changes nothing; "?" explains the game."""
    term = Terminal(["play", "--bot", "heuristic", "--seed", "5", "--budget-ms", "50"], rows=40)
    try:
        term.expect([PROMPT], timeout=60)
        menu = term.menu()
        if any(d.startswith("Place your ship") for d in menu.values()):
            term.send(str(_key(menu, "Place your ship")))
            term.expect([PROMPT], timeout=30)
            menu = term.menu()
        apprentice = _key(menu, "Play Apprentice")
        term.send(str(apprentice))
        term.expect([PROMPT], timeout=30)
        assert term.menu()[apprentice] == "Play Apprentice"  # more in hand: the same number
        term.send(str(apprentice))
        term.expect([PROMPT], timeout=30)
        menu = term.menu()
        term.send(str(_key(menu, "End your turn")))
        term.expect([r"You can still play \d+ card"], timeout=10)
        # where they go, as the rulebook says: the discard pile, not lost
        term.expect([r"go\s+to\s+your\s+discard\s+pile"], timeout=10)
        term.expect([CONFIRM], timeout=10)
        term.send("n")
        term.expect(["Not done"], timeout=10)
        term.send("?")
        term.expect(["How to play"], timeout=10)
        term.expect(["Thukal"], timeout=10)
        term.expect([r"keywords:\s+Unite, Echo, Plunder"], timeout=10)  # the card words
        term.expect([r"factions:\s+Enlightened, Lifebound, Mechana, Void"], timeout=10)
        term.expect([PROMPT], timeout=10)
        assert "Ghost Pirate" not in term.output  # a Skulls & Sails game: rules and words
        term.send("? unite")  # a keyword explained where it is read
        term.expect([r"Unite: the effect after it happens if you play another Hero"], timeout=10)
        term.expect([PROMPT], timeout=10)
        term.send("")  # Enter redraws
        term.expect([PROMPT], timeout=10)
        assert term.menu() == menu  # nothing was done
        # end this turn, then, on the next, ask to sail and decline
        term.send(str(_key(menu, "End your turn")))
        term.expect([CONFIRM], timeout=10)
        term.send("y")
        for _ in range(5):
            term.expect([PROMPT], timeout=60)
            menu = term.menu()
            if any(d.startswith("Move your ship") for d in menu.values()):
                break
            term.send(str(choose(menu)))
        move = _key(menu, "Move your ship")
        term.send(str(move))
        term.expect([r"\(your one move this turn"], timeout=10)
        term.send("n")
        term.expect(["Not done"], timeout=10)
        term.expect([PROMPT], timeout=10)
        term.send("")  # Enter redraws: the ship did not move, the number is the same
        term.expect([PROMPT], timeout=10)
        assert term.menu()[move] == menu[move]
        term.send("q")
        term.expect([CONFIRM], timeout=10)
        term.send("y")
        assert term.wait_exit() == 0
    finally:
        term.kill()

"""The page in a real browser (Debian's headless Chromium, driven by Playwright).

One run plays a whole game against a bot from the lobby, with the keyboard where it can
(keys 1-9 take the listed actions, A plays the whole hand), then watches a bots-only game
from the lobby's list to its end, and looks at the page on a phone-sized screen.
Screenshots are saved under tests/web/artifacts/ (or $ASCENSION_WEB_ARTIFACTS), named by page
and screen size (e.g. game-start-1400x900.png, game-390x844.png).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.clients.conftest import requires_ai
from tests.web.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, WebServer, have_chromium, missing

pytestmark = [requires_ai, pytest.mark.timeout(240)]

sync_api = pytest.importorskip("playwright.sync_api")
Page = Any  # playwright.sync_api.Page
GAME_TIMEOUT_S = 150


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not have_chromium():
        missing(f"Chromium ({CHROMIUM})")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


WIDE = (1400, 900)
PHONE = (390, 844)


def new_page(browser: Any, width: int = WIDE[0], height: int = WIDE[1]) -> Any:
    context = browser.new_context(viewport={"width": width, "height": height})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    return page


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def choose(labels: list[str]) -> int:
    """A quick player: play cards, then defeat or acquire, answer choices, then end the turn."""

    def first(pattern: str) -> int | None:
        return next((i for i, t in enumerate(labels) if re.search(pattern, t)), None)

    for pattern in (
        r"^Play (?!all)",
        r"^Defeat",
        r"^Acquire",
        r"^(?!End your turn|Move your ship)",
    ):
        i = first(pattern)
        if i is not None:
            return i
    return 0


def changed(page: Any, version: str | None, timeout: float = 30.0) -> None:
    """Wait until the action list is gone or shows another version of the game.

    (Polled from here: the page's Content-Security-Policy forbids the string evaluation that
    Playwright's wait_for_function would need.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        actions = page.query_selector(".action-list")
        if actions is None or actions.get_attribute("data-version") != version:
            return
        time.sleep(0.02)
    pytest.fail(f"the page still shows version {version} after {timeout} s")


def answer_confirm(page: Any, yes: bool = True) -> str:
    """Answer the question the page asks before ending a turn with something left, or before
    sailing (as the terminal asks); its text, or "" when it asked nothing."""
    dialog = page.locator("dialog.confirm[open]")
    if dialog.count() == 0:
        return ""
    text: str = dialog.locator("p").inner_text()
    dialog.locator(".yes" if yes else ".no").click()
    return text


def press(page: Any, key: str) -> str:
    """Press an action's key, confirming the move if the page asks; what it asked."""
    page.keyboard.press(key)
    return answer_confirm(page)


def width_fits(page: Any, width: int) -> None:
    """Nothing wider than the screen: no sideways scrolling of the page."""
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= width, f"the page is {scroll} px wide on a {width} px screen"


def names_wrap_between_words(page: Any) -> None:
    """Every card name on the screen breaks only between its words: each word on one line,
    none wider than its card."""
    broken = page.evaluate(
        """() => [...document.querySelectorAll('.card-name')].filter((el) => {
            const node = el.firstChild;
            if (!node || !el.getClientRects().length) return false;
            let at = 0;
            for (const word of el.textContent.split(' ')) {
                const r = document.createRange();
                r.setStart(node, at); r.setEnd(node, at + word.length);
                at += word.length + 1;
                if (r.getClientRects().length > 1) return true;
            }
            return el.scrollWidth > el.clientWidth + 1;
        }).map((el) => el.textContent)"""
    )
    assert not broken, f"names broken inside a word: {broken}"


def play_to_the_end(page: Any) -> int:
    moves = 0
    deadline = time.monotonic() + GAME_TIMEOUT_S
    per_turn = 0
    while time.monotonic() < deadline:
        page.wait_for_selector(".action-list button.act, .scores", timeout=60_000)
        if page.query_selector(".scores"):
            return moves
        actions = page.query_selector(".action-list")
        if actions is None:
            continue
        version = actions.get_attribute("data-version")
        buttons = actions.query_selector_all("button.act")
        labels = [re.sub(r"^[1-9A]\s*", "", b.inner_text()).strip() for b in buttons]
        if not labels:
            continue
        if "Play all your cards" in labels and moves % 2 == 0:
            page.keyboard.press("a")  # the whole hand at once, by the keyboard
        else:
            i = choose([lb for lb in labels if lb != "Play all your cards"])
            per_turn = 0 if labels[i].startswith("End") else per_turn + 1
            if per_turn > 30 and "End your turn" in labels:  # never loop within one turn
                i = labels.index("End your turn")
            if i < 9:
                press(page, str(i + 1))
            else:
                buttons[i].click()
                answer_confirm(page)
        moves += 1
        changed(page, version)
    pytest.fail(f"the game did not end within {GAME_TIMEOUT_S} s ({moves} moves)")


def _box(locator: Any, timeout: float = 10.0) -> dict[str, float]:
    """The element's box; measured again while a redraw (another seat's move arriving)
    replaces the element between finding and measuring it."""
    deadline = time.monotonic() + timeout
    while True:
        box = locator.bounding_box()
        if box is not None:
            return dict(box)
        assert time.monotonic() < deadline, "the element did not stay on the page"
        time.sleep(0.05)


def game_of(page: Any) -> str:
    m = re.search(r"#/(?:play|watch)/([\w-]+)$", page.url)
    assert m, page.url
    return m.group(1)


def test_play_a_whole_game_against_a_bot_then_watch_one(browser: Any, web: WebServer) -> None:
    page = new_page(browser)
    page.goto(web.url + "?pace=0")
    page.wait_for_selector("#start")
    shot(page, "lobby-1400x900")
    # The play options of `ascension web` fill the form.
    assert page.input_value("#bots") == "random" and page.input_value("#seed") == "7"
    page.click("#start")
    page.wait_for_selector(".action-list button", timeout=30_000)
    assert "#/play/" in page.url
    game_id = game_of(page)
    # What a player sees: the ring of spaces (six center-row spaces and The Deep) ...
    assert page.locator(".ring > li.space").count() == 7
    assert "The Deep" in (page.locator(".ring .deep").get_attribute("aria-label") or "")
    assert page.get_by_role("group", name=re.compile(r"^Thukal")).count() >= 1
    # ... costs on the center row, the piles, your hand, the other seat, the log, the actions.
    assert re.search(r"\b\d+[RP]\b", page.locator(".ring").inner_text())
    assert page.get_by_role("group", name=re.compile(r"^Mystic, Hero")).count() == 1
    assert page.get_by_role("group", name=re.compile(r"^Your hand: 5 cards")).count() == 1
    assert "Seat 2 (random)" in page.locator(".others-area").inner_text()
    assert page.get_by_role("log").count() == 1 and page.get_by_role("status").count() == 1
    shot(page, "game-start-1400x900")
    # The first choice is where to place the ship: offered on the spaces too.
    place = page.locator(".ring .card-actions button").first
    assert place.inner_text() == "Place ship"
    moves = play_to_the_end(page)
    assert moves > 20
    page.wait_for_selector(".scores")
    result = page.locator(".scores h2").inner_text()
    assert re.match(r"You win!|Seat 2 \(random\) wins\.|The game is over\.", result)
    # said once: the score's heading names the winner, the status says where to look
    page_text = page.inner_text("#app")
    assert page_text.count(result) - page.inner_text(".log").count(result) == 1, page_text
    assert page.locator(".actions").is_hidden()
    assert page.locator(".scores tbody tr").count() == 2
    log = page.locator(".log").inner_text()
    assert re.search(r"Seat 2 \(random\) (played|acquired|defeated)", log), (
        "the bot's moves, in words"
    )
    assert re.search(r"You (played|acquired|defeated)", log)
    shot(page, "game-over-1400x900")
    assert not page.errors, page.errors

    # Spectators (over gRPC-Web): one starts a bots-only game and watches it from its start;
    # another finds it in the lobby's list of games and watches it from there.
    first = new_page(browser)
    first.goto(web.url + "?pace=0&protocol=grpc-web")
    first.wait_for_selector("#watch-bots")
    first.click("#watch-bots")
    first.wait_for_url(re.compile(r"#/watch/"))
    bots_game = game_of(first)
    first.wait_for_selector(".ring")
    second = new_page(browser)
    second.goto(web.url + "?pace=0")
    row = second.locator(f'tr[data-game="{bots_game}"]')
    row.wait_for(timeout=10_000)
    assert "over" in second.locator(f'tr[data-game="{game_id}"]').inner_text()
    shot(second, "lobby-games-1400x900")
    row.get_by_role("link", name=f"Watch game {bots_game}").click()
    second.wait_for_selector(".ring")
    for watcher in (first, second):
        assert watcher.locator(".actions").is_hidden(), "a spectator has no actions"
        assert watcher.get_by_role("heading", name="Players").count() == 1
        watcher.wait_for_selector(".scores", timeout=GAME_TIMEOUT_S * 1000)
        assert re.search(r"wins\.|The game is over\.", watcher.locator(".scores h2").inner_text())
        assert not watcher.errors, watcher.errors
    assert first.locator(".log li.entry").count() > 20, "every move, from the start"
    shot(first, "spectator-over-1400x900")


def test_phone_sized_screen(browser: Any, web: WebServer) -> None:
    page = new_page(browser, *PHONE)
    page.goto(web.url + "?pace=0")
    page.wait_for_selector("#start")
    width_fits(page, PHONE[0])
    shot(page, "lobby-390x844")
    page.get_by_role("button", name="How to play").click()
    width_fits(page, PHONE[0])
    page.locator("dialog.how-to-play").get_by_role("button", name="Close").click()
    # a difficulty picks its own bot: the bot and time fields go while one is chosen
    page.select_option("#difficulty", "normal")
    assert page.locator("#bots").is_hidden() and page.locator("#budget").is_hidden()
    page.select_option("#difficulty", "")
    assert page.locator("#bots").is_visible()
    page.click("#start")
    # (the docked list leaves out what the cards and spaces offer: placing the ship, here)
    page.wait_for_selector(".action-list button", state="attached", timeout=30_000)
    # Nothing is wider than the screen: no sideways scrolling.
    width_fits(page, PHONE[0])
    names_wrap_between_words(page)
    # The actions stay in reach: on screen, at its bottom, without scrolling.
    box = page.locator(".actions").bounding_box()
    assert box is not None and box["y"] > 844 / 2 and box["y"] + box["height"] <= 844 + 1
    shot(page, "game-390x844")
    # Every button has a name a screen reader can say.
    for button in page.query_selector_all("button"):
        assert (button.get_attribute("aria-label") or button.inner_text()).strip()
    assert not page.errors, page.errors


def test_others_moves_are_shown_one_at_a_time(browser: Any, web: WebServer) -> None:
    """With a pace, each of the bot's moves is announced in turn before your actions return."""
    page = new_page(browser)
    page.goto(web.url + "?pace=400")
    page.wait_for_selector("#start")
    page.click("#start")
    page.wait_for_selector(".action-list button.act", timeout=30_000)
    announced: list[str] = []
    asked: list[str] = []  # the page's question before ending a turn with cards in hand
    while True:  # end our turns until the bot has had one
        actions = page.query_selector(".action-list")
        assert actions is not None
        labels = [b.inner_text() for b in actions.query_selector_all("button.act")]
        end = next((i for i, t in enumerate(labels) if "End your turn" in t), 0)
        version = actions.get_attribute("data-version")
        page.keyboard.press(str(end + 1))
        question = answer_confirm(page, yes=bool(asked))  # the first question: "Not now"
        if question and not asked:
            asked.append(question)
            assert page.get_attribute(".action-list", "data-version") == version, "not done"
            assert "Not done" in page.inner_text(".status")
            press(page, str(end + 1))
        changed(page, version)
        deadline = time.monotonic() + 60
        while (
            time.monotonic() < deadline and page.query_selector(".action-list button.act") is None
        ):
            text = page.inner_text(".status")
            bot_move = "Seat 2 (random)" in text and not text.endswith("is thinking…")
            if bot_move and (not announced or announced[-1] != text):
                announced.append(text)
            time.sleep(0.03)
        if len(announced) >= 2:
            break
    assert len(set(announced)) >= 2, announced
    # ending a turn with a hand to play: asked first, in the terminal's words, saying where
    # the cards go (clients/glossary.json)
    assert asked and asked[0].startswith("You can still play 5 cards"), asked
    assert "go to your discard pile" in asked[0] and asked[0].endswith("End your turn anyway?")
    log = page.locator(".log li.entry").all_inner_texts()
    for text in set(announced):
        assert text in log, f"{text!r} is in the log too"
    assert not page.errors, page.errors


def _visible_bottom(page: Any, height: int) -> float:
    """Where the table stops being visible: the top of the docked actions on a phone, else
    the bottom of the screen."""
    box = page.locator(".actions").bounding_box()
    docked = page.evaluate("getComputedStyle(document.querySelector('.actions')).position")
    return float(box["y"]) if box is not None and docked == "sticky" else float(height)


@pytest.mark.parametrize("size", [WIDE, PHONE], ids=["1400x900", "390x844"])
def test_a_newcomer_reads_the_cards_and_the_rules(
    browser: Any, web: WebServer, size: tuple[int, int]
) -> None:
    width, height = size
    tag = f"{width}x{height}"
    page = new_page(browser, width, height)
    page.goto(web.url)  # the default pace
    page.wait_for_selector("#start")
    # "How to play", from the lobby: the rules of every set
    page.get_by_role("button", name="How to play").click()
    dialog = page.locator("dialog.how-to-play")
    assert dialog.is_visible()
    rules = dialog.inner_text()
    for part in ("The goal", "Runes", "Power", "Crew", "The Deep", "Thukal", "Ghost Pirate"):
        assert part in rules, part
    # the words on the cards, each explained when tapped, as in a card's text
    for word in ("Unite", "Echo", "Plunder", "Fate", "Anchor", "Ongoing", "Mechana", "The Void"):
        assert dialog.locator(f'.term-list button[data-term="{word}"]').count() == 1, word
    dialog.locator('.term-list button[data-term="Echo"]').click()
    assert "discard pile" in page.locator("dialog.glossary[open] p").inner_text()
    page.locator("dialog.glossary[open]").get_by_role("button", name="Close").click()
    shot(page, f"how-to-play-{tag}")
    dialog.get_by_role("button", name="Close").click()
    assert not dialog.is_visible()

    page.click("#start")
    page.wait_for_selector(".action-list button.act", state="attached", timeout=30_000)
    page.wait_for_selector(".mine-area .cards .card", timeout=30_000)  # (drawn, on a busy machine)
    # the center row and your hand on the first screen, beside the actions
    bottom = _visible_bottom(page, height)
    ring = _box(page.locator(".ring"))
    hand = _box(page.locator(".mine-area .cards .card").first)
    assert ring["y"] + ring["height"] <= bottom, (ring, bottom)
    assert hand["y"] + 24 <= bottom, (hand, bottom)  # at least its name, above the actions
    if width < 600:
        actions = page.locator(".actions").bounding_box()
        assert actions is not None and actions["height"] <= 0.3 * height, actions
    # a choice is said once: the line above the table names it, the status says how to answer
    decision = page.locator(".decision").inner_text().lower()
    assert "place ship" in decision and "place ship" not in page.inner_text(".status").lower()
    # a card's whole text without hover: tap the card (not its button)
    for where in (".mine-area .cards", ".ring"):
        card = page.locator(f"{where} .card.has-text").first
        card.click(position={"x": 6, "y": 6})
        assert "open" in (card.get_attribute("class") or "")
        text = card.locator(".card-text")
        assert text.is_visible() and len(text.inner_text()) > 5
        assert text.evaluate("e => e.scrollHeight <= e.clientHeight + 1"), "shown whole"
    shot(page, f"card-text-{tag}")
    # a word of a card's text explained: tap it (every card of the starting hand has one)
    term = page.locator(".mine-area .card .term").first
    word = term.inner_text()
    term.click()
    explained = page.locator("dialog.glossary[open]")
    assert explained.is_visible() and word[:4] in explained.locator("h2").inner_text()
    assert len(explained.locator("p").inner_text()) > 30
    shot(page, f"card-word-{tag}")
    explained.get_by_role("button", name="Close").click()
    assert page.locator("dialog.glossary[open]").count() == 0
    # how to play, in the game: only the sets of this game (Skulls & Sails)
    page.get_by_role("button", name="How to play").click()
    in_game = page.locator("dialog.how-to-play").inner_text()
    assert "Thukal" in in_game and "Ghost Pirate" not in in_game
    page.locator("dialog.how-to-play").get_by_role("button", name="Close").click()

    # the default pace: a bot's turn is shown move by move, in a few seconds
    assert page.input_value("#pace") == "180"
    turns: list[tuple[float, int]] = []  # (seconds on screen, moves) of the bot's turns
    for _ in range(4):
        actions = page.query_selector(".action-list")
        assert actions is not None
        labels = [b.inner_text() for b in actions.query_selector_all("button.act")]
        end = next((i for i, t in enumerate(labels) if "End your turn" in t), 0)
        entries = page.locator(".log li.entry").count()
        version = int(actions.get_attribute("data-version") or 0)
        press(page, str(end + 1))
        changed(page, str(version))
        t0 = time.monotonic()
        page.wait_for_selector(".action-list button.act, .scores", state="attached", timeout=60_000)
        if page.query_selector(".scores"):
            break
        seconds = time.monotonic() - t0
        now = int(page.get_attribute(".action-list", "data-version") or 0)
        assert page.locator(".log li.entry").count() - entries == now - version, "every move"
        turns.append((seconds, now - version - 1))
    bot_turns = [(s, m) for s, m in turns if m > 0]  # (not a choice of ours answered)
    assert bot_turns, turns
    # 180 ms a move: a bot's turn of a dozen moves in about 2 s; the bot's own thinking and a
    # busy machine come on top
    assert sum(s for s, _ in bot_turns) / len(bot_turns) < 6.0, bot_turns
    shot(page, f"game-{tag}")

    # the lobby's list of games fits the screen, its links whole
    page.goto(web.url)
    page.wait_for_selector("tr[data-game]", timeout=10_000)
    listing = page.locator(".games-list")
    assert listing.evaluate("e => e.scrollWidth <= e.clientWidth + 1"), "no sideways scrolling"
    link = page.locator(".games td.links a").first.bounding_box()
    assert link is not None and link["x"] + link["width"] <= width
    shot(page, f"lobby-games-{tag}")
    assert not page.errors, page.errors


def test_the_lobby_offers_difficulty_levels(browser: Any, web: WebServer) -> None:
    page = new_page(browser)
    page.goto(web.url + "?pace=0")
    page.wait_for_selector("#start")
    options = page.locator("#difficulty option").all_inner_texts()
    assert options[:4] == ["Easy", "Normal", "Hard", "Expert"]
    assert page.input_value("#difficulty") == ""  # `ascension web --bot random`: its own bots
    assert page.is_enabled("#bots")
    page.select_option("#difficulty", "easy")
    assert page.is_disabled("#bots") and page.is_disabled("#budget")
    page.click("#start")
    page.wait_for_selector(".others-area .seat", timeout=30_000)
    # the Easy level's bot, and the level
    assert "(greedy-honor, Easy)" in page.locator(".others-area").inner_text()
    assert not page.errors, page.errors

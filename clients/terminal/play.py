"""The interactive game loop: draw the table, read the player's choice, show the bots' moves.

One seat (the token's) is played at the keyboard; every other seat is played by the engine's
bots (or by other people). Between your moves, a spinner shows what the others are doing;
when it is your move again the screen is redrawn with a summary of what they did.
"""

from __future__ import annotations

import contextlib
import select
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from rich.console import Console
from rich.padding import Padding
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from clients.sdk import AscensionError, Client, DataLossError, IllegalActionError
from clients.sdk.types import Catalog, GameView, LegalAction
from clients.terminal import glossary, render, why
from clients.terminal.events import EventLog, named
from clients.terminal.how_to_play import how_to_play
from clients.terminal.keys import ActionKeys
from clients.terminal.style import card_cost, card_text, seat_name

KEYS = """\
Keys: type an action's number and Enter (a number stays with its action all turn). Also:
  a        play all the cards in your hand (stops at any choice to make)
  h        hints: the best moves by a search of what you know, and why
  c        card texts of the center row, your hand and your cards in play
  ? NAME   the text of a card, e.g. "? mystic"
  ? WORD   a card word explained: a keyword, a faction, ..., e.g. "? unite" (list: ?)
  l        the full log of events
  Enter    redraw the screen
  q        leave the game (asks first)
Costs: 3R = 3 Runes to acquire, 4P = 4 Power to defeat. H Hero, C Construct, M Monster.
[YOU] [S2] are ships."""
GOLDEN_ISLES_KEYS = " Ghost is The Ghost Pirate; ● a Cursed Treasure coin on the board."
SIGNAL_CHECK_SECONDS = 0.2  # how long a signal may wait while the player is being asked
HINT_MS = 1000  # search time asked for a hint (the engine caps it)
HINTS_SHOWN = 3


class QuitGame(Exception):
    """The player asked to leave."""


def read_line(console: Console, prompt: str) -> str:
    """Ask with ``prompt`` and read one line; EOFError when input ends.

    Waits for the line in short slices before reading it: a Ctrl-C (or a closed terminal)
    that lands just before a blocking read() begins, or on another thread (gRPC's), would
    otherwise wait for the next Enter: Python runs signal handlers between bytecodes only."""
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file: nothing to wait on
        return console.input(Text(prompt, style="bold"))
    console.print(Text(prompt, style="bold"), end="")
    while not select.select([fd], [], [], SIGNAL_CHECK_SECONDS)[0]:
        pass
    return input()


@dataclass(slots=True)
class Outcome:
    view: GameView
    quit: bool = False


class PlaySession:
    """Plays the token's seat of a game at the terminal until the game ends or the player quits."""

    def __init__(
        self,
        client: Client,
        console: Console,
        game_id: str,
        token: str,
        *,
        read: Callable[[str], str] | None = None,
        clear: bool = True,
        about: str = "",
        stall_hint: str | Callable[[], str] = "Are the engine's AI workers running?",
        stall_seconds: float = 30.0,
        hint_ms: int = HINT_MS,
        leaving: str = "You can rejoin it later with its game id and your token.",
    ) -> None:
        self.client = client
        self.console = console
        self.game_id = game_id
        self.token = token
        self.read = read or (lambda prompt: read_line(console, prompt))
        self.clear = clear and console.is_terminal
        self.log = EventLog()
        self.view: GameView = client.get_view(game_id, token)
        self.me = self.view.seat
        self.catalog: Catalog = client.catalog(self.view.catalog_fingerprint)
        self.watch = client.watch(game_id, after_version=0)
        self.note: Text | None = None  # a message shown above the prompt once
        self.about = about or f"Game {game_id} on the engine at {client.address}."
        self.stall_hint = stall_hint
        self.stall_seconds = stall_seconds
        self.hint_ms = hint_ms
        self.leaving = leaving  # what leaving means, said when asking
        self.keys = ActionKeys()

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> Outcome:
        try:
            while not self.view.over:
                if self.view.to_move == self.me and self.view.legal_actions:
                    if not self._auto_answer():
                        self._my_move()
                else:
                    self._wait_for_others()
        except QuitGame:
            return Outcome(self.view, quit=True)
        finally:
            self.watch.cancel()
        self._final()
        return Outcome(self.view)

    def layout(self) -> render.Layout:
        size = self.console.size
        return render.Layout(size.width, size.height)

    def draw(self) -> None:
        if self.clear:
            self.console.clear()
        lines = self.log.lines(self.view, self.catalog, self.me)
        screen = render.screen(
            self.console, self.view, self.catalog, self.me, lines, self.layout(),
            numbered=self.numbered(),
        )  # fmt: skip
        self.console.print(screen)
        if self.note is not None:
            self.console.print(self.note)
            self.note = None

    def numbered(self) -> list[tuple[int, LegalAction]]:
        """This view's legal actions with their numbers (stable: clients/terminal/keys.py)."""
        return self.keys.number(self.view)

    def _prompt(self) -> str:
        keys = self.keys.describe(self.numbered())
        extra = ", a=play all" if self._plays() else ""
        return f"Your choice ({keys}{extra}, h=hints, ?=how to play, q=quit): "

    def _yes(self, question: str) -> bool:
        """Ask a yes/no question; no unless the answer is yes (end of input: no)."""
        self.console.print(Text(question, style="bold"))  # wraps as it must; the prompt never
        try:
            answer = self.read("(y/n) ")
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    def _catch_up(self) -> None:
        """Log every update up to the view's version, in order (they exist: no waiting)."""
        while self.watch.last_version < self.view.version:
            update = next(self.watch, None)
            if update is None:
                return
            self.log.add(update)

    def _my_move(self) -> None:
        self._catch_up()
        self.draw()
        while True:
            try:
                raw = self.read(self._prompt()).strip()
            except EOFError:
                raise QuitGame from None
            if self._command(raw):
                return

    def _auto_answer(self) -> bool:
        """Answer at once a choice whose only answer is to decline, with a line saying so:
        e.g. the victim of a Raid is asked whenever the table cannot tell whether they hold a
        card to prevent it (so that being asked reveals nothing), also when they hold none."""
        actions = self.view.legal_actions
        if len(actions) != 1 or actions[0].kind != "skip":
            return False
        line = Text(
            f"{actions[0].description}: your only choice, answered for you.", style="yellow"
        )
        self._catch_up()
        self._submit(actions[0])
        self.console.print(line)
        self.note = line  # shown again above the prompt once the screen is redrawn
        return True

    def _command(self, raw: str) -> bool:
        """Handle one line of input; True once the view changed (redraw needed)."""
        low = raw.lower()
        if low in ("q", "quit", "exit"):
            if self._yes(f"Leave this game? {self.leaving}"):
                raise QuitGame
            return False
        if low == "":
            self.draw()
            return False
        if low.isdigit():
            numbered = dict(self.numbered())
            i = int(low)
            if i not in numbered:
                keys = self.keys.describe(list(numbered.items()))
                self.console.print(
                    f"[red]There is no action {i} now[/] (the menu has {keys}); Enter redraws it."
                )
                return False
            return self._choose(numbered[i])
        if low == "a":
            return self._play_all()
        if low in ("help", "?"):
            self._help()
            return False
        if low == "h":
            self._hints()
            return False
        if low.startswith("?"):
            self._card_info(raw[1:].strip())
            return False
        if low == "c":
            self._card_texts()
            return False
        if low == "l":
            self._full_log()
            return False
        self.console.print(f"[red]Not understood: {raw!r}.[/] Type a number, or ? for help.")
        return False

    def _choose(self, action: LegalAction) -> bool:
        question = self._ask_first(action)
        if question and not self._yes(question):
            self.console.print("[dim]Not done.[/]")
            return False
        return self._submit(action)

    def _ask_first(self, action: LegalAction) -> str:
        """The question to ask before a move a newcomer may not mean: sailing (once a turn,
        and The Deep or The Ghost Pirate may cost you), or ending a turn with something left
        to play or spend. Empty: no question."""
        if action.kind == "move":
            where = why.what_it_buys(self.view, self.catalog, action)
            return glossary.confirm(
                "sail", move=action.description, where=f"; {where}" if where else ""
            )
        if action.kind != "end_turn":
            return ""
        kinds = {a.kind for a in self.view.legal_actions}
        mine = next((s for s in self.view.board.seats if s.seat == self.me), None)
        # the cards in hand (a play action stands for every copy of a card)
        in_hand = len(mine.hand) if mine is not None else len(self._plays())
        return end_turn_question(
            plays=in_hand if self._plays() else 0,
            runes=self.view.board.runes if "acquire" in kinds else 0,
            power=self.view.board.power if "defeat" in kinds else 0,
            ability="use" in kinds or "flip_coins" in kinds,
        )

    def _submit(self, action: LegalAction) -> bool:
        try:
            resp = self.client.submit(self.game_id, self.token, action.id)
        except IllegalActionError as e:
            self.note = Text(f"Not possible: {e.message}", style="red")
            self.view = self.client.get_view(self.game_id, self.token)
            return True
        except DataLossError as e:  # (the store went back: the game goes on from its version)
            self.note = Text(f"The server lost moves of this game: {e.message}", style="red")
            self.view = self.client.get_view(self.game_id, self.token)
            return True
        self.log.add(resp.update)
        self.view = resp.view
        return True

    def _plays(self) -> list[LegalAction]:
        return [a for a in self.view.legal_actions if a.kind == "play"]

    def _play_all(self) -> bool:
        if not self._plays():
            self.console.print("[yellow]You have no card to play.[/]")
            return False
        for _ in range(40):
            plays = self._plays()
            if not plays or self.view.to_move != self.me or self.view.board.HasField("decision"):
                break
            self._submit(plays[0])
        return True

    # -- between your moves ----------------------------------------------------------------

    def _wait_for_others(self) -> None:
        who = seat_name(self.view, self.view.to_move, self.me)
        with self.console.status(self._status(f"{who} is thinking…"), spinner="dots") as status:
            timer = self._stall_timer(status.update, who)
            try:
                for update in self.watch:
                    self.log.add(update)
                    if update.version <= self.view.version:
                        continue
                    if update.over or update.to_move == self.me:
                        break
                    timer.cancel()
                    actor = seat_name(self.view, update.seat, self.me)
                    nxt = seat_name(self.view, update.to_move, self.me)
                    status.update(self._status(f"{actor}: {update.description} · {nxt} to move…"))
                    timer = self._stall_timer(status.update, nxt)
            finally:
                timer.cancel()
        self.view = self.client.get_view(self.game_id, self.token)
        if self.watch.closed and not self.view.over and self.view.to_move != self.me:
            raise AscensionError("the game's event stream was closed", code="CANCELLED")

    def _stall_timer(self, show: Callable[[Text], None], who: str) -> threading.Timer:
        """After ``stall_seconds`` without a move, say so (a bot's worker may be down)."""
        secs = self.stall_seconds

        def fire() -> None:
            show(self._status(f"No move from {who} for {secs:.0f} s."))
            hint = self.stall_hint() if callable(self.stall_hint) else self.stall_hint
            self.console.print(Text(f"No move from {who} for {secs:.0f} s. {hint}", style="yellow"))

        timer = threading.Timer(secs, fire)
        timer.daemon = True
        timer.start()
        return timer

    def _status(self, text: str) -> Text:
        """One line (a wrapped spinner line would leave copies of itself behind)."""
        t = Text(text + " (Ctrl-C quits)", no_wrap=True, overflow="ellipsis")
        t.truncate(max(self.console.width - 3, 10), overflow="ellipsis")
        return t

    # -- information -----------------------------------------------------------------------

    def _hints(self) -> None:
        """The engine's analysis of this position (AnalyzePosition): the best three actions,
        with their numbers in the menu and the chance to win the search gives each."""
        try:
            with self.console.status(self._status("Looking for good moves…"), spinner="dots"):
                analysis = self.client.analyze(self.game_id, self.token, self.hint_ms)
        except AscensionError as e:
            self.console.print(Text(f"No hints now: {e.message}", style="yellow"))
            return
        numbered = self.numbered()
        numbers = {a.id: k for k, a in numbered}
        actions = {a.id: a for _, a in numbered}
        shown = [c for c in analysis.candidates if c.action in numbers][:HINTS_SHOWN]
        if analysis.version != self.view.version or not shown:
            self.console.print(Text("No hints: the game moved on; press Enter.", style="yellow"))
            return
        table = Table.grid(padding=(0, 1))
        table.add_column(justify="right", no_wrap=True)
        table.add_column(ratio=1)
        table.add_column(justify="right", no_wrap=True)
        for c in shown:
            line = Text(c.description)
            gained = why.honor_now(self.view, self.catalog, actions[c.action])
            if gained:
                line.append(f"  +{gained} Honor now", style="bold yellow")
            reason = why.what_it_buys(self.view, self.catalog, actions[c.action])
            if reason:
                line.append(f"\n{reason}", style="dim")
            table.add_row(
                Text(str(numbers[c.action]), style="bold"),
                line,
                Text(f"{c.win_probability:.0%} to win", style="green"),
            )
        self.console.print(
            Text(
                f"Hints: a search of {analysis.iterations:,} games played on from here (the "
                "cards you cannot see dealt at random); your chance to win after each move:",
                style="bold",
            )
        )
        self.console.print(table)

    def _help(self) -> None:
        """How to play (the sections of this game's sets), then the keys."""
        from rich.markdown import Markdown

        self.console.print(Markdown(how_to_play(self.view.sets)))
        self.console.print(
            Text("The words on the cards (? WORD explains one, e.g. ? unite):", style="bold")
        )
        self.console.print(glossary.listing(self.view.sets), highlight=False)
        golden_isles = self.view.sets in ("cotgi", "both")
        self.console.print(KEYS + (GOLDEN_ISLES_KEYS if golden_isles else ""), highlight=False)
        self.console.print(self.about, style="dim", highlight=False)

    def _card_info(self, name: str) -> None:
        if not name:
            self._help()
            return
        low = name.lower()
        matches = [c for c in self.catalog.cards.values() if low in c.name.lower()]
        words = glossary.find(name)
        for term in words:
            self.console.print(Text(term.text))
        if not matches:
            if not words:
                self.console.print(
                    f"[red]No card or card word like {name!r}.[/] Type ? for the list of words."
                )
            return
        for card in matches[:5]:
            t = card_text(card)
            t.append(f"  {card.type} · {card.faction} · cost {card_cost(card) or '-'}", style="dim")
            t.append(f" · {card.honor} Honor", style="dim")
            self.console.print(t)
            self.console.print(Padding(card.text, (0, 0, 0, 2)))

    def _card_texts(self) -> None:
        seen: dict[int, None] = {}
        b = self.view.board
        for cs in b.center:
            if cs.card >= 0:
                seen.setdefault(cs.card)
        mine = next((s for s in b.seats if s.seat == self.me), None)
        if mine is not None:
            for cid in [*mine.hand, *mine.constructs, *mine.ongoing, *mine.played]:
                seen.setdefault(cid)
        table = Table.grid(padding=(0, 1))
        table.add_column(no_wrap=True)
        table.add_column(justify="right", no_wrap=True)
        table.add_column()
        for cid in seen:
            card = self.catalog[cid]
            table.add_row(card_text(card), card_cost(card), card.text)
        self.console.print(table)

    def _full_log(self) -> None:
        self.console.print(Rule("Every event so far", align="left"))
        for version, text in self.log.texts[-200:]:
            self.console.print(
                Text(f"v{version} ", style="dim") + Text(named(text, self.view, self.me))
            )
        self.console.print(Rule(style="dim"))

    # -- the end ---------------------------------------------------------------------------

    def _final(self) -> None:
        with contextlib.suppress(AscensionError):
            self.view = self.client.get_view(self.game_id, self.token)
        self.draw()
        self.console.print(render.scores_table(self.view, self.me))
        self.console.print(render.result_line(self.view, self.me))


def end_turn_question(*, plays: int, runes: int, power: int, ability: bool) -> str:
    """What ending the turn now would leave behind, and where it goes; "" when nothing."""
    left, where = [], []
    if plays:
        left.append(glossary.confirm("left_play", n=plays).replace("(s)", "s" if plays > 1 else ""))
        where.append(glossary.confirm("where_cards"))
    if runes:
        left.append(glossary.confirm("left_runes", n=runes))
    if power:
        left.append(glossary.confirm("left_power", n=power))
    if runes and power:
        where.append(glossary.confirm("where_runes_power"))
    elif runes or power:
        where.append(glossary.confirm("where_runes" if runes else "where_power"))
    if ability:
        left.append(glossary.confirm("left_ability"))
        where.append(glossary.confirm("where_ability"))
    if not left:
        return ""
    return glossary.confirm("end_turn", left=_joined(left), where=_joined(where))


def _joined(parts: list[str]) -> str:
    """ "a, b and c"."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]

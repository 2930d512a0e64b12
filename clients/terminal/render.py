"""Rich renderables of a game view: header, the ring of spaces, seats, actions, log, scores.

Everything here is a pure function of a ``GameView`` (and the card catalog): no I/O, so it is
tested by rendering into a recording console. ``screen`` fits one screenful: at 80x24 the
board, your seat, the others and your actions always show, and the log of what happened gets
the lines that are left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from rich import box
from rich.console import Console, Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from clients.sdk.types import Catalog, GameView, LegalAction, time_left
from clients.terminal.style import (
    DEEP,
    GHOST_STYLE,
    TYPE_TAG,
    card_cost,
    card_list,
    card_text,
    coin_text,
    seat_name,
    seat_style,
    seat_text,
    space_label,
    styled,
)

SET_NAMES = {"ss": "Skulls & Sails", "cotgi": "Curse of the Golden Isles", "both": "S&S + CotGI"}
SET_SHORT = {"ss": "S&S", "cotgi": "CotGI", "both": "S&S+CotGI"}
WIDE = 120  # from this width on, the board shows Honor values and card texts


@dataclass(frozen=True, slots=True)
class Layout:
    """How much room there is: ``compact`` for short terminals (24 lines)."""

    width: int = 80
    height: int = 24

    @property
    def compact(self) -> bool:
        return self.height < 40

    @property
    def wide(self) -> bool:
        return self.width >= WIDE


def round_of(view: GameView, turn: int) -> int:
    """The round a turn is in (the rules count every seat's turn; a round is one turn each,
    from the first player): a second player's first turn is in round 1, not "turn 2"."""
    return (max(turn, 1) - 1) // max(view.players, 1) + 1


def header(view: GameView, me: int, layout: Layout) -> Text:
    b = view.board
    t = styled(f"Round {round_of(view, b.turn)}", "bold")
    t.append(" · ")
    if view.over:
        t.append("game over", style="bold")
    elif view.to_move == me and me >= 0:
        t.append("your move", style="bold reverse")
    else:
        t.append_text(seat_text(view, view.to_move, me))
        t.append(" to move")
    if not view.over and b.active_seat >= 0:
        t.append(" · ")
        if b.active_seat != me and not layout.compact:
            t.append(f"{seat_name(view, b.active_seat, me)} has ")
        t.append(f"{b.runes} Rune{'' if b.runes == 1 else 's'}", style="bold bright_cyan")
        t.append(" ")
        t.append(f"{b.power} Power", style="bold bright_red")
    t.append(" · Honor pool ")
    t.append(str(b.honor_pool), style="bold yellow")
    if b.final_round:
        t.append(" · FINAL ROUND", style="bold red")
    if view.HasField("clock") and view.clock.seat >= 0 and not view.over:
        left = time_left(view.clock, view.clock.seat)
        whose = "your time" if view.clock.seat == me else f"{seat_name(view, view.clock.seat, me)}'s time"
        t.append(f" · {whose} {clock_text(left)}", style="bold red" if left < 10 else "bold")
    names = SET_SHORT if layout.compact else SET_NAMES
    t.append(f" · {names.get(view.sets, view.sets)}", style="dim")
    return t


def clock_text(seconds: float) -> str:
    """m:ss (h:mm:ss past an hour) of a time left."""
    s = math.ceil(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def decision_line(view: GameView, catalog: Catalog, me: int) -> Text | None:
    """The pending choice, if one must be answered before play goes on."""
    b = view.board
    if not b.HasField("decision") or view.over:
        return None
    d = b.decision
    who = "You" if d.seat == me else seat_name(view, d.seat, me)
    t = styled("Choice: ", "bold yellow")
    t.append(f"{who} must decide: {d.kind.replace('_', ' ')}")
    if d.source_card >= 0:
        t.append(" (")
        t.append_text(card_text(catalog[d.source_card]))
        t.append(")")
    return t


def _here(view: GameView, space: int, me: int) -> Text:
    """Ships, The Ghost Pirate and the coin on a space."""
    b = view.board
    t = Text()
    for s in b.seats:
        if s.ship_space == space:
            label = "YOU" if s.seat == me else f"S{s.seat + 1}"
            t.append(f"[{label}]", style=seat_style(s.seat))
            t.append(" ")
    if b.ghost_pirate_space == space:
        t.append("Ghost", style=GHOST_STYLE)
        t.append(" ")
    if b.board_coin_space == space and b.HasField("board_coin"):
        c = b.board_coin
        t.append_text(coin_text(c.color, c.resource, c.face_down))
    return t


def _under(catalog: Catalog, ids: Sequence[int], coins: int = 0) -> Text:
    """Treasure under a card (and coins under Thukal)."""
    if not ids and not coins:
        return Text("")
    t = card_list(catalog, [i for i in ids if i >= 0], empty="")
    hidden = sum(1 for i in ids if i < 0)
    if hidden:
        t.append(("" if not t.plain else ", ") + f"{hidden} Treasure")
    if coins:
        t.append(("" if not t.plain else ", ") + f"{coins} coin{'s' if coins > 1 else ''}")
    t.stylize("yellow")
    return t


def board_table(view: GameView, catalog: Catalog, me: int, layout: Layout) -> Table:
    """The ring: the six center-row spaces and The Deep (after space 6 comes space 1)."""
    b = view.board
    table = Table(
        box=None if layout.compact else box.SIMPLE_HEAD,
        show_header=not layout.compact,
        pad_edge=False,
        padding=(0, 1),
        expand=layout.wide,
    )
    table.add_column("#", justify="right", style="dim", no_wrap=True)
    table.add_column("Center row", no_wrap=True, overflow="ellipsis", min_width=20, max_width=32)
    table.add_column("Cost", justify="right", no_wrap=True)
    if layout.wide:
        table.add_column("Honor", justify="right", no_wrap=True)
    table.add_column(
        "Under", overflow="ellipsis", no_wrap=True, max_width=22 if layout.wide else 14
    )
    table.add_column("Here", no_wrap=True, overflow="ellipsis", min_width=8)
    if layout.wide:
        table.add_column(
            "Text", overflow="ellipsis", no_wrap=True, ratio=1, min_width=20, style="dim"
        )
    for sp in range(6):
        cs = next((c for c in b.center if c.space == sp), None)
        card_id = cs.card if cs is not None else -1
        under = list(cs.treasures_under) if cs is not None else []
        card = catalog[card_id] if card_id >= 0 else None
        if card is not None:
            name = card_text(card)
            name.append(f" {TYPE_TAG.get(card.type, '?')}", style="dim")
            cost = card_cost(card)
        else:
            name, cost = styled("(empty)", "dim"), ""
        row: list[RenderableType] = [str(sp + 1), name, cost]
        if layout.wide:
            row.append(str(card.honor) if card is not None and card.type != "monster" else "")
        row += [_under(catalog, under), _here(view, sp, me)]
        if layout.wide:
            row.append(card.text if card is not None else "")
        table.add_row(*row)
    table.add_row(*_deep_row(view, catalog, me, layout))
    return table


def _deep_row(view: GameView, catalog: Catalog, me: int, layout: Layout) -> list[RenderableType]:
    k = view.board.kraken
    thukal = catalog.find("thukal")
    kraken_here = k.in_game and k.in_deep
    name = styled("The Deep", "bold blue")
    cost, under = "", Text("")
    if kraken_here:
        name.append(": ", style="bold blue")
        name.append("Thukal", style="bold magenta")
        cost = f"{thukal.cost}P" if thukal is not None else ""
        under = _under(catalog, list(k.treasures_under), len(k.coins))
    elif k.in_game and k.owner_seat >= 0:
        name.append(f" (Kraken: {seat_name(view, k.owner_seat, me)})", style="dim")
    row: list[RenderableType] = ["D", name, cost]
    if layout.wide:
        row.append("")
    row += [under, _here(view, DEEP, me)]
    if layout.wide:
        row.append(thukal.text if thukal is not None and kraken_here else "")
    return row


def piles_line(view: GameView, catalog: Catalog, layout: Layout) -> Text:
    """The always-available cards and the piles' sizes."""
    b = view.board
    t = Text()
    for key, n in (("mystic", b.mystic_pile), ("heavy_infantry", b.heavy_infantry_pile)):
        card = catalog.find(key)
        if card is not None:
            t.append_text(card_text(card))
            left = f"({n})" if layout.compact else f"({n} left)"
            t.append(f" {card_cost(card)} {left} · ")
    cultist = catalog.find("cultist")
    if cultist is not None:
        t.append_text(card_text(cultist))
        t.append(f" {card_cost(cultist)} · ")
    t.append(f"deck {b.center_deck_count} · Void {len(b.the_void)}", style="dim")
    if view.sets != "ss":
        t.append(f" · bag {b.treasure_bag_count}", style="dim")
    return t


def _seat_summary(view: GameView, seat: int) -> Text:
    s = next(x for x in view.board.seats if x.seat == seat)
    t = styled(f"Crew {s.crew}", "bold")
    t.append(" · ")
    t.append(f"Honor {s.honor_tokens}", style="bold yellow")
    t.append(f" · hand {s.hand_count} · deck {s.deck_count} · discard {s.discard_count}")
    ship = space_label(s.ship_space) if s.ship_space >= 0 else "not placed"
    t.append(f" · at {ship}" if s.ship_space >= 0 else f" · ship {ship}")
    items = len(s.treasures) + len(s.coins)
    if items:
        t.append(f" · Treasure {items}", style="yellow")
    info = next((i for i in view.seat_info if i.seat == seat), None)
    if info is not None and info.resigned:
        t.append(" · resigned", style="dim")
    elif info is not None and info.present:
        t.append(" · here", style="green")
    if view.HasField("clock") and seat < len(view.clock.bank_ms) and seat != view.clock.seat:
        t.append(f" · clock {clock_text(time_left(view.clock, seat))}", style="dim")
    return t


def fallbacks_text(view: GameView, seat: int) -> Text:
    """An AI seat's fallback moves (its bot failed and a legal move was played instead), e.g.
    "  3 fallback moves (latest: bot_raised: ValueError)"; empty when it has none."""
    info = next((i for i in view.seat_info if i.seat == seat), None)
    if info is None or not info.fallback_moves:
        return Text()
    n = info.fallback_moves
    return styled(
        f"  {n} fallback move{'s' if n > 1 else ''} (latest: {info.last_fallback_reason})",
        "yellow",
    )


def my_panel(view: GameView, catalog: Catalog, me: int) -> Group:
    """Your seat: resources, hand, cards played this turn, Constructs and Treasure."""
    s = next(x for x in view.board.seats if x.seat == me)
    top = styled("You: ", seat_style(me))
    top.append_text(_seat_summary(view, me))
    lines: list[RenderableType] = [top]
    hand = styled("  Hand: ", "bold")
    hand.append_text(card_list(catalog, s.hand))
    lines.append(hand)
    if s.played:
        played = styled("  Played: ", "bold")
        played.append_text(card_list(catalog, s.played))
        lines.append(played)
    in_play = list(s.constructs) + list(s.ongoing)
    if in_play or s.treasures or s.coins:
        extra = styled("  In play: ", "bold")
        extra.append_text(card_list(catalog, in_play))
        if s.treasures or s.coins:
            extra.append(" · Treasure: ", style="bold")
            extra.append_text(card_list(catalog, s.treasures, empty=""))
            for c in s.coins:
                extra.append(" ")
                extra.append_text(coin_text(c.color, c.resource, c.face_down))
        lines.append(extra)
    return Group(*lines)


def opponents(view: GameView, catalog: Catalog, me: int, layout: Layout) -> Group:
    """Every other seat's public state, one line each (cut to the width when compact)."""
    lines: list[RenderableType] = []
    for s in view.board.seats:
        if s.seat == me:
            continue
        t = seat_text(view, s.seat, me)
        t.append(": ")
        t.append_text(_seat_summary(view, s.seat))
        if s.hand_known:  # revealed and returned, or drawn as its deck ran out
            t.append(" · known in hand: ")
            t.append_text(card_list(catalog, s.hand_known))
        in_play = list(s.constructs) + list(s.ongoing)
        if in_play:
            t.append(" · in play: ")
            t.append_text(card_list(catalog, in_play))
        if layout.compact:
            t.no_wrap, t.overflow = True, "ellipsis"
        lines.append(t)
        note = fallbacks_text(view, s.seat)
        if note:
            note.no_wrap, note.overflow = True, "ellipsis"
            lines.append(note)
    return Group(*lines)


def action_columns(actions: Sequence[LegalAction], width: int) -> int:
    """Two columns when there are many actions and every description fits in half the width."""
    if len(actions) <= 4:
        return 1
    longest = max(len(a.description) for a in actions) + 4
    return 2 if longest * 2 + 2 <= width else 1


def actions_menu(numbered: Sequence[tuple[int, LegalAction]], layout: Layout) -> Table:
    """The legal actions with their numbers (clients/terminal/keys.py), in number order down
    the first column, then the second."""
    cols = action_columns([a for _, a in numbered], layout.width)
    table = Table.grid(padding=(0, 2))
    for _ in range(cols):
        table.add_column(no_wrap=True, overflow="ellipsis")
    rows = (len(numbered) + cols - 1) // cols
    cells: list[list[RenderableType]] = [[] for _ in range(rows)]
    for i, (key, a) in enumerate(numbered):
        t = styled(f"{key:>2} ", "bold")
        t.append(a.description, style=_action_style(a.kind))
        cells[i % rows].append(t)
    for row in cells:
        while len(row) < cols:
            row.append("")
        table.add_row(*row)
    return table


def _action_style(kind: str) -> str:
    if kind == "end_turn":
        return "bold"
    if kind.startswith(("defeat", "raid")):
        return "red"
    if kind.startswith(("acquire", "take_free")):
        return "cyan"
    if kind in ("move", "move_ship", "place_ship"):
        return "blue"
    return "default"


def scores_table(view: GameView, me: int) -> Table:
    """The final score: Honor by source for every seat, the winner first."""
    table = Table(title="Final score", box=box.SIMPLE_HEAVY, title_style="bold", padding=(0, 1))
    table.add_column("Player", no_wrap=True)
    for col in ("Cards", "Tokens", "Treasure", "Coins", "Card text", "Total"):
        table.add_column(col, justify="right", no_wrap=True)
    table.caption = "★ winner"
    for sc in sorted(view.scores, key=lambda s: (s.seat != view.winner, -s.total, s.seat)):
        name = styled("★ " if sc.seat == view.winner else "  ", "bold yellow")
        name.append_text(seat_text(view, sc.seat, me))
        table.add_row(
            name, str(sc.cards), str(sc.tokens), str(sc.treasure), str(sc.coins),
            str(sc.card_text), styled(str(sc.total), "bold"),
        )  # fmt: skip
    return table


def result_line(view: GameView, me: int) -> Text:
    if view.winner < 0:
        return styled("The game is over.", "bold")
    if view.winner == me:
        return styled("You win!", "bold green")
    return styled(f"{seat_name(view, view.winner, me)} wins.", "bold")


def _lines(console: Console, part: RenderableType, width: int) -> int:
    return len(console.render_lines(part, console.options.update(width=width), pad=False))


def screen(
    console: Console,
    view: GameView,
    catalog: Catalog,
    me: int,
    log: Sequence[Text],
    layout: Layout,
    *,
    show_actions: bool = True,
    reserve: int = 1,
    numbered: Sequence[tuple[int, LegalAction]] | None = None,
) -> Group:
    """One screenful: the table, your seat, the others, what happened, your actions.

    ``reserve`` lines are left free below (the prompt). The log gets the lines left over
    (at least one), newest last.
    """
    top: list[RenderableType] = [header(view, me, layout)]
    decision = decision_line(view, catalog, me)
    if decision is not None:
        top.append(decision)
    top.append(board_table(view, catalog, me, layout))
    top.append(piles_line(view, catalog, layout))
    if me >= 0:
        top.append(my_panel(view, catalog, me))
    top.append(opponents(view, catalog, me, layout))
    bottom: list[RenderableType] = []
    if numbered is None:
        numbered = list(enumerate(view.legal_actions, 1))
    if show_actions and numbered:
        bottom.append(Rule("Your move", style="bold", align="left"))
        bottom.append(actions_menu(numbered, layout))
    log_rule = Rule("What happened", style="dim", align="left")
    used = sum(_lines(console, p, layout.width) for p in [*top, log_rule, *bottom])
    room = layout.height - used - reserve
    if layout.compact and room < 1:  # no room for the log: "l" shows it
        return Group(*top, *bottom)
    room = max(room, 1 if layout.compact else 4)
    shown: list[Text] = []
    for line in reversed(log):
        n = _lines(console, line, layout.width)
        if n > room:
            break
        shown.insert(0, line)
        room -= n
    if not shown and log:  # a single long line: cut it to the room there is
        last = log[-1].copy()
        last.truncate(max(layout.width * max(room, 1) - 1, 1), overflow="ellipsis")
        shown = [last]
    log_part = Group(*shown) if shown else Group(styled("  (nothing yet)", "dim"))
    return Group(*top, log_rule, log_part, *bottom)

"""``ascension review GAME``: a seat's decisions rated by the engine's search, line by line as
they arrive, then every seat's win chance over the game as a sparkline and a count of labels.

Each line: the round (one turn of each player, as the table counts), the label, the action played and, where the search prefers another, the
best alternative with the chance it would have left. Nothing here judges: the labels and the
chances are the engine's (``ReviewGame``), rated from what the seat could see at the time.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.text import Text

from clients.sdk import Client, DecisionReview, ReviewLabel, UnauthenticatedError
from clients.sdk.review import accuracy, key_moments, sparkline
from clients.sdk.types import GameView
from clients.terminal.style import seat_name, seat_style, styled

LABEL_STYLE = {
    ReviewLabel.BEST: "bold green",
    ReviewLabel.GOOD: "green",
    ReviewLabel.INACCURACY: "yellow",
    ReviewLabel.MISTAKE: "dark_orange",
    ReviewLabel.BLUNDER: "bold red",
}
LABEL_MARK = {
    ReviewLabel.BEST: "★",
    ReviewLabel.GOOD: "✓",
    ReviewLabel.INACCURACY: "?!",
    ReviewLabel.MISTAKE: "?",
    ReviewLabel.BLUNDER: "??",
}


def percent(p: float) -> str:
    return f"{round(100 * p)}%"


def decision_line(r: DecisionReview, width: int, players: int = 2) -> Text:
    """One decision: round, label, what was played, the best alternative where it differs."""
    t = Text()
    t.append(f"Round {(max(r.turn, 1) - 1) // max(players, 1) + 1:<3}", style="dim")
    t.append(f"{LABEL_MARK[r.label]:>2} {r.label.title:<11}", style=LABEL_STYLE[r.label])
    t.append(r.description)
    # (early in the game a chance is an estimate, not yet a forecast: "~", and the legend)
    t.append(f"  {'~' if r.chance_is_guess else ''}{percent(r.win_probability)}", style="bold")
    if r.standard_error:
        t.append(f" ±{percent(r.standard_error)}", style="dim")
    if r.undersearched:
        t.append("  (searched too little to tell)", style="dim")
    if r.differs and r.worse:
        t.append("\n" + " " * 24 + "better: ", style="dim")
        t.append(r.best_description, style="italic")
        t.append(f"  {percent(r.best_win_probability)}", style="dim")
    if r.explanation:
        t.append("\n" + " " * 24 + "why: ", style="dim")
        t.append(r.explanation)
    return t


def curves(reviews: list[DecisionReview], players: int) -> list[list[float]]:
    """Each seat's win chance after each reviewed decision (the reviewed seat's own view)."""
    out: list[list[float]] = [[] for _ in range(players)]
    for r in reviews:
        probs = r.win_probabilities or (r.win_probability,)
        for q in range(players):
            if q < len(probs):
                out[q].append(probs[q])
            elif q == r.seat:
                out[q].append(r.win_probability)
    return out


def fitted(values: list[float], width: int) -> list[float]:
    """``values`` in at most ``width`` points: the means of consecutive runs of them."""
    if len(values) <= width:
        return values
    out = []
    for i in range(width):
        run = values[i * len(values) // width : (i + 1) * len(values) // width]
        out.append(sum(run) / len(run))
    return out


def summary(reviews: list[DecisionReview], view: GameView, me: int, width: int = 80) -> list[Text]:
    """The win-chance sparklines (one per seat, fitted to ``width`` columns) and the count of
    each label."""
    lines = []
    for q, values in enumerate(curves(reviews, len(view.seat_info) or 1)):
        if not values:
            continue
        line = styled(f"{seat_name(view, q, me):<18.18} ", seat_style(q))
        line.append(sparkline(fitted(values, max(10, width - 19 - 13))))
        line.append(f"  {percent(values[0])} → {percent(values[-1])}", style="dim")
        lines.append(line)
    counts = Counter(r.label for r in reviews)
    tally = Text()
    for i, label in enumerate(ReviewLabel):
        if i:
            tally.append(" · ", style="dim")
        tally.append(f"{label.title} {counts[label]}", style=LABEL_STYLE[label])
    lines.append(tally)
    acc = accuracy(reviews)
    if acc is not None:
        lines.append(Text(f"Accuracy {acc:.0f}%", style="bold"))
    moments = key_moments(reviews)
    if moments:
        lines.append(Text("Key moments:", style="bold"))
        for i, r in enumerate(moments, 1):
            line = Text(f"{i}. ", style="bold")
            line.append_text(decision_line(r, width, len(view.seat_info) or 2))
            lines.append(line)
    return lines


def show_review(
    client: Client,
    console: Console,
    game_id: str,
    token: str = "",
    seat: int | None = None,
    budget_ms: int = 0,
) -> list[DecisionReview]:
    """Print the review of ``seat`` (default: the token's) as it streams; returns it."""
    try:  # (a seat's token shows its own view; the admin token is no seat's)
        view = client.get_view(game_id, token)
    except UnauthenticatedError:
        view = client.get_view(game_id)
    me = view.seat if token and view.seat >= 0 else -1
    reviewed = seat if seat is not None else me
    who = "your" if reviewed == me else f"{seat_name(view, reviewed, me)}'s"
    console.print(Text(f"Review of {who} decisions in game {game_id}", style="bold"))
    console.print(Text("Each rated by a search of what was known then; the chances are the "
                       "search's estimates of winning after the move (~: early in the game, "
                       "an estimate, not yet a forecast).", style="dim"))  # fmt: skip
    reviews: list[DecisionReview] = []
    with console.status("Rating the first decision…") as status:
        for r in client.review(game_id, token, seat, budget_ms):
            reviews.append(r)
            status.update(f"Rated {r.index} of {r.total} decisions…")
            console.print(decision_line(r, console.width, view.players))
    if not reviews:
        console.print(Text("No decision with a real choice to review yet.", style="dim"))
        return reviews
    console.print(Text("Win chance over the game:", style="bold"))
    for line in summary(reviews, view, me, console.width):
        console.print(line)
    return reviews

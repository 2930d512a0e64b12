"""``ascension``: play against bots, watch a game, run bot-vs-bot games.

    ascension play                      # a private engine on a free port, you vs an ISMCTS bot
    ascension play --players 3 --bot ismcts,heuristic --sets both
    ascension play --address HOST:PORT  # on a running engine (--game ID --token T to join)
    ascension join LINK --address HOST:PORT  # your seat from a browser invitation link
    ascension watch GAME --address HOST:PORT
    ascension bots --games 20 --bots ismcts,heuristic
    ascension games --address HOST:PORT
    ascension review GAME --address HOST:PORT --token T
    ascension web                       # the same in a browser (and a spectator's list of games)

Without ``--address`` (or ``ASCENSION_ADDRESS``), ``play``, ``bots`` and ``web`` start
``ascension-engine serve`` with its embedded defaults (no Redis, no Celery) and stop it on exit.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import secrets
import signal
import sys
from collections.abc import Iterator, Sequence
from types import FrameType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from clients import bots_runner
from clients.embedded import EmbeddedEngine, EngineStartError
from clients.sdk import DIFFICULTIES, TLS, AscensionError, Client, bot, human, parse_invitation
from clients.sdk.review import key_moments
from clients.sdk.tls import TlsFilesError, operator_key_from_env, reload_seconds_from_env
from clients.sdk.types import SETS
from clients.web import client_address, hosts
from engine_service import names, native_build

EXAMPLES = """\
examples:
  ascension play                                # you vs an ISMCTS bot, on a private engine
  ascension play --difficulty hard               # levels: easy, normal, hard, expert
  ascension play --players 3 --bot ismcts,heuristic --sets both
  ascension join LINK --address HOST:PORT       # your seat from an invitation link
  ascension watch GAME --address HOST:PORT      # spectate
  ascension bots --games 20 --bots ismcts,heuristic
  ascension review GAME --address HOST:PORT --token T   # your decisions, rated
  ascension practice GAME --address HOST:PORT --token T --version V   # replay a decision
  ascension web                                 # play and watch in a browser
Without --address (or ASCENSION_ADDRESS), play, bots and web start `ascension-engine serve` with
its embedded defaults (no Redis, no Celery) and stop it on exit. Guide: docs/clients.md"""

DEFAULT_BOT = "ismcts"
DEFAULT_BUDGET_MS = 300


def _address_default() -> str | None:
    return os.environ.get("ASCENSION_ADDRESS") or None


def _bots(raw: str) -> list[str]:
    names = [b.strip() for b in raw.split(",") if b.strip()]
    if not names:
        raise argparse.ArgumentTypeError("give at least one bot name, e.g. ismcts,heuristic")
    return names


def _display_name(raw: str) -> str:
    """The engine's rule for display names, checked before anything starts."""
    bad = names.problem(raw) if raw else None
    if bad:
        raise argparse.ArgumentTypeError(bad)
    return raw


def _host_name(raw: str) -> str:
    try:
        return hosts.host_name(raw)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _connection_flags(parser: argparse.ArgumentParser) -> None:
    """TLS and operator-key options for an engine given by --address (docs/security.md)."""
    g = parser.add_argument_group("secure connection (with --address)")
    g.add_argument(
        "--tls", action="store_true", help="connect with TLS (env ASCENSION_TLS; implied by "
        "the file options)",
    )  # fmt: skip
    g.add_argument("--tls-ca-file", help="PEM CA the engine's certificate must chain to "
                   "(env ASCENSION_TLS_CA_FILE; default: the system's)")  # fmt: skip
    g.add_argument("--tls-cert-file", help="client certificate for mutual TLS "
                   "(env ASCENSION_TLS_CERT_FILE)")  # fmt: skip
    g.add_argument("--tls-key-file", help="its private key (env ASCENSION_TLS_KEY_FILE)")
    g.add_argument("--tls-server-name", help="name to check in the engine's certificate "
                   "(env ASCENSION_TLS_SERVER_NAME)")  # fmt: skip
    g.add_argument("--operator-key-file", help="file holding an operator key, for engines "
                   "that require one (env ASCENSION_OPERATOR_KEY[_FILE])")  # fmt: skip


# What each level plays (the engine's engine_service/server/bots.py decides; a test compares)
LEVELS = {
    "easy": "the greedy-honor bot",
    "normal": "the heuristic bot",
    "hard": "ismcts, 100 iterations a move",
    "expert": "ismcts, 1,000 iterations a move",
}
BOTS_HELP = (
    "ismcts: the search, the strongest with time; heuristic: rules of thumb; expert: a scripted "
    "planner (despite its name, rated below --difficulty hard: docs/bots.md); greedy-honor; "
    "random"
)


def _difficulty_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--difficulty", choices=DIFFICULTIES, default=None,
        help="the bots' level, weakest first: "
        + "; ".join(f"{level} ({what})" for level, what in LEVELS.items())
        + " (each rated in Elo in docs/bots.md); in place of --bot and --budget-ms",
    )  # fmt: skip


def _tls(args: argparse.Namespace) -> TLS | None:
    env = TLS.from_env()
    files = (args.tls_ca_file, args.tls_cert_file, args.tls_key_file, args.tls_server_name)
    if not (args.tls or any(files)):
        return env
    base = env or TLS(reload_seconds=reload_seconds_from_env())
    return TLS(
        args.tls_ca_file or base.ca_file,
        args.tls_cert_file or base.cert_file,
        args.tls_key_file or base.key_file,
        args.tls_server_name or base.server_name,
        base.reload_seconds,
    )


def _operator_key(args: argparse.Namespace) -> str | None:
    if args.operator_key_file:
        with open(args.operator_key_file) as f:
            return f.read().strip() or None
    return operator_key_from_env()


def _client(
    args: argparse.Namespace, address: str, private: bool, timeout: float = 30.0
) -> Client:
    """A client of ``address``: with the TLS and operator options, unless it is the private
    engine this command started (plaintext on loopback)."""
    if private:
        return Client(address, timeout=timeout)
    return Client(address, timeout=timeout, tls=_tls(args), operator_key=_operator_key(args))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ascension",
        description="Play Ascension (Skulls & Sails, Curse of the Golden Isles) against bots.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True)
    addr_help = "engine address HOST:PORT (env ASCENSION_ADDRESS); default: start a private engine"

    play = sub.add_parser("play", help="play a game in the terminal against bots")
    play.add_argument("--address", default=_address_default(), help=addr_help)
    play.add_argument("--sets", choices=SETS, default="ss", help="ss, cotgi or both (default ss)")
    play.add_argument(
        "--players", type=int, default=2, help="seats in the game, you included (default 2)"
    )
    play.add_argument(
        "--bot", type=_bots, default=[DEFAULT_BOT],
        help="bot(s) for the other seats, comma-separated, used in turn (default ismcts). "
        + BOTS_HELP,
    )  # fmt: skip
    play.add_argument(
        "--budget-ms", type=int, default=DEFAULT_BUDGET_MS, help="bot time per move (default 300)"
    )
    _difficulty_flag(play)
    play.add_argument("--seed", type=int, default=None, help="game seed (reproducible deal)")
    play.add_argument("--name", type=_display_name, default="You", help="your display name")
    play.add_argument("--game", help="join this game (with --token) instead of creating one")
    play.add_argument("--token", help="your seat token in --game")
    play.add_argument("--no-clear", action="store_true", help="do not clear the screen each turn")
    _connection_flags(play)

    join = sub.add_parser("join", help="take your seat from an invitation link and play")
    join.add_argument("link", metavar="LINK", help="the invitation link (…#/join/<game>/<token>)")
    join.add_argument(
        "--address", default=_address_default(),
        help="engine address HOST:PORT where the game is (env ASCENSION_ADDRESS)",
    )  # fmt: skip
    join.add_argument("--no-clear", action="store_true", help="do not clear the screen each turn")
    _connection_flags(join)

    watch = sub.add_parser("watch", help="spectate a game")
    watch.add_argument("game", metavar="GAME", help="the game id")
    watch.add_argument("--address", default=_address_default(), help="engine address HOST:PORT")
    _connection_flags(watch)

    bots = sub.add_parser("bots", help="run bot-vs-bot games and print a results table")
    bots.add_argument("--address", default=_address_default(), help=addr_help)
    bots.add_argument("--games", type=int, default=10, help="number of games (default 10)")
    bots.add_argument(
        "--bots", type=_bots, default=["ismcts", "heuristic"],
        help="bots, comma-separated; they rotate through the seats (default ismcts,heuristic). "
        + BOTS_HELP,
    )  # fmt: skip
    bots.add_argument("--players", type=int, default=None, help="seats per game (default: #bots)")
    bots.add_argument("--sets", choices=SETS, default="ss")
    bots.add_argument(
        "--budget-ms", type=int, default=DEFAULT_BUDGET_MS, help="bot time per move (default 300)"
    )
    bots.add_argument("--seed", type=int, default=None, help="seed of game 0 (game i: seed+i)")
    bots.add_argument("--parallel", type=int, default=None, help="games at once (default: CPUs)")
    bots.add_argument("--game-timeout", type=float, default=900.0, help="seconds before giving up")
    bots.add_argument(
        "--stall-timeout", type=float, default=120.0, help="give up on a game after this many "
        "seconds without a move",
    )  # fmt: skip
    _connection_flags(bots)

    web = sub.add_parser("web", help="play and watch games in a browser")
    web.add_argument("--address", default=_address_default(), help=addr_help)
    web.add_argument("--host", default="127.0.0.1", help="address to serve the page on")
    web.add_argument("--port", type=int, default=8080, help="port of the page (0: a free one)")
    web.add_argument(
        "--allow-host", action="append", type=_host_name, default=[], metavar="NAME",
        help="a name the page is served under besides its IP addresses and localhost, e.g. "
        "the name of a reverse proxy; repeat for more (env ASCENSION_WEB_ALLOWED_HOSTS, "
        "comma-separated). Requests for other names are refused (DNS rebinding)",
    )  # fmt: skip
    web.add_argument(
        "--trusted-proxies", default=None, metavar="CIDRS",
        help="proxies in front of the page (comma-separated CIDRs: a load balancer, the "
        "Ingress controller): a request from one of them counts as the address they report, "
        "else a request is its connection's address whatever headers it sends (env "
        f"{client_address.ENV_TRUSTED})",
    )  # fmt: skip
    web.add_argument(
        "--client-address-header", default=None, metavar="NAME",
        help="the header those proxies put the client's address in (default x-forwarded-for; "
        f"env {client_address.ENV_HEADER})",
    )  # fmt: skip
    web.add_argument(
        "--gateway-key-file", default=None, metavar="FILE",
        help="file holding a gateway key, one of the engine's ENGINE_GATEWAY_KEYS: the engine "
        "then counts each call as the browser's address (env "
        f"{client_address.ENV_KEY}[_FILE]); with --address",
    )  # fmt: skip
    web.add_argument("--no-browser", action="store_true", help="only print the page's URL")
    web.add_argument("--sets", choices=SETS, default="ss", help="ss, cotgi or both (default ss)")
    web.add_argument("--players", type=int, default=2, help="seats in a new game (default 2)")
    web.add_argument(
        "--bot", type=_bots, default=[DEFAULT_BOT],
        help="bot(s) for the other seats, comma-separated, used in turn (default ismcts). "
        + BOTS_HELP,
    )  # fmt: skip
    web.add_argument(
        "--budget-ms", type=int, default=DEFAULT_BUDGET_MS, help="bot time per move (default 300)"
    )
    _difficulty_flag(web)
    web.add_argument("--seed", type=int, default=None, help="game seed (reproducible deal)")
    web.add_argument(
        "--name", type=_display_name, default="You", help="your display name in the page's form"
    )
    web.add_argument(
        "--ai-processes", type=int, default=2,
        help="AI worker processes of the private engine (default 2: your game and one to watch)",
    )  # fmt: skip
    _connection_flags(web)

    rev = sub.add_parser(
        "review", help="a seat's decisions in a game, rated by the engine's search",
        description="Rate every decision of a seat with a real choice (best, good, inaccuracy, "
        "mistake, blunder), from what it could see then, with the best alternative and the win "
        "chance over the game. A seat's token reviews that seat at any time; the admin token "
        "(--admin-token) or an operator key reviews any seat (--seat) once the game is over.",
    )  # fmt: skip
    rev.add_argument("game", metavar="GAME", help="the game id")
    rev.add_argument("--address", default=_address_default(), help="engine address HOST:PORT")
    rev.add_argument("--token", default="", help="your seat token in GAME")
    rev.add_argument("--admin-token", default="", help="the game's admin token (any seat)")
    rev.add_argument("--seat", type=int, default=None, help="seat to review, 1-based "
                     "(default: the token's)")  # fmt: skip
    rev.add_argument("--budget-ms", type=int, default=0, help="search time per decision "
                     "(default: the engine's, 250 ms; it caps it)")  # fmt: skip
    _connection_flags(rev)

    prac = sub.add_parser(
        "practice", help="play on from one of your decisions in a game, against bots",
        description="Start a new game at a decision of a seat (--version: one at which the "
        "seat was to move, as `ascension review` lists them; default: now) and play it in the "
        "terminal against bots. The cards the seat could not see then are dealt again at "
        "random: the new game tells nothing more than the seat knew.",
    )  # fmt: skip
    prac.add_argument("game", metavar="GAME", help="the game id")
    prac.add_argument("--address", default=_address_default(), help="engine address HOST:PORT")
    prac.add_argument("--token", default="", help="your seat token in GAME")
    prac.add_argument("--admin-token", default="", help="the game's admin token (any seat, "
                      "once the game is over)")  # fmt: skip
    prac.add_argument("--seat", type=int, default=None, help="seat to practise, 1-based "
                      "(default: the token's)")  # fmt: skip
    prac.add_argument("--version", type=int, default=0, help="the decision's version (default: "
                      "the game's current one)")  # fmt: skip
    _difficulty_flag(prac)
    prac.add_argument("--no-clear", action="store_true", help="do not clear the screen each turn")
    _connection_flags(prac)

    games = sub.add_parser("games", help="list the games on an engine")
    games.add_argument("--address", default=_address_default(), help="engine address HOST:PORT")
    games.add_argument("--active", action="store_true", help="only games not over")
    _connection_flags(games)
    return p


@contextlib.contextmanager
def engine_address(
    console: Console,
    address: str | None,
    *,
    ai_processes: int = 1,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[str, EmbeddedEngine | None]]:
    """The given address, or a private engine (with settings ``env``) started for the
    duration of the block."""
    if address:
        yield address, None
        return
    # An editable install is compiled after it: in the background, from this first start on
    # (this engine runs the sources as they are now: engine_service/native.py)
    compiling = native_build.start_in_background()
    if compiling:
        console.print(f"[dim]{escape(compiling[0].upper() + compiling[1:])}[/]")
    engine = EmbeddedEngine(ai_processes=ai_processes, env=env)
    with console.status("Starting a local engine (embedded store, local AI workers)…"):
        engine.start()
    try:
        yield engine.address, engine
    finally:
        engine.stop()


def _cpus() -> int:
    return max(1, min(8, (os.cpu_count() or 2)))


def cmd_join(args: argparse.Namespace, console: Console) -> int:
    """``play --game --token`` with the seat an invitation link gives."""
    try:
        game_id, token = parse_invitation(args.link)
    except ValueError as e:
        console.print(f"[red]{e}[/]")
        return 2
    if not args.address:
        console.print("[red]join needs --address (or ASCENSION_ADDRESS): the engine where the "
                      "game is (the link names the game and your seat, not the engine).[/]")  # fmt: skip
        return 2
    play = build_parser().parse_args(["play"])
    vars(play).update({k: v for k, v in vars(args).items() if k in vars(play)})
    play.command, play.game, play.token = "play", game_id, token
    return cmd_play(play, console)


def cmd_play(args: argparse.Namespace, console: Console) -> int:
    from clients.terminal.play import PlaySession

    if bool(args.game) != bool(args.token):
        console.print("[red]--game and --token go together (the seat token of that game).[/]")
        return 2
    if args.game and not args.address:
        console.print("[red]--game needs --address: the engine where that game is.[/]")
        return 2
    if not 2 <= args.players <= 6:
        console.print("[red]--players must be 2..4 (2..6 with Curse of the Golden Isles).[/]")
        return 2
    with (
        engine_address(console, args.address) as (address, engine),
        _client(args, address, engine is not None) as client,
    ):
        if args.game:
            game_id, token = args.game, args.token
        else:
            seats = [human(args.name)]
            for i in range(1, args.players):
                name = args.bot[(i - 1) % len(args.bot)]
                seed = random.randrange(2**40) if args.seed is None else args.seed * 8 + i
                if args.difficulty:
                    seats.append(bot(difficulty=args.difficulty, seed=seed))
                else:
                    seats.append(bot(name, time_ms=args.budget_ms, seed=seed))
            created = client.create_game(seats, sets=args.sets, seed=args.seed)
            game_id, token = created.game_id, created.token(0)
        about = (
            f"Game {game_id} on the engine at {address}. Spectate it from another terminal: "
            f"ascension watch {game_id} --address {address}"
        )

        def hint() -> str:
            if engine is None:
                return "Are the engine's AI workers running?"
            problem = engine.last_problem()
            said = f"The engine says: {problem}" if problem else "Nothing in the engine's log"
            return f"{said} (log: {engine.log_path})"

        leaving = (
            "The game stops here (its engine stops with this client)."
            if engine is not None
            else "You can rejoin it (the command is shown when you leave)."
        )
        session = PlaySession(
            client, console, game_id, token, clear=not args.no_clear, about=about,
            stall_hint=hint, leaving=leaving,
        )  # fmt: skip
        outcome = session.run()
        failed = [s.bot_name for s in outcome.view.seat_info if s.fallback_moves]
        if failed and engine is not None:
            console.print(f"[yellow](!) {', '.join(failed)} played fallback moves; why (their "
                          f"tracebacks): the private engine's log, kept: {engine.keep_log()}[/]")  # fmt: skip
        if outcome.view.over and not outcome.quit and sys.stdin.isatty():
            offer_review(client, console, game_id, token)
        if outcome.quit:
            console.print(f"\nYou left game {game_id}.")
            if args.address:
                console.print("Rejoin it with this command (one line):")
                # on its own line and never wrapped: a copy of it is the whole command
                console.print(
                    f"ascension play --address {address} --game {game_id} --token {token}",
                    soft_wrap=True, markup=False, highlight=False,
                )  # fmt: skip
    return 0


def cmd_watch(args: argparse.Namespace, console: Console) -> int:
    from clients.terminal.spectate import spectate

    if not args.address:
        console.print("[red]watch needs --address (or ASCENSION_ADDRESS): the engine to ask.[/]")
        return 2
    with _client(args, args.address, False) as client:
        spectate(client, console, args.game)
    return 0


def cmd_bots(args: argparse.Namespace, console: Console) -> int:
    players = args.players or max(2, len(args.bots))
    parallel = args.parallel or _cpus()
    cfg = bots_runner.BotsConfig(
        bots=tuple(args.bots), games=args.games, players=players, sets=args.sets,
        budget_ms=args.budget_ms, seed=args.seed, parallel=parallel,
        game_timeout_s=args.game_timeout, stall_timeout_s=args.stall_timeout,
    )  # fmt: skip
    if args.games < 1:
        console.print("[red]--games must be at least 1.[/]")
        return 2
    with (
        engine_address(console, args.address, ai_processes=parallel) as (address, engine),
        _client(args, address, engine is not None, timeout=60.0) as client,
    ):
        progress = Progress(
            TextColumn("[bold]games"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("{task.description}"), console=console,
        )  # fmt: skip
        with progress:
            task = progress.add_task("", total=cfg.games)

            def done(r: bots_runner.GameResult) -> None:
                if r.ok:
                    desc = f"last: {r.seats[r.winner]} won {max(r.scores)}-" + "-".join(
                        str(s) for j, s in enumerate(r.scores) if j != r.winner
                    )
                else:
                    desc = f"[red]game {r.index} failed: {r.error}[/]"
                progress.update(task, advance=1, description=desc)

            results = bots_runner.run(client, cfg, on_done=done)
        # Report before the channel and the private engine are closed: nothing that happens
        # while they shut down can then take the results with it.
        console.print(bots_runner.results_table(cfg, results))
        notes = bots_runner.fallback_notes(results)
        for note in notes:
            console.print(f"[yellow](!) {escape(note)}[/]")
        if notes:
            where = (
                f"the private engine's log, kept: {engine.keep_log()}"
                if engine is not None
                else f"the log of the workers of the engine at {address}"
            )
            console.print(f"[yellow](!) Why the bots failed (their tracebacks): {escape(where)}[/]")
        failed = [r for r in results if not r.ok]
        for r in failed:
            console.print(f"[red]game {r.index} ({r.game_id or 'not created'}): {r.error}[/]")
    return 1 if failed else 0


def cmd_review(args: argparse.Namespace, console: Console) -> int:
    from clients.terminal.review import show_review

    if not args.address:
        console.print("[red]review needs --address (or ASCENSION_ADDRESS): the engine of the "
                      "game.[/]")  # fmt: skip
        return 2
    token = args.token or args.admin_token
    seat = None if args.seat is None else args.seat - 1
    with _client(args, args.address, False) as client:
        reviews = show_review(client, console, args.game, token, seat, args.budget_ms)
    moments = key_moments(reviews)
    if moments:  # (one line each, never wrapped: a copy of it is the whole command)
        console.print("Practise from a key moment against the bots:")
        who = f"--token {args.token}" if args.token else f"--admin-token {args.admin_token}"
        if args.seat is not None:
            who += f" --seat {args.seat}"
        for r in moments:
            console.print(f"ascension practice {args.game} --address {args.address} {who} "
                          f"--version {r.version}", soft_wrap=True, markup=False,
                          highlight=False)  # fmt: skip
    return 0


def cmd_practice(args: argparse.Namespace, console: Console) -> int:
    if not args.address:
        console.print("[red]practice needs --address (or ASCENSION_ADDRESS): the engine of the "
                      "game.[/]")  # fmt: skip
        return 2
    token = args.token or args.admin_token
    seat = None if args.seat is None else args.seat - 1
    opponents = bot(difficulty=args.difficulty) if args.difficulty else None
    with _client(args, args.address, False) as client:
        try:
            p = client.practice(args.game, token, args.version, seat=seat, opponents=opponents)
        except AscensionError as e:
            console.print(f"[red]No practice game: {e}[/]")
            return 1
    console.print(f"Practice game {p.game_id}: from turn {p.from_turn} of game {p.from_game}, "
                  "the cards you could not see dealt again.")  # fmt: skip
    play = build_parser().parse_args(["play"])
    vars(play).update({k: v for k, v in vars(args).items() if k in vars(play)})
    play.command, play.game, play.token = "play", p.game_id, p.token
    return cmd_play(play, console)


def offer_review(client: Client, console: Console, game_id: str, token: str) -> None:
    """At the end of a game played at the terminal: ask whether to review it, and do; then
    offer to practise from one of its key moments."""
    from clients.terminal.play import PlaySession, read_line
    from clients.terminal.review import show_review

    try:
        answer = read_line(console, "Review your decisions with the engine's search? (y/N) ")
    except EOFError:
        return
    if answer.strip().lower() not in ("y", "yes"):
        return
    moments = key_moments(show_review(client, console, game_id, token))
    if not moments:
        return
    try:
        answer = read_line(console, f"Practise from a key moment against the bots? "
                                    f"(1-{len(moments)}, or N) ")  # fmt: skip
    except EOFError:
        return
    pick = answer.strip()
    if not (pick.isdigit() and 1 <= int(pick) <= len(moments)):
        return
    try:
        p = client.practice(game_id, token, moments[int(pick) - 1].version)
    except AscensionError as e:
        console.print(f"[red]No practice game: {e}[/]")
        return
    about = f"Practice from turn {p.from_turn} of game {game_id}: unseen cards dealt again."
    console.print(about)
    PlaySession(client, console, p.game_id, p.token, about=about).run()


def cmd_games(args: argparse.Namespace, console: Console) -> int:
    if not args.address:
        console.print("[red]games needs --address (or ASCENSION_ADDRESS).[/]")
        return 2
    with _client(args, args.address, False) as client:
        resp = client.list_games(active_only=args.active)
    table = Table(title="Games")
    # a game id whole, whatever the width (it is what `watch` and `play --game` take)
    longest = max((len(g.game_id) for g in resp.games), default=4)
    table.add_column("Game", no_wrap=True, min_width=longest)
    for col in ("Sets", "Seats", "Version", "State"):
        table.add_column(col, overflow="fold")
    for g in resp.games:
        seats = ", ".join(s.bot_name or s.name or "human" for s in g.seats)
        state = "over" if g.over else f"seat {g.to_move + 1} to move"
        table.add_row(g.game_id, g.sets, seats, str(g.version), state)
    console.print(table)
    return 0


def cmd_web(args: argparse.Namespace, console: Console) -> int:
    from clients.web import serve

    if not 2 <= args.players <= 6:
        console.print("[red]--players must be 2..4 (2..6 with Curse of the Golden Isles).[/]")
        return 2
    try:
        guard = hosts.HostGuard.of(args.host, [*args.allow_host, *hosts.names_from_env()])
    except ValueError as e:
        console.print(f"[red]{hosts.ENV_ALLOWED}: {e}[/]")
        return 2
    try:
        client = _client_address(args)
    except ValueError as e:
        console.print(f"[red]{escape(str(e))}[/]")
        return 2
    private_env = None
    if not args.address:  # the private engine believes this gateway, with a key of its own
        client = client_address.ClientAddress(client.proxies, secrets.token_urlsafe(32))
        private_env = {"ENGINE_GATEWAY_KEYS": client.key or ""}
    try:
        sock = serve.bind(args.host, args.port)
    except OSError as e:
        console.print(f"[red]Cannot serve on {args.host}:{args.port}:[/] {e.strerror or e}")
        return 1
    with (
        sock,
        engine_address(
            console, args.address, ai_processes=args.ai_processes, env=private_env
        ) as started,
    ):
        address, private = started[0], started[1] is not None
        config = serve.PageConfig(
            sets=args.sets, players=args.players, bots=list(args.bot), budget_ms=args.budget_ms,
            seed=args.seed, name=args.name, engine=address, difficulty=args.difficulty or "",
        )  # fmt: skip
        url = serve.url_of(sock, args.host)
        console.print(f"Ascension in your browser: [bold]{url}[/]  (engine at {address})")
        console.print("[dim]Ctrl-C stops it.[/]", highlight=False)
        if not args.no_browser:
            serve.open_browser(url)
        if private:
            serve.run(sock, address, config, guard=guard, client=client)
        else:
            serve.run(
                sock, address, config, tls=_tls(args), operator_key=_operator_key(args),
                guard=guard, client=client,
            )  # fmt: skip
    return 0


def _client_address(args: argparse.Namespace) -> client_address.ClientAddress:
    """--trusted-proxies, --client-address-header and --gateway-key-file (else their
    ASCENSION_WEB_* variables); ValueError names the one at fault."""
    return client_address.ClientAddress.from_options(
        args.trusted_proxies, args.client_address_header, args.gateway_key_file
    )


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(highlight=False)
    # A closed terminal (SIGHUP) or a kill (SIGTERM) unwinds like Ctrl-C: the private engine
    # is stopped by the `finally` that started it. Ctrl-C itself is set too: Python leaves it
    # ignored when the parent ignored it (e.g. a non-interactive shell's `cmd &`).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)
    commands = {
        "play": cmd_play, "join": cmd_join, "watch": cmd_watch, "bots": cmd_bots, "games": cmd_games, "web": cmd_web,
        "review": cmd_review, "practice": cmd_practice,
    }  # fmt: skip
    try:
        return commands[args.command](args, console)
    except KeyboardInterrupt:
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP)
            console.print("\n[dim]Stopped.[/]")
        return 130
    except EngineStartError as e:
        console.print(f"[red]Could not start the local engine:[/] {e}")
        return 1
    except AscensionError as e:
        console.print(f"[red]The engine said ({e.code}):[/] {e.message}")
        return 1
    except TlsFilesError as e:
        console.print(f"[red]TLS files:[/] {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())

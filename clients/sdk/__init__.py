"""Python SDK for the Ascension engine's gRPC API (sync :class:`Client`, asyncio
:class:`AsyncClient`). It depends on the generated stubs only, never on the rules core.

    from clients.sdk import Client, bot, human

    with Client("localhost:50051") as c:
        game = c.create_game([human("Ann"), bot("ismcts", time_ms=300)], sets="ss")
        view = c.wait_turn(game.game_id, game.token(0))  # the bot may move first
        c.submit(game.game_id, game.token(0), view.legal_actions[0].id)
        for update in c.watch(game.game_id, after_version=view.version):
            print(update.version, update.description)

A whole game: ``clients/sdk/examples/quickstart.py``.
"""

from clients.sdk._requests import RetryPolicy
from clients.sdk.aio import AsyncClient, AsyncWatch
from clients.sdk.errors import (
    AscensionError,
    DataLossError,
    FieldViolation,
    GameNotFoundError,
    GameNotOverError,
    GameOverError,
    HistoryGoneError,
    IllegalActionError,
    InvalidArgumentError,
    LiveGamesLimitError,
    NotYourTurnError,
    OperatorCredentialError,
    PermissionDeniedError,
    RateLimitedError,
    ResourceExhaustedError,
    Resync,
    SeedNotAllowedError,
    ServerError,
    UnauthenticatedError,
    UnavailableError,
    VersionConflictError,
)
from clients.sdk.review import DecisionReview, ReviewLabel, ReviewOption, accuracy, key_moments
from clients.sdk.sync import Client, Watch
from clients.sdk.tls import TLS
from clients.sdk.types import (
    DIFFICULTIES,
    BotSpec,
    CardInfo,
    Catalog,
    Clock,
    CreatedGame,
    GameUpdate,
    GameView,
    LegalAction,
    PracticeGame,
    SeatSpec,
    bot,
    human,
    invitation_link,
    parse_invitation,
    time_left,
)

__all__ = [
    "DIFFICULTIES",
    "TLS",
    "AscensionError",
    "AsyncClient",
    "AsyncWatch",
    "BotSpec",
    "CardInfo",
    "Catalog",
    "Client",
    "Clock",
    "CreatedGame",
    "DataLossError",
    "DecisionReview",
    "FieldViolation",
    "GameNotFoundError",
    "GameNotOverError",
    "GameOverError",
    "GameUpdate",
    "GameView",
    "HistoryGoneError",
    "IllegalActionError",
    "InvalidArgumentError",
    "LegalAction",
    "LiveGamesLimitError",
    "NotYourTurnError",
    "OperatorCredentialError",
    "PermissionDeniedError",
    "PracticeGame",
    "RateLimitedError",
    "ResourceExhaustedError",
    "Resync",
    "RetryPolicy",
    "ReviewLabel",
    "ReviewOption",
    "SeatSpec",
    "SeedNotAllowedError",
    "ServerError",
    "UnauthenticatedError",
    "UnavailableError",
    "VersionConflictError",
    "Watch",
    "accuracy",
    "bot",
    "human",
    "invitation_link",
    "key_moments",
    "parse_invitation",
    "time_left",
]

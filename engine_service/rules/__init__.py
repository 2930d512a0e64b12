"""The rules of Ascension's pirate sets: pure, deterministic game logic.

No I/O, no clock, no global RNG. Typical use::

    from engine_service import rules
    s = rules.new_game(rules.GameConfig(sets="both", players=3, seed=7))
    while not s.over:
        a = pick(rules.legal_actions(s))
        events = rules.apply(s, a)

``BUILD`` says which build of the modules runs: ``"compiled"`` (by mypyc, see
engine_service/_build.py) or ``"python"`` (see engine_service/native.py).
"""

from pathlib import Path

from engine_service.native import CompiledPackage

NATIVE = CompiledPackage(__name__, Path(__file__).resolve().parent)
BUILD = NATIVE.choose()  # before any other module of the package is imported

# ruff: noqa: E402

from engine_service.rules.actions import KIND_IDS, KIND_NAMES, arg_of, encode, kind_of
from engine_service.rules.config import GameConfig
from engine_service.rules.describe import describe_action, describe_event
from engine_service.rules.engine import apply, apply_unchecked, legal_actions, new_game
from engine_service.rules.errors import (
    ConfigError,
    IllegalActionError,
    MalformedActionError,
    RulesError,
    SerializationError,
)
from engine_service.rules.scoring import score_breakdown, scores, winner
from engine_service.rules.serialize import deserialize, serialize
from engine_service.rules.state import State
from engine_service.rules.view import SPECTATOR, View, determinize, view

__all__ = [
    "BUILD", "KIND_IDS", "KIND_NAMES", "SPECTATOR", "ConfigError", "GameConfig", "IllegalActionError",
    "MalformedActionError", "RulesError", "SerializationError", "State", "View", "apply",
    "apply_unchecked", "arg_of", "describe_action", "describe_event", "deserialize", "determinize",
    "encode", "kind_of", "legal_actions", "new_game", "score_breakdown", "scores", "serialize",
    "view", "winner",
]  # fmt: skip

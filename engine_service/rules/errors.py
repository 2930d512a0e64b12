"""Typed errors of the rules core."""

from __future__ import annotations


class RulesError(Exception):
    """Base class of every error the rules core raises on bad input."""


class IllegalActionError(RulesError):
    """The action is well formed but not legal now; the message says why. State is unchanged."""


class MalformedActionError(RulesError):
    """The action id does not decode to any action kind."""


class ConfigError(RulesError):
    """A game configuration the rules do not support (unknown set, player count...)."""


class SerializationError(RulesError):
    """Bytes that do not decode to a state of this catalog and format version."""

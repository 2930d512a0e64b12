"""Example plugins (see docs/bots.md)."""

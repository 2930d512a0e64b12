"""An example bot plugin for the Ascension engine (docs/bots.md, "Develop a bot")."""

"""The store's Lua scripts (``lua/*.lua``, package data), read once at import.

Every write of a game is one of these scripts: Redis runs each atomically. They are sent by
SHA1 (EVALSHA) and, where Redis does not know one yet (restarted, flushed, a replica promoted),
whole (EVAL, which also caches it).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True, slots=True)
class Script:
    name: str  # the file's name without ".lua"
    source: str
    sha: str  # what EVALSHA names it by (SHA1 of the source)


def load(name: str) -> Script:
    source = resources.files(__package__).joinpath("lua", f"{name}.lua").read_text("utf-8")
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


def names() -> list[str]:
    """Every script of the package."""
    lua = resources.files(__package__).joinpath("lua")
    return sorted(p.name[:-4] for p in lua.iterdir() if p.name.endswith(".lua"))


CREATE = load("create")
COMMIT = load("commit")
LOAD_IF_CHANGED = load("load_if_changed")
IDEMPOTENT = load("idempotent")
UPDATE_AT = load("update_at")
TOUCH = load("touch")
REPLACE = load("replace")
DELETE = load("delete")
NEWS = load("news")
NEWS_SINCE = load("news_since")
HEADS = load("heads")
CLAIM = load("claim")
CLAIM_LOSS = load("claim_loss")
CLAIM_CLOCK = load("claim_clock")
PRESENCE = load("presence")
BUCKET_MARK = load("bucket_mark")

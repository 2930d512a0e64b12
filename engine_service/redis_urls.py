"""Redis URLs of the engine and the workers: one server (``redis://``, ``rediss://``,
``unix://``, as redis-py reads them), or the primary that Redis Sentinel names:

    redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/<service>[/<db>][?options]
    rediss+sentinel://...   (TLS to the Sentinels and to the Redis servers)

The hosts are Sentinels (port 26379 unless given); ``service`` is the name they monitor the
primary under (``sentinel monitor <service> ...``); the credentials are the Redis servers'
(as in ``redis://``). The Sentinels' own credentials, when they have some (``requirepass``
or an ACL user in their configuration), are the options ``sentinel_password`` and
``sentinel_username``. Other options are redis-py's URL options (``ssl_ca_certs``,
``ssl_certfile``, ``ssl_keyfile``, ``ssl_cert_reqs``) and apply to the Sentinels and the
servers alike. Parsed here once, for the store, the Celery broker (kombu's ``sentinel://``
transport and its options) and the checks of settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel")
SENTINEL_PORT = 26379
_SENTINEL_CREDENTIALS = ("sentinel_username", "sentinel_password")
SENTINEL_TIMEOUTS = {"socket_timeout": 5.0, "socket_connect_timeout": 5.0}  # per Sentinel asked
_TLS_OPTIONS = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile", "ssl_cert_reqs", "ssl_check_hostname")


@dataclass(frozen=True, slots=True)
class SentinelURL:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int
    tls: bool
    username: str | None
    password: str | None
    sentinel_username: str | None
    sentinel_password: str | None
    options: tuple[tuple[str, str], ...]  # the other options, redis-py's

    def server_url(self) -> str:
        """A ``redis://`` (``rediss://``) URL with the servers' credentials, database and
        options, and no address (redis-py reads connection options from it; the address is
        the one the Sentinels name)."""
        scheme = "rediss" if self.tls else "redis"
        auth = ""
        if self.username or self.password:
            auth = quote(self.username or "", safe="")
            auth += f":{quote(self.password, safe='')}@" if self.password else "@"
        query = f"?{urlencode(self.options)}" if self.options else ""
        return f"{scheme}://{auth}localhost/{self.db}{query}"

    def tls_options(self) -> dict[str, str]:
        return {k: v for k, v in self.options if k in _TLS_OPTIONS}

    def sentinel_credentials(self) -> dict[str, str]:
        out = {"username": self.sentinel_username, "password": self.sentinel_password}
        return {k: v for k, v in out.items() if v}


def scheme_of(url: str) -> str:
    return urlsplit(url).scheme.lower() if "://" in url else ""


def is_sentinel(url: str) -> bool:
    return scheme_of(url) in SENTINEL_SCHEMES


def _host_port(item: str) -> tuple[str, int]:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` (ValueError naming it)."""
    if item.startswith("["):
        host, bracket, rest = item[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ValueError(f"{item!r} is not host:port")
        port = rest[1:]
    else:
        host, _, port = item.partition(":")
    if not host:
        raise ValueError(f"a Sentinel address has no host ({item!r})")
    if port and not (port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(f"{item!r}: the port must be 1..65535")
    return host, int(port) if port else SENTINEL_PORT


def parse_sentinel(url: str) -> SentinelURL:
    """A ``redis+sentinel://`` URL read (ValueError saying what is wrong; never a secret)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in SENTINEL_SCHEMES:
        raise ValueError("not a redis+sentinel:// URL")
    userinfo, at, hosts = parts.netloc.rpartition("@")
    username = password = None
    if at:
        user, colon, secret = userinfo.partition(":")
        username, password = unquote(user) or None, unquote(secret) if colon else None
    items = [h for h in hosts.split(",") if h.strip()]
    if not items:
        raise ValueError("no Sentinel address (redis+sentinel://host:26379,host2:26379/<service>/0)")
    sentinels = tuple(_host_port(h.strip()) for h in items)
    path = [p for p in parts.path.split("/") if p]
    if not path:
        raise ValueError(
            "the path must name the Sentinels' service (the primary's name in `sentinel "
            "monitor`), e.g. /mymaster/0"
        )
    if len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        shown = "/".join(path)[:40]
        raise ValueError(f"the path must be /<service> or /<service>/<database number>, got /{shown}")
    options = parse_qsl(parts.query, keep_blank_values=True)
    creds = {k: v for k, v in options if k in _SENTINEL_CREDENTIALS}
    return SentinelURL(
        sentinels=sentinels,
        service=unquote(path[0]),
        db=int(path[1]) if len(path) == 2 else 0,
        tls=parts.scheme.lower() == "rediss+sentinel",
        username=username,
        password=password,
        sentinel_username=creds.get("sentinel_username") or None,
        sentinel_password=creds.get("sentinel_password") or None,
        options=tuple((k, v) for k, v in options if k not in _SENTINEL_CREDENTIALS),
    )


def redacted(url: str) -> str:
    """The URL without its passwords (the userinfo's, and options named ``*password*``), for
    logs and messages."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    rest, q, query = rest.partition("?")
    userinfo, at, host = rest.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        rest = f"{user}:***@{host}" if colon or not user else f"{user}@{host}"
    if q:
        shown = [(k, "***" if "password" in k.lower() else v)
                 for k, v in parse_qsl(query, keep_blank_values=True)]  # fmt: skip
        rest += "?" + urlencode(shown, safe="*/")
    return f"{scheme}://{rest}"


def celery_broker(url: str) -> tuple[str, dict[str, Any]]:
    """(the URL kombu reads, Celery settings it needs) for a broker URL: a Sentinel URL becomes
    kombu's ``sentinel://host:port;sentinel://...`` with the service as the transport option
    ``master_name``, the Sentinels' credentials and TLS in ``sentinel_kwargs``, and the
    servers' TLS in ``broker_use_ssl``; any other URL is kombu's as it is."""
    if not is_sentinel(url):
        return url, {}
    s = parse_sentinel(url)
    auth = ""
    if s.username or s.password:
        auth = quote(s.username or "", safe="") + f":{quote(s.password or '', safe='')}@"
    hosts = [f"[{h}]" if ":" in h else h for h, _ in s.sentinels]
    urls = [f"sentinel://{auth if i == 0 else ''}{h}:{p}/{s.db}"
            for i, (h, (_, p)) in enumerate(zip(hosts, s.sentinels, strict=True))]  # fmt: skip
    sentinel_kwargs: dict[str, Any] = {**s.sentinel_credentials(), **SENTINEL_TIMEOUTS}
    conf: dict[str, Any] = {}
    if s.tls:
        tls = {"ssl_cert_reqs": "required", **s.tls_options()}
        sentinel_kwargs.update(ssl=True, **tls)
        conf["broker_use_ssl"] = tls
    conf["broker_transport_options"] = {"master_name": s.service, "sentinel_kwargs": sentinel_kwargs}
    kombu_url = ";".join(urls)
    # Celery prefers the variable CELERY_BROKER_URL (this URL, as the engine and the worker
    # read it) to the app's broker; its read and write URLs win over both.
    conf.update(broker_read_url=kombu_url, broker_write_url=kombu_url)
    return kombu_url, conf

"""The parts of the Redis store (``engine_service.store.redis_store.RedisStore`` is their
sum), each a module with one job:

- ``lua/*.lua`` and ``scripts.py``: the Lua scripts, one per atomic step, read at import;
- ``resp.py``: commands packed in the Redis protocol by hand, for the hot path;
- ``connection.py``: how the parts reach Redis (a command by key, a script, WAIT), one
  implementation per client library (``ENGINE_REDIS_CLIENT``):
  - ``link.py`` (``hand``, the default): the store's own connection layer over redis-py's
    connections: routing by key over a Cluster's nodes (MOVED, ASK, TRYAGAIN, failovers), one
    deadline per round trip, retries of whole calls, commands packed by hand;
  - ``redispy.py`` (``redis-py``): redis-py's pool and command layer;
- ``primary.py``: redis-py's client of a primary that may fail over, which both use: the one
  Redis Sentinel names (``redis+sentinel://``), or whatever a fixed address reaches; READONLY
  (a primary turned replica) drops the client's connections to it and is retried;
- ``commit_args.py``: the commit script's keys and arguments, as values and packed by hand;
- ``core.py``: what every part shares: the connection, the settings, WAIT's confirmation;
- ``games.py``: a game's own keys: create, load, the commit, idempotency keys, replay log;
- ``watch.py``: reading the updates of many games for watchers (the buckets' news streams,
  and their marks: a store emptied or gone back under a watch reader);
- ``index.py``: walkers over the buckets: listing, the AI index, counts, tidying; replies
  and loss claims between replicas;
- ``records.py``: decoding what the replies hold (damaged bytes: UnreadableData).
"""

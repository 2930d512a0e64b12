#!/bin/sh
# The compose stack's Redis credentials, made on the stack's first run by the one-shot
# service `secrets` (deploy/compose.yaml) and kept by every later run. Each consumer's
# volume holds only what it needs:
#
#   $REDIS_SECRETS_DIR/users.acl           Redis's ACL file: the default user off, and the
#                                          users ascension (engine, workers), exporter
#                                          (read-only monitoring) and healthcheck (PING only),
#                                          their passwords as SHA-256 digests
#   $REDIS_SECRETS_DIR/healthcheck-password  for Redis's own health check
#   $APP_SECRETS_DIR/redis-url             redis://ascension:<password>@redis:6379/0
#                                          (REDIS_URL_FILE, CELERY_BROKER_URL_FILE)
#   $EXPORTER_SECRETS_DIR/redis-password.json  {"redis://redis:6379": "<password>"}
#                                          (the exporter's REDIS_PASSWORD_FILE)
#
# Passwords are 48 hex digits from /dev/urandom (URL-safe: they go into a URL). To rotate
# them, delete the volumes' files (or the volumes) and `docker compose up` again.
set -eu

redis_dir=${REDIS_SECRETS_DIR:-/secrets/redis}
app_dir=${APP_SECRETS_DIR:-/secrets/app}
exporter_dir=${EXPORTER_SECRETS_DIR:-/secrets/exporter}
redis_host=${REDIS_SECRETS_HOST:-redis:6379}

if [ -s "$redis_dir/users.acl" ] && [ -s "$redis_dir/healthcheck-password" ] \
    && [ -s "$app_dir/redis-url" ] && [ -s "$exporter_dir/redis-password.json" ]; then
    echo "secrets: the Redis credentials of an earlier run are kept"
    exit 0
fi

random() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
digest() { printf '%s' "$1" | sha256sum | cut -d ' ' -f 1; }
# Written whole, then renamed: a file is never seen half written.
put() { printf '%s\n' "$2" > "$1.new" && chmod 0444 "$1.new" && mv -f "$1.new" "$1"; }

app=$(random)
exporter=$(random)
health=$(random)
[ ${#app} -eq 48 ] && [ ${#exporter} -eq 48 ] && [ ${#health} -eq 48 ] || {
    echo "secrets: could not draw random passwords" >&2
    exit 1
}

# The app user may do everything a game server and Celery need, but not wipe or reconfigure
# the server or read other clients' traffic. The exporter reads the server's INFO and
# CONFIG, and the length of one key: the AI move queue.
put "$redis_dir/users.acl" "user default off resetkeys resetchannels -@all
user ascension on #$(digest "$app") ~* &* +@all -flushall -flushdb -debug -shutdown -acl -config|set -config|rewrite -config|resetstat -replicaof -slaveof -failover -module -monitor
user exporter on #$(digest "$exporter") resetkeys ~ascension.moves -@all +@connection +info +config|get +latency +slowlog +client|list +client|info +type +llen +cluster|info
user healthcheck on #$(digest "$health") -@all +ping"
put "$redis_dir/healthcheck-password" "$health"
put "$app_dir/redis-url" "redis://ascension:$app@$redis_host/0"
put "$exporter_dir/redis-password.json" "{\"redis://$redis_host\": \"$exporter\"}"
echo "secrets: new Redis credentials written"

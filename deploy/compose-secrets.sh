#!/bin/sh
# The compose stack's Redis credentials, made by the one-shot service `secrets`
# (deploy/compose.yaml) before Redis starts, on every run: passwords are drawn once and kept,
# the ACL file is written again from the rules each time (so a new version of the rules
# reaches a running stack with its next `docker compose up`). Each consumer's volume holds
# only what it needs:
#
#   $REDIS_SECRETS_DIR/users.acl             Redis's ACL file: the default user off, and one
#                                            user per line of the rules file, with the SHA-256
#                                            digest of its password (a user nothing here uses,
#                                            keda, is written off)
#   $REDIS_SECRETS_DIR/healthcheck-password  for Redis's own health check
#   $ENGINE_SECRETS_DIR/redis-url            redis://engine:<password>@redis:6379/0 (REDIS_URL_FILE)
#   $ENGINE_SECRETS_DIR/broker-url           redis://broker:<password>@redis:6379/0, the engine's
#                                            CELERY_BROKER_URL_FILE
#   $WORKER_SECRETS_DIR/broker-url           the same, the workers' (they never see the store's)
#   $EXPORTER_SECRETS_DIR/redis-password.json  {"redis://redis:6379": "<password>"}
#                                            (the exporter's REDIS_PASSWORD_FILE)
#
# The rules: $REDIS_USERS_RULES (deploy/helm/ascension-engine/files/redis-users.rules, which
# the chart's Redis reads too). Passwords are 48 hex digits from /dev/urandom (URL-safe:
# they go into URLs). To rotate them, delete the volumes' files (or the volumes) and
# `docker compose up` again.
set -eu

redis_dir=${REDIS_SECRETS_DIR:-/secrets/redis}
engine_dir=${ENGINE_SECRETS_DIR:-/secrets/engine}
worker_dir=${WORKER_SECRETS_DIR:-/secrets/worker}
exporter_dir=${EXPORTER_SECRETS_DIR:-/secrets/exporter}
rules=${REDIS_USERS_RULES:-/redis-users.rules}
redis_host=${REDIS_SECRETS_HOST:-redis:6379}

random() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
digest() { printf '%s' "$1" | sha256sum | cut -d ' ' -f 1; }
# Written whole, then renamed: a file is never seen half written.
put() { printf '%s\n' "$2" > "$1.new" && chmod 0444 "$1.new" && mv -f "$1.new" "$1"; }
# The password a file of an earlier run holds (sed expression), else a new one.
kept() {
    found=""
    [ -s "$1" ] && found=$(sed -n "$2" "$1" | head -n 1)
    if [ "${#found}" -eq 48 ]; then printf '%s' "$found"; else random; fi
}

[ -s "$rules" ] || { echo "secrets: no Redis users' rules at $rules" >&2; exit 1; }

engine=$(kept "$engine_dir/redis-url" 's|^redis://engine:\([0-9a-f]*\)@.*|\1|p')
broker=$(kept "$worker_dir/broker-url" 's|^redis://broker:\([0-9a-f]*\)@.*|\1|p')
exporter=$(kept "$exporter_dir/redis-password.json" 's|.*": "\([0-9a-f]*\)".*|\1|p')
healthcheck=$(kept "$redis_dir/healthcheck-password" 's|^\([0-9a-f]*\)$|\1|p')
for password in "$engine" "$broker" "$exporter" "$healthcheck"; do
    [ "${#password}" -eq 48 ] || { echo "secrets: could not draw random passwords" >&2; exit 1; }
done

# CLIENT SETINFO (which redis-py sends as it connects) exists from Redis 7.2; this service
# runs the stack's Redis image, so its redis-server is the one that loads the file.
version=$(redis-server --version 2>/dev/null | sed -n 's/.* v=\([0-9]*\)\.\([0-9]*\)\..*/\1 \2/p')
set -- $version 0 0
setinfo=yes
if [ "$1" -lt 7 ] || { [ "$1" -eq 7 ] && [ "$2" -lt 2 ]; }; then setinfo=no; fi

acl="user default off resetkeys resetchannels -@all"
while read -r name grants; do
    case "$name" in ''|'#'*) continue ;; esac
    [ "$setinfo" = yes ] || grants=$(printf '%s' "$grants" | sed 's/ +client|setinfo//g')
    case "$name" in
        engine) password=$engine ;;
        broker) password=$broker ;;
        exporter) password=$exporter ;;
        healthcheck) password=$healthcheck ;;
        *) acl="$acl
user $name off resetpass $grants"; continue ;;
    esac
    acl="$acl
user $name on #$(digest "$password") $grants"
done < "$rules"

put "$redis_dir/users.acl" "$acl"
put "$redis_dir/healthcheck-password" "$healthcheck"
put "$engine_dir/redis-url" "redis://engine:$engine@$redis_host/0"
put "$engine_dir/broker-url" "redis://broker:$broker@$redis_host/0"
put "$worker_dir/broker-url" "redis://broker:$broker@$redis_host/0"
put "$exporter_dir/redis-password.json" "{\"redis://$redis_host\": \"$exporter\"}"
echo "secrets: Redis users written (passwords of an earlier run kept)"

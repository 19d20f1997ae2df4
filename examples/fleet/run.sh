#!/usr/bin/env bash
# make fleet: a whole fleet on one machine, in the foreground until Ctrl-C.
#
#   Redis        redis://127.0.0.1:6379/0 (started here, persistence in $FLEET_DIR/redis, when none answers)
#   PostgreSQL   127.0.0.1:5432 (started as .ci/run does when it does not answer), database tokenbudget_fleet
#                (FLEET_FRESH=1 drops it and sharedstore's Redis keys first: a fresh start)
#   sharedstore  http://127.0.0.1:8081, data plane + admin API (/v1/admin/) on their own tokens
#   worker       `sharedstore worker` every 2 s, metrics on http://127.0.0.1:8082
#   gateway 1    http://127.0.0.1:10001 (admin http://127.0.0.1:9902)
#   gateway 2    http://127.0.0.1:10002 (admin http://127.0.0.1:9903)
#
# The gateways run examples/fleet/plugin.json; their ports do not collide with `make run`
# (10000 and 9901). The ledger gets the price list examples/fleet/prices.json when none is in effect,
# so the worker confirms the walk-through's spend.
# Logs go to $FLEET_DIR/*.log. Ctrl-C (or SIGTERM) stops what this script started; a Redis or
# PostgreSQL that was already running is left alone, and so is a PostgreSQL started here (it is
# the machine's database server). Every setting below can be overridden from the environment.
set -euo pipefail
cd "$(dirname "$0")/../.."

FLEET_DIR=${FLEET_DIR:-build/fleet}
SHAREDSTORE=${FLEET_SHAREDSTORE:-build/sharedstore}
GATEWAY=${FLEET_GATEWAY:-build/gateway}
WASM=${FLEET_WASM:-build/filter.wasm}
CONFIG=${FLEET_CONFIG:-examples/fleet/plugin.json}
PRICES=${FLEET_PRICES:-examples/fleet/prices.json}
REDIS_PORT=${FLEET_REDIS_PORT:-6379}
PG_SERVER=${FLEET_PG_SERVER:-postgres://postgres@127.0.0.1:5432}
DB_NAME=${FLEET_DB_NAME:-tokenbudget_fleet}
DATABASE=${FLEET_DATABASE:-$PG_SERVER/$DB_NAME?sslmode=disable}
STORE=${FLEET_STORE:-127.0.0.1:8081}
WORKER=${FLEET_WORKER:-127.0.0.1:8082}
GATEWAYS=(${FLEET_GATEWAY1:-127.0.0.1:10001,127.0.0.1:9902} ${FLEET_GATEWAY2:-127.0.0.1:10002,127.0.0.1:9903})
# The data-plane token is the one the plugin config sends (rate_limiting.redis.token).
STORE_TOKEN=s3cret
REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0

mkdir -p "$FLEET_DIR"
for f in "$SHAREDSTORE" "$GATEWAY" "$WASM" "$CONFIG" "$PRICES"; do
	[ -e "$f" ] || { echo "fleet: $f is missing (make fleet builds it)" >&2; exit 1; }
done

# Every address the fleet listens on must be free: a process already there would answer the
# readiness checks in place of ours.
in_use() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }
for addr in "$STORE" "$WORKER" "${GATEWAYS[@]%,*}" "${GATEWAYS[@]#*,}"; do
	if in_use "$addr"; then
		echo "fleet: $addr is in use (another make fleet, or a sharedstore or gateway started by hand?)" >&2
		exit 1
	fi
done

pids=()
names=()
stop() {
	trap - INT TERM EXIT
	local i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		kill "${pids[i]}" 2>/dev/null || true
	done
	for i in "${!pids[@]}"; do
		wait "${pids[i]}" 2>/dev/null || true
	done
}
trap 'stop; exit 0' INT TERM
trap stop EXIT

# start NAME CMD...: runs CMD in the background, its output in $FLEET_DIR/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$FLEET_DIR/$name.log" 2>&1 &
	pids+=($!)
	names+=("$name")
}

# await WHAT CMD...: retries CMD for up to 30 s.
await() {
	local what=$1
	shift
	for _ in $(seq 1 150); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	echo "fleet: $what did not come up; see $FLEET_DIR/*.log" >&2
	tail -n 20 "$FLEET_DIR"/*.log >&2 || true
	exit 1
}

# Redis: the one on REDIS_PORT, else one of our own (append-only, so a restart keeps the buckets).
if redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG; then
	redis_state="already running"
else
	mkdir -p "$FLEET_DIR/redis"
	start redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$FLEET_DIR/redis" \
		--appendonly yes --appendfsync everysec --maxmemory-policy noeviction --save ''
	await "redis on port $REDIS_PORT" sh -c "redis-cli -p $REDIS_PORT ping | grep -q PONG"
	redis_state="started here"
fi

# PostgreSQL: started the way CI starts it when it does not answer; the fleet's database is
# created when absent (FLEET_DATABASE names one that exists instead).
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
	. .ci/postgres.sh
	ensure_postgres
fi
# FLEET_FRESH=1 starts afresh: the ledger is dropped and made anew, and what sharedstore keeps in
# this Redis goes with it, its buckets and holds (tb:*) and its spend cache (quota:*): the cache's
# limits and counters describe the old ledger, and would refuse a first request on spend the new
# one never saw. Only the script's own database is dropped, never one FLEET_DATABASE names.
if [ "${FLEET_FRESH:-}" = 1 ]; then
	if [ -n "${FLEET_DATABASE:-}" ]; then
		echo "fleet: FLEET_FRESH drops the script's own database; FLEET_DATABASE names another" >&2
		exit 1
	fi
	psql -w -q "$PG_SERVER/postgres" -c "DROP DATABASE IF EXISTS $DB_NAME WITH (FORCE)"
	for pattern in 'tb:*' 'quota:*'; do
		redis-cli -p "$REDIS_PORT" --scan --pattern "$pattern" | tr '\n' '\0' |
			xargs -0 -r -n 500 redis-cli -p "$REDIS_PORT" unlink >/dev/null
	done
	echo "fleet: started afresh (database $DB_NAME dropped, sharedstore's keys deleted from Redis)"
fi
if [ -z "${FLEET_DATABASE:-}" ]; then
	if [ -z "$(psql -w "$PG_SERVER/postgres" -Atc "SELECT 1 FROM pg_database WHERE datname = '$DB_NAME'")" ]; then
		psql -w -q "$PG_SERVER/postgres" -c "CREATE DATABASE $DB_NAME"
	fi
fi
"$SHAREDSTORE" migrate --database "$DATABASE"

# Tokens: the data plane's is the plugin config's; the admin token is made once and kept.
umask 077
printf '%s' "$STORE_TOKEN" >"$FLEET_DIR/store.token"
if [ ! -s "$FLEET_DIR/admin.token" ]; then
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$FLEET_DIR/admin.token"
fi
umask 022

start sharedstore "$SHAREDSTORE" --listen "$STORE" --redis "$REDIS_URL" --token-file "$FLEET_DIR/store.token" \
	--database "$DATABASE" --admin-token-file "$FLEET_DIR/admin.token"
await "sharedstore on $STORE" curl -sf "http://$STORE/readyz"

admin() { curl -sf -H "Authorization: Bearer $(cat "$FLEET_DIR/admin.token")" "$@"; }
# The worker prices records with the ledger's price list: without one in effect every record stays pending.
if ! prices=$(admin "http://$STORE/v1/admin/prices"); then
	echo "fleet: the admin API did not list the ledger's prices; see $FLEET_DIR/sharedstore.log" >&2
	exit 1
fi
if ! grep -q '"in_effect":true' <<<"$prices"; then
	admin -X PUT --data-binary "@$PRICES" "http://$STORE/v1/admin/prices" >/dev/null
fi

start worker "$SHAREDSTORE" worker --database "$DATABASE" --redis "$REDIS_URL" --interval 2s --listen "$WORKER"
await "the worker on $WORKER" curl -sf "http://$WORKER/healthz"

n=0
for g in "${GATEWAYS[@]}"; do
	n=$((n + 1))
	listen=${g%,*}
	adm=${g#*,}
	start "gateway-$n" "$GATEWAY" --wasm "$WASM" --config "$CONFIG" --listen "$listen" --admin "$adm" \
		--cluster "sharedstore=http://$STORE" --upstream mock --access-log "$FLEET_DIR/gateway-$n.access.log"
done
n=0
for g in "${GATEWAYS[@]}"; do
	n=$((n + 1))
	await "gateway $n" curl -sf "http://${g#*,}/ready"
done

cat <<EOF
fleet up (Ctrl-C stops it)
  gateway 1    http://${GATEWAYS[0]%,*}   admin http://${GATEWAYS[0]#*,}
  gateway 2    http://${GATEWAYS[1]%,*}   admin http://${GATEWAYS[1]#*,}
  sharedstore  http://$STORE   admin API http://$STORE/v1/admin/
  admin token  $FLEET_DIR/admin.token   (data-plane token $FLEET_DIR/store.token)
  ledger       $DATABASE
  redis        $REDIS_URL ($redis_state)
  worker       every 2 s, metrics http://$WORKER/metrics
  config       $CONFIG; logs in $FLEET_DIR/*.log
EOF

# Stay up until a signal, or until one of the processes exits (then stop the rest and fail).
set +e
wait -n "${pids[@]}"
rc=$?
for i in "${!pids[@]}"; do
	if ! kill -0 "${pids[i]}" 2>/dev/null; then
		echo "fleet: ${names[i]} exited ($rc); last lines of $FLEET_DIR/${names[i]}.log:" >&2
		tail -n 20 "$FLEET_DIR/${names[i]}.log" >&2
	fi
done
exit 1

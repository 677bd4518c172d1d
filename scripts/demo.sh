#!/usr/bin/env bash
# The main job: a local Redis, the five services and the reference receiver, a simulated campaign,
# and a summary of the signed postbacks the receiver verified. Stops everything it started.
#
#   scripts/demo.sh [--devices N] [--time-scale S] [--cluster]
#
# --cluster runs it on a local Redis Cluster instead: six redis-server nodes (3 primaries, each with a
# replica) made into a cluster by `redis-cli --cluster create`, the services with REDIS_CLUSTER=true.
#
# The time scale divides every lifecycle duration: at 86400 a day lasts a second, so all three
# conversion windows (35 days) and their delays play out in under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

DEVICES=60
TIME_SCALE=86400
CLUSTER=false
while [ $# -gt 0 ]; do
    case "$1" in
        --devices) DEVICES=$2; shift 2 ;;
        --time-scale) TIME_SCALE=$2; shift 2 ;;
        --cluster) CLUSTER=true; shift ;;
        *) echo "usage: scripts/demo.sh [--devices N] [--time-scale S] [--cluster]" >&2; exit 2 ;;
    esac
done

ensure_system_packages
echo "==> swift build"
swift build
BIN="$(swift build --show-bin-path)"

RUN="$(pwd)/run/demo-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$RUN/keys" "$RUN/logs" "$RUN/redis"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM

start() {  # start NAME COMMAND...: runs in the background, logs to $RUN/logs/NAME.log
    local name=$1; shift
    "$@" >"$RUN/logs/$name.log" 2>&1 &
    PIDS+=($!)
}

# Redis with ACLs on, as compose runs it: each service connects as its own user with only its rights,
# this script as `operator`.
"$BIN/attribution" redis-acl --out "$RUN/redis-acl" 2>/dev/null
export REDISCLI_AUTH
REDISCLI_AUTH=$(cat "$RUN/redis-acl/operator.password")
rcli() { redis-cli --user operator --no-auth-warning "$@"; }
ACL=(--aclfile "$RUN/redis-acl/users.acl")

REDIS_PORT=$(free_port)
if [ "$CLUSTER" = true ]; then
    NODES=()
    for i in 1 2 3 4 5 6; do
        port=$([ "$i" = 1 ] && echo "$REDIS_PORT" || free_port)
        mkdir -p "$RUN/redis/$port"
        start "redis-$port" redis-server --port "$port" --bind 127.0.0.1 "${ACL[@]}" \
            --include "$RUN/redis-acl/replication.conf" --cluster-enabled yes \
            --cluster-config-file nodes.conf --cluster-node-timeout 1000 --repl-diskless-sync-delay 0 --save "" \
            --appendonly yes --dir "$RUN/redis/$port"
        NODES+=("127.0.0.1:$port")
    done
    for node in "${NODES[@]}"; do
        for _ in $(seq 1 100); do rcli -p "${node#*:}" ping >/dev/null 2>&1 && break; sleep 0.1; done
    done
    echo "==> Redis Cluster: 3 primaries and 3 replicas on ${NODES[*]}"
    rcli --cluster create "${NODES[@]}" --cluster-replicas 1 --cluster-yes >"$RUN/logs/cluster-create.log"
    for _ in $(seq 1 100); do
        rcli -p "$REDIS_PORT" cluster info | grep -q cluster_state:ok && break
        sleep 0.1
    done
    # Ingest answers 202 once a replica holds the event: wait until every replica is in sync.
    for node in "${NODES[@]}"; do
        for _ in $(seq 1 200); do
            rcli -p "${node#*:}" info replication | grep -q -e role:master -e master_link_status:up && break
            sleep 0.1
        done
    done
    export REDIS_CLUSTER=true
else
    echo "==> redis-server on 127.0.0.1:$REDIS_PORT (AOF in $RUN/redis)"
    start redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 "${ACL[@]}" --save "" --appendonly yes --dir "$RUN/redis"
    for _ in $(seq 1 100); do rcli -p "$REDIS_PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
fi

"$BIN/attribution" keygen --name pipeline --out "$RUN/keys" >/dev/null
"$BIN/attribution" keygen --name pipeline-development --out "$RUN/keys" >/dev/null
ADMIN_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export TIME_SCALE LOG_LEVEL=${LOG_LEVEL:-info} CLAIM_IDLE_MS=2000
# A day lasts a second here: conversions settle 250 ms (6 scaled hours) instead of the default 2 s.
export CONVERSION_SETTLE_MS=${CONVERSION_SETTLE_MS:-250} WINDOW_CLOSE_GRACE_MS=${WINDOW_CLOSE_GRACE_MS:-400}
# The demo's receiver is http on 127.0.0.1: allow-listed (real postback URLs must be https and public).
export POSTBACK_URL_ALLOWLIST=127.0.0.1
# Demo crowds are small: low tier thresholds so that postbacks show values (defaults: 10,100,1000).
export CROWD_TIER_THRESHOLDS=${CROWD_TIER_THRESHOLDS:-1,5,20}

service() {  # service NAME: starts a service as its own Redis user
    REDIS_URL="redis://$1@127.0.0.1:$REDIS_PORT/0" REDIS_PASSWORD_FILE="$RUN/redis-acl/$1.password" start "$1" "$BIN/$1"
}
INGEST_PORT=$(free_port)
ADMIN_PORT=$(free_port)
echo "==> services (time scale $TIME_SCALE), each as its own Redis user"
HTTP_PORT=$INGEST_PORT OPERATIONS_HTTP_PORT=$(free_port) service ingest
HTTP_PORT=$ADMIN_PORT ADMIN_TOKEN=$ADMIN_TOKEN service admin
HTTP_PORT=$(free_port) service verifier
HTTP_PORT=$(free_port) service attribution-winner
HTTP_PORT=$(free_port) service scheduler
HTTP_PORT=$(free_port) SIGNING_KEY_FILE="$RUN/keys/pipeline.private.pem" \
    DEVELOPMENT_SIGNING_KEY_FILE="$RUN/keys/pipeline-development.private.pem" service dispatcher
wait_for_http "http://127.0.0.1:$INGEST_PORT/health" 60
wait_for_http "http://127.0.0.1:$ADMIN_PORT/health" 60
# The JWKS lists the dispatcher's keys once it has started.
for _ in $(seq 1 100); do
    curl -fs "http://127.0.0.1:$INGEST_PORT/.well-known/jwks.json" | grep -q '"kid"' && break
    sleep 0.1
done

RECEIVER_PORT=$(free_port)
echo "==> reference receiver on 127.0.0.1:$RECEIVER_PORT"
start receiver "$BIN/attribution" receiver --port "$RECEIVER_PORT" \
    --jwks-url "http://127.0.0.1:$INGEST_PORT/.well-known/jwks.json" --output "$RUN/postbacks.jsonl"
wait_for_http "http://127.0.0.1:$RECEIVER_PORT/health" 30

echo "==> simulating a campaign of $DEVICES devices"
"$BIN/attribution" simulate --ingest-url "http://127.0.0.1:$INGEST_PORT" --admin-url "http://127.0.0.1:$ADMIN_PORT" \
    --admin-token "$ADMIN_TOKEN" \
    --receiver-url "http://127.0.0.1:$RECEIVER_PORT/postbacks" --devices "$DEVICES" --time-scale "$TIME_SCALE" \
    --seed 7 --retry-seconds 60 --report "$RUN/simulation.json"

# The last window ends 35 days after the install and its postback may wait 6 more days; retries can
# add a few. Wait that long in scaled time, then a margin.
WAIT=$(awk -v s="$TIME_SCALE" 'BEGIN { w = (35 + 6 + 2) * 86400 / s; printf "%d", (w < 5 ? 5 : w) + 5 }')
echo "==> waiting ${WAIT}s for every window and delay to pass"
sleep "$WAIT"

echo "==> postbacks the receiver verified and accepted"
curl -fs "http://127.0.0.1:$RECEIVER_PORT/stats"; echo

# Per window, what the simulation expects against what arrived: a later window sends a postback only
# for a winner whose app reported a value in it (spec section 4), so most installs get one postback.
echo "==> postbacks per window: arrived against expected"
if ! "$BIN/attribution" summary --file "$RUN/postbacks.jsonl" --expected "$RUN/simulation.json"; then
    echo "    logs, keys and received postbacks: $RUN"
    echo "FAILED: the postbacks that arrived differ from what the simulation expects" >&2
    exit 1
fi
echo "    logs, keys and received postbacks: $RUN"

#!/usr/bin/env bash
# Redis memory per held postback with one million held (and release throughput), on a private
# redis-server so the figure is not mixed with anything else. Usage: scripts/bench-holding.sh [count]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
ensure_system_packages
COUNT=${1:-1000000}
swift build -c release --product attribution-bench >/dev/null 2>&1
PORT=$(free_port)
DIR=$(mktemp -d)
redis-server --port "$PORT" --save '' --appendonly no --dir "$DIR" --daemonize yes --logfile "$DIR/redis.log"
trap 'redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$DIR"' EXIT
for _ in $(seq 1 50); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "==> $(redis-server --version | cut -d' ' -f1-3), $COUNT held postbacks"
"$(swift build -c release --show-bin-path 2>/dev/null)/attribution-bench" holding --redis-url "redis://127.0.0.1:$PORT/0" --count "$COUNT" "${@:2}"

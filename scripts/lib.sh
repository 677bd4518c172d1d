# Shared by scripts/demo.sh and scripts/test.sh: install what is missing, find free ports.

# Installs redis-server, hiredis, OpenSSL headers and curl when any is missing (Debian/Ubuntu).
ensure_system_packages() {
    local missing=()
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    [ -f /usr/include/hiredis/hiredis.h ] || missing+=(libhiredis-dev)
    [ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "==> installing ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

# A TCP port on 127.0.0.1 nobody listens on (bash's /dev/tcp: connection refused means free).
free_port() {
    local port
    for _ in $(seq 1 200); do
        port=$(( (RANDOM % 20000) + 20000 ))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    echo "no free port found" >&2
    return 1
}

# Waits until `curl -fs URL` succeeds or the deadline passes.
wait_for_http() {
    local url=$1 seconds=${2:-60}
    for _ in $(seq 1 $((seconds * 10))); do
        curl -fs -o /dev/null "$url" && return 0
        sleep 0.1
    done
    echo "timed out waiting for $url" >&2
    return 1
}

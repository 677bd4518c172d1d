# Shared by the shell scripts: install what is missing, find free ports.

# Installs redis-server (and redis-cli), hiredis, OpenSSL headers, jemalloc, curl, the Public Suffix List,
# python3 with `cryptography` and Node.js when missing.
ensure_system_packages() {
    local missing=()
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    # redis-cli (Debian's redis-tools, a dependency of redis-server) creates and reshards local clusters.
    command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools)
    [ -f /usr/include/hiredis/hiredis.h ] || missing+=(libhiredis-dev)
    [ -f /usr/include/openssl/ssl.h ] || missing+=(libssl-dev)
    # jemalloc, the executables' allocator (Shared/ServiceRuntime/Operations/Allocator.swift).
    [ -f /usr/include/jemalloc/jemalloc.h ] || missing+=(libjemalloc-dev)
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    # The fault runs cut links with iptables (node partitions, the network run's namespaces) and build
    # those namespaces with iproute2's ip.
    command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
    command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || missing+=(iproute2)
    # The Public Suffix List ingest and the dispatcher read (PUBLIC_SUFFIX_LIST's default).
    [ -f /usr/share/publicsuffix/public_suffix_list.dat ] || missing+=(publicsuffix)
    command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-cryptography)
    # The docs check runs the Node.js postback verification example (docs/integrating/ad-networks.md).
    command -v node >/dev/null 2>&1 || missing+=(nodejs)
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    if [ ${#missing[@]} -gt 0 ]; then
        echo "==> installing ${missing[*]}"
        $sudo apt-get update -qq || return 1
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null || return 1
    fi
    # The tests check our signatures against an independent implementation: Python's `cryptography`.
    if ! python3 -c 'import cryptography' 2>/dev/null; then
        echo "==> installing Python's cryptography"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-cryptography >/dev/null 2>&1 || true
        python3 -c 'import cryptography' 2>/dev/null || python3 -m pip install --quiet "$(python3 scripts/pins.py cryptography)"
    fi
    # The independent validator of the stream messages (scripts/message_schemas.py): `jsonschema` at the
    # version scripts/pyproject.toml pins.
    local schema_pin
    schema_pin=$(python3 scripts/pins.py jsonschema)
    if [ "$(python3 -c 'import importlib.metadata as m; print(m.version("jsonschema"))' 2>/dev/null)" != "${schema_pin#jsonschema==}" ]; then
        echo "==> installing Python's $schema_pin"
        python3 -m pip install --quiet --disable-pip-version-check "$schema_pin" || return 1
    fi
    # The scripts' Redis client: the `redis` package at the version scripts/pyproject.toml pins.
    local redis_pin
    redis_pin=$(python3 scripts/pins.py redis)
    if [ "$(python3 -c 'import redis; print(redis.__version__)' 2>/dev/null)" != "${redis_pin#redis==}" ]; then
        echo "==> installing Python's $redis_pin"
        python3 -m pip install --quiet --disable-pip-version-check "$redis_pin" || return 1
    fi
}

# The Python linter and formatter at the version scripts/pyproject.toml pins, installed once.
ensure_ruff() {
    local pin
    pin=$(python3 scripts/pins.py ruff)
    if [ "$(python3 -m ruff --version 2>/dev/null)" != "ruff ${pin#ruff==}" ]; then
        echo "==> installing $pin"
        python3 -m pip install --quiet --disable-pip-version-check "$pin"
    fi
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

# openssl's ECDSA P-256 verifications per second on one core (one second of `openssl speed`): the
# machine's speed, which the test command prints and passes to the tests' timing messages; "unknown"
# if it cannot tell. Bounded: openssl stops each test on SIGALRM, which a process that inherited the
# signal ignored never gets.
machine_p256_verify_rate() {
    local rate
    rate=$(timeout 10 openssl speed -seconds 1 ecdsap256 2>/dev/null | awk '/256 bits ecdsa \(nistp256\)/ { printf "%d", $NF }')
    echo "${rate:-unknown}"
}

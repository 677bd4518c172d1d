#!/bin/sh
# compose's `init` service, as root, on every `up`: makes what is missing of the stack's secrets in the
# volume `secrets` (kept until `down -v`), then gives each user its own files, in its own volume, owned
# by that user with mode 0400 in a directory only it may open. Nothing is world-readable, and a
# service's container holds no other service's secrets.
#
#   the signing keys           -> dispatcher          (signing-key.pem, development-signing-key.pem,
#                                                      test-signing-key.pem)
#   each service's Redis user  -> that service        (redis-password)
#   the ACL file, replication  -> redis (uid 999)     (users.acl, replication.conf, operator.password)
#   the admin token            -> admin, pipeline-operator  (admin-token)
#   the operator's Redis user  -> pipeline-operator   (redis-password)
#   TLS to Redis (used by compose.tls.yaml): a private CA and the certificates it signs
#     the CA's certificate     -> every Redis user    (tls-ca.pem)
#     Redis's certificate      -> redis               (tls-server.pem, tls-server-key.pem)
#     a client certificate     -> each Redis user     (tls-client.pem, tls-client-key.pem; Redis's own
#                                                      is the operator's, for its health check)
#
# ADMIN_TOKEN, when set (at least 32 characters), replaces the admin token; otherwise one is made once.
# A certificate is made again when it is missing or expires within 30 days (the CA: within a year, and
# then every certificate with it): an `up` rotates them, and the services read them when they restart.
set -eu

master=/var/lib/attribution-pipeline/secrets
umask 077
mkdir -p "$master/keys" "$master/redis"

for name in pipeline pipeline-development pipeline-test; do
    if [ ! -s "$master/keys/$name.private.pem" ]; then
        attribution keygen --name "$name" --out "$master/keys" --force >/dev/null
        echo "init: made the signing key $name"
    fi
done
# Keeps the passwords already made; writes the ACL file from the current rights.
attribution redis-acl --out "$master/redis" 2>/dev/null
if [ -n "${ADMIN_TOKEN:-}" ]; then
    if [ "${#ADMIN_TOKEN}" -lt 32 ]; then
        echo "init: ADMIN_TOKEN must be at least 32 characters, got ${#ADMIN_TOKEN}" >&2
        exit 2
    fi
    printf '%s\n' "$ADMIN_TOKEN" >"$master/admin-token.new"
    mv "$master/admin-token.new" "$master/admin-token"
elif [ ! -s "$master/admin-token" ]; then
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$master/admin-token.new"
    echo >>"$master/admin-token.new"
    mv "$master/admin-token.new" "$master/admin-token"
    echo "init: made the admin token (docker compose run --rm operator cat /run/secrets/admin-token)"
fi

# The TLS material. P-256 keys; the CA for 10 years, the others for 2.
tls=$master/tls
mkdir -p "$tls"
fresh() {  # fresh FILE DAYS: the certificate exists and is valid for DAYS more days
    [ -s "$1" ] && openssl x509 -in "$1" -noout -checkend $(($2 * 86400)) >/dev/null 2>&1
}
if ! fresh "$tls/ca.pem" 365; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tls/ca-key.pem" \
        -out "$tls/ca.pem" -days 3650 -subj "/CN=attribution-pipeline Redis CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
    rm -f "$tls"/*.cert.pem
    echo "init: made the Redis TLS CA"
fi
issue() {  # issue NAME [SUBJECT-ALT-NAMES]: NAME.cert.pem and NAME.key.pem, signed by the CA
    fresh "$tls/$1.cert.pem" 30 && return 0
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tls/$1.key.pem" \
        -out "$tls/$1.csr" -subj "/CN=$1" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\n%s' "${2:+subjectAltName=$2
}" >"$tls/$1.ext"
    openssl x509 -req -in "$tls/$1.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca-key.pem" -set_serial "0x$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" \
        -days 730 -extfile "$tls/$1.ext" -out "$tls/$1.cert.pem" 2>/dev/null
    rm -f "$tls/$1.csr" "$tls/$1.ext"
    echo "init: made the Redis TLS certificate $1"
}
issue redis "DNS:redis,DNS:localhost,IP:127.0.0.1"
for user in ingest admin verifier attribution-winner scheduler dispatcher operator; do
    issue "$user"
done

# give OWNER SOURCE DESTINATION: a copy owned by OWNER, 0400, replaced in one rename so that a service
# reading it while `up` runs again never sees half a file; left alone when it is already the same.
give() {
    if [ -f "$3" ] && cmp -s "$2" "$3" && [ "$(stat -c '%u:%a' "$3")" = "$(id -u "$1" 2>/dev/null || echo "$1"):400" ]; then
        return 0
    fi
    cp "$2" "$3.new"
    chown "$1:$1" "$3.new"
    chmod 0400 "$3.new"
    mv "$3.new" "$3"
}

# own OWNER DIRECTORY: only OWNER may open it.
own() {
    chown "$1:$1" "$2"
    chmod 0500 "$2"
}

redis=999
give "$redis" "$master/redis/users.acl" /secrets/redis/users.acl
give "$redis" "$master/redis/replication.conf" /secrets/redis/replication.conf
give "$redis" "$master/redis/operator.password" /secrets/redis/operator.password
give "$redis" "$tls/ca.pem" /secrets/redis/tls-ca.pem
give "$redis" "$tls/redis.cert.pem" /secrets/redis/tls-server.pem
give "$redis" "$tls/redis.key.pem" /secrets/redis/tls-server-key.pem
give "$redis" "$tls/operator.cert.pem" /secrets/redis/tls-client.pem
give "$redis" "$tls/operator.key.pem" /secrets/redis/tls-client-key.pem
own "$redis" /secrets/redis

for service in ingest admin verifier attribution-winner scheduler dispatcher; do
    give "$service" "$master/redis/$service.password" "/secrets/$service/redis-password"
    give "$service" "$tls/ca.pem" "/secrets/$service/tls-ca.pem"
    give "$service" "$tls/$service.cert.pem" "/secrets/$service/tls-client.pem"
    give "$service" "$tls/$service.key.pem" "/secrets/$service/tls-client-key.pem"
done
give pipeline-operator "$master/redis/operator.password" /secrets/operator/redis-password
give pipeline-operator "$tls/ca.pem" /secrets/operator/tls-ca.pem
give pipeline-operator "$tls/operator.cert.pem" /secrets/operator/tls-client.pem
give pipeline-operator "$tls/operator.key.pem" /secrets/operator/tls-client-key.pem
give admin "$master/admin-token" /secrets/admin/admin-token
give pipeline-operator "$master/admin-token" /secrets/operator/admin-token
give dispatcher "$master/keys/pipeline.private.pem" /secrets/dispatcher/signing-key.pem
give dispatcher "$master/keys/pipeline-development.private.pem" /secrets/dispatcher/development-signing-key.pem
give dispatcher "$master/keys/pipeline-test.private.pem" /secrets/dispatcher/test-signing-key.pem
for service in ingest admin verifier attribution-winner scheduler dispatcher; do
    own "$service" "/secrets/$service"
done
own pipeline-operator /secrets/operator

# The receiver records postbacks in its volume; a campaign (compose.test.yaml) writes its report and
# acknowledgements beside them, as the operator, and reads the receiver's file.
chown receiver:pipeline-operator /data/receiver
chmod 0750 /data/receiver
mkdir -p /data/receiver/campaign
chown pipeline-operator:pipeline-operator /data/receiver/campaign
chmod 0700 /data/receiver/campaign
echo "init: secrets in place"

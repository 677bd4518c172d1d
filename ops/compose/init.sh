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
#
# ADMIN_TOKEN, when set (at least 32 characters), replaces the admin token; otherwise one is made once.
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
own "$redis" /secrets/redis

for service in ingest admin verifier attribution-winner scheduler dispatcher; do
    give "$service" "$master/redis/$service.password" "/secrets/$service/redis-password"
done
give pipeline-operator "$master/redis/operator.password" /secrets/operator/redis-password
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

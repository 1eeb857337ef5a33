#!/bin/sh
# Debian's PostgreSQL for deploy/compose.local.yaml: makes the cluster on first start (owner
# POSTGRES_USER with POSTGRES_PASSWORD, database POSTGRES_DB), then runs the server in the
# foreground with the arguments given (e.g. -p PORT -c listen_addresses=127.0.0.1). Connections
# over TCP need the password; the Unix socket (inside the container only) is trusted.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    printf '%s' "$POSTGRES_PASSWORD" > /tmp/pwfile
    initdb --username="$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-host=scram-sha-256 \
        --auth-local=trust \
        --encoding=UTF8 --locale=C.UTF-8 -D "$PGDATA" >/dev/null
    rm /tmp/pwfile
    pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -k /tmp" -w start >/dev/null
    psql -h /tmp -U "$POSTGRES_USER" -d postgres -v ON_ERROR_STOP=1 \
        -c "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\"" >/dev/null
    pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
fi
exec postgres -D "$PGDATA" -k /tmp "$@"

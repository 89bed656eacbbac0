#!/usr/bin/env bash
# Starts a throwaway PostgreSQL on 127.0.0.1:55432 for the storage tests and prints its URL.
# Usage: eval "$(.ci/postgres.sh start)"; …; .ci/postgres.sh stop
# `.ci/postgres.sh url` prints the same line without starting anything (.ci/run names the server before its build).
set -euo pipefail
PGPORT=${TILL_PGPORT:-55432}
STATE=${TMPDIR:-/tmp}/till-ci-postgres
url="export TILL_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:$PGPORT/till_test?sslmode=disable"
case "${1:-start}" in
url)
    echo "$url"
    ;;
start)
    if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
    fi
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    rm -rf "$STATE"; mkdir -p "$STATE"; chown postgres:postgres "$STATE"
    runuser -u postgres -- "$PGBIN/initdb" -D "$STATE" -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 >/dev/null
    runuser -u postgres -- "$PGBIN/pg_ctl" -D "$STATE" -l "$STATE/server.log" -w -t 120 \
        -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $STATE -c fsync=off -c max_connections=1000 -c shared_buffers=128MB" start >/dev/null
    psql "postgresql://postgres@127.0.0.1:$PGPORT/postgres" -qc "CREATE DATABASE till_test" >/dev/null
    echo "$url"
    ;;
stop)
    PGBIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    [ -d "$STATE" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$STATE" -m fast -w stop >/dev/null 2>&1 || true
    ;;
esac

#!/usr/bin/env bash
# A private PostgreSQL cluster for tests, on a free loopback port, in a temporary directory.
#
#   source scripts/postgres.sh
#   postgres_start        # sets REVSYNC_POSTGRES_URL (and POSTGRES_DIR); returns 1 without PostgreSQL
#                         # REVSYNC_POSTGRES_DURABLE=1: fsync on, as in production (benchmarks)
#   postgres_stop
#
# initdb refuses to run as root: as root, the cluster runs as the `postgres` user (created by
# Debian's postgresql package) or, failing that, `nobody`.

postgres_bindir() {
    local dir
    for dir in /usr/lib/postgresql/*/bin /usr/local/opt/postgresql*/bin /opt/homebrew/opt/postgresql*/bin; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then echo "$dir"; return 0; fi
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v initdb)"; return 0; fi
    return 1
}

postgres_free_port() {
    # Below the kernel's ephemeral range: a port in it can be handed to an outgoing connection
    # or to a server bound to port 0 (every test's HTTP server) while a paused cluster is down,
    # and its restart then fails with "Address already in use" (seen under CI's load).
    local port low=32768 high
    read -r low high < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    local first=10000 span=$((low - 10000))
    [ "$span" -ge 1000 ] || { first=20000; span=20000; }
    for _ in $(seq 1 50); do
        port=$((first + RANDOM % span))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then echo "$port"; return 0; fi
    done
    return 1
}

postgres_as_owner() {
    if [ -n "${POSTGRES_OWNER:-}" ]; then
        runuser -u "$POSTGRES_OWNER" -- "$@"
    else
        "$@"
    fi
}

postgres_start() {
    local bindir port
    bindir=$(postgres_bindir) || { echo "PostgreSQL server binaries not found" >&2; return 1; }
    port=$(postgres_free_port) || { echo "no free port for PostgreSQL" >&2; return 1; }
    POSTGRES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/revsync-postgres.XXXXXX")
    POSTGRES_BINDIR=$bindir
    POSTGRES_OWNER=""
    if [ "$(id -u)" -eq 0 ]; then
        if id postgres >/dev/null 2>&1; then POSTGRES_OWNER=postgres; else POSTGRES_OWNER=nobody; fi
        chown "$POSTGRES_OWNER" "$POSTGRES_DIR"
        chmod 755 "$POSTGRES_DIR"
    fi
    export POSTGRES_DIR POSTGRES_BINDIR POSTGRES_OWNER
    postgres_as_owner "$bindir/initdb" -D "$POSTGRES_DIR/data" --auth=trust --username=revsync \
        --encoding=UTF8 --locale=C -N >"$POSTGRES_DIR/initdb.log" 2>&1 \
        || { cat "$POSTGRES_DIR/initdb.log" >&2; return 1; }
    # Tests need speed, not durability: the data directory is thrown away afterwards. Benchmarks
    # ask for PostgreSQL's production settings (fsync, synchronous_commit and full_page_writes
    # on, its defaults) with REVSYNC_POSTGRES_DURABLE=1.
    local durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    if [ "${REVSYNC_POSTGRES_DURABLE:-0}" = "1" ]; then durability=""; fi
    echo "-c listen_addresses=127.0.0.1 -p $port -k $POSTGRES_DIR $durability -c max_connections=400" \
        >"$POSTGRES_DIR/options"
    echo "$bindir" >"$POSTGRES_DIR/bindir"
    echo "$POSTGRES_OWNER" >"$POSTGRES_DIR/owner"
    postgres_server start || { cat "$POSTGRES_DIR/server.log" >&2; return 1; }
    postgres_as_owner "$bindir/createdb" -h 127.0.0.1 -p "$port" -U revsync revsync
    export REVSYNC_POSTGRES_URL="postgres://revsync@127.0.0.1:$port/revsync"
    echo "PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') running at $REVSYNC_POSTGRES_URL"
}

# Starts or stops the server of the cluster in $POSTGRES_DIR, keeping its data.
postgres_server() {
    if [ "$1" = start ]; then
        postgres_as_owner "$POSTGRES_BINDIR/pg_ctl" -D "$POSTGRES_DIR/data" -l "$POSTGRES_DIR/server.log" -w -t 60 \
            -o "$(cat "$POSTGRES_DIR/options")" start >/dev/null
    else
        postgres_as_owner "$POSTGRES_BINDIR/pg_ctl" -D "$POSTGRES_DIR/data" -m fast -w stop >/dev/null
    fi
}

postgres_stop() {
    if [ -n "${POSTGRES_DIR:-}" ] && [ -d "$POSTGRES_DIR/data" ]; then
        postgres_as_owner "$POSTGRES_BINDIR/pg_ctl" -D "$POSTGRES_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
        rm -rf "$POSTGRES_DIR"
    fi
}

# Run as a command, for tests that need a cluster of their own:
#   scripts/postgres.sh start           prints the URL, then the directory
#   scripts/postgres.sh pause DIR       stops the server, keeps the data
#   scripts/postgres.sh resume DIR      starts it again on the same port
#   scripts/postgres.sh stop DIR        stops it and removes everything
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    postgres_load() {
        POSTGRES_DIR=$1
        POSTGRES_BINDIR=$(cat "$POSTGRES_DIR/bindir")
        POSTGRES_OWNER=$(cat "$POSTGRES_DIR/owner")
    }
    case "${1:-}" in
        start)
            postgres_start >/dev/null
            echo "$REVSYNC_POSTGRES_URL"
            echo "$POSTGRES_DIR"
            ;;
        pause)
            postgres_load "$2"
            postgres_server stop
            ;;
        resume)
            postgres_load "$2"
            postgres_server start
            ;;
        stop)
            postgres_load "$2"
            postgres_stop
            ;;
        *)
            echo "usage: scripts/postgres.sh start | pause DIR | resume DIR | stop DIR" >&2
            exit 2
            ;;
    esac
fi

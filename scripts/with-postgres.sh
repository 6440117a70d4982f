#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL: initdb in a temporary folder, a free loopback
# port, stopped and removed on any exit. Installs Debian's PostgreSQL first where missing.
# The command gets COVENANT_TEST_POSTGRES (a postgres:// URL to an empty database).
set -euo pipefail

find_pgbin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }
PGBIN=$(find_pgbin)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  echo "with-postgres: installing PostgreSQL from Debian's packages" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  PGBIN=$(find_pgbin)
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
PGPORT=${PGPORT:-$(free_port)}
PGDATA=$(mktemp -d -t covenant-pg.XXXXXX)
AS=()
if [ "$(id -u)" = 0 ]; then
  chown postgres:postgres "$PGDATA"
  AS=(runuser -u postgres --)
fi
"${AS[@]}" "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 --no-sync >/dev/null
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/log" -w -t 30 \
  -o "-p $PGPORT -k $PGDATA -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null
stop_pg() { "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true; rm -rf "$PGDATA"; }
trap stop_pg EXIT
export COVENANT_TEST_POSTGRES="postgres://postgres@127.0.0.1:$PGPORT/postgres"
echo "with-postgres: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on port $PGPORT" >&2
"$@"

#!/usr/bin/env bash
# Records every SQL statement Loom's Postgres store sends while its tests run, for the statement
# inventory in docs/scaling.md ("Past one primary"). It starts a throwaway PostgreSQL cluster of
# its own (initdb in a temporary folder, another port, pg_stat_statements loaded), runs the given
# test files of @loom/event-runtime against it through LOOM_TEST_PG_URL, writes the statement
# shapes (schema names as S. and "NAME", parameters as $n) with their call counts,
# and stops and deletes the cluster. The shared server on 5432 is never touched.
#
#   bash scripts/capture-pg-statements.sh OUT.tsv [test files…]
#   bash scripts/capture-pg-statements.sh /tmp/shapes.tsv \
#     src/store/postgres src/coalescing-event-store.test.ts src/runtime/runtime.postgres.test.ts
#
# Env: CAPTURE_PG_PORT (default 55417), PG_BIN (default: pg_config --bindir).
set -euo pipefail

out=${1:?usage: capture-pg-statements.sh OUT.tsv [test files...]}
shift
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
root=$(cd "$(dirname "$0")/.." && pwd)
port=${CAPTURE_PG_PORT:-55417}
bin=${PG_BIN:-$(pg_config --bindir)}
dir=$(mktemp -d /tmp/loom-pg-capture.XXXXXX)
data="$dir/data"

# initdb and the server refuse to run as root: run them as the postgres user when root.
as_owner() {
  if [ "$(id -u)" = 0 ]; then su postgres -c "$*"; else bash -c "$*"; fi
}
[ "$(id -u)" = 0 ] && chown postgres "$dir"

as_owner "'$bin/initdb' -D '$data' -A trust -U root --no-sync" >"$dir/initdb.log"
cat >>"$data/postgresql.conf" <<CONF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = all
pg_stat_statements.max = 10000
fsync = off
synchronous_commit = off
max_connections = 200
CONF
as_owner "'$bin/pg_ctl' -D '$data' -l '$dir/server.log' -w start" >/dev/null
stop() {
  as_owner "'$bin/pg_ctl' -D '$data' -m fast -w stop" >/dev/null || true
  rm -rf "$dir"
}
trap stop EXIT

psql=(psql -h 127.0.0.1 -p "$port" -U root -X -q)
"${psql[@]}" -d postgres -c 'CREATE DATABASE test'
"${psql[@]}" -d test -c 'CREATE EXTENSION pg_stat_statements'

status=0
(cd "$root/packages/event-runtime" &&
  LOOM_TEST_PG_URL="postgres://root@127.0.0.1:$port/test" pnpm exec vitest run "$@") ||
  status=$?

"${psql[@]}" -d test -At -F $'\t' >"$out" <<'SQL'
WITH folded AS (
  SELECT calls,
    -- Only schema names (and the channels named after them) are quoted lower-case identifiers.
    regexp_replace(
      regexp_replace(
        regexp_replace(regexp_replace(query, '\s+', ' ', 'g'), '"[a-z0-9_]+"\.', 'S.', 'g'),
        '"[a-z][a-z0-9_]*"', '"NAME"', 'g'),
      '\$[0-9]+', '$n', 'g') AS shape
  FROM pg_stat_statements
  WHERE query !~ 'pg_stat_statements'
)
SELECT sum(calls), shape FROM folded GROUP BY shape ORDER BY sum(calls) DESC, shape
SQL
echo "capture-pg-statements: $(wc -l <"$out") statement shapes in $out (tests exit code $status)"
exit "$status"

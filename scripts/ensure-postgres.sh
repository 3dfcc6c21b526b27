#!/usr/bin/env bash
# Makes sure PostgreSQL answers on 127.0.0.1:5432 with role root (trust) and database test:
# starts an installed cluster that is down, installs postgresql where it is absent.
set -euo pipefail
as_postgres() { if command -v runuser >/dev/null; then runuser -u postgres -- "$@"; else su postgres -c "$*"; fi; }

if ! command -v pg_ctlcluster >/dev/null 2>&1 && ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
  echo "loom: PostgreSQL is not installed; installing it"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "loom: starting PostgreSQL $version"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 60); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 0.5; done
fi
pg_isready -q -h 127.0.0.1 -p 5432 || { echo "loom: PostgreSQL did not come up on 127.0.0.1:5432" >&2; exit 1; }

if ! psql -h 127.0.0.1 -U root -d test -Atqc 'select 1' >/dev/null 2>&1; then
  echo "loom: creating role root and database test with trust auth on 127.0.0.1"
  as_postgres psql -q -c "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'root') THEN CREATE ROLE root SUPERUSER LOGIN; END IF; END\$\$;"
  as_postgres psql -Atqc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 || as_postgres createdb -O root test
  hba=$(as_postgres psql -Atqc 'SHOW hba_file')
  if ! grep -q '^host all root 127.0.0.1/32 trust' "$hba"; then
    sed -i '1i host all root 127.0.0.1/32 trust' "$hba"
    as_postgres psql -q -c 'SELECT pg_reload_conf()' >/dev/null
  fi
fi
psql -h 127.0.0.1 -U root -d test -Atqc 'select 1' >/dev/null

# The suite creates and drops over a thousand schemas a run. Where autovacuum is off (as on the CI
# machines: conf.d/90-ci.conf), the system catalogs of database test keep every dead row: after a
# day of runs pg_attribute held 1.8 million dead rows in 373 MB, and each new connection's catalog
# reads, every migration and every DROP SCHEMA paid for them (runtime.postgres.test.ts: 20 s of
# the server's CPU against 15 s once vacuumed). VACUUM FULL of the catalogs that churned (a few
# seconds; nothing else should use database test while the suite sets up), then a plain VACUUM.
bloated=$(psql -h 127.0.0.1 -U root -d test -Atqc "SELECT string_agg(format('%I.%I', schemaname, relname), ', ' ORDER BY relname) FROM pg_stat_sys_tables WHERE schemaname = 'pg_catalog' AND n_dead_tup > 10000")
if [ -n "$bloated" ]; then
  echo "loom: vacuuming the catalogs of database test that hold many dead rows: $bloated"
  psql -h 127.0.0.1 -U root -d test -Atqc "VACUUM FULL $bloated"
  # A plain VACUUM after it: VACUUM FULL leaves the dead-row counts read above as they were.
  psql -h 127.0.0.1 -U root -d test -Atqc "VACUUM $bloated"
fi
echo "loom: PostgreSQL is up on 127.0.0.1:5432 (role root, database test)"

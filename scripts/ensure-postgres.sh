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
echo "loom: PostgreSQL is up on 127.0.0.1:5432 (role root, database test)"

#!/usr/bin/env bash
# Makes sure pg_auto_failover is installed for the failover campaign
# (packages/event-runtime/test/failover/): the `pg_autoctl` command (Debian's
# pg-auto-failover-cli) and the monitor's `pgautofailover` extension for the installed PostgreSQL
# (postgresql-<major>-auto-failover). Does nothing when both are there; ADR 0056 says why this
# manager and not Patroni + etcd.
set -euo pipefail
bindir=$(pg_config --bindir 2>/dev/null || true)
if [ -z "$bindir" ]; then
  echo "loom: pg_config not found: PostgreSQL must be installed first (scripts/ensure-postgres.sh)" >&2
  exit 1
fi
major=$("$bindir/postgres" --version | sed -E 's/.* ([0-9]+)(\.[0-9]+)*.*/\1/')
sharedir=$(pg_config --sharedir)
if command -v pg_autoctl >/dev/null 2>&1 && [ -f "$sharedir/extension/pgautofailover.control" ]; then
  exit 0
fi
echo "loom: pg_auto_failover is not installed; installing Debian's pg-auto-failover-cli and postgresql-$major-auto-failover"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq pg-auto-failover-cli "postgresql-$major-auto-failover" >/dev/null
pg_autoctl --version | head -n 1

#!/usr/bin/env bash
# The README's two commands: `bash scripts/dev.sh demo` and `bash scripts/dev.sh test`.
# Each sets up everything it needs on a fresh machine (pnpm, dependencies, build; PostgreSQL
# for the tests) and then runs.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-}
case "$what" in
  demo | test) ;;
  *) echo "usage: bash scripts/dev.sh demo|test" >&2; exit 2 ;;
esac
bash scripts/ensure-pnpm.sh
pnpm install --frozen-lockfile --reporter=append-only
pnpm build
if [ "$what" = demo ]; then
  exec pnpm demo
fi
bash scripts/ensure-postgres.sh
pnpm lint
pnpm test
node scripts/test-summary.mjs

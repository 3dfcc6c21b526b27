#!/usr/bin/env bash
# The README's two commands: `bash scripts/dev.sh demo` and `bash scripts/dev.sh test`.
# Each sets up everything it needs on a fresh machine (pnpm, dependencies, build; PostgreSQL,
# Chromium and pg_auto_failover for the tests) and then runs. `test`: lint, the import rules (`pnpm check:deps`:
# dependency-cruiser, no cycles, the layers), the docs' ts code blocks against the build
# (scripts/check-doc-blocks.mjs), the root commands' own checks
# (scripts/commands.test.mjs), the packed-tarball install (scripts/pack-install-test.mjs), every
# package's vitest, and the closing 'N passed, N failed' line.
set -euo pipefail
cd "$(dirname "$0")/.."
# No turbo telemetry (and no first-run notice about it); DO_NOT_TRACK covers other tools too.
export TURBO_TELEMETRY_DISABLED=1 DO_NOT_TRACK=1
# Each step says what it cost, so the README's figures can be checked on any machine.
step() {
  local started=$SECONDS
  "$@"
  echo "loom: '$*' took $((SECONDS - started)) s"
}
what=${1:-}
case "$what" in
  demo | test) ;;
  *) echo "usage: bash scripts/dev.sh demo|test" >&2; exit 2 ;;
esac
bash scripts/ensure-pnpm.sh
step pnpm install --frozen-lockfile --reporter=append-only
step pnpm build
if [ "$what" = demo ]; then
  exec pnpm demo
fi
bash scripts/ensure-postgres.sh
bash scripts/ensure-chromium.sh
bash scripts/ensure-failover.sh
step pnpm lint
step pnpm check:deps
step pnpm check:docs
step node --test scripts/commands.test.mjs
step node scripts/pack-install-test.mjs
step pnpm test
node scripts/test-summary.mjs

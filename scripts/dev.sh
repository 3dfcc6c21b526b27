#!/usr/bin/env bash
# The README's two commands: `bash scripts/dev.sh demo` and `bash scripts/dev.sh test`.
# Each sets up everything it needs on a fresh machine (pnpm, dependencies, build; PostgreSQL,
# Chromium and pg_auto_failover for the tests) and then runs. `test`: lint, the import rules (`pnpm check:deps`:
# dependency-cruiser, no cycles, the layers), the docs' ts code blocks against the build
# (scripts/check-doc-blocks.mjs), the root commands' own checks
# (scripts/commands.test.mjs), the packed-tarball install (scripts/pack-install-test.mjs), every
# package's vitest, and the closing 'N passed, N failed' line. The checks before the tests run
# two at a time (below).
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
# The checks before the tests run in two lanes, each stopping at its first failure: alone on a
# quiet 2-core box (2026-12-07) `pnpm lint` took 38 s on 1.8 cores, check:deps and check:docs 4 s
# each, commands.test.mjs 20 s and pack-install-test.mjs 25 s on one core: 94 s one after
# another, about 75 s in these two lanes. Each lane's output goes to a file, printed whole when
# both are done; a failed lane is named last, and the tests do not run.
checks=$(mktemp -d)
trap 'rm -rf "$checks"' EXIT
(
  step pnpm lint
  step pnpm check:deps
  step pnpm check:docs
) >"$checks/lint" 2>&1 &
lint=$!
(
  step node --test scripts/commands.test.mjs
  step node scripts/pack-install-test.mjs
) >"$checks/rest" 2>&1 &
rest=$!
failed=()
wait "$lint" || failed+=("pnpm lint, check:deps, check:docs")
wait "$rest" || failed+=("commands.test.mjs, pack-install-test.mjs")
cat "$checks/lint" "$checks/rest"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'loom: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
step pnpm test
node scripts/test-summary.mjs

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
# The checks before the tests run in two lanes: `pnpm lint` keeps 1.8 cores busy for 40 s, the
# others one core or less (2026-12-07, quiet 2-core box: 94 s one after another, ~141 s of CPU).
# Each lane's output goes to a file, printed whole when both lanes are done; a failed lane names
# itself last, and nothing after it runs.
checks=$(mktemp -d)
trap 'rm -rf "$checks"' EXIT
(step pnpm lint) >"$checks/lint" 2>&1 &
lint=$!
(
  step pnpm check:deps
  step pnpm check:docs
  step node --test scripts/commands.test.mjs
  step node scripts/pack-install-test.mjs
) >"$checks/rest" 2>&1 &
rest=$!
failed=()
wait "$lint" || failed+=("pnpm lint")
wait "$rest" || failed+=("check:deps, check:docs, commands.test.mjs, pack-install-test.mjs (the lane stops at its first failure)")
cat "$checks/lint" "$checks/rest"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'loom: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
step pnpm test
node scripts/test-summary.mjs

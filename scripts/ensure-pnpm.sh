#!/usr/bin/env bash
# Installs the pinned pnpm when it is missing (corepack's signature check fails on these machines).
set -euo pipefail
want=$(node -p "require('./package.json').packageManager.split('@')[1]")
have=$(pnpm --version 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "loom: installing pnpm@$want (found: ${have:-none})"
  npm install --global --no-fund --no-audit "pnpm@$want" >/dev/null
fi

#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium: the dashboard's end-to-end tests
# (packages/view/test/dashboard.test.ts) drive it headless through playwright-core, which
# downloads no browser of its own. Does nothing when it is already installed.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "loom: Chromium is not installed; installing Debian's chromium package"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version

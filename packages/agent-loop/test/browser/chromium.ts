// Headless Chromium for the browser tests of this package: Debian's Chromium
// (scripts/ensure-chromium.sh installs it) driven by playwright-core, which downloads no browser of
// its own, with the flags of @loom/view's dashboard tests (packages/view/test/dashboard-support.ts;
// a test of this package cannot import that file: it is outside this package's tsconfig rootDir,
// and @loom/view sits above this package).
import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

export const chromiumPath = '/usr/bin/chromium';
const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Headless Chromium; close it when done. */
export async function openChromium(): Promise<Browser> {
  if (!existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} is missing: run bash scripts/ensure-chromium.sh`);
  }
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: chromiumArgs });
}

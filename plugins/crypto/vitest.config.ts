import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Files share their worker's module cache (vitest's isolate: false), as in event-runtime: each file
    // no longer loads the runtime, pg and better-sqlite3 afresh (2026-12-07, alone on a quiet 2-core
    // box: 22.4 s of CPU before, 16.1-20.3 after in four runs). No file here mocks a module.
    isolate: false,
    // vitest's default on 2 cores is one file at a time (cores - 1). The conformance runs wait on SQLite and Postgres commits: two files at a time.
    maxWorkers: 2,
    include: ['src/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // vitest's default on 2 cores is one file at a time (cores - 1). The conformance runs wait on SQLite and Postgres commits: two files at a time.
    maxWorkers: 2,
    include: ['src/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

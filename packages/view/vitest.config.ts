import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // vitest's default on 2 cores is one file at a time (cores - 1). Its files mostly wait on child processes (the built loom binary, workers) and Postgres: three at a time.
    maxWorkers: 3,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

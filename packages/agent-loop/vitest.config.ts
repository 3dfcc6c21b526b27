import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // vitest's default on 2 cores is one file at a time (cores - 1). Its files mostly wait on child processes (kill matrices, MCP servers, isolated tools): three at a time.
    maxWorkers: 3,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'demo/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // The kill matrices spawn child processes; a few at a time on a small shared machine.
    maxConcurrency: 3,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

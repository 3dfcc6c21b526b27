import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'demo/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    // The kill matrices spawn child processes; a few at a time on a small shared machine.
    maxConcurrency: 3,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

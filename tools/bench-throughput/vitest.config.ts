import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // Unit tests of the harness's own pure pieces only: the sweeps are the bench scripts.
    include: ['src/**/*.test.ts'],
    testTimeout: 10_000,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

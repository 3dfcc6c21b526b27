import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Installs wait on the network (third-party packages come from the public npm registry);
    // each wait inside has its own deadline, this is the cap on one test.
    testTimeout: 240_000,
    hookTimeout: 240_000,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

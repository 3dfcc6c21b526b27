import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts'],
    // Each wait inside has its own deadline that names it; every step (the registry, the pack,
    // the publish, the two installs, each project's runs) is a hook or a test of its own.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

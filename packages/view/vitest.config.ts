import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // vitest's default on 2 cores is one file at a time (cores - 1). Its files mostly wait on child processes (the built loom binary, workers) and Postgres: five at a time (2026-12-07, a saturated 2-core box, alternating: 72 and 74 s with five, 81 and 89 s with three; agent-loop gained nothing from five and keeps three).
    maxWorkers: 5,
    // Files share their worker's module cache (vitest's isolate: false): each file no longer loads
    // the runtime, pg and better-sqlite3 afresh, which was a third of this package's test CPU
    // (2026-12-07, loaded 2-core box: event-runtime 155 -> 112 s CPU, workflow-runtime's src/flow
    // 22 -> 13 s). The files' own state is theirs (schemas, folders, ports named per file); a file
    // that needs a fresh module graph (vi.mock) must not be added to such a package.
    isolate: false,
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});

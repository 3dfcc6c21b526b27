import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // vitest's default on 2 cores is one file at a time (cores - 1). Most files wait on Postgres commits, child processes or timers, not the CPU: five at a time (the whole package alone on a quiet 2-core box, 2026-12-07: 204 s wall with two, 166 s with three, the same 136-153 s of CPU; on a saturated box later that day, alternating: 120 and 162 s with five, 175 and 170 s with three).
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

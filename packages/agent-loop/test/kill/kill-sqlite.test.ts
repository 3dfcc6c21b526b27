import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';
import { killMatrix } from './kill-matrix.js';

const dir = mkdtempSync(join(tmpdir(), 'loom-agent-kill-sqlite-'));

describe.concurrent('kill matrix on a SQLite file', () => {
  killMatrix((name) => ({ KILL_BACKEND: 'sqlite', KILL_DB: join(dir, `${name}.db`) }));
});

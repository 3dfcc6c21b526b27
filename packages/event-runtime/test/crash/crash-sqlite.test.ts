import { join } from 'node:path';
import { SqliteEventStore } from '../../src/sqlite.js';
import { crashScenario } from './crash-scenario.js';

crashScenario(
  'sqlite',
  (directory) => ({ LOOM_CRASH_BACKEND: 'sqlite', LOOM_CRASH_DB: join(directory, 'crash.db') }),
  async (directory) => SqliteEventStore.open({ path: join(directory, 'crash.db'), readOnly: true }),
);

import { bench, describe } from 'vitest';
import { InMemoryEventStore } from './in-memory-event-store.js';

const payload = { data: 'x'.repeat(256 - JSON.stringify({ data: '' }).length) };
/** Events per execution before the bench moves on to a fresh one (a long log, not one giant one). */
const eventsPerExecution = 100;

describe('InMemoryEventStore.append, one 256-byte event per call', () => {
  const store = new InMemoryEventStore();
  let execution = 0;
  let sequence = 0;
  bench('append', async () => {
    if (sequence === eventsPerExecution) {
      execution++;
      sequence = 0;
    }
    await store.append([
      { executionId: `bench-${execution}`, sequence, type: 'bench.appended', payload },
    ]);
    sequence++;
  });
});

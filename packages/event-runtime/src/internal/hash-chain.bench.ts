import * as crypto from 'node:crypto';
import { bench, describe } from 'vitest';
import type { JsonValue } from '../envelope.js';
import { eventHash } from './hash-chain.js';
import { chainEvents, prepareAppend } from './prepare-append.js';

/** Warm the JIT before measuring, and measure long enough that GC pauses average out. */
const options = { warmupTime: 500, time: 2_000 };
const executionId = '01JEXAMPLE0RUN0ID0000000000';
const prevHash = 'a'.repeat(64);
const at = 1_700_000_000_000;

/** Before ADR 0054: the head as a string, the head and payload copied into one, one native hash. */
function oneString(
  prev: string | null,
  id: string,
  sequence: number,
  type: string,
  time: number,
  payloadText: string,
): string {
  const head = `${prev ?? ''}\n${id}\n${sequence}\n${type}\n${time}\n`;
  return crypto.hash('sha256', head + payloadText, 'hex');
}

// Payload sizes of an agent run's events (agent-loop's golden logs: median ~50 bytes, mean ~145,
// the largest ~1.1 KB), and the 256-byte payload every throughput suite uses.
const agentPayloads = [50, 29, 326, 29, 300, 28, 42, 47, 54, 29, 278, 207].map((bytes) =>
  JSON.stringify({ t: 'x'.repeat(Math.max(0, bytes - 8)) }),
);
const payload256 = JSON.stringify({ data: 'x'.repeat(256 - JSON.stringify({ data: '' }).length) });

describe('one event’s hash, 256-byte payload', () => {
  bench(
    'one string (before)',
    () => {
      oneString(prevHash, executionId, 7, 'step.completed', at, payload256);
    },
    options,
  );
  bench(
    'scratch buffer (eventHash)',
    () => {
      eventHash(prevHash, executionId, 7, 'step.completed', at, payload256);
    },
    options,
  );
});

describe('an agent run’s 12 events chained', () => {
  bench(
    'one string (before)',
    () => {
      let prev: string | null = null;
      for (let sequence = 0; sequence < agentPayloads.length; sequence++) {
        prev = oneString(
          prev,
          executionId,
          sequence,
          'step.completed',
          at,
          agentPayloads[sequence] as string,
        );
      }
    },
    options,
  );
  bench(
    'scratch buffer (eventHash)',
    () => {
      let prev: string | null = null;
      for (let sequence = 0; sequence < agentPayloads.length; sequence++) {
        prev = eventHash(
          prev,
          executionId,
          sequence,
          'step.completed',
          at,
          agentPayloads[sequence] as string,
        );
      }
    },
    options,
  );
});

describe('chainEvents, a 2-event append (what a durability barrier writes)', () => {
  const prepared = prepareAppend(
    [3, 4].map((sequence) => ({
      executionId,
      sequence,
      type: 'step.completed',
      payload: JSON.parse(agentPayloads[sequence] as string) as JsonValue,
      at,
    })),
    undefined,
    at,
  );
  bench(
    'chainEvents',
    () => {
      chainEvents(prepared, prevHash);
    },
    options,
  );
});

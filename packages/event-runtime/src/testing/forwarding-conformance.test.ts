// The forwarding proof applied to the base of store decorators, and the sections filter the
// conformance suites take beside it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLoomError } from '../errors.js';
import { ForwardingEventStore } from '../forwarding-event-store.js';
import {
  conformanceSections,
  eventStoreSections,
  runtimeSections,
} from './conformance-sections.js';
import { CountingEventStore } from './counting-event-store.js';
import { forwardingConformance } from './forwarding-conformance.js';

forwardingConformance('CountingEventStore', {
  wrap: (inner) => new CountingEventStore(inner),
  changes: [],
});

forwardingConformance('ForwardingEventStore', {
  wrap: (inner) => new ForwardingEventStore(inner),
  // The base offers neither: a decorator that rewrites payloads could not pass them through.
  changes: ['appendBatch', 'transact'],
});

/** The titles a suite file declares with section('…'). */
function declared(...files: string[]): string[] {
  return files.flatMap((file) =>
    [
      ...readFileSync(join(import.meta.dirname, file), 'utf8').matchAll(/section\(\s*'([^']+)'/g),
    ].map((match) => match[1] as string),
  );
}

describe('conformance sections', () => {
  it('the lists name exactly the sections the suites declare', () => {
    expect(declared('event-store-conformance.ts').sort()).toEqual([...eventStoreSections].sort());
    expect(
      declared(
        'runtime-conformance.ts',
        'runtime-store-faults.ts',
        'runtime-retry-conformance.ts',
        'runtime-log-checks.ts',
        'runtime-events-conformance.ts',
        'runtime-record-conformance.ts',
      ).sort(),
    ).toEqual([...runtimeSections].sort());
  });

  it('a section the suite does not have, or an empty choice, is INVALID_ARGUMENT naming it', () => {
    const unknown = (() => {
      try {
        conformanceSections('EventStore', eventStoreSections, ['fences', 'fencing' as 'fences']);
      } catch (error) {
        return error;
      }
    })();
    expect(isLoomError(unknown, 'INVALID_ARGUMENT')).toBe(true);
    expect((unknown as Error).message).toContain("'fencing'");
    expect(() => conformanceSections('runtime', runtimeSections, [])).toThrow(/omit it/);
  });

  it('a partial run says so in its title', () => {
    expect(conformanceSections('runtime', runtimeSections, undefined).suffix).toBe('');
    expect(conformanceSections('runtime', runtimeSections, ['leases', 'cancel']).suffix).toBe(
      ` (2 of ${runtimeSections.length} sections: leases; cancel)`,
    );
  });
});

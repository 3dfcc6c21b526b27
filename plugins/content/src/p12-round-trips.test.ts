// P12 as counts: 50 references resolved through a content store with a 2 ms round trip. The
// times are in bench/p12.ts and docs/benchmarks.md; this test asserts the round trips.
import { describe, expect, it } from 'vitest';
import {
  p12Workload,
  readCoalesced,
  readGetMany,
  readSerialised,
  refsPerRead,
} from '../bench/p12-workload.js';

describe('P12: 50 references through a 2 ms content store', () => {
  it('getMany resolves the whole read in one round trip; the others need 50', async () => {
    const work = await p12Workload(2);
    const expected = await readSerialised(work);
    expect(work.withGetMany.counts.gets).toBe(refsPerRead);
    expect(work.withGetMany.maxInFlight).toBe(1); // one after another

    work.withGetMany.reset();
    expect(await readGetMany(work)).toEqual(expected);
    expect(work.withGetMany.roundTrips).toBe(1);
    expect(work.withGetMany.counts.getManys).toBe(1);

    expect(await readCoalesced(work)).toEqual(expected);
    expect(work.withoutGetMany.counts.gets).toBe(refsPerRead);
    expect(work.withoutGetMany.maxInFlight).toBe(refsPerRead); // all at once
  });
});

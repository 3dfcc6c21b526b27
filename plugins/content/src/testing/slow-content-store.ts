import type { ContentKey, ContentRef } from '../content-ref.js';
import type { ContentStore } from '../content-store.js';

/** Calls made through a {@link SlowContentStore}, each one round trip. */
export interface RoundTripCounts {
  puts: number;
  gets: number;
  getManys: number;
  has: number;
  deletes: number;
}

/**
 * Wraps a content store: every call waits `roundTripMs` before it reaches the store (a network
 * round trip), and is counted. `withGetMany: false` hides the inner `getMany`, to measure the
 * fallback path. Changes nothing else.
 */
export class SlowContentStore implements ContentStore {
  readonly counts: RoundTripCounts = { puts: 0, gets: 0, getManys: 0, has: 0, deletes: 0 };
  /** Most round trips in flight at once since the last {@link reset}. */
  maxInFlight = 0;
  private inFlight = 0;
  readonly getMany?: NonNullable<ContentStore['getMany']>;

  constructor(
    readonly inner: ContentStore,
    private readonly options: { roundTripMs?: number; withGetMany?: boolean } = {},
  ) {
    const innerGetMany = inner.getMany?.bind(inner);
    if (options.withGetMany !== false && innerGetMany !== undefined) {
      this.getMany = async (keys) => {
        this.counts.getManys += 1;
        await this.trip();
        return innerGetMany(keys);
      };
    }
  }

  get backend(): string {
    return this.inner.backend;
  }

  /** Round trips so far, of every kind. */
  get roundTrips(): number {
    const { puts, gets, getManys, has, deletes } = this.counts;
    return puts + gets + getManys + has + deletes;
  }

  reset(): void {
    this.maxInFlight = 0;
    for (const key of Object.keys(this.counts) as Array<keyof RoundTripCounts>)
      this.counts[key] = 0;
  }

  async put(bytes: Uint8Array): Promise<ContentRef> {
    this.counts.puts += 1;
    await this.trip();
    return this.inner.put(bytes);
  }

  async get(key: ContentKey): Promise<Uint8Array | undefined> {
    this.counts.gets += 1;
    await this.trip();
    return this.inner.get(key);
  }

  async has(key: ContentKey): Promise<boolean> {
    this.counts.has += 1;
    await this.trip();
    return this.inner.has(key);
  }

  async delete(key: ContentKey): Promise<void> {
    this.counts.deletes += 1;
    await this.trip();
    return this.inner.delete(key);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  private async trip(): Promise<void> {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const ms = this.options.roundTripMs ?? 0;
    await new Promise((resolve) => setTimeout(resolve, ms));
    this.inFlight -= 1;
  }
}

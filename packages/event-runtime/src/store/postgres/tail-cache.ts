/** The last known event of an execution: enough to chain the next append's hash. */
export interface CachedTail {
  sequence: number;
  hash: string;
}

/**
 * Bounded map executionId → {sequence, hash} of an event this process wrote or read. Rows are
 * immutable, so an entry is a fact forever; it saves append the round trip that would read the
 * previous hash. Least recently used entries go first once `maxEntries` is reached (a Map keeps
 * insertion order, and a hit re-inserts its key).
 */
export class TailCache {
  private readonly entries = new Map<string, CachedTail>();

  constructor(private readonly maxEntries: number) {}

  /** The cached hash of `sequence` of the execution, or undefined on a miss. */
  hashAt(executionId: string, sequence: number): string | undefined {
    const entry = this.entries.get(executionId);
    if (entry === undefined || entry.sequence !== sequence) return undefined;
    this.entries.delete(executionId);
    this.entries.set(executionId, entry);
    return entry.hash;
  }

  /** Records an event; an older sequence never replaces a newer one. */
  remember(executionId: string, sequence: number, hash: string): void {
    const entry = this.entries.get(executionId);
    if (entry !== undefined && entry.sequence > sequence) return;
    this.entries.delete(executionId);
    this.entries.set(executionId, { sequence, hash });
    if (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (oldest.done !== true) this.entries.delete(oldest.value);
    }
  }

  /** Drops an execution's entry: its log was pruned, and a new execution may take its id. */
  forget(executionId: string): void {
    this.entries.delete(executionId);
  }

  get size(): number {
    return this.entries.size;
  }
}

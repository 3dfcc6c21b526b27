/**
 * Most UTF-16 code units of one live chunk's text: 64 Ki. A writer that coalesces more text
 * than this between two writes splits it.
 */
export const liveChunkTextMax = 65_536;

/** Most characters of a live stream's name (`decide:12`) and of an attempt id: 200. */
export const liveNameLengthMax = 200;

/** Most chunks one `LiveStore.read` returns: 1 000. */
export const liveReadLimitMax = 1_000;

/**
 * How often a SQLite live store polls the file for chunks other processes wrote, while anyone in
 * this process watches: 50 ms. A follower on another process sees text at most this late.
 */
export const sqliteLivePollMsDefault = 50;

/** What {@link LiveStore.write} takes: text written at `offset` of one attempt of a stream. */
export interface LiveChunkInput {
  readonly executionId: string;
  /** The stream within the execution (the agent loop: `decide:<turn>`, one per model call). */
  readonly stream: string;
  /**
   * The writer's attempt (an id it mints): a retried or resumed piece of work is a new attempt,
   * so a follower can tell the text of an attempt that never finished from the one that did.
   */
  readonly attempt: string;
  /** Where `text` starts in the attempt's text, in UTF-16 code units (0 for the first chunk). */
  readonly offset: number;
  /** Non-empty, at most {@link liveChunkTextMax} code units. */
  readonly text: string;
}

/** A chunk as stored. */
export interface LiveChunk extends LiveChunkInput {
  /** Store order: grows with every write to the store (SQLite rowid, Postgres bigserial). */
  readonly position: number;
  /** When it was written, on the store's clock (ms since the epoch). */
  readonly atMs: number;
}

/** What {@link LiveStore.read} takes. */
export interface LiveReadOptions {
  /** Only chunks whose `position` is greater (the last position a follower saw). Default 0. */
  afterPosition?: number;
  /** At most this many (1 to {@link liveReadLimitMax}). Default {@link liveReadLimitMax}. */
  limit?: number;
}

/**
 * A live channel beside the event log: short-lived text an execution produces while it works
 * (a model's answer as it streams), readable from every process on the same database, never
 * part of the log. Chunks are keyed by (execution, stream, attempt, offset): writing the same
 * key twice stores it once, so a follower that resumes by offset cannot see text twice. Nothing
 * here is durable in the log's sense (Postgres keeps it in an UNLOGGED table, SQLite writes it
 * without waiting for the disk); the writer deletes a stream when what it produced is in the
 * log, and `prune` bounds what a dead writer leaves behind. ADR 0050.
 *
 * Error codes: `INVALID_ARGUMENT` (bad id, name, offset, text or options), `LIMIT_EXCEEDED`
 * (text over {@link liveChunkTextMax}), `SCHEMA_NOT_MIGRATED`, `STORE_READ_ONLY`, `STORE_BUSY`,
 * `STORE_UNAVAILABLE`, `STORE_CLOSED`, `STORE_FAILURE`.
 *
 * @example
 * const live = openMemory().live;
 * await live.write({ executionId: 'run-1', stream: 'decide:1', attempt: 'a', offset: 0, text: 'Hel' });
 * await live.write({ executionId: 'run-1', stream: 'decide:1', attempt: 'a', offset: 3, text: 'lo' });
 * const chunks = await live.read('run-1', 'decide:1'); // 'Hel', 'lo', in position order
 */
export interface LiveStore {
  /** Which database: `memory`, `sqlite` or `postgres`. */
  readonly backend: string;
  /**
   * Stores a chunk, unless one with the same (execution, stream, attempt, offset) is stored
   * already: true when this call stored it. Other processes' watchers are woken after it commits.
   */
  write(chunk: LiveChunkInput): Promise<boolean>;
  /** The stream's chunks after `afterPosition`, every attempt, in position order. */
  read(executionId: string, stream: string, options?: LiveReadOptions): Promise<LiveChunk[]>;
  /**
   * Calls `wake` when chunks of the execution may have been written: at once for a write in this
   * process, after its commit for another process's (Postgres NOTIFY; SQLite polls every
   * {@link sqliteLivePollMsDefault} ms while anyone watches). It is also called once when the
   * watch is in effect (Postgres: its LISTEN), so a read after that first wake cannot miss a
   * chunk a later wake would announce. A wake is a hint: read to see. Returns the unwatch.
   */
  watch(executionId: string, wake: () => void): () => void;
  /** Deletes the stream's chunks, every attempt. */
  drop(executionId: string, stream: string): Promise<void>;
  /** Deletes every chunk written before `beforeMs` (store clock); returns how many. */
  prune(beforeMs: number): Promise<number>;
  /** Further calls fail with `STORE_CLOSED`; watchers are dropped. Idempotent. */
  close(): Promise<void>;
}

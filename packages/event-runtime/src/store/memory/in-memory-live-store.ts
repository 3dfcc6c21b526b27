import { type Clock, systemClock } from '../../clock.js';
import { AppendSignal } from '../../internal/append-signal.js';
import { checkExecutionId } from '../../internal/check-execution-id.js';
import {
  checkLiveChunk,
  checkLiveName,
  checkPruneBound,
  liveReadOptions,
} from '../../internal/live-input.js';
import { storeClosed } from '../../internal/store-errors.js';
import type { LiveChunk, LiveChunkInput, LiveReadOptions, LiveStore } from '../../live-store.js';

/**
 * The live channel in process memory (`openMemory().live`): every runtime on the same memory
 * backend shares it, as they share its log. Same contract as the durable backends (one
 * conformance suite).
 *
 * Error codes: those of {@link LiveStore}, but no database errors.
 *
 * @example
 * const live = new InMemoryLiveStore();
 * live.watch('run-1', () => console.log('more text'));
 * await live.write({ executionId: 'run-1', stream: 'decide:1', attempt: 'a', offset: 0, text: 'Hi' });
 */
export class InMemoryLiveStore implements LiveStore {
  readonly backend = 'memory';
  private readonly clock: Clock;
  /** Chunks by `<executionId>\0<stream>`, in position order. */
  private readonly streams = new Map<string, LiveChunk[]>();
  private readonly keys = new Set<string>();
  private readonly signal = new AppendSignal();
  private position = 0;
  private closed = false;

  constructor(options: { clock?: Clock } = {}) {
    this.clock = options.clock ?? systemClock;
  }

  async write(input: LiveChunkInput): Promise<boolean> {
    this.assertOpen();
    const chunk = checkLiveChunk(input);
    const key = keyOf(chunk);
    if (this.keys.has(key)) return false;
    this.keys.add(key);
    const streamKey = `${chunk.executionId}\0${chunk.stream}`;
    let chunks = this.streams.get(streamKey);
    if (chunks === undefined) {
      chunks = [];
      this.streams.set(streamKey, chunks);
    }
    chunks.push({ ...chunk, position: ++this.position, atMs: this.clock.now() });
    this.signal.emit(chunk.executionId);
    return true;
  }

  async read(executionId: string, stream: string, options?: LiveReadOptions): Promise<LiveChunk[]> {
    this.assertOpen();
    const id = checkExecutionId(executionId);
    const name = checkLiveName(stream, 'stream');
    const { afterPosition, limit } = liveReadOptions(options);
    const chunks = this.streams.get(`${id}\0${name}`) ?? [];
    const out: LiveChunk[] = [];
    for (const chunk of chunks) {
      if (chunk.position <= afterPosition) continue;
      out.push({ ...chunk });
      if (out.length === limit) break;
    }
    return out;
  }

  watch(executionId: string, wake: () => void): () => void {
    this.assertOpen();
    const unwatch = this.signal.watch(checkExecutionId(executionId), wake);
    let watching = true;
    queueMicrotask(() => {
      if (watching) wake();
    });
    return () => {
      watching = false;
      unwatch();
    };
  }

  async drop(executionId: string, stream: string): Promise<void> {
    this.assertOpen();
    const streamKey = `${checkExecutionId(executionId)}\0${checkLiveName(stream, 'stream')}`;
    for (const chunk of this.streams.get(streamKey) ?? []) this.keys.delete(keyOf(chunk));
    this.streams.delete(streamKey);
  }

  async prune(beforeMs: number): Promise<number> {
    this.assertOpen();
    const bound = checkPruneBound(beforeMs);
    let pruned = 0;
    for (const [streamKey, chunks] of this.streams) {
      const kept = chunks.filter((chunk) => chunk.atMs >= bound);
      if (kept.length === chunks.length) continue;
      for (const chunk of chunks) if (chunk.atMs < bound) this.keys.delete(keyOf(chunk));
      pruned += chunks.length - kept.length;
      if (kept.length === 0) this.streams.delete(streamKey);
      else this.streams.set(streamKey, kept);
    }
    return pruned;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw storeClosed('memory live');
  }
}

function keyOf(chunk: LiveChunkInput): string {
  return `${chunk.executionId}\0${chunk.stream}\0${chunk.attempt}\0${chunk.offset}`;
}

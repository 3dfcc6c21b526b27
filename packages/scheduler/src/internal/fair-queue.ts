import { type Linked, LinkedQueue } from './linked-queue.js';

/** How many priority levels there are; rank 0 is served first. */
export const priorityLevels = 3;

/** An entry of a {@link FairQueue}. `line` is set while it waits and cleared when it leaves. */
export interface FairQueueEntry<E extends Linked<E>> extends Linked<E> {
  readonly rank: number;
  readonly key: string;
  line: Line<E> | undefined;
}

/** The entries of one key at one priority, FIFO; itself a node of its level's rotation. */
export interface Line<E extends Linked<E>> extends Linked<Line<E>> {
  readonly key: string;
  readonly entries: LinkedQueue<E>;
}

interface Level<E extends Linked<E>> {
  readonly lines: Map<string, Line<E>>;
  /** Lines that hold entries, in the order they will be served. */
  readonly rotation: LinkedQueue<Line<E>>;
}

/**
 * Waiting entries ordered by strict priority, then round-robin across keys, then FIFO within
 * one key. Serving a key moves its line to the back of the rotation, so a key with 10,000
 * waiting entries gets one start per round like a key with one.
 */
export class FairQueue<E extends FairQueueEntry<E>> {
  readonly #levels: Level<E>[] = Array.from({ length: priorityLevels }, () => ({
    lines: new Map<string, Line<E>>(),
    rotation: new LinkedQueue<Line<E>>(),
  }));
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(entry: E): void {
    const level = this.#level(entry.rank);
    let line = level.lines.get(entry.key);
    if (line === undefined) {
      line = { key: entry.key, entries: new LinkedQueue<E>(), prev: undefined, next: undefined };
      level.lines.set(entry.key, line);
      level.rotation.push(line);
    }
    line.entries.push(entry);
    entry.line = line;
    this.#size++;
  }

  /** The next entry to serve, removed from the queue; `undefined` when nothing waits. */
  shift(): E | undefined {
    if (this.#size === 0) return undefined;
    for (const level of this.#levels) {
      const line = level.rotation.shift();
      if (line === undefined) continue;
      const entry = line.entries.shift()!;
      if (line.entries.size > 0) level.rotation.push(line);
      else level.lines.delete(line.key);
      entry.line = undefined;
      this.#size--;
      return entry;
    }
    throw new Error('FairQueue invariant broken: size > 0 but every level is empty');
  }

  /** Removes a waiting entry (an aborted task); false when it no longer waits. */
  remove(entry: E): boolean {
    const line = entry.line;
    if (line === undefined) return false;
    line.entries.remove(entry);
    entry.line = undefined;
    this.#size--;
    if (line.entries.size === 0) {
      const level = this.#level(entry.rank);
      level.rotation.remove(line);
      level.lines.delete(line.key);
    }
    return true;
  }

  #level(rank: number): Level<E> {
    const level = this.#levels[rank];
    if (level === undefined) throw new Error(`FairQueue: priority rank ${rank} out of range`);
    return level;
  }
}

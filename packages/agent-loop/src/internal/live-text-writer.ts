import { randomUUID } from 'node:crypto';
import type { CancelTimer, Clock, LiveStore } from '@loom/event-runtime';
import { liveChunkTextMax } from '@loom/event-runtime';
import { LiveText } from './live-text.js';

/**
 * How long text waits before it is written to the live store: 50 ms. At most one write per
 * window per streaming call (text that arrives meanwhile joins the next write), and a call that
 * ends within the window writes nothing at all: the log's recorded answer carries its text.
 */
export const liveFlushMs = 50;

/** Chunks older than this are pruned (a dead writer's leftovers): 1 hour. */
export const liveChunkTtlMs = 3_600_000;

/** A process prunes the live store at most this often, at a call's first write: 10 minutes. */
export const livePruneEveryMs = 600_000;

/** Text of one attempt written to the live store at most; the rest reaches followers from the log: 1 Mi. */
export const liveAttemptTextMax = 1_048_576;

/** What the writers of one agent runtime share. */
export class LiveTextPublisher {
  /** This process's followers, at once. */
  readonly local = new LiveText();
  private nextPruneAtMs = 0;
  private attempts = 0;
  /** Attempt ids: unique across processes (a random prefix), never recorded (live only). */
  private readonly prefix = randomUUID().replaceAll('-', '').slice(0, 12);
  /** Live writes that failed (the text then reaches other processes from the log only). */
  failures = 0;

  constructor(
    readonly store: LiveStore | undefined,
    readonly clock: Clock,
  ) {}

  /** A writer for one attempt of a turn's model call. */
  attempt(runId: string, turn: number): LiveTextWriter {
    return new LiveTextWriter(this, runId, turn, `${this.prefix}${(++this.attempts).toString(36)}`);
  }

  /** Prunes what dead writers left, at most once per {@link livePruneEveryMs}. */
  maybePrune(store: LiveStore): void {
    const now = this.clock.now();
    if (now < this.nextPruneAtMs) return;
    this.nextPruneAtMs = now + livePruneEveryMs;
    store.prune(now - liveChunkTtlMs).catch(() => {
      this.failures++;
    });
  }
}

/**
 * The text of one model call attempt on its way out: each piece to this process's followers at
 * once, and, coalesced per {@link liveFlushMs}, to the live store for followers elsewhere (one
 * write in flight at a time). `end()` drops what it wrote: the answer is in the log by then, or
 * the attempt failed and a follower learns so from the next attempt or the recorded answer.
 */
export class LiveTextWriter {
  /** Text handed out so far (its length is the next piece's offset). */
  private length = 0;
  /** Text not yet written to the store, starting at `written`. */
  private pending = '';
  private written = 0;
  private wroteAny = false;
  private timer: CancelTimer | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly publisher: LiveTextPublisher,
    private readonly runId: string,
    private readonly turn: number,
    readonly attempt: string,
  ) {}

  /** The stream this attempt writes: the turn's decide record's name. */
  get stream(): string {
    return `decide:${this.turn}`;
  }

  /** A piece of the answer, as the model streamed it. */
  text(text: string): void {
    if (text === '') return;
    const offset = this.length;
    this.length += text.length;
    this.publisher.local.text(this.runId, this.turn, this.attempt, offset, text);
    if (this.publisher.store === undefined || this.stopped) return;
    if (this.length > liveAttemptTextMax) {
      this.stopped = true;
      return;
    }
    this.pending += text;
    if (this.timer === undefined && this.inFlight === undefined) this.arm();
  }

  /** The call is over (answered or failed): no more writes; drops the stream if it wrote any. */
  end(): void {
    this.stopped = true;
    this.timer?.();
    this.timer = undefined;
    const store = this.publisher.store;
    // Nothing written and nothing on its way: nothing to drop (every call that ends in its window).
    if (store === undefined || (!this.wroteAny && this.inFlight === undefined)) return;
    const drop = async () => {
      await this.inFlight;
      if (this.wroteAny) await store.drop(this.runId, this.stream);
    };
    drop().catch(() => {
      this.publisher.failures++;
    });
  }

  private arm(): void {
    this.timer = this.publisher.clock.setTimer(() => {
      this.timer = undefined;
      this.inFlight = this.flush().finally(() => {
        this.inFlight = undefined;
        if (this.pending !== '' && !this.stopped) this.arm();
      });
    }, liveFlushMs);
  }

  private async flush(): Promise<void> {
    const store = this.publisher.store;
    if (store === undefined || this.stopped || this.pending === '') return;
    if (!this.wroteAny) this.publisher.maybePrune(store);
    while (this.pending !== '' && !this.stopped) {
      const text = cut(this.pending, liveChunkTextMax);
      // Before the write: a write whose outcome is unknown may have stored something to drop.
      this.wroteAny = true;
      try {
        await store.write({
          executionId: this.runId,
          stream: this.stream,
          attempt: this.attempt,
          offset: this.written,
          text,
        });
      } catch {
        // Its outcome is unknown: writing on could leave a gap. Followers complete from the log.
        this.publisher.failures++;
        this.stopped = true;
        return;
      }
      this.written += text.length;
      this.pending = this.pending.slice(text.length);
    }
  }
}

/** At most `max` code units of `text`, never ending inside a surrogate pair. */
function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

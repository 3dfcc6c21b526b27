import type { Clock, LiveChunk, LiveStore, StoredEvent } from '@loom/event-runtime';
import type { AgentEvent, AgentStream } from '../agent-event.js';
import { AgentErrorCode, LoomError } from '../errors.js';
import { CursorTracker, type ParsedCursor } from '../stream-cursor.js';
import type { LiveText, TextPiece } from './live-text.js';
import { RunEventDecoder } from './run-event-decoder.js';
import { type TextStep, TurnText } from './turn-text.js';

/** Log events read per page while a stream catches up: 500. */
export const streamReadPageSize = 500;

/** Events a stream holds for a slow consumer before it stops reading the log: 1 000. */
export const streamBufferedEventsMax = 1_000;

/** What a stream reads: the run's log, and its live text (this process's, and the live store). */
export interface StreamSource {
  readonly clock: Pick<Clock, 'defer'>;
  readonly live: LiveText;
  /** The live channel other processes write a run's text to (ADR 0050), if any. */
  readonly store: LiveStore | undefined;
  read(runId: string, fromSequence: number, limit: number): Promise<StoredEvent[]>;
  /** Delivers the run's events from `fromSequence` on, as they are appended. */
  subscribe(
    runId: string,
    fromSequence: number,
    handler: (events: StoredEvent[]) => Promise<void>,
    onError: (error: unknown) => void,
  ): { close(): Promise<void> };
}

type Waiter = { resolve: (r: IteratorResult<AgentEvent>) => void; reject: (e: unknown) => void };

/** The turn whose text the stream follows, and where it reads the live store. */
interface Following {
  readonly text: TurnText;
  /** The live store's position read up to. */
  afterPosition: number;
  reading: boolean;
  dirty: boolean;
  stopWatch: (() => void) | undefined;
}

/**
 * A run's events for one consumer: the log read page by page (`replayed: true`), then a
 * subscription from the next sequence (`replayed: false`), so each log event is decoded once, in
 * order. The text of the turn being written joins in from this process (at once) and from the
 * live store (written by whichever process drives the run), deduplicated by (attempt, offset) in
 * a {@link TurnText}, coalesced (all the text that arrives within one turn of I/O, or before the
 * next durable event, is one `text_delta`) and completed from the recorded answer (ADR 0050).
 */
export class AgentEventStream implements AgentStream {
  private readonly queue: AgentEvent[] = [];
  private waiter: Waiter | undefined;
  private drained: (() => void) | undefined;
  private failure: unknown;
  private ended = false;
  private closed = false;
  private readonly decoder: RunEventDecoder;
  private subscription: { close(): Promise<void> } | undefined;
  private readonly stopText: () => void;
  private readonly tracker: CursorTracker;
  /** Events up to this sequence were delivered before (a resumed stream): decoded, not pushed. */
  private readonly skipThrough: number;
  /** The newest turn started in the log, and the newest with its recorded answer. */
  private lastTurn = 0;
  private lastAnswered = 0;
  private catchingUp = true;
  private following: Following | undefined;
  /** The cursor's place in a turn's text, until that turn is followed or answered. */
  private resumeText: ParsedCursor['text'];
  /** This process's pieces of turns not followed yet (their `turn_started` is not delivered). */
  private readonly heldPieces = new Map<number, TextPiece[]>();
  /** Text waiting to be delivered as one `text_delta`. */
  private pendingText: { turn: number; attempt: string; offset: number; text: string } | undefined;
  private flushArmed = false;

  constructor(
    private readonly runId: string,
    private readonly source: StreamSource,
    after?: ParsedCursor,
  ) {
    this.decoder = new RunEventDecoder(runId);
    this.tracker = new CursorTracker(after);
    this.skipThrough = after?.sequence ?? -1;
    this.resumeText = after?.text;
    // Listening before the log is read: no delta of a call in progress is missed.
    this.stopText = source.live.listen(runId, (piece) => this.onPiece(piece));
    this.open().catch((error: unknown) => this.fail(error));
  }

  [Symbol.asyncIterator](): AgentStream {
    return this;
  }

  get cursor(): string {
    return this.tracker.toString();
  }

  next(): Promise<IteratorResult<AgentEvent>> {
    const event = this.queue.shift();
    if (event !== undefined) {
      if (this.queue.length < streamBufferedEventsMax) this.release();
      this.tracker.take(event);
      return Promise.resolve({ done: false, value: event });
    }
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ended || this.closed) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  async return(): Promise<IteratorResult<AgentEvent>> {
    await this.close();
    return { done: true, value: undefined };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopText();
    this.unfollow();
    this.release();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve({ done: true, value: undefined });
    await this.subscription?.close();
  }

  private async open(): Promise<void> {
    let next = 0;
    for (;;) {
      const page = await this.source.read(this.runId, next, streamReadPageSize);
      if (this.closed) return;
      for (const event of page) {
        next = event.sequence + 1;
        if (this.take(event, true)) return;
      }
      if (page.length < streamReadPageSize) break;
    }
    this.catchingUp = false;
    // A turn the log shows started and not yet answered is being written now: follow its text.
    if (this.lastTurn > this.lastAnswered) this.follow(this.lastTurn);
    this.subscription = this.source.subscribe(
      this.runId,
      next,
      async (events) => {
        for (const event of events) {
          if (this.closed || this.ended) return;
          if (event.sequence < next) continue;
          next = event.sequence + 1;
          if (this.take(event, false)) {
            void this.subscription?.close();
            return;
          }
        }
        if (this.queue.length >= streamBufferedEventsMax && !this.closed) {
          await new Promise<void>((resolve) => {
            this.drained = resolve;
          });
        }
      },
      (error) => this.fail(error),
    );
    if (this.closed || this.ended) await this.subscription.close();
  }

  /** Decodes one log event into the queue; true once the run has ended. */
  private take(event: StoredEvent, replayed: boolean): boolean {
    const delivered = event.sequence > this.skipThrough;
    for (const decoded of this.decoder.decode(event, replayed)) {
      this.flushText();
      if (decoded.type === 'model_responded') {
        this.lastAnswered = Math.max(this.lastAnswered, decoded.turn);
        // The rest of a turn whose text this consumer was shown part of, from the record.
        const text = this.textOf(decoded.turn);
        if (text !== undefined && delivered)
          this.emit(text.finish(decoded.text), decoded.turn, replayed);
        if (this.following?.text.turn === decoded.turn) this.unfollow();
      }
      if (delivered) this.push(decoded);
      if (decoded.type === 'turn_started') {
        this.lastTurn = Math.max(this.lastTurn, decoded.turn);
        if (!this.catchingUp) this.follow(decoded.turn);
      } else if (decoded.type === 'finished') {
        this.end();
        return true;
      }
    }
    if (RunEventDecoder.isTerminal(event)) {
      const error = (event.payload as { error?: { message?: unknown } }).error;
      this.fail(
        new LoomError(
          AgentErrorCode.RUN_FAILED,
          `run '${this.runId}' ended without an agent result (${event.type}${typeof error?.message === 'string' ? `: ${error.message}` : ''}): read its log with the flow runtime to see why`,
          { runId: this.runId, eventType: event.type },
        ),
      );
      return true;
    }
    return false;
  }

  /** The text state of `turn` if the consumer follows it (or resumes inside it). */
  private textOf(turn: number): TurnText | undefined {
    if (this.following?.text.turn === turn) return this.following.text;
    if (this.resumeText?.turn === turn) {
      const text = new TurnText(turn, this.resumeText);
      this.resumeText = undefined;
      return text;
    }
    return undefined;
  }

  /** Starts following `turn`'s text: held pieces of this process first, then the live store. */
  private follow(turn: number): void {
    if (this.closed || this.ended || this.following?.text.turn === turn) return;
    this.unfollow();
    const text =
      this.resumeText?.turn === turn ? new TurnText(turn, this.resumeText) : new TurnText(turn);
    this.resumeText = undefined;
    const following: Following = {
      text,
      afterPosition: 0,
      reading: false,
      dirty: false,
      stopWatch: undefined,
    };
    this.following = following;
    for (const [heldTurn, pieces] of this.heldPieces) {
      if (heldTurn > turn) continue;
      this.heldPieces.delete(heldTurn);
      if (heldTurn === turn) for (const piece of pieces) this.onPiece(piece);
    }
    const store = this.source.store;
    // The watch wakes once when in effect: the first read of what was written so far.
    if (store !== undefined)
      following.stopWatch = store.watch(this.runId, () => this.readLive(following));
  }

  private unfollow(): void {
    const following = this.following;
    if (following === undefined) return;
    this.following = undefined;
    following.stopWatch?.();
  }

  /** Reads the followed turn's chunks from the live store until there are no new ones. */
  private readLive(following: Following): void {
    if (following.reading) {
      following.dirty = true;
      return;
    }
    const store = this.source.store as LiveStore;
    following.reading = true;
    const stream = `decide:${following.text.turn}`;
    const loop = async () => {
      do {
        following.dirty = false;
        let batch: LiveChunk[];
        try {
          batch = await store.read(this.runId, stream, { afterPosition: following.afterPosition });
        } catch {
          return; // Live text is a hint: the recorded answer completes the turn.
        }
        if (this.following !== following || this.closed || this.ended) return;
        if (batch.length === 0) continue;
        following.afterPosition = (batch[batch.length - 1] as LiveChunk).position;
        // Of the attempts in a batch, the newest is the one being written: older ones never finished.
        const current = batch.filter((chunk) => !following.text.isRetired(chunk.attempt));
        const newest = current[current.length - 1]?.attempt;
        for (const chunk of current) {
          if (chunk.attempt !== newest) continue;
          this.apply(following.text.take(chunk.attempt, chunk.offset, chunk.text));
        }
        following.dirty = true;
      } while (following.dirty);
    };
    loop().finally(() => {
      following.reading = false;
    });
  }

  /** A piece of text from this process. */
  private onPiece(piece: TextPiece): void {
    if (this.closed || this.ended) return;
    const following = this.following;
    if (following !== undefined && piece.turn === following.text.turn) {
      this.apply(following.text.take(piece.attempt, piece.offset, piece.text));
      return;
    }
    if (piece.turn <= Math.max(this.lastAnswered, following?.text.turn ?? 0)) return;
    const held = this.heldPieces.get(piece.turn);
    if (held === undefined) this.heldPieces.set(piece.turn, [piece]);
    else held.push(piece);
  }

  /** Live steps: coalesced text, a retraction delivered at once (after what is pending). */
  private apply(steps: readonly TextStep[]): void {
    const turn = this.following?.text.turn;
    if (turn === undefined || steps.length === 0) return;
    for (const step of steps) {
      if (step.kind === 'retract') {
        this.flushText();
        this.push({ runId: this.runId, replayed: false, type: 'text_retracted', turn, ...step });
        continue;
      }
      const pending = this.pendingText;
      if (
        pending !== undefined &&
        pending.attempt === step.attempt &&
        pending.offset + pending.text.length === step.offset
      ) {
        pending.text += step.text;
      } else {
        this.flushText();
        this.pendingText = { turn, attempt: step.attempt, offset: step.offset, text: step.text };
      }
    }
    if (!this.flushArmed && this.pendingText !== undefined) {
      this.flushArmed = true;
      this.source.clock.defer(() => {
        this.flushArmed = false;
        this.flushText();
      });
    }
  }

  /** Steps from the recorded answer, delivered in place (before the answer itself). */
  private emit(steps: readonly TextStep[], turn: number, replayed: boolean): void {
    for (const step of steps) {
      if (step.kind === 'retract') {
        this.push({ runId: this.runId, replayed, type: 'text_retracted', turn, ...step });
      } else {
        this.push({ runId: this.runId, replayed, type: 'text_delta', turn, ...step });
      }
    }
  }

  private flushText(): void {
    const pending = this.pendingText;
    if (pending === undefined) return;
    this.pendingText = undefined;
    this.push({ runId: this.runId, replayed: false, type: 'text_delta', ...pending });
  }

  private push(event: AgentEvent): void {
    if (this.closed) return;
    const waiter = this.waiter;
    if (waiter !== undefined) {
      this.waiter = undefined;
      this.tracker.take(event);
      waiter.resolve({ done: false, value: event });
      return;
    }
    this.queue.push(event);
  }

  private end(): void {
    this.ended = true;
    this.stopText();
    this.unfollow();
    this.release();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.resolve({ done: true, value: undefined });
  }

  private fail(error: unknown): void {
    if (this.closed || this.ended) return;
    this.failure = error;
    this.ended = true;
    this.stopText();
    this.unfollow();
    this.release();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(error);
    void this.subscription?.close();
  }

  private release(): void {
    const drained = this.drained;
    this.drained = undefined;
    drained?.();
  }
}

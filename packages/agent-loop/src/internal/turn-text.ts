/** FNV-1a (32 bit) of `text`'s UTF-16 code units, continuing from `hash`. */
export function textHash(text: string, hash = 0x811c9dc5): number {
  let h = hash;
  for (let index = 0; index < text.length; index++) {
    h ^= text.charCodeAt(index);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The hash of the empty text. */
export const emptyTextHash = textHash('');

/** The attempt named on text a follower shows from the log's recorded answer. */
export const recordedAttempt = 'recorded';

/** Where a consumer stands in a turn's text: what it was shown of which attempt. */
export interface TextPosition {
  readonly turn: number;
  readonly attempt: string;
  /** Code units shown. */
  readonly length: number;
  /** {@link textHash} of what was shown. */
  readonly hash: number;
}

/** What a follower emits for a turn's text. */
export type TextStep =
  | { kind: 'text'; attempt: string; offset: number; text: string }
  | { kind: 'retract'; attempt: string; length: number };

/**
 * What a follower has shown of one turn's text, and what each new piece adds: the pure part of
 * ADR 0050's follower. Pieces come from this process and from the live store, possibly twice and
 * from several attempts; each code unit of an attempt is shown once, in order. A piece of another
 * attempt retracts what was shown (that attempt never finished) and is never shown again; the
 * recorded answer completes the text, retracting it first when what was shown is not its start.
 */
export class TurnText {
  private attempt: string | undefined;
  private length: number;
  private hash: number;
  private readonly retired = new Set<string>();

  constructor(
    readonly turn: number,
    from?: TextPosition,
  ) {
    this.attempt = from?.attempt;
    this.length = from?.length ?? 0;
    this.hash = from?.hash ?? emptyTextHash;
  }

  /** An attempt that must not be shown (retracted, or older than one shown after it). */
  isRetired(attempt: string): boolean {
    return this.retired.has(attempt);
  }

  /** A piece of `attempt` at `offset`: what to emit for it. */
  take(attempt: string, offset: number, text: string): TextStep[] {
    if (this.retired.has(attempt)) return [];
    const out: TextStep[] = [];
    if (attempt !== this.attempt) {
      if (this.attempt !== undefined) {
        this.retired.add(this.attempt);
        if (this.length > 0)
          out.push({ kind: 'retract', attempt: this.attempt, length: this.length });
      }
      this.attempt = attempt;
      this.length = 0;
      this.hash = emptyTextHash;
    }
    // A gap (a write that failed): nothing more of this attempt until the recorded answer.
    if (offset > this.length) return out;
    const fresh = text.slice(this.length - offset);
    if (fresh === '') return out;
    out.push({ kind: 'text', attempt, offset: this.length, text: fresh });
    this.length += fresh.length;
    this.hash = textHash(fresh, this.hash);
    return out;
  }

  /** The recorded answer's text: the rest of it, after a retraction if what was shown differs. */
  finish(recorded: string): TextStep[] {
    const out: TextStep[] = [];
    let attempt = this.attempt ?? recordedAttempt;
    const prefix =
      this.length <= recorded.length && textHash(recorded.slice(0, this.length)) === this.hash;
    if (!prefix) {
      out.push({ kind: 'retract', attempt, length: this.length });
      attempt = recordedAttempt;
      this.length = 0;
    }
    if (recorded.length > this.length) {
      out.push({ kind: 'text', attempt, offset: this.length, text: recorded.slice(this.length) });
    }
    this.attempt = attempt;
    this.length = recorded.length;
    this.hash = textHash(recorded);
    return out;
  }
}

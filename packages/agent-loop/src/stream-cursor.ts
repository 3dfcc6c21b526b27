import type { AgentEvent } from './agent-event.js';
import { AgentErrorCode, LoomError } from './errors.js';
import { emptyTextHash, type TextPosition, textHash } from './internal/turn-text.js';

/** A parsed stream cursor: the last log event a consumer saw, and its place in a turn's text. */
export interface ParsedCursor {
  readonly sequence: number;
  readonly text: TextPosition | undefined;
}

/**
 * Where a consumer of an agent stream stands, updated by each event it takes: the last log
 * sequence, and in a turn being written, the attempt and length of the text it was shown (and a
 * hash of it, so a resumed stream can tell whether the recorded answer starts with it).
 */
export class CursorTracker {
  private sequence = -1;
  private text: TextPosition | undefined;

  constructor(from?: ParsedCursor) {
    if (from !== undefined) {
      this.sequence = from.sequence;
      this.text = from.text;
    }
  }

  take(event: AgentEvent): void {
    if (event.sequence !== undefined && event.sequence > this.sequence)
      this.sequence = event.sequence;
    switch (event.type) {
      case 'turn_started':
      case 'model_responded':
      case 'finished':
        this.text = undefined;
        return;
      case 'text_retracted':
        this.text = undefined;
        return;
      case 'text_delta': {
        const { turn, attempt, offset, text } = event;
        const current = this.text;
        const continues =
          current !== undefined &&
          current.turn === turn &&
          current.attempt === attempt &&
          current.length === offset;
        if (!continues && offset !== 0) return; // not a continuation: keep the known position
        const hash = textHash(text, continues ? current.hash : emptyTextHash);
        this.text = { turn, attempt, length: offset + text.length, hash };
        return;
      }
      default:
        return;
    }
  }

  /** The cursor as text: `<sequence>` or `<sequence>.<turn>.<attempt>.<length>.<hash>`. */
  toString(): string {
    const { text } = this;
    if (text === undefined) return String(this.sequence);
    return `${this.sequence}.${text.turn}.${text.attempt}.${text.length}.${text.hash.toString(36)}`;
  }
}

const cursorPattern =
  /^(-1|\d{1,15})(?:\.(\d{1,9})\.([A-Za-z0-9_-]{1,64})\.(\d{1,15})\.([0-9a-z]{1,7}))?$/;

/**
 * Reads a cursor written by `AgentStream.cursor` (an SSE `Last-Event-ID`, say).
 *
 * Error codes: `INVALID_ARGUMENT` (not a cursor).
 */
export function parseCursor(cursor: string): ParsedCursor {
  const match = typeof cursor === 'string' ? cursorPattern.exec(cursor) : null;
  if (match === null) {
    throw new LoomError(
      AgentErrorCode.INVALID_ARGUMENT,
      `'${String(cursor).slice(0, 80)}' is not a stream cursor: pass what AgentStream.cursor (or an SSE event id of agentRunResponse) gave`,
      { cursor: String(cursor).slice(0, 80) },
    );
  }
  const [, sequence, turn, attempt, length, hash] = match;
  return {
    sequence: Number(sequence),
    text:
      turn === undefined
        ? undefined
        : {
            turn: Number(turn),
            attempt: attempt as string,
            length: Number(length),
            hash: Number.parseInt(hash as string, 36),
          },
  };
}

/** A piece of a turn's answer: `text` at `offset` of one attempt of the turn's model call. */
export interface TextPiece {
  readonly turn: number;
  readonly attempt: string;
  readonly offset: number;
  readonly text: string;
}

/** Receives the text of a turn's answer as the model streams it. */
export type TextListener = (piece: TextPiece) => void;

/**
 * The process-local channel of text deltas, by run: the agent flow hands each streamed piece of
 * a model's text here, and the streams of this process that follow the run receive it at once
 * (followers in other processes read the live store, ADR 0050). A run nobody follows in this
 * process costs a map lookup per delta.
 */
export class LiveText {
  private readonly listeners = new Map<string, Set<TextListener>>();

  /** Starts delivering `runId`'s text to `listener`; returns the function that stops it. */
  listen(runId: string, listener: TextListener): () => void {
    let set = this.listeners.get(runId);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(runId, set);
    }
    set.add(listener);
    return () => {
      const current = this.listeners.get(runId);
      if (current === undefined) return;
      current.delete(listener);
      if (current.size === 0) this.listeners.delete(runId);
    };
  }

  /**
   * Hands a piece of text to the listeners of `runId`; a throwing listener is ignored. Allocates
   * nothing when nobody in this process follows the run.
   */
  text(runId: string, turn: number, attempt: string, offset: number, text: string): void {
    const set = this.listeners.get(runId);
    if (set === undefined || text === '') return;
    const piece: TextPiece = { turn, attempt, offset, text };
    for (const listener of [...set]) {
      try {
        listener(piece);
      } catch {
        // A consumer's failure never reaches the run.
      }
    }
  }
}

/** Receives the text of a turn's answer as the model streams it. */
export type TextListener = (turn: number, text: string) => void;

/**
 * The process-local channel of text deltas, by run: the agent flow hands each streamed piece of
 * a model's text here, and the streams of this process that follow the run receive it. Nothing
 * here is journaled; a run nobody follows in this process costs a map lookup per delta.
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

  /** Hands a piece of `turn`'s text to the listeners of `runId`; a throwing listener is ignored. */
  text(runId: string, turn: number, text: string): void {
    const set = this.listeners.get(runId);
    if (set === undefined || text === '') return;
    for (const listener of [...set]) {
      try {
        listener(turn, text);
      } catch {
        // A consumer's failure never reaches the run.
      }
    }
  }
}

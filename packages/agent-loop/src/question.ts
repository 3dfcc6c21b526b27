/** A person's answer to a question the model asked through `ask_human`. */
export interface Answer {
  readonly text: string;
  readonly by: string;
  readonly answeredAtMs: number;
}

/** A question the model asked through the built-in `ask_human` tool; the run waits for its answer. */
export interface Question {
  /** `<runId>~<turn>.<call>`: give it to `answer`. */
  readonly id: string;
  readonly runId: string;
  readonly turn: number;
  readonly callId: string;
  readonly question: string;
  readonly askedAtMs: number;
  readonly status: 'pending' | 'answered';
  /** Present once answered; the model gets it as the tool's result. */
  readonly answer?: Answer;
}

import type { JsonValue } from '../envelope.js';

/** The event types the kernel writes. A flow of n plain steps writes exactly 2n + 2 of them. */
export const EventType = {
  executionStarted: 'execution.started',
  stepStarted: 'step.started',
  stepCompleted: 'step.completed',
  stepFailed: 'step.failed',
  executionCompleted: 'execution.completed',
  executionFailed: 'execution.failed',
  executionCancelled: 'execution.cancelled',
} as const;

export type KernelEventType = (typeof EventType)[keyof typeof EventType];

/** An error as the log records it: plain data, so a replay rethrows the same thing. */
export interface RecordedError {
  name: string;
  message: string;
  /** A LoomError's code, when the error had one. */
  code?: string;
  /** Structured fields of a LoomError, when JSON can hold them. */
  fields?: { [key: string]: JsonValue };
}

export interface ExecutionStartedPayload {
  flow: string;
  version: string | null;
  input: JsonValue;
}

export interface StepStartedPayload {
  index: number;
  name: string;
}

export interface StepCompletedPayload {
  index: number;
  name: string;
  result: JsonValue;
}

export interface StepFailedPayload {
  index: number;
  name: string;
  error: RecordedError;
}

export interface ExecutionCompletedPayload {
  output: JsonValue;
}

export interface ExecutionFailedPayload {
  error: RecordedError;
}

export interface ExecutionCancelledPayload {
  reason: string;
}

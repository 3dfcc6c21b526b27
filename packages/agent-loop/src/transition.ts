/**
 * A transition of a turn that has become durable. `createAgentRuntime({ onTransition })` gets
 * each one synchronously, when the record is in the log: for tracing, and for crash tests that
 * kill the process at an exact point.
 *
 * - `decided`: the model's answer of `turn` is recorded (reported for a turn whose answer calls
 *   tools; a turn that ends the run reports nothing more). It is reported once the turn's policy
 *   record (`ctx.record`, ADR 0066: its verdicts, or the policy's failure) is in the log too,
 *   which the turn's next write makes it (the start of `start:<t>`, the wait for an approval or
 *   an answer, or the run's end).
 * - `policy_decided`: the policy's verdicts (and any approvals) of `turn` are recorded.
 * - `tool_started`: the call is marked started; the tool is about to be called.
 * - `observed`: the results of `turn`'s calls are recorded (reported when the next turn starts).
 */
export type AgentTransition =
  | { readonly type: 'decided'; readonly runId: string; readonly turn: number }
  | { readonly type: 'policy_decided'; readonly runId: string; readonly turn: number }
  | {
      readonly type: 'tool_started';
      readonly runId: string;
      readonly turn: number;
      readonly callId: string;
      readonly tool: string;
    }
  | { readonly type: 'observed'; readonly runId: string; readonly turn: number };

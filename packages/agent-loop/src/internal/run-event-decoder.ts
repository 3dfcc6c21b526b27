import { EventType, type JsonValue, type StoredEvent } from '@loom/event-runtime';
import type { ModelResponse } from '@loom/reasoning';
import type { AgentEvent } from '../agent-event.js';
import type { Approval } from '../approval.js';
import type { ToolRequest } from '../policy.js';
import type { Question } from '../question.js';
import type { ModelCallUsage } from '../run-result.js';
import { RecordName } from './agent-flow.js';
import { agentToolResult } from './child-call.js';
import { callUsageOf, cancelledResult, type RunOutput } from './run-memory.js';

/** A policy verdict as `policy:<t>` records it: only what a decoder needs. */
interface RecordedVerdict {
  kind: string;
  request?: ToolRequest;
}

/** `<turn>.<index>` or `<turn>.<index>.r<attempt>`. */
function parseCallKey(key: string): { turn: number; index: number; attempt: number } | undefined {
  const match = /^(\d+)\.(\d+)(?:\.r(\d+))?$/.exec(key);
  if (match === null) return undefined;
  return {
    turn: Number(match[1]),
    index: Number(match[2]),
    attempt: match[3] === undefined ? 1 : Number(match[3]),
  };
}

function afterPrefix(name: string, prefix: string): string | undefined {
  return name.startsWith(prefix) ? name.slice(prefix.length) : undefined;
}

/**
 * Turns a run's log events into {@link AgentEvent}s, in log order. It keeps what later events
 * need (the calls each turn's policy step recorded), so it must see the log from its start.
 */
export class RunEventDecoder {
  /** `<turn>.<index>` → the call's request, from `policy:<turn>`. */
  private readonly requests = new Map<string, ToolRequest>();
  /** The usage of every model call seen so far, for `finished`. */
  private readonly calls: ModelCallUsage[] = [];

  constructor(private readonly runId: string) {}

  decode(event: StoredEvent, replayed: boolean): AgentEvent[] {
    const base = { runId: this.runId, replayed, sequence: event.sequence };
    const payload = event.payload as {
      name?: unknown;
      result?: unknown;
      output?: unknown;
      reason?: unknown;
      error?: { message?: unknown; code?: unknown };
    };
    const name = typeof payload.name === 'string' ? payload.name : '';
    switch (event.type) {
      case EventType.stepStarted: {
        const decide = afterPrefix(name, 'decide:');
        if (decide !== undefined) return [{ ...base, type: 'turn_started', turn: Number(decide) }];
        const call = this.call(afterPrefix(name, 'tool:'));
        return call === undefined ? [] : [{ ...base, type: 'tool_started', ...call }];
      }
      case EventType.stepCompleted:
        return this.completed(base, name, payload.result as JsonValue);
      case EventType.stepFailed: {
        const call = this.call(afterPrefix(name, 'tool:'));
        if (call === undefined) return [];
        const error = payload.error;
        const message = typeof error?.message === 'string' ? error.message : 'the tool failed';
        return [
          {
            ...base,
            type: 'tool_completed',
            ...call,
            outcome: 'error',
            error: typeof error?.code === 'string' ? `${error.code}: ${message}` : message,
          },
        ];
      }
      case EventType.childStarted:
      case EventType.childCompleted:
        return this.child(base, event.type, event.payload);
      case EventType.executionCompleted:
        return [
          {
            ...base,
            type: 'finished',
            result: {
              runId: this.runId,
              ...(payload.output as unknown as RunOutput),
              calls: this.calls.slice(),
            },
          },
        ];
      case EventType.executionCancelled:
        return [
          {
            ...base,
            type: 'finished',
            result: cancelledResult(
              this.runId,
              `execution ${this.runId} was cancelled: ${String(payload.reason ?? '')}`,
              this.calls,
            ),
          },
        ];
      default:
        return [];
    }
  }

  /** True for the event after which a run writes nothing more. */
  static isTerminal(event: StoredEvent): boolean {
    return (
      event.type === EventType.executionCompleted ||
      event.type === EventType.executionCancelled ||
      event.type === EventType.executionFailed ||
      event.type === EventType.executionContinuedAsNew
    );
  }

  private completed(
    base: { runId: string; replayed: boolean; sequence: number },
    name: string,
    result: JsonValue,
  ): AgentEvent[] {
    const decide = afterPrefix(name, 'decide:');
    if (decide !== undefined) {
      const response = result as unknown as ModelResponse;
      const turn = Number(decide);
      const usage = callUsageOf(turn, response);
      this.calls.push(usage);
      return [
        {
          ...base,
          type: 'model_responded',
          turn,
          text: response.text,
          toolCalls: response.toolCalls,
          usage,
        },
      ];
    }
    const policy = afterPrefix(name, 'policy:');
    if (policy !== undefined) {
      for (const [index, verdict] of (result as unknown as RecordedVerdict[]).entries()) {
        if (verdict.request !== undefined) this.requests.set(`${policy}.${index}`, verdict.request);
      }
      return [];
    }
    const call = this.call(afterPrefix(name, 'tool:'));
    if (call !== undefined) {
      const recorded = result as { output?: JsonValue; interrupted?: boolean };
      return [
        recorded.interrupted === true
          ? { ...base, type: 'tool_completed', ...call, outcome: 'interrupted' }
          : {
              ...base,
              type: 'tool_completed',
              ...call,
              outcome: 'result',
              output: recorded.output ?? null,
            },
      ];
    }
    if (name.startsWith(RecordName.approvalPrefix)) {
      return [{ ...base, type: 'approval_required', approval: result as unknown as Approval }];
    }
    if (name.startsWith(RecordName.questionPrefix)) {
      const question = result as unknown as Omit<Question, 'status'>;
      return [{ ...base, type: 'question_asked', question }];
    }
    return [];
  }

  /** An agent tool's call: its child run's start and end in this run's log (`<runId>/<key>`). */
  private child(
    base: { runId: string; replayed: boolean; sequence: number },
    type: string,
    payload: JsonValue,
  ): AgentEvent[] {
    const recorded = payload as {
      childId?: unknown;
      status?: unknown;
      output?: unknown;
      error?: { message?: unknown };
    };
    const prefix = `${this.runId}/`;
    const childId = typeof recorded.childId === 'string' ? recorded.childId : '';
    const call = this.call(afterPrefix(childId, prefix));
    if (call === undefined) return [];
    if (type === EventType.childStarted) return [{ ...base, type: 'tool_started', ...call }];
    if (recorded.status === 'completed') {
      const output = agentToolResult(childId, recorded.output as unknown as RunOutput);
      return [
        {
          ...base,
          type: 'tool_completed',
          ...call,
          outcome: 'result',
          output: output as unknown as JsonValue,
        },
      ];
    }
    const message = recorded.error?.message;
    return [
      {
        ...base,
        type: 'tool_completed',
        ...call,
        outcome: 'error',
        error: `CHILD_FAILED: child run ${childId} ${String(recorded.status)}${typeof message === 'string' ? `: ${message}` : ''}`,
      },
    ];
  }

  private call(
    key: string | undefined,
  ): { turn: number; callId: string; tool: string; attempt: number } | undefined {
    if (key === undefined) return undefined;
    const parsed = parseCallKey(key);
    if (parsed === undefined) return undefined;
    const request = this.requests.get(`${parsed.turn}.${parsed.index}`);
    if (request === undefined) return undefined;
    return {
      turn: parsed.turn,
      callId: request.callId,
      tool: request.tool,
      attempt: parsed.attempt,
    };
  }
}

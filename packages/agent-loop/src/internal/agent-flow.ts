import {
  isLoomError as isKernelError,
  type JsonValue,
  ErrorCode as KernelErrorCode,
  LoomError as KernelLoomError,
} from '@loom/event-runtime';
import {
  type ModelRequest,
  type ModelResponse,
  ReasoningErrorCode,
  type ToolCall,
  type ToolSpec,
} from '@loom/reasoning';
import { type Exchange, type Observation, renderMessages } from '@loom/render';
import { childAgentCall } from '../agent-tool.js';
import {
  type Approval,
  type ApprovalDecision,
  type ApprovalKind,
  decisionRefusal,
  type Resolution,
} from '../approval.js';
import { type Agent, askHumanToolName, failToolName } from '../define-agent.js';
import type { Tool, ToolContext } from '../define-tool.js';
import { asksMaxDefault, type PolicyDecision, type ToolRequest } from '../policy.js';
import type { TerminalReason } from '../run-result.js';
import { isRerunnable } from '../side-effect.js';
import type { ToolRetry } from '../tool-retry.js';
import type { AgentTransition } from '../transition.js';
import { AgentSpanAttribute, AgentSpans, responseAttributes } from './agent-spans.js';
import { runChildCall } from './child-call.js';
import type { RecordEffect, StepOptions, TurnContext } from './flow-host.js';
import type { LiveTextPublisher, LiveTextWriter } from './live-text-writer.js';
import { hashOf } from './request-hash.js';
import type { RunCallsHandoff } from './run-calls.js';
import { RunMemory, type RunOutput } from './run-memory.js';
import { bugStrikes } from './test-bugs.js';
import { threadTurnOf } from './thread-flow.js';
import { WallBudget, waitBound } from './wall-budget.js';

const failToolSpec: ToolSpec = {
  name: failToolName,
  description:
    'Give up on the task: call this only when the goal cannot be reached. To finish successfully, answer with text instead.',
  inputSchema: {
    type: 'object',
    properties: { reason: { type: 'string', description: 'Why the goal cannot be reached' } },
    required: ['reason'],
  },
};

const askHumanToolSpec: ToolSpec = {
  name: askHumanToolName,
  description:
    'Ask a person a question and wait for the answer (it may take hours). Use it when you need a fact or a decision only a person has.',
  inputSchema: {
    type: 'object',
    properties: { question: { type: 'string', description: 'The question, self-contained' } },
    required: ['question'],
  },
};

/** The options of a model call's step without a wall-time limit: the runtime's stepRetry applies. */
const modelStepOptions: StepOptions = Object.freeze({});
/** A read of the store: the runtime's `stepRetry` applies. */
const readStepOptions: StepOptions = Object.freeze({});

/** A policy verdict as the `policy:<turn>` step records it. */
type Verdict =
  | { callId: string; kind: 'invalid'; message: string }
  | { callId: string; kind: 'ask'; question: string }
  | { callId: string; kind: 'decided'; request: ToolRequest; decision: PolicyDecision };

/** A verdict as a span attribute: `allow`, `deny`, `require_approval`, `abort`, `ask`, `invalid`. */
function verdictName(verdict: Verdict): string {
  return verdict.kind === 'decided' ? verdict.decision.kind : verdict.kind;
}

/** The earlier exchanges of a run that is not a thread's turn. */
const noExchanges: readonly Exchange[] = Object.freeze([]);

/** No tracer: spans cost nothing. */
const noSpans = new AgentSpans(undefined);

/** The spans of the run a flow context drives (set when its flow starts in this process). */
const runSpans = new WeakMap<TurnContext, AgentSpans>();

function spansOf(ctx: TurnContext): AgentSpans {
  return runSpans.get(ctx) ?? noSpans;
}

/** What a tool step records. */
type ToolStepResult = { output: JsonValue } | { interrupted: true };

type ApprovalOutcome =
  | { kind: 'approved'; resolution: Resolution | undefined }
  | { kind: 'rejected'; endRun: boolean; why: string }
  | { kind: 'expired' }
  /** The wait reached the run's wall-time limit first. */
  | { kind: 'time_up' };

type CallOutcome =
  | { kind: 'observed'; observation: Observation; failed: boolean | undefined }
  | { kind: 'ended'; reason: TerminalReason; error: string };

/**
 * A record of what the run decided (policy verdicts, approvals, questions): the runtime's
 * `ctx.record`, never retried. Its function is pure; what it announces waits for `onDurable`.
 * It runs with no start record and no barrier before it, and is durable with the run's next
 * write, which comes before anything that depends on it leaves the run (the start mark's start,
 * a model call's, the wait for an approval, the end). A crash before that runs it again
 * (ADR 0066).
 */
function recordStep<T extends JsonValue | null>(
  ctx: TurnContext,
  name: string,
  fn: (effect: RecordEffect) => T | Promise<T>,
): Promise<T> {
  return ctx.record(name, fn);
}

/** The options of a start mark's step: never retried. */
const markOptions: StepOptions = Object.freeze({ retry: false });

/**
 * A start mark (`start:<t>`, a re-run's `start:<key>.r<n>`): a step, never retried, whose
 * `step.started` is durable before its function runs: the point after which the turn's calls run
 * without asking anyone on a restart, which the calls' own starts come after. Its function is
 * pure but for a transition it announces, which a retry would announce twice.
 */
function markStep(
  ctx: TurnContext,
  name: string,
  fn: () => JsonValue | null,
): Promise<JsonValue | null> {
  return ctx.step(name, fn, markOptions);
}

/** Names of the records a run writes; `agent-runtime` reads approvals back by these. */
export const RecordName = {
  decide: (turn: number) => `decide:${turn}`,
  policy: (turn: number) => `policy:${turn}`,
  start: (key: string) => `start:${key}`,
  tool: (key: string) => `tool:${key}`,
  approvalStep: (key: string) => `approval:${key}`,
  approvalSignal: (key: string) => `approval:${key}`,
  approvalPrefix: 'approval:',
  questionStep: (key: string) => `question:${key}`,
  answerSignal: (key: string) => `answer:${key}`,
  questionPrefix: 'question:',
  answerPrefix: 'answer:',
  superseded: 'thread:superseded',
} as const;

/** `<runId>~<key>`: an approval's public id. */
export function approvalId(runId: string, key: string): string {
  return `${runId}~${key}`;
}

function errorMessage(error: unknown): string {
  if (isKernelError(error, 'STEP_FAILED')) {
    const recorded = (error.fields as { error?: { message?: unknown; code?: unknown } }).error;
    if (recorded !== undefined && typeof recorded.message === 'string') {
      return typeof recorded.code === 'string'
        ? `${recorded.code}: ${recorded.message}`
        : recorded.message;
    }
  }
  return error instanceof Error ? error.message : String(error);
}

function isStepFailure(error: unknown): boolean {
  return isKernelError(error, 'STEP_FAILED');
}

/** What a thread's turn reads of its thread. */
export interface ThreadReader {
  /** The thread's earlier exchanges for the turn of message `message` (see `threadHistory`). */
  history(threadId: string, message: number, budgetTokens: number): Promise<Exchange[]>;
  /** Whether the thread's inbox holds message `message` (sent, taken or not). */
  hasMessage(threadId: string, message: number): Promise<boolean>;
}

/**
 * The body of an agent run. Each turn: `decide:<t>` (the model call, recorded verbatim), then for
 * a turn with tool calls `policy:<t>` (validation and the policy's verdicts), approvals when
 * asked for, `start:<t>` (the durable mark that the allowed calls are about to run) and one
 * `tool:<t>.<i>` per call, concurrently. Every decision is read back from the record on replay.
 */
export function agentRun(
  agent: Agent,
  notify: (transition: AgentTransition) => void,
  live: LiveTextPublisher,
  handoff: RunCallsHandoff,
  threads: ThreadReader,
  spans: AgentSpans = noSpans,
): (ctx: TurnContext, input: JsonValue) => Promise<JsonValue> {
  const toolSpecs: ToolSpec[] = [...agent.tools.values()].map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
  }));
  if (agent.askHuman) toolSpecs.push(askHumanToolSpec);
  // Once per agent, like its tool specs: the instructions with the output schema, if any.
  const asked = outputAsked(agent);
  return async (ctx, input) => {
    const drivenFromMs = spans.enabled ? Date.now() : 0;
    if (spans.enabled) runSpans.set(ctx, spans);
    // A thread's turn: the user's message is the input, the thread's earlier exchanges (read from
    // their ended turns' logs, the same on every replay) go before it.
    const thread = threadTurnOf(input);
    const run = new RunMemory(ctx.runId, thread === undefined ? input : thread.text);
    const output =
      thread !== undefined && (await supersededBy(ctx, agent, threads, thread)) !== undefined
        ? run.end('operator_cancelled', {
            error: `interrupted by message ${thread.message + 1} of thread ${thread.threadId} before it started`,
          })
        : await runTurns(
            ctx,
            agent,
            toolSpecs,
            asked,
            notify,
            live,
            run,
            thread === undefined
              ? noExchanges
              : await threads.history(thread.threadId, thread.message, agent.budgetTokens),
          );
    handoff.offer(ctx.runId, run.calls);
    // The run's end, from the process that ends it: its part of the run, as one span.
    if (spans.enabled)
      spans.summary(`invoke_agent ${agent.name}`, drivenFromMs, {
        [AgentSpanAttribute.operation]: 'invoke_agent',
        [AgentSpanAttribute.agentName]: agent.name,
        [AgentSpanAttribute.runId]: ctx.runId,
        [AgentSpanAttribute.reason]: output.reason,
        [AgentSpanAttribute.turn]: output.turns,
        [AgentSpanAttribute.inputTokens]: output.usage.inputTokens,
        [AgentSpanAttribute.outputTokens]: output.usage.outputTokens,
        [AgentSpanAttribute.costUsd]: output.usage.costUsd,
      });
    return output as unknown as JsonValue;
  };
}

/**
 * Under `thread.busy: 'interrupt'`, the message that took this turn's place before it started
 * (ADR 0049): the next message, when the thread's inbox already holds it as the turn begins. Its
 * sender found no run to cancel (the turn did not exist yet) and this check runs once the turn
 * exists, so between the two every such message is seen; a message sent later finds the run and
 * cancels it. Recorded (`thread:superseded`), so a replay decides the same. Other agents record
 * nothing and answer every message.
 */
async function supersededBy(
  ctx: TurnContext,
  agent: Agent,
  threads: ThreadReader,
  thread: { threadId: string; message: number },
): Promise<number | undefined> {
  if (agent.thread.busy !== 'interrupt') return undefined;
  const next = thread.message + 1;
  // A plain read, which the runtime's step retry may repeat (a store that blinks).
  const sent = await ctx.step(
    RecordName.superseded,
    () => threads.hasMessage(thread.threadId, next),
    readStepOptions,
  );
  return sent ? next : undefined;
}

async function runTurns(
  ctx: TurnContext,
  agent: Agent,
  toolSpecs: ToolSpec[],
  { instructions, responseFormat }: ReturnType<typeof outputAsked>,
  notify: (transition: AgentTransition) => void,
  live: LiveTextPublisher,
  run: RunMemory,
  thread: readonly Exchange[],
): Promise<RunOutput> {
  const { runId } = ctx;
  const { limits } = agent;
  const budget = WallBudget.start(ctx, limits.wallTimeMsMax);
  for (let turn = 1; ; turn++) {
    if (turn > limits.stepsMax) {
      return run.end('limit_steps', {
        error: `${limits.stepsMax} turns decided without an ending`,
      });
    }
    const turnStartMs = budget?.turnStart(ctx, turn);
    if (budget?.spentAt(turnStartMs as number)) {
      return run.end('limit_time', { error: budget.error });
    }
    let rendered: ReturnType<typeof renderMessages>;
    try {
      rendered = renderMessages(
        agent.prompt({
          instructions,
          input: run.input,
          tools: toolSpecs,
          history: run.history,
          thread,
        }),
        { tokenBudget: agent.budgetTokens },
      );
    } catch (error) {
      // Rendering is pure: the same history fails the same way on replay.
      if (!isKernelError(error, 'TOKEN_BUDGET_TOO_SMALL')) throw error;
      return run.end('context_exceeded', { error: errorMessage(error) });
    }
    let response: ModelResponse;
    const requestOf = (signal: AbortSignal): ModelRequest => ({
      messages: rendered.messages,
      tools: [...rendered.tools, failToolSpec],
      ...(responseFormat === undefined ? {} : { responseFormat }),
      signal,
      ...(agent.tags === undefined ? {} : { tags: agent.tags }),
    });
    try {
      let called = false;
      response = (await ctx.step(
        RecordName.decide(turn),
        (effect) => {
          // A retried model call (the runtime's stepRetry) announces the turn's observation once.
          if (!called && turn > 1) notify({ type: 'observed', runId, turn: turn - 1 });
          called = true;
          return spansOf(ctx).around(
            // Each attempt (a retry, a resume on another process) streams as a new attempt.
            () => callModel(agent, requestOf(effect.signal), { live, runId, turn }),
            () => ({
              name: `chat ${agent.model.id}`,
              attributes: {
                [AgentSpanAttribute.operation]: 'chat',
                [AgentSpanAttribute.agentName]: agent.name,
                [AgentSpanAttribute.runId]: runId,
                [AgentSpanAttribute.turn]: turn,
              },
            }),
            responseAttributes,
          ) as unknown as Promise<JsonValue>;
        },
        // A model call changes nothing in the world: the runtime's stepRetry may repeat it, and
        // only the answer that returns is recorded. With a wall-time limit, each attempt is cut
        // off when the budget is spent.
        budget === undefined
          ? modelStepOptions
          : { timeoutMs: budget.stepTimeoutMs(turnStartMs as number) },
      )) as unknown as ModelResponse;
      if (!called && bugStrikes('forget-decisions')) {
        // Test-only bug: the recorded decision is not trusted, the model is asked again.
        response = await callModel(agent, requestOf(new AbortController().signal), undefined);
      }
    } catch (error) {
      if (!isStepFailure(error)) throw error;
      if (budget?.spentAt(ctx.now())) return run.end('limit_time', { error: budget.error });
      return run.end('model_failed', { error: errorMessage(error) });
    }
    run.addUsage(turn, response);
    const calls = response.toolCalls;
    const giveUp = calls.find((call) => call.tool === failToolName);
    if (giveUp !== undefined) {
      const reason = (giveUp.input as { reason?: unknown }).reason;
      return run.end('goal_failed', {
        error: typeof reason === 'string' ? reason : JSON.stringify(giveUp.input),
      });
    }
    // A final answer (no tool call): the text, or, with an output schema, JSON that fits it.
    let refusedAnswer: string | undefined;
    if (
      calls.length === 0 &&
      response.invalidToolCalls.length === 0 &&
      response.text.trim() !== ''
    ) {
      if (agent.output === undefined) return run.end('goal_completed', { output: response.text });
      const answer = await checkedAnswer(agent.output, response.text);
      if (answer.ok) return run.end('goal_completed', { output: answer.value });
      if (run.refuseAnswer() >= limits.outputAttemptsMax) {
        return run.end('output_invalid', {
          error: `${limits.outputAttemptsMax} final answers did not fit the output schema; the last: ${answer.problem}`,
        });
      }
      refusedAnswer = answer.problem;
    }
    const spent = run.spent;
    if (spent.tokens >= limits.tokensMax) {
      return run.end('limit_tokens', {
        error: `${spent.tokens} tokens used, the limit is ${limits.tokensMax}`,
      });
    }
    if (spent.costUsd >= limits.costUsdMax) {
      return run.end('limit_cost', {
        error: `${spent.costUsd} USD spent, the limit is ${limits.costUsdMax}`,
      });
    }
    if (refusedAnswer !== undefined) {
      // Re-asked with what was wrong; the answer is recorded (decide:<t>), so a replay refuses it
      // the same way.
      run.finishTurn(
        turn,
        response.text,
        [],
        [
          {
            kind: 'invalid_decision',
            message: `Your final answer must be JSON only that fits the output schema; it did not: ${refusedAnswer}. Answer again with the JSON alone (or call a tool).`,
          },
        ],
      );
      continue;
    }
    const invalid: Observation[] = response.invalidToolCalls.map((call) => ({
      kind: 'invalid_decision',
      message: call.message,
    }));
    if (calls.length === 0 && invalid.length === 0) {
      run.finishTurn(
        turn,
        response.text,
        [],
        [
          {
            kind: 'invalid_decision',
            message:
              'Your answer was empty. Call a tool, answer with text to finish, or call fail_goal to give up.',
          },
        ],
      );
      continue;
    }
    for (const call of calls) {
      if (run.repeated(call) >= limits.repeatedCallsMax) {
        return run.end('loop_detected', {
          error: `'${call.tool}' was asked for with the same arguments ${limits.repeatedCallsMax} times in a row`,
        });
      }
    }
    if (calls.length === 0) {
      run.finishTurn(turn, response.text, [], invalid);
      continue;
    }
    const ended = await toolTurn(ctx, agent, run, notify, turn, response, calls, invalid, budget);
    if (ended !== undefined) return ended;
  }
}

/**
 * One model call, streamed when the provider can stream: each piece of text goes live to the
 * attempt's writer (made at its first text: a call that only calls tools makes none, and ended
 * with the call), and the call's result is the `finish` delta's response, which a provider makes
 * equal to what `generate` returns. Only that response is recorded. Without `live`, the text goes
 * nowhere.
 */
async function callModel(
  agent: Agent,
  request: ModelRequest,
  live: { live: LiveTextPublisher; runId: string; turn: number } | undefined,
): Promise<ModelResponse> {
  const { model } = agent;
  if (typeof model.stream !== 'function') return model.generate(request);
  let writer: LiveTextWriter | undefined;
  try {
    for await (const delta of model.stream(request)) {
      if (delta.type === 'text') {
        if (live !== undefined) {
          writer ??= live.live.attempt(live.runId, live.turn);
          writer.text(delta.text);
        }
      } else if (delta.type === 'finish') return delta.response;
    }
  } finally {
    writer?.end();
  }
  throw new KernelLoomError(
    ReasoningErrorCode.MODEL_BAD_RESPONSE,
    `the stream of ${model.id} ended without its finish delta`,
    { provider: model.id },
  );
}

/** Policy, approvals and tools of one turn; returns the run's ending if the turn ended it. */
async function toolTurn(
  ctx: TurnContext,
  agent: Agent,
  run: RunMemory,
  notify: (transition: AgentTransition) => void,
  turn: number,
  response: ModelResponse,
  calls: readonly ToolCall[],
  invalid: Observation[],
  budget: WallBudget | undefined,
): Promise<RunOutput | undefined> {
  const { runId } = ctx;
  const verdicts = (await recordStep(ctx, RecordName.policy(turn), (effect) => {
    // The model's answer is in the log once this record is: it was recorded before it.
    effect.onDurable(() => notify({ type: 'decided', runId, turn }));
    return spansOf(ctx).around(
      () => policyVerdicts(ctx, agent, run, turn, calls),
      () => ({
        name: `loom.policy ${agent.name}`,
        attributes: {
          [AgentSpanAttribute.agentName]: agent.name,
          [AgentSpanAttribute.runId]: runId,
          [AgentSpanAttribute.turn]: turn,
        },
      }),
      (out) => ({ [AgentSpanAttribute.verdicts]: (out as Verdict[]).map(verdictName) }),
    );
  })) as unknown as Verdict[];

  const aborted = verdicts.find((v) => v.kind === 'decided' && v.decision.kind === 'abort');
  if (aborted?.kind === 'decided' && aborted.decision.kind === 'abort') {
    return run.end('policy_aborted', { error: aborted.decision.reason });
  }

  const observations: (Observation | undefined)[] = verdicts.map(() => undefined);
  const approvals: { index: number; wait: Promise<ApprovalOutcome> }[] = [];
  const asked = verdicts.flatMap((verdict, index) =>
    verdict.kind === 'decided' && verdict.decision.kind === 'require_approval'
      ? [{ index, request: verdict.request, decision: verdict.decision }]
      : [],
  );
  // Every approval of the turn is recorded before the run waits for any, so people see them all
  // at once, and they may be decided in any order. A turn without any (most) awaits nothing here.
  const records: Approval[] =
    asked.length === 0
      ? []
      : await Promise.all(
          asked.map(({ index, request, decision }) =>
            recordApproval(
              ctx,
              `${turn}.${index}`,
              'tool_call',
              request,
              decision.reason,
              decision.expiresInMs,
            ),
          ),
        );
  for (const [n, approval] of records.entries()) {
    const { index, request, decision } = asked[n] as (typeof asked)[number];
    approvals.push({ index, wait: decideOrReask(ctx, approval, request, decision, budget) });
  }
  const allowed = new Set<number>();
  verdicts.forEach((verdict, index) => {
    if (verdict.kind === 'ask') return;
    if (verdict.kind === 'invalid') {
      observations[index] = {
        kind: 'invalid_decision',
        callId: verdict.callId,
        message: verdict.message,
      };
    } else if (verdict.decision.kind === 'deny') {
      observations[index] = {
        kind: 'denied',
        callId: verdict.callId,
        reason: verdict.decision.reason,
      };
    } else if (verdict.decision.kind === 'allow') {
      allowed.add(index);
    }
  });
  const decided: ApprovalOutcome[] =
    approvals.length === 0 ? [] : await Promise.all(approvals.map((a) => a.wait));
  for (const [n, outcome] of decided.entries()) {
    const index = approvals[n]?.index as number;
    const verdict = verdicts[index] as Verdict;
    if (outcome.kind === 'time_up') return run.end('limit_time', { error: budget?.error ?? '' });
    if (outcome.kind === 'expired') {
      return run.end('approval_expired', {
        error: `the approval of call ${verdict.callId} expired`,
      });
    }
    if (outcome.kind === 'rejected') {
      if (outcome.endRun) return run.end('approval_rejected', { error: outcome.why });
      observations[index] = { kind: 'denied', callId: verdict.callId, reason: outcome.why };
    } else {
      allowed.add(index);
    }
  }

  const questions = verdicts.flatMap((verdict, index) =>
    verdict.kind === 'ask' ? [{ index, callId: verdict.callId, question: verdict.question }] : [],
  );
  if (questions.length > 0) {
    // All questions of the turn are recorded before the run waits for any answer.
    const recorded = await Promise.all(
      questions.map(({ index, callId, question }) =>
        recordStep(ctx, RecordName.questionStep(`${turn}.${index}`), (effect) => ({
          id: `${runId}~${turn}.${index}`,
          runId,
          turn,
          callId,
          question,
          askedAtMs: effect.nowMs(),
        })),
      ),
    );
    // A question has no expiry; with a wall-time limit, the wait ends at the budget.
    const answers = await Promise.all(
      questions.map(({ index }, n) =>
        ctx.waitForSignal(
          RecordName.answerSignal(`${turn}.${index}`),
          waitBound(budget, (recorded[n] as { askedAtMs: number }).askedAtMs, null).timeoutMs,
          'question',
        ),
      ),
    );
    for (const [n, { index, callId }] of questions.entries()) {
      const answer = answers[n];
      if (answer?.received === false) return run.end('limit_time', { error: budget?.error ?? '' });
      const payload = answer?.received === true ? answer.payload : null;
      observations[index] = { kind: 'tool_result', callId, content: payload };
    }
  }

  const failedInOrder: boolean[] = [];
  if (allowed.size > 0) {
    let fresh = false;
    // A step, not a record: its start is the durable point between the verdicts and the calls,
    // so a crash there runs the calls without asking anyone (ADR 0066).
    await markStep(ctx, RecordName.start(String(turn)), () => {
      notify({ type: 'policy_decided', runId, turn });
      fresh = true;
      return null;
    });
    const indexes = [...allowed].sort((a, b) => a - b);
    const calls = indexes.map((index) => {
      const verdict = verdicts[index] as Extract<Verdict, { kind: 'decided' }>;
      const tool = agent.tools.get(verdict.request.tool);
      // The policy allows only tools the agent has; a recorded verdict (a replay, a resume
      // after a deploy) can name one it no longer has: the code no longer fits the log.
      if (tool === undefined) throw toolGone(agent, verdict.request.tool, turn);
      return { tool, request: verdict.request, key: `${turn}.${index}` };
    });
    const firsts = await Promise.all(
      calls.map(({ tool, request, key }) =>
        runCall(ctx, notify, tool, request, key, () => fresh, agent.toolRetry),
      ),
    );
    // Calls a crash interrupted are resolved one at a time, in call order, once every call of
    // the turn has settled: the operations they record (approvals, their waits, re-runs) then
    // come in the same order on every replay, whichever call's step settled first.
    const outcomes: CallOutcome[] = [];
    for (const [n, first] of firsts.entries()) {
      const { tool, request, key } = calls[n] as (typeof calls)[number];
      const outcome =
        first.kind === 'interrupted'
          ? await resolveInterrupted(ctx, notify, tool, request, key, budget)
          : first;
      if (outcome.kind === 'ended') return run.end(outcome.reason, { error: outcome.error });
      outcomes.push(outcome);
    }
    for (const [n, outcome] of outcomes.entries()) {
      if (outcome.kind === 'observed') observations[indexes[n] as number] = outcome.observation;
    }
    for (const [n, outcome] of outcomes.entries()) {
      if (outcome.kind === 'observed' && outcome.failed !== undefined) {
        failedInOrder[indexes[n] as number] = outcome.failed;
      }
    }
  }
  run.finishTurn(turn, response.text, calls, [...(observations as Observation[]), ...invalid]);
  for (const failed of failedInOrder) {
    if (failed === undefined) continue;
    if (run.toolOutcome(failed) >= agent.limits.consecutiveToolFailuresMax) {
      return run.end('limit_tool_failures', {
        error: `${agent.limits.consecutiveToolFailuresMax} tool calls failed in a row`,
      });
    }
  }
  return undefined;
}

/** The policy's verdicts on a turn's calls (inside the recorded policy step). */
async function policyVerdicts(
  ctx: TurnContext,
  agent: Agent,
  run: RunMemory,
  turn: number,
  calls: readonly ToolCall[],
): Promise<JsonValue> {
  const { runId } = ctx;
  const out: Verdict[] = [];
  for (const call of calls) {
    if (agent.askHuman && call.tool === askHumanToolName) {
      const question = (call.input as { question?: unknown }).question;
      out.push(
        typeof question === 'string' && question.trim() !== ''
          ? { callId: call.callId, kind: 'ask', question }
          : {
              callId: call.callId,
              kind: 'invalid',
              message: `${askHumanToolName} needs { question: string }, a question that is not empty`,
            },
      );
      continue;
    }
    const tool = agent.tools.get(call.tool);
    if (tool === undefined) {
      out.push({
        callId: call.callId,
        kind: 'invalid',
        message: `there is no tool '${call.tool}'`,
      });
      continue;
    }
    const problem = await tool.checkInput(call.input);
    if (problem !== undefined) {
      out.push({
        callId: call.callId,
        kind: 'invalid',
        message: `the arguments of '${call.tool}' do not fit its input schema: ${problem}`,
      });
      continue;
    }
    const unhashed = {
      runId,
      turn,
      callId: call.callId,
      tool: tool.name,
      sideEffect: tool.sideEffect,
      input: call.input,
    };
    const request: ToolRequest = { ...unhashed, requestHash: hashOf(unhashed) };
    out.push({
      callId: call.callId,
      kind: 'decided',
      request,
      decision: decide(agent, request, run, turn),
    });
  }
  return out as unknown as JsonValue;
}

/** `NON_DETERMINISM`: the log's allowed call names a tool this agent no longer has. */
function toolGone(agent: Agent, tool: string, turn: number): KernelLoomError {
  return new KernelLoomError(
    KernelErrorCode.NON_DETERMINISM,
    `the log's turn ${turn} calls tool '${tool}', which agent '${agent.name}' no longer has ` +
      `(renamed or removed since the run was recorded; it has ${[...agent.tools.keys()].map((t) => `'${t}'`).join(', ') || 'no tools'}): ` +
      'keep the old tool until the runs that used it have ended, or deploy the change as a new agent version',
    { agent: agent.name, tool, turn },
  );
}

/** The policy's verdict; a policy that throws or answers nonsense aborts the run (typed), never crashes it. */
function decide(agent: Agent, request: ToolRequest, run: RunMemory, turn: number): PolicyDecision {
  let decision: PolicyDecision;
  try {
    decision = agent.policy(Object.freeze({ ...request }), run.view(turn));
  } catch (error) {
    return { kind: 'abort', reason: `the policy threw: ${errorMessage(error)}` };
  }
  switch (decision?.kind) {
    case 'allow':
      return { kind: 'allow' };
    case 'deny':
    case 'abort':
      return { kind: decision.kind, reason: String(decision.reason) };
    case 'require_approval':
      return approvalDecision(decision);
    default:
      return {
        kind: 'abort',
        reason: `the policy answered ${JSON.stringify(decision)}, not a decision`,
      };
  }
}

/** A `require_approval` as recorded: only the fields given, `onExpire` and `asksMax` checked. */
function approvalDecision(
  decision: Extract<PolicyDecision, { kind: 'require_approval' }>,
): PolicyDecision {
  const { onExpire, asksMax } = decision;
  if (onExpire !== undefined && onExpire !== 'end' && onExpire !== 're-ask') {
    return {
      kind: 'abort',
      reason: `the policy answered onExpire ${JSON.stringify(onExpire)}: it is 'end' or 're-ask'`,
    };
  }
  if (asksMax !== undefined && (!Number.isSafeInteger(asksMax) || asksMax < 1)) {
    return {
      kind: 'abort',
      reason: `the policy answered asksMax ${JSON.stringify(asksMax)}: it is a whole number ≥ 1`,
    };
  }
  return {
    kind: 'require_approval',
    reason: String(decision.reason),
    ...(decision.expiresInMs === undefined ? {} : { expiresInMs: decision.expiresInMs }),
    ...(onExpire === undefined ? {} : { onExpire }),
    ...(asksMax === undefined ? {} : { asksMax }),
  };
}

/**
 * Waits for the decision on a policy's approval. When it expires and the policy said
 * `onExpire: 're-ask'`, asks again (`<key>.a<n>`: a new id, the same `requestHash`, a new
 * expiry) until `asksMax` asks in all have expired.
 */
async function decideOrReask(
  ctx: TurnContext,
  first: Approval,
  request: ToolRequest,
  decision: Extract<PolicyDecision, { kind: 'require_approval' }>,
  budget: WallBudget | undefined,
): Promise<ApprovalOutcome> {
  const asks = decision.onExpire === 're-ask' ? (decision.asksMax ?? asksMaxDefault) : 1;
  const key = first.id.slice(first.id.lastIndexOf('~') + 1);
  let approval = first;
  for (let ask = 2; ; ask++) {
    const outcome = await awaitDecision(ctx, approval, budget);
    if (outcome.kind !== 'expired' || ask > asks) return outcome;
    approval = await recordApproval(
      ctx,
      `${key}.a${ask}`,
      'tool_call',
      request,
      decision.reason,
      decision.expiresInMs,
      { first, previous: approval, ask },
    );
  }
}

/**
 * One allowed call's first attempt: the tool step, or the agent tool's child run. `interrupted`
 * when a crash left a non-rerunnable call's outcome unknown ({@link resolveInterrupted} asks a
 * person what to do).
 */
function runCall(
  ctx: TurnContext,
  notify: (transition: AgentTransition) => void,
  tool: Tool<never, JsonValue>,
  request: ToolRequest,
  key: string,
  markedHere: () => boolean,
  agentRetry: ToolRetry | false,
): Promise<CallOutcome | { kind: 'interrupted' }> {
  // Not an async function: it only picks the call's kind (no frame and promise of its own); a
  // throw still reaches the caller as a rejection, after the turn's other calls started.
  try {
    const child = childAgentCall(tool);
    if (child !== undefined) return runChildCall(ctx, notify, child, request, key, markedHere);
    return toolAttempt(ctx, notify, tool, request, key, key, markedHere, agentRetry);
  } catch (error) {
    return Promise.reject(error);
  }
}

/** One attempt's tool step (`tool:<attemptKey>`). */
async function toolAttempt(
  ctx: TurnContext,
  notify: (transition: AgentTransition) => void,
  tool: Tool<never, JsonValue>,
  request: ToolRequest,
  key: string,
  attemptKey: string,
  isFresh: () => boolean,
  agentRetry: ToolRetry | false = false,
): Promise<CallOutcome | { kind: 'interrupted' }> {
  const { runId } = ctx;
  const rerunnable = isRerunnable(tool.sideEffect);
  let result: ToolStepResult;
  try {
    result = (await ctx.step(
      RecordName.tool(attemptKey),
      async (effect) => {
        // The start mark was replayed from the log, yet this step has no result: a previous
        // process reached this call and died before recording what it did.
        if (!isFresh() && !rerunnable && !bugStrikes('rerun-interrupted-tool')) {
          return { interrupted: true };
        }
        notify({
          type: 'tool_started',
          runId,
          turn: request.turn,
          callId: request.callId,
          tool: tool.name,
        });
        const output = await spansOf(ctx).around(
          () =>
            tool.run(
              request.input as never,
              new ToolCallContext(runId, request.turn, request.callId, `${runId}/${key}`, effect),
            ),
          () => ({
            name: `execute_tool ${tool.name}`,
            attributes: {
              [AgentSpanAttribute.operation]: 'execute_tool',
              [AgentSpanAttribute.toolName]: tool.name,
              [AgentSpanAttribute.toolCallId]: request.callId,
              [AgentSpanAttribute.sideEffect]: tool.sideEffect,
              [AgentSpanAttribute.runId]: runId,
              [AgentSpanAttribute.turn]: request.turn,
            },
          }),
        );
        return { output: output ?? null };
      },
      // The retry follows the side-effect class, never the runtime's stepRetry: a call that may
      // have changed the world (thrown after its effect, or past its timeout) is not repeated.
      {
        timeoutMs: tool.timeoutMs,
        idempotent: rerunnable,
        retry: rerunnable ? (tool.retry ?? agentRetry) : false,
      },
    )) as unknown as ToolStepResult;
  } catch (error) {
    if (!isStepFailure(error)) throw error;
    return {
      kind: 'observed',
      observation: { kind: 'tool_error', callId: request.callId, message: errorMessage(error) },
      failed: true,
    };
  }
  if ('output' in result) {
    return {
      kind: 'observed',
      observation: { kind: 'tool_result', callId: request.callId, content: result.output },
      failed: false,
    };
  }
  return { kind: 'interrupted' };
}

/**
 * A non-rerunnable call whose outcome a crash left unknown: the `interrupted_side_effect`
 * approval, and what the person resolved (re-run it, as a new attempt `<key>.r<n>` with its own
 * start mark, which a crash may interrupt again; record its outcome; or end the run).
 */
async function resolveInterrupted(
  ctx: TurnContext,
  notify: (transition: AgentTransition) => void,
  tool: Tool<never, JsonValue>,
  request: ToolRequest,
  key: string,
  budget: WallBudget | undefined,
): Promise<CallOutcome> {
  for (let attempt = 1; ; attempt++) {
    const attemptKey = attempt === 1 ? key : `${key}.r${attempt}`;
    const approval = await recordApproval(
      ctx,
      `${attemptKey}.i`,
      'interrupted_side_effect',
      request,
      `'${tool.name}' (${tool.sideEffect}) was interrupted mid-call: its outcome is unknown. Approve with resolution { kind: 'rerun' } to call it again, or { kind: 'record', output } to record what it did; reject to end the run.`,
      undefined,
    );
    const outcome = await awaitDecision(ctx, approval, budget);
    if (outcome.kind === 'time_up') {
      return { kind: 'ended', reason: 'limit_time', error: budget?.error ?? '' };
    }
    if (outcome.kind === 'expired') {
      return { kind: 'ended', reason: 'approval_expired', error: 'the approval expired' };
    }
    if (outcome.kind === 'rejected') {
      return { kind: 'ended', reason: 'approval_rejected', error: outcome.why };
    }
    const { resolution } = outcome;
    if (resolution?.kind !== 'rerun' && resolution?.kind !== 'record') {
      // awaitDecision refuses an approval of an interrupted call without a resolution.
      throw new Error(`broken invariant: approval ${approval.id} resolved without a resolution`);
    }
    if (resolution.kind === 'record') {
      return {
        kind: 'observed',
        observation: {
          kind: 'tool_result',
          callId: request.callId,
          content: resolution.output,
        },
        failed: undefined,
      };
    }
    const rerunKey = `${key}.r${attempt + 1}`;
    let marked = false;
    await markStep(ctx, RecordName.start(rerunKey), () => {
      marked = true;
      return null;
    });
    const rerun = await toolAttempt(ctx, notify, tool, request, key, rerunKey, () => marked);
    if (rerun.kind !== 'interrupted') return rerun;
  }
}

async function recordApproval(
  ctx: TurnContext,
  key: string,
  kind: ApprovalKind,
  request: ToolRequest,
  reason: string,
  expiresInMs: number | undefined,
  reask?: { first: Approval; previous: Approval; ask: number },
): Promise<Approval> {
  const id = approvalId(ctx.runId, key);
  return (await recordStep(ctx, RecordName.approvalStep(key), (effect) => {
    const requestedAtMs = effect.nowMs();
    const approval = {
      id,
      runId: ctx.runId,
      kind,
      request,
      // A re-ask binds to the first ask's hash: the request is the same one.
      requestHash: reask?.first.requestHash ?? hashOf({ id, kind, request }),
      reason,
      requestedAtMs,
      expiresAtMs: expiresInMs === undefined ? null : requestedAtMs + expiresInMs,
      status: 'pending',
      ...(reask === undefined ? {} : { ask: reask.ask, previousId: reask.previous.id }),
    };
    return approval as unknown as JsonValue;
  })) as unknown as Approval;
}

async function awaitDecision(
  ctx: TurnContext,
  approval: Approval,
  budget: WallBudget | undefined,
): Promise<ApprovalOutcome> {
  const key = approval.id.slice(approval.id.lastIndexOf('~') + 1);
  // Until the approval's expiry or the run's wall-time limit, whichever is first: one durable timer.
  const { timeoutMs, budgetFirst } = waitBound(
    budget,
    approval.requestedAtMs,
    approval.expiresAtMs,
  );
  const wait = await ctx.waitForSignal(RecordName.approvalSignal(key), timeoutMs, 'approval');
  if (!wait.received) return budgetFirst ? { kind: 'time_up' } : { kind: 'expired' };
  const decision = wait.payload as unknown as ApprovalDecision;
  // Both times are recorded, so replay judges the same: a decision at or after the expiry is none.
  const { expiresAtMs } = approval;
  if (
    expiresAtMs !== null &&
    typeof decision?.decidedAtMs === 'number' &&
    decision.decidedAtMs >= expiresAtMs
  ) {
    return { kind: 'expired' };
  }
  const note = decision.note === undefined ? '' : `: ${decision.note}`;
  // Never run a request nobody approved: a decision about another request, or an interrupted
  // call approved without saying how to resolve it, rejects this one.
  const refused = decisionRefusal(approval, decision);
  if (refused !== undefined) return { kind: 'rejected', endRun: true, why: refused };
  if (decision.decision === 'approved')
    return { kind: 'approved', resolution: decision.resolution };
  return {
    kind: 'rejected',
    endRun: decision.endRun === true || approval.kind === 'interrupted_side_effect',
    why: `rejected by ${decision.by}${note}`,
  };
}

/**
 * What a turn asks of the model for an agent with an output schema: the instructions with the
 * schema appended (every prompt, custom ones too, gets them through `PromptParts.instructions`),
 * and the provider's structured output (`responseFormat`) where it has it.
 */
function outputAsked(agent: Agent): {
  instructions: string;
  responseFormat: ModelRequest['responseFormat'];
} {
  if (agent.output === undefined)
    return { instructions: agent.instructions, responseFormat: undefined };
  const schema = agent.output.jsonSchema;
  return {
    instructions:
      `${agent.instructions}\n\nWhen you answer without calling a tool, answer with JSON only ` +
      `(no prose, no code fence) that fits this JSON Schema:\n${JSON.stringify(schema)}`,
    responseFormat: { type: 'json', schema, name: 'answer' },
  };
}

/**
 * A final answer checked against the output schema: the JSON value (a code fence around it is
 * tolerated), or what is wrong with it. Pure: a replay checks the recorded answer the same way.
 */
async function checkedAnswer(
  output: NonNullable<Agent['output']>,
  text: string,
): Promise<{ ok: true; value: JsonValue } | { ok: false; problem: string }> {
  const fenced = /^\s*```(?:json)?\s*\n([\s\S]*?)\n?```\s*$/.exec(text);
  let value: JsonValue;
  try {
    value = JSON.parse(fenced === null ? text : (fenced[1] as string)) as JsonValue;
  } catch (error) {
    return { ok: false, problem: `it is not JSON (${(error as Error).message})` };
  }
  const problem = await output.check(value);
  return problem === undefined ? { ok: true, value } : { ok: false, problem };
}

/** `signal` of every ToolCallContext: one accessor, so their objects share one shape. */
let toolCallContextSignal: PropertyDescriptor;

/**
 * What a tool's `run` gets: one class, so the object keeps fast properties (a literal with a
 * getter is a dictionary); `signal` is read when the tool reads it, and the step makes its
 * AbortSignal on that first read.
 */
class ToolCallContext implements ToolContext {
  /**
   * An own enumerable accessor, one getter for every object of the class (so they share one
   * shape), called only when read: a spread (`{ ...ctx }`, as middleware pass contexts on)
   * carries it.
   */
  declare readonly signal: AbortSignal;
  static {
    toolCallContextSignal = {
      get(this: ToolCallContext): AbortSignal {
        return this.#effect.signal;
      },
      enumerable: true,
      configurable: true,
    };
  }
  readonly #effect: { readonly signal: AbortSignal };
  constructor(
    readonly runId: string,
    readonly turn: number,
    readonly callId: string,
    readonly idempotencyKey: string,
    effect: { readonly signal: AbortSignal },
  ) {
    this.#effect = effect;
    Object.defineProperty(this, 'signal', toolCallContextSignal);
  }
}

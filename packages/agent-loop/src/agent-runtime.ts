import {
  EventType,
  isLoomError as isKernelError,
  type JsonValue,
  type LiveStore,
  type StoredEvent,
  type StoredSignal,
} from '@loom/event-runtime';
import type { Runtime } from '@loom/workflow-runtime';
import type { Tracer } from '@opentelemetry/api';
import type { AgentStream, StreamOptions } from './agent-event.js';
import { agentThread, type ThreadPort } from './agent-thread.js';
import { childAgentCall } from './agent-tool.js';
import {
  type Approval,
  type ApprovalDecision,
  decisionRefusal,
  type Resolution,
} from './approval.js';
import { type Agent, agentFlowName } from './define-agent.js';
import type { ToolIsolate } from './define-tool.js';
import { AgentErrorCode, LoomError } from './errors.js';
import { AgentEventStream } from './internal/agent-event-stream.js';
import { agentRun, RecordName, type ThreadReader } from './internal/agent-flow.js';
import { AgentSpans } from './internal/agent-spans.js';
import { FlowHost, type HostedFlow, hostedFlow } from './internal/flow-host.js';
import { LiveTextPublisher } from './internal/live-text-writer.js';
import { RunCallsHandoff } from './internal/run-calls.js';
import { callOfEvent, cancelledResult, type RunOutput } from './internal/run-memory.js';
import {
  messageKey,
  threadFlowName,
  threadFlowVersion,
  threadMessageSignal,
  threadRun,
} from './internal/thread-flow.js';
import { threadHistory } from './internal/thread-history.js';
import type { Answer, Question } from './question.js';
import type { ModelCallUsage, RunResult } from './run-result.js';
import { parseCursor } from './stream-cursor.js';
import type { AgentThread, SendOptions, ThreadTurn } from './thread.js';
import type { AgentTransition } from './transition.js';

/** What `createAgentRuntime` takes. */
export interface AgentRuntimeOptions {
  /** The flow runtime the runs are flows of (any store: memory, SQLite, Postgres). */
  flows: Runtime;
  /** Every agent this process may start or resume. */
  agents: readonly Agent[];
  /** Called synchronously for each durable transition of a turn (see {@link AgentTransition}). */
  onTransition?: (transition: AgentTransition) => void;
  /**
   * An OpenTelemetry tracer (`trace.getTracer('my-service')`): spans named by the GenAI semantic
   * conventions for each model call (`chat <model>`: provider, model, tokens, finish reason,
   * `loom.cost_usd`), each tool call (`execute_tool <tool>`), each turn's policy
   * (`loom.policy <agent>`: its verdicts) and, from the process that ends a run, the run
   * (`invoke_agent <agent>`: its part of the run, ending, turns, tokens and cost). Each carries
   * `loom.run_id` and `loom.turn`. Only live work makes a span: a replay or a resume never
   * repeats one. `@opentelemetry/api` (an optional peer) parents them under the caller's active
   * span.
   */
  tracer?: Tracer;
  /**
   * Where a model's text goes while it streams, for followers in other processes (ADR 0050).
   * Default: the flow runtime's backend's live channel (`flows.live`); `null`: this process's
   * followers only. A runtime on stores without one streams to this process only.
   */
  live?: LiveStore | null;
}

/** A started run. */
export interface AgentRun<O = JsonValue> {
  readonly runId: string;
  /** How the run ended; waits through approvals and restarts (the run may finish on another process). */
  result(): Promise<RunResult<O>>;
}

/** A person's approval. */
export interface ApproveOptions {
  by: string;
  note?: string;
  /**
   * Required for an `interrupted_side_effect` approval (`RESOLUTION_REQUIRED` without it): run
   * the call again (`{ kind: 'rerun' }`) or record its outcome (`{ kind: 'record', output }`).
   * Refused on a `tool_call` approval (`INVALID_RESOLUTION`).
   */
  resolution?: Resolution;
  /** The hash of the request the person looked at; refused with `APPROVAL_REQUEST_CHANGED` if it is not the pending one. */
  requestHash?: string;
}

/** A person's rejection. */
export interface RejectOptions {
  by: string;
  note?: string;
  /** End the run with `approval_rejected` instead of telling the model the call was denied. */
  endRun?: boolean;
  requestHash?: string;
}

/** Log events read per page when a result gathers its calls' usage: 1 000. */
const callsReadPageSize = 1_000;

/**
 * Starts, follows and steers agent runs on a flow runtime. Every process that may run or resume
 * an agent creates one with the same agents; approvals, rejections and cancels work from any
 * process that reaches the same store.
 */
export class AgentRuntime {
  private readonly host: FlowHost;
  private readonly flows = new Map<string, HostedFlow>();
  private readonly live: LiveTextPublisher;
  private readonly handoff = new RunCallsHandoff();
  private readonly isolated = new Set<ToolIsolate>();
  private readonly threadPort: ThreadPort;

  constructor(options: AgentRuntimeOptions) {
    this.host = new FlowHost(options.flows);
    this.live = new LiveTextPublisher(
      options.live === null ? undefined : (options.live ?? options.flows.live),
      options.flows.clock,
    );
    if (options.tracer !== undefined && typeof options.tracer?.startSpan !== 'function') {
      throw new LoomError(
        AgentErrorCode.INVALID_ARGUMENT,
        'tracer must be an OpenTelemetry tracer (trace.getTracer(name))',
        {},
      );
    }
    const spans = new AgentSpans(options.tracer);
    const notify = options.onTransition ?? (() => {});
    const flowOf = (flowName: string) => this.flows.get(flowName);
    const host = this.host;
    const threads: ThreadReader = {
      history: (threadId, message, budgetTokens) =>
        threadHistory((runId) => host.read(runId), threadId, message, budgetTokens),
      hasMessage: async (threadId, message) =>
        (await host.readSignals(threadId)).some(
          (signal) =>
            signal.name === threadMessageSignal && signal.idempotencyKey === messageKey(message),
        ),
    };
    for (const agent of withChildAgents(options.agents)) {
      const name = agentFlowName(agent);
      if (this.flows.has(name)) {
        throw new LoomError(
          AgentErrorCode.INVALID_ARGUMENT,
          `two agents are named '${agent.name}'`,
          {
            agent: agent.name,
          },
        );
      }
      const flow = hostedFlow(
        name,
        agent.version,
        agentRun(agent, notify, this.live, this.handoff, threads, spans),
        flowOf,
      );
      this.flows.set(name, flow);
      this.host.register(flow);
      // Its threads: each a long-lived execution that runs one turn (a run of this flow) per message.
      const thread = hostedFlow(
        threadFlowName(agent.name),
        threadFlowVersion,
        threadRun(name),
        flowOf,
      );
      this.flows.set(thread.name, thread);
      this.host.register(thread);
      for (const tool of agent.tools.values()) {
        if (tool.isolate !== undefined) this.isolated.add(tool.isolate);
      }
    }
    this.threadPort = {
      start: (flow, input, runId) => host.start(flow, input, runId),
      status: (runId) => host.status(runId),
      read: (runId) => host.read(runId),
      readPage: (runId, fromSequence, limit) => host.readPage(runId, fromSequence, limit),
      readSignals: (runId) => host.readSignals(runId),
      signal: (runId, name, payload, key) => host.signal(runId, name, payload, key),
      cancel: (runId, reason) => host.cancel(runId, reason),
      nowMs: () => host.nowMs(),
      stream: (runId) => this.stream(runId),
    };
  }

  /**
   * A conversation with `agent` (ADR 0049), addressed by `threadId`: `send(text)` records the
   * user's message durably and returns its turn (a run of the agent, `<threadId>/<n>`, whose
   * `result().output` is the reply and which `stream` follows); each turn's prompt has the
   * thread's earlier exchanges, trimmed to the budget, oldest first. A message that arrives while
   * a turn runs is queued, rejected or interrupts it, as the agent's `thread.busy` says. The
   * thread exists once its first message is sent; any process on the store may send to it.
   *
   * Error codes: `INVALID_ARGUMENT` (a thread id over 190 characters or with '/'); from `send`:
   * `THREAD_BUSY`, `THREAD_FULL`, `INVALID_ARGUMENT` (the id names another agent's thread),
   * `AGENT_NOT_REGISTERED`, store errors.
   *
   * @example
   * const chat = agents.thread(support, 'chat-42');
   * const turn = await chat.send('Where is my order A-17?');
   * console.log((await turn.result()).output);   // the reply
   * console.log(await chat.messages());          // user, assistant, tool, assistant …
   */
  thread<O>(agent: Agent<O>, threadId: string): AgentThread<O> {
    const flow = this.flows.get(threadFlowName(agent.name));
    if (flow === undefined || this.flows.get(agentFlowName(agent)) === undefined) {
      throw new LoomError(
        AgentErrorCode.AGENT_NOT_REGISTERED,
        `agent '${agent.name}' is not registered with this agent runtime: pass it in createAgentRuntime({ agents })`,
        { agent: agent.name },
      );
    }
    return agentThread(this.threadPort, agent, flow, threadId);
  }

  /**
   * Sends a user's message to a thread of `agent`: `agents.thread(agent, threadId).send(text)`.
   *
   * Error codes: those of {@link AgentRuntime.thread}.
   *
   * @example
   * const turn = await agents.send(support, 'chat-42', 'And when will it arrive?');
   * for await (const event of agents.stream(turn)) if (event.type === 'text_delta') process.stdout.write(event.text);
   */
  send<O>(
    agent: Agent<O>,
    threadId: string,
    text: string,
    options?: SendOptions,
  ): Promise<ThreadTurn<O>> {
    return this.thread(agent, threadId).send(text, options);
  }

  /**
   * Spawns the warm children of every isolated tool of the registered agents (`isolate.warm`),
   * and waits until each has loaded its module: the first calls skip the spawn. Call it at boot.
   *
   * Error codes: `TOOL_ISOLATE_MODULE_INVALID`, `TOOL_ISOLATE_CRASHED` (a module that cannot load).
   *
   * @example
   * const agents = createAgentRuntime({ flows, agents: [support] });
   * await agents.warm();
   */
  async warm(): Promise<void> {
    await Promise.all([...this.isolated].map((isolate) => isolate.warm()));
  }

  /**
   * Kills the child processes of every isolated tool of the registered agents, warm or running a
   * call, and waits until they are gone. Call it after `flows.shutdown()`; a call still running
   * ends as a `TOOL_ISOLATE_CRASHED` tool error. (A child also exits by itself when this process
   * dies.)
   */
  async close(): Promise<void> {
    await Promise.all([...this.isolated].map((isolate) => isolate.close()));
  }

  /**
   * Starts a run of `agent` (idempotent on `runId`: a second start returns the same run).
   *
   * Error codes: `AGENT_NOT_REGISTERED`, and the runtime's (`INVALID_INPUT`, store errors).
   *
   * @example
   * const run = await agents.start(triage, 'Ticket 4521: refund missing');
   * const result = await run.result(); // { reason: 'goal_completed', output: '…', turns: 2, … }
   */
  async start<O>(
    agent: Agent<O>,
    input: JsonValue,
    options: { runId?: string } = {},
  ): Promise<AgentRun<O>> {
    const flow = this.flows.get(agentFlowName(agent));
    if (flow === undefined) {
      throw new LoomError(
        AgentErrorCode.AGENT_NOT_REGISTERED,
        `agent '${agent.name}' is not registered with this agent runtime: pass it in createAgentRuntime({ agents })`,
        { agent: agent.name },
      );
    }
    const started = await this.host.start(flow, input, options.runId);
    // The output's type is the agent's (checked against its output schema when it has one).
    return this.runOf(started.runId, started.result) as AgentRun<O>;
  }

  /** Starts a run and waits for its end. */
  async run<O>(
    agent: Agent<O>,
    input: JsonValue,
    options: { runId?: string } = {},
  ): Promise<RunResult<O>> {
    return (await this.start(agent, input, options)).result();
  }

  /** A handle on a run started elsewhere (or before a restart). */
  attach(runId: string): AgentRun {
    return this.runOf(runId, this.host.attach(runId));
  }

  /**
   * Follows a run by id, from this process or any other on the same store: first the events of
   * its log (`replayed: true`), then live ones as they are appended (`replayed: false`), each log
   * event once and in order, ending after `finished`. The turn being written also yields its
   * model's text as it streams (`text_delta`, coalesced, never journaled), whichever process
   * drives the run, through the backend's live channel (ADR 0050). A run that does not exist yet
   * is waited for. Leave the loop (or `close()`) to stop following; `{ after: stream.cursor }`
   * goes on where a stream stopped, without an event or a piece of text twice.
   *
   * Error codes: `INVALID_ARGUMENT` (an `after` that is not a cursor); thrown by the iteration:
   * `RUN_FAILED` (the run's flow failed without an agent result), store errors.
   *
   * @example
   * for await (const event of agents.stream('ticket-981')) {
   *   if (event.type === 'text_delta') process.stdout.write(event.text);
   *   if (event.type === 'finished') console.log(event.result.reason, event.result.usage);
   * }
   */
  stream(run: string | AgentRun | ThreadTurn, options: StreamOptions = {}): AgentStream {
    const runId = typeof run === 'string' ? run : run.runId;
    const after = options.after === undefined ? undefined : parseCursor(options.after);
    const host = this.host;
    return new AgentEventStream(
      runId,
      {
        clock: host.clock,
        live: this.live.local,
        store: this.live.store,
        read: (id, fromSequence, limit) => host.readPage(id, fromSequence, limit),
        subscribe: (id, fromSequence, handler, onError) =>
          host.subscribe(id, fromSequence, handler, onError),
      },
      after,
    );
  }

  /**
   * The run's approvals, pending and decided, from its log and inbox.
   *
   * Error codes: `RUN_NOT_FOUND`, store errors.
   */
  async approvals(runId: string): Promise<Approval[]> {
    const events = await this.host.read(runId);
    if (events.length === 0) {
      throw new LoomError(AgentErrorCode.RUN_NOT_FOUND, `no run '${runId}' in this store`, {
        runId,
      });
    }
    return approvalsOf(events, await this.host.readSignals(runId));
  }

  /**
   * Approves a pending approval, from any process. The first decision sent wins; the run resumes
   * on a process that runs the agent (its timer poll picks the run up).
   *
   * An `interrupted_side_effect` approval (a crash left a call's outcome unknown) must say how it
   * resolves: `resolution: { kind: 'rerun' }` or `{ kind: 'record', output }`.
   *
   * Error codes: `APPROVAL_NOT_FOUND`, `APPROVAL_NOT_PENDING` (decided, expired, or its run has
   * ended: `fields.runStatus`), `APPROVAL_EXPIRED` (at or after its expiry: nothing sent),
   * `APPROVAL_REQUEST_CHANGED`, `RESOLUTION_REQUIRED`, `INVALID_RESOLUTION`, `INVALID_ARGUMENT`,
   * `RUN_NOT_FOUND`, store errors.
   *
   * @example
   * await agents.approve(approval.id, { by: 'ana@example.com', note: 'customer verified' });
   * await agents.approve(interrupted.id, { by: 'ana@example.com', resolution: { kind: 'rerun' } });
   */
  async approve(approvalId: string, options: ApproveOptions): Promise<void> {
    const approval = await this.pending(approvalId, options);
    if (approval.kind === 'interrupted_side_effect' && options.resolution === undefined) {
      throw new LoomError(
        AgentErrorCode.RESOLUTION_REQUIRED,
        `approval '${approvalId}' is about a call a crash interrupted: its outcome is unknown, so say how to resolve it: resolution { kind: 'rerun' } calls the tool again, { kind: 'record', output } records what it did (loom approve --rerun | --record <json>); or reject it to end the run`,
        { approvalId, kind: approval.kind },
      );
    }
    if (options.resolution !== undefined) {
      const kind = options.resolution.kind;
      if (approval.kind !== 'interrupted_side_effect' || (kind !== 'rerun' && kind !== 'record')) {
        throw new LoomError(
          AgentErrorCode.INVALID_RESOLUTION,
          approval.kind === 'interrupted_side_effect'
            ? `a resolution is { kind: 'rerun' } or { kind: 'record', output }, got ${JSON.stringify(options.resolution)}`
            : `approval ${approvalId} is a tool_call approval: it takes no resolution (only interrupted_side_effect approvals do)`,
          { approvalId, kind: approval.kind },
        );
      }
    }
    await this.decide(approval, {
      decision: 'approved',
      by: options.by,
      decidedAtMs: this.host.nowMs(),
      requestHash: approval.requestHash,
      ...(options.note === undefined ? {} : { note: options.note }),
      ...(options.resolution === undefined ? {} : { resolution: options.resolution }),
    });
  }

  /**
   * Rejects a pending approval, from any process. A rejected `tool_call` becomes a denial the
   * model sees (or ends the run with `endRun`); a rejected `interrupted_side_effect` ends the run
   * with `approval_rejected`.
   *
   * Error codes: those of {@link AgentRuntime.approve}.
   */
  async reject(approvalId: string, options: RejectOptions): Promise<void> {
    const approval = await this.pending(approvalId, options);
    await this.decide(approval, {
      decision: 'rejected',
      by: options.by,
      decidedAtMs: this.host.nowMs(),
      requestHash: approval.requestHash,
      ...(options.note === undefined ? {} : { note: options.note }),
      ...(options.endRun === true ? { endRun: true } : {}),
    });
  }

  /**
   * The questions the run's model asked through `ask_human`, pending and answered.
   *
   * Error codes: `RUN_NOT_FOUND`, store errors.
   */
  async questions(runId: string): Promise<Question[]> {
    const events = await this.host.read(runId);
    if (events.length === 0) {
      throw new LoomError(AgentErrorCode.RUN_NOT_FOUND, `no run '${runId}' in this store`, {
        runId,
      });
    }
    return questionsOf(events, await this.host.readSignals(runId));
  }

  /**
   * Answers a pending question, from any process; the first answer wins. The run resumes on a
   * process that runs the agent, and the model gets `{ text, by, answeredAtMs }` as the result.
   *
   * Error codes: `QUESTION_NOT_FOUND`, `QUESTION_NOT_PENDING` (answered, or its run has ended:
   * `fields.runStatus`), `INVALID_ARGUMENT`,
   * `RUN_NOT_FOUND`, store errors.
   */
  async answer(questionId: string, options: { by: string; text: string }): Promise<void> {
    if (typeof options?.by !== 'string' || options.by === '' || typeof options.text !== 'string') {
      throw new LoomError(
        AgentErrorCode.INVALID_ARGUMENT,
        'an answer needs { by: "name", text: "the answer" }',
        { questionId },
      );
    }
    const cut = typeof questionId === 'string' ? questionId.lastIndexOf('~') : -1;
    const question =
      cut <= 0
        ? undefined
        : (await this.questions(questionId.slice(0, cut))).find((q) => q.id === questionId);
    if (question === undefined) {
      throw new LoomError(AgentErrorCode.QUESTION_NOT_FOUND, `no question '${questionId}'`, {
        questionId,
      });
    }
    if (question.status !== 'pending') {
      throw new LoomError(
        AgentErrorCode.QUESTION_NOT_PENDING,
        `question '${questionId}' was answered by ${question.answer?.by}`,
        { questionId },
      );
    }
    const name = RecordName.answerSignal(questionId.slice(cut + 1));
    const answer: Answer = { text: options.text, by: options.by, answeredAtMs: this.host.nowMs() };
    const sent = await this.signalRun(
      question.runId,
      name,
      answer as unknown as JsonValue,
      (runStatus) =>
        new LoomError(
          AgentErrorCode.QUESTION_NOT_PENDING,
          `question '${questionId}' can no longer be answered: its run is ${runStatus}`,
          { questionId, runStatus },
        ),
    );
    if (sent.duplicate) {
      throw new LoomError(
        AgentErrorCode.QUESTION_NOT_PENDING,
        `question '${questionId}' was answered by someone else a moment ago`,
        { questionId },
      );
    }
  }

  /**
   * Cancels a run: it ends with `operator_cancelled` at its next write (at once if it waits).
   * Returns false if it had already ended.
   *
   * Error codes: the kernel's (`EXECUTION_NOT_FOUND`, store errors).
   */
  cancel(runId: string, options: { by: string; reason?: string }): Promise<boolean> {
    const reason = `cancelled by ${options.by}${options.reason === undefined ? '' : `: ${options.reason}`}`;
    return this.host.cancel(runId, reason);
  }

  private runOf(runId: string, result: () => Promise<JsonValue>): AgentRun {
    let settled: Promise<RunResult> | undefined;
    const ended = async (): Promise<RunResult> => {
      let output: RunOutput | undefined;
      let cancelled: string | undefined;
      this.handoff.want(runId);
      try {
        output = (await result()) as unknown as RunOutput;
      } catch (error) {
        this.handoff.take(runId, undefined);
        if (!isKernelError(error, 'EXECUTION_CANCELLED')) throw error;
        cancelled = (error as Error).message;
      }
      // The calls the flow handed over in this process, else from the log.
      const calls =
        (cancelled === undefined ? this.handoff.take(runId, output) : undefined) ??
        (await this.callsOf(runId));
      return output === undefined
        ? cancelledResult(runId, cancelled as string, calls)
        : { runId, ...output, calls };
    };
    return {
      runId,
      result: () => {
        settled ??= ended();
        return settled;
      },
    };
  }

  /** Each model call's usage, from the run's `decide:<t>` records (one paged read of its log). */
  private async callsOf(runId: string): Promise<ModelCallUsage[]> {
    const calls: ModelCallUsage[] = [];
    for (let next = 0; ; ) {
      const page = await this.host.readPage(runId, next, callsReadPageSize);
      for (const event of page) {
        const call = callOfEvent(event);
        if (call !== undefined) calls.push(call);
        next = event.sequence + 1;
      }
      if (page.length < callsReadPageSize) return calls;
    }
  }

  private async pending(
    approvalId: string,
    options: { by: string; requestHash?: string },
  ): Promise<Approval> {
    if (typeof options?.by !== 'string' || options.by.length === 0) {
      throw new LoomError(AgentErrorCode.INVALID_ARGUMENT, 'say who decides: { by: "name" }', {
        approvalId,
      });
    }
    const cut = typeof approvalId === 'string' ? approvalId.lastIndexOf('~') : -1;
    if (cut <= 0) {
      throw new LoomError(
        AgentErrorCode.APPROVAL_NOT_FOUND,
        `'${approvalId}' is not an approval id`,
        {
          approvalId,
        },
      );
    }
    const approvals = await this.approvals(approvalId.slice(0, cut));
    const approval = approvals.find((a) => a.id === approvalId);
    if (approval === undefined) {
      throw new LoomError(
        AgentErrorCode.APPROVAL_NOT_FOUND,
        `no approval '${approvalId}' in the log of its run`,
        { approvalId },
      );
    }
    if (approval.status !== 'pending') {
      throw new LoomError(
        AgentErrorCode.APPROVAL_NOT_PENDING,
        `approval '${approvalId}' is ${approval.status}${approval.decision === undefined ? '' : ` (by ${approval.decision.by})`}`,
        { approvalId, status: approval.status },
      );
    }
    if (options.requestHash !== undefined && options.requestHash !== approval.requestHash) {
      throw new LoomError(
        AgentErrorCode.APPROVAL_REQUEST_CHANGED,
        `approval '${approvalId}' is for another request than the one decided on: read the approval again and decide on what it asks now`,
        { approvalId, expected: options.requestHash, actual: approval.requestHash },
      );
    }
    return approval;
  }

  /**
   * Sends a person's decision or answer once (the signal's name is its idempotency key). A run
   * that has ended takes none: the kernel's `EXECUTION_SETTLED` becomes `ended(runStatus)`.
   */
  private async signalRun(
    runId: string,
    name: string,
    payload: JsonValue,
    ended: (runStatus: string) => LoomError,
  ): Promise<{ duplicate: boolean }> {
    try {
      return await this.host.signal(runId, name, payload, name);
    } catch (error) {
      if (!isKernelError(error, 'EXECUTION_SETTLED')) throw error;
      throw ended(await this.host.status(runId));
    }
  }

  private async decide(approval: Approval, decision: ApprovalDecision): Promise<void> {
    // At or after the expiry the run counts the decision as expired (issue 27): say so, send nothing.
    if (isLate(decision.decidedAtMs, approval.expiresAtMs)) {
      throw new LoomError(
        AgentErrorCode.APPROVAL_EXPIRED,
        `approval '${approval.id}' expired at ${new Date(approval.expiresAtMs as number).toISOString()}: a decision now is refused (the run ends approval_expired, or asks again, when it resumes)`,
        {
          approvalId: approval.id,
          status: 'expired',
          expiresAtMs: approval.expiresAtMs,
          decidedAtMs: decision.decidedAtMs,
        },
      );
    }
    const key = approval.id.slice(approval.id.lastIndexOf('~') + 1);
    const name = RecordName.approvalSignal(key);
    // The signal's idempotency key is the approval: of two people deciding at once, one wins.
    const sent = await this.signalRun(
      approval.runId,
      name,
      decision as unknown as JsonValue,
      (runStatus) =>
        new LoomError(
          AgentErrorCode.APPROVAL_NOT_PENDING,
          `approval '${approval.id}' can no longer be decided: its run is ${runStatus}`,
          { approvalId: approval.id, status: approval.status, runStatus },
        ),
    );
    if (sent.duplicate) {
      throw new LoomError(
        AgentErrorCode.APPROVAL_NOT_PENDING,
        `approval '${approval.id}' was decided by someone else a moment ago`,
        { approvalId: approval.id, status: 'decided' },
      );
    }
  }
}

/**
 * The agents, and the agents their agent tools run (recursively), each once: a parent's
 * children are registered with it.
 */
function withChildAgents(agents: readonly Agent[]): Agent[] {
  const out: Agent[] = [];
  const seen = new Set<Agent>();
  const visit = (agent: Agent) => {
    if (seen.has(agent)) return;
    seen.add(agent);
    out.push(agent);
    for (const tool of agent.tools.values()) {
      const child = childAgentCall(tool);
      if (child !== undefined) visit(child.agent);
    }
  };
  for (const agent of agents) visit(agent);
  return out;
}

/**
 * Creates an agent runtime on a flow runtime, and registers every agent's flow with it (and the
 * flows of the agents their agent tools run).
 *
 * Error codes: `INVALID_ARGUMENT` (two agents of one name).
 *
 * @example
 * const flows = createRuntime({ backend: openSqlite({ path: 'loom.db', migrate: true }) });
 * const agents = createAgentRuntime({ flows, agents: [triage] });
 * await flows.recover();   // resume runs a crash left behind
 */
export function createAgentRuntime(options: AgentRuntimeOptions): AgentRuntime {
  return new AgentRuntime(options);
}

/**
 * A run's approvals, pending and decided, folded from its log and its inbox (what
 * `AgentRuntime.approvals` reads): for a reader that fetched both itself, e.g. many runs' logs in
 * one query. Signals other than approval decisions are ignored, so `signals` may be the whole
 * inbox or only the `approval:` ones.
 *
 * @example
 * const pending = approvalsOf(events, signals).filter((a) => a.status === 'pending');
 */
export function approvalsOf(
  events: readonly StoredEvent[],
  signals: readonly StoredSignal[],
): Approval[] {
  const decisions = new Map<string, ApprovalDecision>();
  const arrivedAtMs = new Map<string, number>();
  for (const signal of signals) {
    if (!signal.name.startsWith(RecordName.approvalPrefix) || decisions.has(signal.name)) continue;
    decisions.set(signal.name, signal.payload as unknown as ApprovalDecision);
    arrivedAtMs.set(signal.name, signal.at);
  }
  const expired = new Set<string>();
  const deadlineAtMs = new Map<string, number | null>();
  for (const event of events) {
    const { name, timeoutAtMs } = event.payload as { name?: unknown; timeoutAtMs?: unknown };
    if (event.type === EventType.signalTimedOut && typeof name === 'string') expired.add(name);
    if (event.type === EventType.signalWaiting && typeof name === 'string') {
      deadlineAtMs.set(name, typeof timeoutAtMs === 'number' ? timeoutAtMs : null);
    }
  }
  const out: Approval[] = [];
  for (const event of events) {
    if (event.type !== EventType.stepCompleted) continue;
    const payload = event.payload as { name?: unknown; result?: unknown };
    if (typeof payload.name !== 'string' || !payload.name.startsWith(RecordName.approvalPrefix))
      continue;
    // Named after the run whose log this is: a fork's copy names the original (issue 27).
    const recorded = payload.result as unknown as Approval;
    const key = payload.name.slice(RecordName.approvalPrefix.length);
    const approval: Approval = {
      ...recorded,
      id: `${event.executionId}~${key}`,
      runId: event.executionId,
      ...(recorded.previousId === undefined
        ? {}
        : {
            previousId: `${event.executionId}${recorded.previousId.slice(recorded.previousId.lastIndexOf('~'))}`,
          }),
    };
    let decision = decisions.get(payload.name);
    // What the run decided, not what was sent, judged in the run's order: a decision the run
    // counts as expired (ADR 0042: it arrived at or after the wait's deadline, or says it was
    // decided at or after the expiry) is none; then it refuses some (decisionRefusal) and takes
    // anything but an approval as a rejection.
    if (
      decision !== undefined &&
      (isLate(arrivedAtMs.get(payload.name), deadlineAtMs.get(payload.name) ?? null) ||
        isLate((decision as { decidedAtMs?: unknown } | null)?.decidedAtMs, approval.expiresAtMs))
    ) {
      decision = undefined;
      expired.add(payload.name);
    }
    const refused = decision === undefined ? undefined : decisionRefusal(approval, decision);
    if (refused !== undefined) {
      out.push({
        ...approval,
        status: 'rejected',
        decision: decision as ApprovalDecision,
        refused,
      });
    } else if (decision !== undefined) {
      const status = decision.decision === 'approved' ? 'approved' : 'rejected';
      out.push({ ...approval, status, decision });
    } else if (expired.has(payload.name)) {
      out.push({ ...approval, status: 'expired' });
    } else {
      out.push(approval);
    }
  }
  return out;
}

/** True when `atMs` is at or after `deadlineAtMs` (null: no deadline; an unknown time is not late). */
function isLate(atMs: unknown, deadlineAtMs: number | null): boolean {
  return deadlineAtMs !== null && typeof atMs === 'number' && atMs >= deadlineAtMs;
}

/** The prefix of an approval decision's signal name (`approval:<key>`). */
export const approvalSignalPrefix = RecordName.approvalPrefix;

/**
 * A run's `ask_human` questions, pending and answered, from its log and its inbox signals (only
 * those whose names start with {@link answerSignalPrefix} matter): what `questions()` returns,
 * for a reader that has the events already (a view listing many runs).
 *
 * @example
 * const pending = questionsOf(events, signals).filter((q) => q.status === 'pending');
 */
export function questionsOf(
  events: readonly StoredEvent[],
  signals: readonly StoredSignal[],
): Question[] {
  const answers = new Map<string, Answer>();
  for (const signal of signals) {
    if (!signal.name.startsWith(RecordName.answerPrefix) || answers.has(signal.name)) continue;
    answers.set(signal.name, signal.payload as unknown as Answer);
  }
  const out: Question[] = [];
  for (const event of events) {
    if (event.type !== EventType.stepCompleted) continue;
    const payload = event.payload as { name?: unknown; result?: unknown };
    if (typeof payload.name !== 'string' || !payload.name.startsWith(RecordName.questionPrefix)) {
      continue;
    }
    const key = payload.name.slice(RecordName.questionPrefix.length);
    const question = payload.result as unknown as Omit<Question, 'status'>;
    const answer = answers.get(RecordName.answerSignal(key));
    out.push(
      answer === undefined
        ? { ...question, status: 'pending' }
        : { ...question, status: 'answered', answer },
    );
  }
  return out;
}

/** The prefix of an answer's signal name (`answer:<key>`). */
export const answerSignalPrefix = RecordName.answerPrefix;

// The agent scenario: `@loom/agent-loop` runs (decide through a seeded fake model, policy,
// tools, observe; approvals decided by simulated operators) on the simulated nodes, under the
// same faults as the mixed scenario. The one file that calls the agent loop's API.
import {
  type Agent,
  type AgentRuntime,
  type Approval,
  approvalsOf,
  createAgentRuntime,
  defaultPolicy,
  defineAgent,
  defineTool,
  isRerunnable,
  type SideEffect,
  type Tool,
} from '@loom/agent-loop';
import { type AgentBug, agentBugHits, injectAgentBug } from '@loom/agent-loop/testing';
import { type Clock, InMemoryEventStore, type StoredEvent } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { type ModelRequest, StubModel, type StubTurn } from '@loom/reasoning';
import { createReplayRuntime, type SimRuntime } from './runtime-adapter.js';
import type { Scenario } from './scenario.js';
import { seededRandom } from './seeded-random.js';
import type { SimWorld, Violation } from './sim-world.js';

/** Agent runs one seed starts. */
const agentRunCount = 4;
/** Virtual ms a model call takes (on the node's clock). */
const modelLatencyMs = 300;
/** Virtual ms after which a `send_mail` approval expires (the run ends `approval_expired`). */
const approvalExpiresInMs = 120_000;

/** The agent bugs `Faults.injectBug` may name. */
export const agentBugs: readonly AgentBug[] = ['rerun-interrupted-tool', 'forget-decisions'];

/** What one seed's agent workload saw, for its invariants. */
interface AgentWorld {
  /** The agent runtime (and its agent) of each node incarnation's flow runtime. */
  readonly runtimes: WeakMap<SimRuntime, { agents: AgentRuntime; agent: Agent }>;
  /** `<runId>#<turn>` → when (virtual ms) and on which node the fake model was asked for that turn. */
  readonly modelCalls: Map<string, Array<{ atMs: number; node: string }>>;
  /** A tool call's idempotency key (`<runId>/<turn>.<index>`) → times its side effect ran. */
  readonly toolRuns: Map<string, { tool: string; sideEffect: SideEffect; runs: number }>;
  readonly runIds: readonly string[];
  /** Mixed into the fake model's draws, from the seed. */
  readonly salt: number;
  /** The shared virtual clock's time. */
  readonly now: () => number;
}

const worlds = new WeakMap<SimWorld, AgentWorld>();

function stateOf(world: SimWorld): AgentWorld {
  const state = worlds.get(world);
  if (state === undefined) throw new Error('the agent scenario did not boot this world');
  return state;
}

function nodeAgents(
  state: AgentWorld,
  runtime: SimRuntime,
): { agents: AgentRuntime; agent: Agent } {
  const found = state.runtimes.get(runtime);
  if (found === undefined) throw new Error(`no agent runtime on node ${runtime.nodeId}`);
  return found;
}

/** FNV-1a of a string: the fake model's and the operators' draws are functions of their key. */
function hashOf(text: string): number {
  let hash = 2166136261;
  for (let at = 0; at < text.length; at++) {
    hash ^= text.charCodeAt(at);
    hash = Math.imul(hash, 16777619) >>> 0;
  }
  return hash;
}

const toolSpecs: ReadonlyArray<{ name: string; sideEffect: SideEffect; description: string }> = [
  { name: 'lookup', sideEffect: 'read_only', description: 'Reads a record' },
  { name: 'bump', sideEffect: 'idempotent', description: 'Sets a counter to n' },
  { name: 'write_note', sideEffect: 'local_mutation', description: 'Appends a note' },
  { name: 'send_mail', sideEffect: 'remote_mutation', description: 'Sends a mail' },
];

/** The tools of one node: each counts its side effect, then waits on the node's clock. */
function toolsOf(state: AgentWorld, clock: Clock): Tool[] {
  return toolSpecs.map((spec) =>
    defineTool({
      name: spec.name,
      description: spec.description,
      sideEffect: spec.sideEffect,
      input: {
        type: 'object',
        properties: { n: { type: 'number' } },
        required: ['n'],
        additionalProperties: false,
      },
      run: async (input: { n: number }, context) => {
        const key = context.idempotencyKey;
        const entry = state.toolRuns.get(key) ?? {
          tool: spec.name,
          sideEffect: spec.sideEffect,
          runs: 0,
        };
        entry.runs += 1;
        state.toolRuns.set(key, entry);
        // The side effect happened; the result takes a while (a crash here leaves it unknown).
        await new Promise<void>((resolve) => clock.setTimer(resolve, 50 + (hashOf(key) % 900)));
        return { tool: spec.name, n: input.n, key };
      },
    }),
  );
}

/** Which run and turn a request is for: the run's input names it, the turn is the history's. */
function turnOf(request: ModelRequest): { runId: string; turn: number } {
  const text = JSON.stringify(request.messages);
  const runId = /run:(agent-\d+)/.exec(text)?.[1] ?? 'unknown';
  const turn = request.messages.filter((message) => message.role === 'assistant').length + 1;
  return { runId, turn };
}

/**
 * The seeded fake model: its answer is a function of the seed, the run and the turn only (a call
 * made again answers the same), and it counts its calls per turn.
 */
function decideTurn(state: AgentWorld, node: string, request: ModelRequest): StubTurn {
  const { runId, turn } = turnOf(request);
  const key = `${runId}#${turn}`;
  state.modelCalls.set(key, [...(state.modelCalls.get(key) ?? []), { atMs: state.now(), node }]);
  const turnsMax = seededRandom(hashOf(`${state.salt}:${runId}`)).between(2, 5);
  const random = seededRandom(hashOf(`${state.salt}:${key}`));
  if (turn >= turnsMax) return { text: `run ${runId} done after ${turn - 1} turns` };
  if (random.chance(0.03)) {
    return { toolCalls: [{ tool: 'fail_goal', input: { reason: 'gave up' }, callId: 'c0' }] };
  }
  const calls = random.between(1, 2);
  return {
    toolCalls: Array.from({ length: calls }, (_, index) => ({
      tool: random.pick(toolSpecs).name,
      input: { n: turn * 10 + index },
      callId: `c${turn}.${index}`,
    })),
  };
}

function agentOf(state: AgentWorld, clock: Clock, node: string): Agent {
  return defineAgent({
    name: 'dst-agent',
    model: new StubModel({
      script: (request) => decideTurn(state, node, request),
      latencyMs: modelLatencyMs,
      clock,
    }),
    instructions: 'Work the task with the tools, then answer.',
    tools: toolsOf(state, clock),
    // A mail needs a person (with an expiry, so a durable timer runs too); the rest as default.
    policy: (request, view) =>
      request.sideEffect === 'remote_mutation'
        ? { kind: 'require_approval', reason: 'a mail goes out', expiresInMs: approvalExpiresInMs }
        : defaultPolicy(request, view),
  });
}

/** What an operator does with a pending approval: drawn from the approval's id, so retries agree. */
function decisionOf(approval: Approval): 'approve' | 'reject' | 'reject-end' | 'record' {
  const draw = seededRandom(hashOf(approval.id)).next();
  if (approval.kind === 'interrupted_side_effect') {
    return draw < 0.5 ? 'approve' : draw < 0.8 ? 'record' : 'reject';
  }
  return draw < 0.75 ? 'approve' : draw < 0.9 ? 'reject' : 'reject-end';
}

async function operate(agents: AgentRuntime, runId: string): Promise<void> {
  const pending = (await agents.approvals(runId)).filter((a) => a.status === 'pending');
  for (const approval of pending) {
    const by = 'operator';
    const { requestHash } = approval;
    try {
      switch (decisionOf(approval)) {
        case 'approve':
          // An interrupted call is resolved explicitly (RESOLUTION_REQUIRED otherwise): re-run it.
          await agents.approve(approval.id, {
            by,
            requestHash,
            ...(approval.kind === 'interrupted_side_effect'
              ? { resolution: { kind: 'rerun' as const } }
              : {}),
          });
          break;
        case 'record':
          await agents.approve(approval.id, {
            by,
            requestHash,
            resolution: { kind: 'record', output: { recordedBy: by } },
          });
          break;
        case 'reject':
          await agents.reject(approval.id, { by, requestHash });
          break;
        case 'reject-end':
          await agents.reject(approval.id, { by, requestHash, endRun: true });
          break;
      }
    } catch (error) {
      // Decided by another operator a moment ago (or it expired): the next one.
      if (codeOf(error) !== 'APPROVAL_NOT_PENDING') throw error;
    }
  }
}

function codeOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null
    ? ((error as { code?: unknown }).code as string | undefined)
    : undefined;
}

/**
 * Agent runs on 3 nodes under the default faults: each run decides through a seeded fake model
 * (300 virtual ms a call), calls a read-only, an idempotent, a local-mutation and an
 * approval-gated remote-mutation tool (each counts its side effect, then takes 50–950 ms), and
 * operators on any node approve, reject or resolve what waits for a person, every 0.5–4 s.
 */
export const agentScenario: Scenario = {
  name: 'agent',
  horizonMs: 180_000,
  nodes: 3,
  boot(world) {
    const bug = world.faults.injectBug;
    injectAgentBug(agentBugs.includes(bug as AgentBug) ? (bug as AgentBug) : undefined);
    const state: AgentWorld = {
      runtimes: new WeakMap(),
      modelCalls: new Map(),
      toolRuns: new Map(),
      runIds: Array.from({ length: agentRunCount }, (_, index) => `agent-${index}`),
      salt: world.random.fork('agent-model').int(2 ** 31),
      now: () => world.clock.now(),
    };
    worlds.set(world, state);
    return {
      flows: [],
      queues: [],
      attach: (runtime, clock) => {
        const agent = agentOf(state, clock, runtime.nodeId);
        state.runtimes.set(runtime, {
          agent,
          agents: createAgentRuntime({ flows: runtime.flows, agents: [agent] }),
        });
      },
    };
  },
  drive(world) {
    const state = stateOf(world);
    const random = world.random.fork('workload');
    for (const runId of state.runIds) {
      world.clock.setTimer(() => {
        void world.client.retryAny(`start ${runId}`, async (node) => {
          const { agents, agent } = nodeAgents(state, node.runtime);
          await agents.start(agent, `Task of run:${runId}.`, { runId });
        });
      }, random.int(60_000));
    }
    const operators = world.random.fork('operators');
    const tick = () => {
      const open = state.runIds.filter((id) => !world.recorder.settled.has(id));
      if (open.length === 0) return;
      const runId = operators.pick(open);
      void world.client.retryAny(
        `operator on ${runId}`,
        (node) => operate(nodeAgents(state, node.runtime).agents, runId),
        // Not started yet, or ended meanwhile: the next round looks again.
        (error) =>
          ['RUN_NOT_FOUND', 'EXECUTION_NOT_FOUND', 'EXECUTION_SETTLED'].includes(
            codeOf(error) ?? '',
          )
            ? 'done'
            : undefined,
      );
      world.clock.setTimer(tick, operators.between(500, 4_000));
    };
    world.clock.setTimer(tick, 1_000);
  },
  mustSettle: (world) => stateOf(world).runIds,
  async check(world, log) {
    world.recorder.faults.bugs += agentBugHits();
    return checkAgentInvariants(world, log);
  },
  stats: agentStats,
  end() {
    injectAgentBug(undefined);
  },
};

/**
 * What one seed's agent runs did: runs by ending (`ended:<reason>`), model calls (and those
 * repeated for a turn, at-least-once), tool side effects (and those of must-not-run-twice
 * tools), approvals by kind and outcome.
 */
async function agentStats(
  world: SimWorld,
  log: readonly StoredEvent[],
): Promise<Record<string, number>> {
  const state = stateOf(world);
  const stats: Record<string, number> = {};
  const add = (name: string, n = 1) => {
    stats[name] = (stats[name] ?? 0) + n;
  };
  for (const runId of state.runIds) {
    const events = log.filter((event) => event.executionId === runId);
    const last = events.at(-1);
    const reason =
      last?.type === 'execution.completed'
        ? String((last.payload as { output?: { reason?: unknown } }).output?.reason)
        : (last?.type ?? 'none');
    add(`ended:${reason}`);
    add('turns', events.filter((e) => e.type === 'step.completed' && isDecide(e)).length);
    for (const approval of approvalsOf(events, await world.stores.events.readSignals(runId))) {
      add(`approvals:${approval.kind}:${approval.status}`);
    }
  }
  // Repeated: re-run mid-call (a driver that stopped), or a zombie's call after a takeover.
  for (const calls of state.modelCalls.values()) {
    add('modelCalls', calls.length);
    add('modelCallsRepeated', calls.length - 1);
  }
  for (const entry of state.toolRuns.values()) {
    add('toolRuns', entry.runs);
    if (!isRerunnable(entry.sideEffect)) add('toolRunsMustNotRepeat', entry.runs);
  }
  return stats;
}

function isDecide(event: StoredEvent): boolean {
  return String((event.payload as { name?: unknown }).name).startsWith('decide:');
}

/** The agent invariants, over the whole log and each run's inbox. */
async function checkAgentInvariants(
  world: SimWorld,
  log: readonly StoredEvent[],
): Promise<Violation[]> {
  const state = stateOf(world);
  const violations: Violation[] = [];
  const report = (invariant: string, detail: string, executionId: string) =>
    violations.push({ invariant, detail, executionId });
  for (const runId of state.runIds) {
    const events = log.filter((event) => event.executionId === runId);
    const approvals = approvalsOf(events, await world.stores.events.readSignals(runId));
    runEndsAsAgent(events, (detail) => report('agent-run-ended', detail, runId));
    toolsAtMostOnce(state, runId, approvals, (detail) =>
      report('agent-tool-at-most-once', detail, runId),
    );
    decisionsMemoized(state, world, runId, events, (detail) =>
      report('agent-decision-memoized', detail, runId),
    );
    await replayReproduces(world, events, (detail) => report('agent-replay-same', detail, runId));
  }
  return violations;
}

/** Virtual ms a replay may take before it counts as stuck (it needs no time: all is recorded). */
const replayDeadlineMs = 60_000;

/**
 * The agent code, run again over a completed run's log (all of it but the terminal event, in a
 * fresh store and runtime with no faults), ends the run with the very same terminal event,
 * byte for byte, without asking its model or running a tool.
 */
async function replayReproduces(
  world: SimWorld,
  events: readonly StoredEvent[],
  report: (detail: string) => void,
) {
  const last = events.at(-1);
  const runId = last?.executionId;
  if (last?.type !== 'execution.completed' || runId === undefined) return;
  const clock = new ManualClock(world.clock.now());
  const store = new InMemoryEventStore({ clock });
  await store.append(
    events.slice(0, -1).map(({ executionId, sequence, type, payload, at }) => ({
      executionId,
      sequence,
      type,
      payload,
      at,
    })),
  );
  const replay: AgentWorld = {
    runtimes: new WeakMap(),
    modelCalls: new Map(),
    toolRuns: new Map(),
    runIds: [runId],
    salt: stateOf(world).salt,
    now: () => clock.now(),
  };
  const flows = createReplayRuntime({ store, clock });
  const agents = createAgentRuntime({ flows, agents: [agentOf(replay, clock, 'replay')] });
  try {
    await flows.recover();
    const done = agents.attach(runId).result();
    let settled = false;
    done.then(
      () => {
        settled = true;
      },
      () => {
        settled = true;
      },
    );
    for (let waited = 0; !settled && waited < replayDeadlineMs; waited += 1_000) {
      await clock.advance(1_000);
    }
    await flows.shutdown();
    const again = (await store.read(runId)).at(-1);
    if (
      again?.sequence !== last.sequence ||
      JSON.stringify(again.payload) !== JSON.stringify(last.payload)
    ) {
      report(
        `replayed, the run ended with ${again?.type} at ${again?.sequence} (${JSON.stringify(again?.payload).slice(0, 200)}), not as logged`,
      );
    }
    const calls = [...replay.modelCalls.values()].reduce((sum, made) => sum + made.length, 0);
    const runs = [...replay.toolRuns.values()].reduce((sum, entry) => sum + entry.runs, 0);
    if (calls > 0 || runs > 0) {
      report(`its replay asked the model ${calls} times and ran ${runs} tool calls`);
    }
  } finally {
    await flows.shutdown();
  }
}

/** A run ends in `execution.completed` with the agent's result, never a failed flow. */
function runEndsAsAgent(events: readonly StoredEvent[], report: (detail: string) => void) {
  const last = events.at(-1);
  if (last?.type !== 'execution.completed') {
    if (last?.type === 'execution.failed') {
      report(`the run's flow failed: ${JSON.stringify(last.payload).slice(0, 300)}`);
    }
    return; // not ended at all: the common `execution-ended` invariant reports it
  }
  const output = (last.payload as { output?: { reason?: unknown; usage?: unknown } }).output;
  if (typeof output?.reason !== 'string') report('the run completed without an agent result');
  const decided = events.filter(
    (event) =>
      event.type === 'step.completed' &&
      String((event.payload as { name?: unknown }).name).startsWith('decide:'),
  ).length;
  const modelCalls = (output?.usage as { modelCalls?: unknown } | undefined)?.modelCalls;
  if (modelCalls !== decided) {
    report(`the result counts ${String(modelCalls)} model calls, the log records ${decided}`);
  }
}

/**
 * A tool that may not run twice (not `read_only` nor `idempotent`) ran at most once per call,
 * plus once per `interrupted_side_effect` approval a person approved with `{ kind: 'rerun' }`; and an
 * approval-gated tool ran only after its `tool_call` approval was approved.
 */
function toolsAtMostOnce(
  state: AgentWorld,
  runId: string,
  approvals: readonly Approval[],
  report: (detail: string) => void,
) {
  const reruns = new Map<string, number>();
  const approvedCalls = new Set<string>();
  for (const approval of approvals) {
    const key = approval.id.slice(approval.id.lastIndexOf('~') + 1);
    if (approval.status !== 'approved') continue;
    if (approval.kind === 'interrupted_side_effect') {
      // Only an explicit re-run allows another call (a decision without one is refused).
      if (approval.decision?.resolution?.kind !== 'rerun') continue;
      const call = /^(\d+\.\d+)(\.r\d+)?\.i$/.exec(key)?.[1];
      if (call !== undefined) reruns.set(call, (reruns.get(call) ?? 0) + 1);
    } else {
      const call = /^(\d+\.\d+)(\.a\d+)?$/.exec(key)?.[1];
      if (call !== undefined) approvedCalls.add(call);
    }
  }
  for (const [key, entry] of state.toolRuns) {
    if (!key.startsWith(`${runId}/`)) continue;
    const call = key.slice(runId.length + 1);
    if (!isRerunnable(entry.sideEffect)) {
      const allowed = 1 + (reruns.get(call) ?? 0);
      if (entry.runs > allowed) {
        report(
          `${entry.tool} (${entry.sideEffect}) call ${call} ran ${entry.runs} times, ${allowed - 1} re-runs approved`,
        );
      }
    }
    if (entry.tool === 'send_mail' && !approvedCalls.has(call)) {
      report(`send_mail call ${call} ran without an approved approval`);
    }
  }
}

/**
 * A recorded decision is never asked of the model again: once a turn's `decide:<t>` result is
 * durable (committed at fence epoch e), no driver holding epoch e or later calls the model for
 * that turn (a replay, a resume, a takeover read the record). A call after it by a node whose
 * epoch is older is a zombie's (a paused owner that learned of its step only on resume, shut out
 * by the fence): at-least-once, like a call repeated before the record by a driver that stopped
 * mid-call, and allowed. Every recorded decision was made by the model.
 */
function decisionsMemoized(
  state: AgentWorld,
  world: SimWorld,
  runId: string,
  events: readonly StoredEvent[],
  report: (detail: string) => void,
) {
  const turnAt = new Map<number, number>();
  for (const event of events) {
    if (event.type === 'step.completed' && isDecide(event)) {
      const { name } = event.payload as { name: string };
      turnAt.set(event.sequence, Number(name.slice('decide:'.length)));
    }
  }
  const recorded = new Map<number, { atMs: number; epoch: number }>();
  for (const append of world.recorder.committed) {
    if (append.executionId !== runId) continue;
    append.types.forEach((_, offset) => {
      const turn = turnAt.get(append.firstSequence + offset);
      if (turn !== undefined && !recorded.has(turn)) {
        recorded.set(turn, { atMs: append.atMs, epoch: append.fenceEpoch ?? 0 });
      }
    });
  }
  const epochOf = (node: string, atMs: number) =>
    Math.max(
      0,
      ...world.recorder.advances
        .filter((a) => a.executionId === runId && a.node === node && a.atMs <= atMs)
        .map((a) => a.epoch),
    );
  for (const [turn, record] of recorded) {
    const calls = state.modelCalls.get(`${runId}#${turn}`) ?? [];
    if (calls.length === 0)
      report(`turn ${turn}: a decision is recorded that the model never made`);
    const late = calls.filter(
      (call) => call.atMs > record.atMs && epochOf(call.node, call.atMs) >= record.epoch,
    );
    if (late.length > 0) {
      report(
        `turn ${turn}: the model was asked again after its decision was recorded (at ${record.atMs}, epoch ${record.epoch}) by ${late.map((call) => `${call.node} at ${call.atMs}`).join(', ')}`,
      );
    }
  }
}

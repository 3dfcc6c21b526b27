// Several non-idempotent calls of one turn interrupted at once (found by the deterministic
// simulation, tools/dst, agent scenario seed 32): their approvals were recorded in the order the
// interrupted steps settled, which a replay does not reproduce, and the run failed with
// NON_DETERMINISM when it resumed after the first decision.
import { InMemoryEventStore } from '@loom/event-runtime';
import { ManualClock } from '@loom/event-runtime/testing';
import { createRuntime } from '@loom/workflow-runtime';
import { describe, expect, it } from 'vitest';
import { eventually, scripted } from './agent.test-support.js';
import { type AgentRuntime, createAgentRuntime, defineAgent, defineTool } from './index.js';

describe('calls a crash interrupted together', () => {
  it('are resolved one at a time in call order, and the run completes after a restart', async () => {
    const clock = new ManualClock();
    const store = new InMemoryEventStore({ clock });
    const runs: string[] = [];
    let hang = true;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const note = defineTool({
      name: 'note',
      description: 'Appends a note',
      input: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      sideEffect: 'local_mutation',
      run: async (input: { n: number }, context) => {
        runs.push(context.idempotencyKey);
        // The first process stops mid-call (its calls return nothing): their outcome is unknown.
        if (hang) {
          await Promise.race([
            gate,
            new Promise((_, reject) =>
              context.signal.addEventListener('abort', () => reject(context.signal.reason)),
            ),
          ]);
        }
        return { n: input.n };
      },
    });
    const agentOn = (answers: Parameters<typeof scripted>) =>
      defineAgent({
        name: 'notes',
        model: scripted(...answers),
        instructions: 'Take notes.',
        tools: [note],
      });
    const first = createRuntime({ store, clock, nodeId: 'first' });
    const firstAgent = agentOn([
      {
        toolCalls: [
          { tool: 'note', input: { n: 1 } },
          { tool: 'note', input: { n: 2 } },
        ],
      },
    ]);
    const before = createAgentRuntime({ flows: first, agents: [firstAgent] });
    await before.start(firstAgent, 'take two notes', { runId: 'r' });
    await eventually(async () => (runs.length === 2 ? true : undefined), 'both calls running');
    hang = false;
    await first.shutdown();

    // Another process recovers the run.
    const second = createRuntime({ store, clock, nodeId: 'second' });
    const after: AgentRuntime = createAgentRuntime({
      flows: second,
      agents: [agentOn([{ text: 'two notes taken' }])],
    });
    await second.recover();
    // An operator decides what is pending: the first call is run again, the second's outcome
    // recorded by hand.
    const resolutions = {
      'r~1.0.i': { kind: 'rerun' },
      'r~1.1.i': { kind: 'record', output: { n: 2 } },
    } as const;
    const result = await eventually(async () => {
      await clock.advance(1_000);
      for (const approval of await after.approvals('r')) {
        if (approval.status !== 'pending') continue;
        const resolution = resolutions[approval.id as keyof typeof resolutions];
        await after.approve(approval.id, { by: 'ana', resolution });
      }
      const last = (await store.read('r')).at(-1);
      return last?.type === 'execution.completed' || last?.type === 'execution.failed'
        ? last
        : undefined;
    }, 'the run ended');
    expect(result.type).toBe('execution.completed');
    expect((result.payload as { output: { reason: string } }).output.reason).toBe('goal_completed');
    // One approval at a time, in call order: the second call was asked about once the first
    // was decided.
    const approvals = await after.approvals('r');
    expect(approvals.map((a) => [a.id, a.kind, a.status])).toEqual([
      ['r~1.0.i', 'interrupted_side_effect', 'approved'],
      ['r~1.1.i', 'interrupted_side_effect', 'approved'],
    ]);
    expect(approvals[1]?.requestedAtMs).toBeGreaterThanOrEqual(
      approvals[0]?.decision?.decidedAtMs as number,
    );
    // Each call ran once in the first process; only the re-run approved ran again.
    expect(runs).toEqual(['r/1.0', 'r/1.1', 'r/1.0']);
    release();
    await second.shutdown();
  });
});

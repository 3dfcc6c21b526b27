// `loom questions` and `loom answer` (the CLI in process, with its own store), on a SQLite file
// and on Postgres: an agent run's model asks a person through ask_human; the question is listed
// across runs, answered through the CLI's store, and the run (driven by this test's runtime) goes
// on with the answer.
// Answering twice, or a question that does not exist, is a typed error with its exit code; and
// `loom approvals` shows each request's input.

import type { Question } from '@loom/agent-loop';
import { createAgentRuntime } from '@loom/agent-loop';
import { createRuntime } from '@loom/workflow-runtime';
import { afterAll, describe, expect, it } from 'vitest';
import { dbTargets } from './db-targets.js';
import { asker, eventually, loomInProcess, mailer } from './fixture.js';

const { targets, cleanup } = dbTargets('view-questions');
afterAll(cleanup);

describe.each(targets)('loom questions and loom answer on $name', (target) => {
  it('lists the pending question, answers it from another process, and the run goes on with the answer', async () => {
    const env = { LOOM_DB: target.db };
    const flows = createRuntime({ backend: await target.open(), timerPollMs: 20 });
    try {
      const agents = createAgentRuntime({ flows, agents: [asker, mailer] });
      const runId = `paint-${target.name}`;
      const run = await agents.start(asker, 'paint the door', { runId });
      await eventually(async () => {
        const pending = (await agents.questions(runId)).filter((q) => q.status === 'pending');
        return pending.length > 0 ? pending : undefined;
      }, 'the pending question');

      const listed = await loomInProcess(['questions', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      const questions = JSON.parse(listed.stdout) as Question[];
      expect(questions).toMatchObject([
        {
          id: `${runId}~1.0`,
          runId,
          turn: 1,
          question: 'Which colour, exactly?',
          status: 'pending',
        },
      ]);
      // loom runs says what the suspended run waits for (loom show and the dashboard say it too:
      // dashboard.test.ts).
      const runsTable = await loomInProcess(['runs'], env);
      expect(runsTable.stdout).toContain('WAITING FOR');
      expect(runsTable.stdout).toContain(`answer ${runId}~1.0`);
      const table = await loomInProcess(['questions'], env);
      expect(table.stdout).toContain('QUESTION');
      expect(table.stdout).toContain('Which colour, exactly?');

      const answered = await loomInProcess(
        ['answer', `${runId}~1.0`, 'teal, #008080', '--by', 'ana'],
        env,
      );
      expect(answered.code, answered.stderr).toBe(0);
      expect(answered.stdout).toContain(`answered ${runId}~1.0 (by ana)`);
      const again = await loomInProcess(['answer', `${runId}~1.0`, 'red', '--by', 'bo'], env);
      expect(again.code).toBe(4);
      expect(again.stderr).toContain('QUESTION_NOT_PENDING');
      const unknown = await loomInProcess(['answer', `${runId}~9.9`, 'red'], env);
      expect(unknown.code).toBe(3);
      expect(unknown.stderr).toContain('QUESTION_NOT_FOUND');

      // This test's runtime drives the run: its timer poll picks the answer up.
      const result = await run.result();
      expect(result).toMatchObject({ reason: 'goal_completed', output: 'painting it teal' });
      expect((await agents.questions(runId))[0]).toMatchObject({
        status: 'answered',
        answer: { by: 'ana', text: 'teal, #008080' },
      });

      // An approval lists the input of the request it asks about.
      const mail = await agents.start(mailer, 'mail ana', { runId: `mail-${target.name}` });
      await eventually(
        async () => (await agents.approvals(mail.runId)).find((a) => a.status === 'pending'),
        'the mail approval',
      );
      const waiting = JSON.parse((await loomInProcess(['runs', '--json'], env)).stdout) as {
        runs: { id: string; status: string; waitingFor?: string }[];
      };
      expect(waiting.runs.find((r) => r.id === mail.runId)?.waitingFor).toBe(
        `approval ${mail.runId}~1.0`,
      );
      // A run that ended waits for nothing.
      expect(waiting.runs.find((r) => r.id === runId)).not.toHaveProperty('waitingFor');
      const approvals = await loomInProcess(['approvals'], env);
      expect(approvals.stdout).toContain('INPUT');
      expect(approvals.stdout).toContain('{"to":"ana"}');
    } finally {
      await flows.shutdown();
    }
  });
});

// Every listing folds what the run decided, not what was sent: a decision sent straight as a
// signal with the hash of another request is refused by the run (approval_rejected), and the log
// view (`view.show`, `loom show`), `loom approvals` and the projections list it as rejected, never
// as approved by whoever sent it. On a SQLite file and on Postgres.
import { afterAll, describe, expect, it } from 'vitest';
import { catchUpProjections, openView } from '../src/index.js';
import { eventually, loomInProcess, mailer, runtimeOn, sentMails } from './fixture.js';
import { projectionRows, projectionTargets } from './projection-support.js';

const { cleanup, open } = projectionTargets('view-listings');
afterAll(cleanup);

describe.each(['sqlite', 'postgres'] as const)('approval listings on %s', (name) => {
  it('a decision naming another request is listed as rejected (refused), as the run decided', async () => {
    const target = await open(name);
    const runId = `wrong-hash-${name}`;
    const running = runtimeOn(target.backend);
    try {
      const mailsBefore = sentMails.length;
      const run = await running.agents.start(mailer, 'mail ana', { runId });
      const approval = await eventually(
        async () => (await running.agents.approvals(runId)).find((a) => a.status === 'pending'),
        'the tool_call approval',
      );
      const key = approval.id.slice(approval.id.lastIndexOf('~') + 1);
      await running.flows.signal(runId, `approval:${key}`, {
        decision: 'approved',
        by: 'mallory',
        decidedAtMs: Date.now(),
        requestHash: 'the-hash-of-another-request',
      });
      await running.flows.wakeDue();
      expect((await run.result()).reason).toBe('approval_rejected');
      expect(sentMails.length).toBe(mailsBefore);

      const view = await openView({ db: target.db as string, useProjections: false });
      try {
        const [listed] = (await view.show(runId)).approvals;
        expect(listed).toMatchObject({
          status: 'rejected',
          refused: 'the decision named another request',
        });
      } finally {
        await view.close();
      }
      const shown = await loomInProcess(['show', runId], { LOOM_DB: target.db as string });
      expect(shown.stdout).toContain('refused: the decision named another request');
      // The approvals table (the steps table shows the signal's raw payload, as it was sent).
      expect(shown.stdout).toContain(`${runId}~1.0 │ rejected │`);
      expect(shown.stdout).not.toContain(`${runId}~1.0 │ approved`);

      await catchUpProjections({ events: target.backend.events, projections: target.projections });
      const rows = (await projectionRows(target.projections)).approvals;
      expect(rows.find((row) => row.run_id === runId)).toMatchObject({
        status: 'rejected',
        decided_by: 'mallory',
      });
    } finally {
      await running.flows.shutdown();
      await target.close();
    }
  });
});

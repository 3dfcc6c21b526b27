// ctx.waitForEvent and cancelOn across processes (ADR 0060), on SQLite and Postgres: a flow
// waiting for an event in a worker that is SIGKILLed, the events published while no worker runs,
// is resolved once, with one matching event, by a worker started later; an event published
// by a process that runs no flow cancels the matching run in a worker and no other; a wait whose
// start write its worker holds while another process delivers a matching event takes that event
// once the write goes through (its catch-up).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { eventWaitFlowName } from '../../src/flow/event-wait.js';
import { createRuntime, defineFlow } from '../../src/index.js';
import { eventProcesses, lines, until } from './event-processes.js';

const { directory, startWorker, databases } = eventProcesses<'start' | 'serve' | 'held'>(
  'event-waits-processes',
  join(import.meta.dirname, 'event-waits-worker.ts'),
);

for (const [name, make] of databases) {
  describe(`event waits and cancels across processes on ${name}`, () => {
    it('a wait in a worker SIGKILLed, the event published while none runs: the next worker resolves it once', async () => {
      const database = await make();
      const logFile = join(directory, `log-${name}-wait.txt`);
      writeFileSync(logFile, '');
      // The publisher runs no flow: it stores events and delivers nothing.
      const publisher = createRuntime({ backend: await database.open() });
      try {
        const doomed = startWorker(database.target, logFile, 'start');
        await doomed.ready;
        await until('the wait registered and suspended', async () => {
          const waits = await publisher.store.findExecutions({
            flow: eventWaitFlowName,
            status: 'suspended',
          });
          return waits.length === 1;
        });
        doomed.child.kill('SIGKILL');
        await doomed.exited;
        await publisher.publish({ name: 'shop/order.paid', id: 'p-0', data: { orderId: 'o-9' } });
        await publisher.publish({ name: 'shop/order.paid', id: 'p-1', data: { orderId: 'o-1' } });
        await publisher.publish({ name: 'shop/order.paid', id: 'p-2', data: { orderId: 'o-1' } });
        expect(lines(logFile)).toEqual([]);

        const next = startWorker(database.target, logFile, 'serve');
        await next.ready;
        // The worker delivers the waiting events concurrently: the wait takes whichever matching
        // one reaches it first (p-1 or p-2, only one of them, never p-0).
        const taken = await publisher.attach<string>('c-1').result();
        expect(['p-1', 'p-2']).toContain(taken);
        await until('every event delivered', async () => {
          return (await publisher.queueStats('loom.events')).completed === 3;
        });
        next.child.kill('SIGKILL');
        await next.exited;
        expect(lines(logFile)).toEqual([`took c-1 ${taken} ${next.child.pid}`]);
        // The wait took one event; the other found it settled, or lies in its inbox unused.
        const [wait] = await publisher.store.findExecutions({ flow: eventWaitFlowName });
        expect(wait?.status).toBe('settled');
      } finally {
        await publisher.shutdown();
        await database.drop();
      }
    });

    it('an event published in another process cancels the matching run in a worker, and no other', async () => {
      const database = await make();
      const logFile = join(directory, `log-${name}-cancel.txt`);
      writeFileSync(logFile, '');
      const publisher = createRuntime({ backend: await database.open() });
      try {
        const worker = startWorker(database.target, logFile, 'start');
        await worker.ready;
        await publisher.publish({
          name: 'shop/order.cancelled',
          id: 'x-1',
          data: { orderId: 'o-2' },
        });
        await until('s-1 cancelled', async () => {
          const [s1] = await publisher.store.findExecutions({
            flow: 'ship',
            status: 'cancelled',
          });
          return s1?.executionId === 's-1';
        });
        await until('the cancel delivered', async () => {
          return (await publisher.queueStats('loom.events')).completed === 1;
        });
        expect(await publisher.status('s-2')).not.toBe('settled');
        worker.child.kill('SIGKILL');
        await worker.exited;
        const cancelled = await publisher.store.findExecutions({
          flow: 'ship',
          status: 'cancelled',
        });
        expect(cancelled.map((execution) => execution.executionId)).toEqual(['s-1']);
      } finally {
        await publisher.shutdown();
        await database.drop();
      }
    });

    it('a wait whose start write is held in its worker while another process delivers a matching event takes it once the write goes through', async () => {
      const database = await make();
      const logFile = join(directory, `log-${name}-held.txt`);
      writeFileSync(logFile, '');
      // The deliverer declares the event (a flow that waits for it), so it delivers the name.
      const listener = defineFlow(
        { name: 'listener', waitsForEvents: ['shop/order.paid'] },
        async () => null,
      );
      const deliverer = createRuntime({
        backend: await database.open(),
        flows: [listener],
        eventDelivery: { pollMs: 20 },
      });
      try {
        const worker = startWorker(database.target, logFile, 'held');
        await worker.line(/held/);
        await deliverer.publish({ name: 'shop/order.paid', id: 'p-4', data: { orderId: 'o-4' } });
        await until('the event delivered', async () => {
          return (await deliverer.queueStats('loom.events')).completed === 1;
        });
        // Its delivery woke no wait: the wait's start was not in the index yet.
        expect(await deliverer.attach('queue:loom.events:p-4').result()).toEqual([]);
        writeFileSync(`${logFile}.release`, '');
        // Without its catch-up the wait would sit until its 10-minute timeout.
        await until('the wait took the event', () => lines(logFile).length > 0);
        expect(await deliverer.attach<string>('c-2').result()).toBe('p-4');
        worker.child.kill('SIGKILL');
        await worker.exited;
        expect(lines(logFile)).toEqual([`took c-2 p-4 ${worker.child.pid}`]);
      } finally {
        await deliverer.shutdown();
        await database.drop();
      }
    });
  });
}

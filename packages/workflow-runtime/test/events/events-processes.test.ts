// Events across processes (ADR 0060), on SQLite and Postgres: an event published while no worker
// runs starts its flow once when a worker process starts later; a worker SIGKILLed after it
// claimed the event and began delivering it, before the triggered run's start was durable, loses
// nothing: the next worker delivers the event and the run starts once.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRuntime, eventRunId, eventsQueue } from '../../src/index.js';
import { eventProcesses, lines, until } from './event-processes.js';

const { directory, startWorker, databases } = eventProcesses<'normal' | 'hang'>(
  'events-processes',
  join(import.meta.dirname, 'events-worker.ts'),
);

for (const [name, make] of databases) {
  describe(`events across processes on ${name}`, () => {
    it('an event published while no worker runs starts its flow once in a worker started later', async () => {
      const database = await make();
      const logFile = join(directory, `log-${name}-later.txt`);
      writeFileSync(logFile, '');
      // The publisher registers no triggered flow: it stores the event and delivers nothing.
      const publisher = createRuntime({ backend: await database.open() });
      try {
        await publisher.publish({ name: 'shop/order.placed', id: 'e-1', data: { orderId: 'o-1' } });
        expect((await publisher.queueStats(eventsQueue)).depth).toBe(1);
        expect(lines(logFile)).toEqual([]);
        const worker = startWorker(database.target, logFile, 'normal');
        await worker.ready;
        await until('the event delivered and its run ended', async () => {
          const stats = await publisher.queueStats(eventsQueue);
          const ran = lines(logFile).filter((line) => line.startsWith('ran '));
          return stats.completed === 1 && ran.length === 1;
        });
        // A duplicate of the same order published now starts nothing new.
        await publisher.publish({ name: 'shop/order.placed', id: 'e-2', data: { orderId: 'o-1' } });
        await until('the duplicate delivered', async () => {
          return (await publisher.queueStats(eventsQueue)).completed === 2;
        });
        worker.child.kill('SIGKILL');
        await worker.exited;
        const ran = lines(logFile).filter((line) => line.startsWith('ran '));
        expect(ran).toEqual([`ran ${eventRunId('fulfil', 'o-1')} ${worker.child.pid}`]);
        expect(await publisher.attach(eventRunId('fulfil', 'o-1')).result()).toBe('shipped o-1');
      } finally {
        await publisher.shutdown();
        await database.drop();
      }
    }, 45_000);

    it('a worker SIGKILLed while delivering, before the run started, loses nothing: the next starts it once', async () => {
      const database = await make();
      const logFile = join(directory, `log-${name}-killed.txt`);
      writeFileSync(logFile, '');
      const publisher = createRuntime({ backend: await database.open() });
      try {
        const doomed = startWorker(database.target, logFile, 'hang');
        await doomed.ready;
        await publisher.publish({ name: 'shop/order.placed', id: 'e-9', data: { orderId: 'o-9' } });
        await until('the first worker delivering the event', () =>
          lines(logFile).includes(`deliver ${doomed.child.pid}`),
        );
        doomed.child.kill('SIGKILL');
        await doomed.exited;
        // Nothing was started: the dispatch hung before the triggered run's start.
        expect(
          await publisher.status(eventRunId('fulfil', 'o-9')).catch((error) => error.code),
        ).toBe('EXECUTION_NOT_FOUND');

        const next = startWorker(database.target, logFile, 'normal');
        await next.ready;
        await until('the event delivered by the next worker', async () => {
          const stats = await publisher.queueStats(eventsQueue);
          return stats.completed === 1 && lines(logFile).some((line) => line.startsWith('ran '));
        });
        next.child.kill('SIGKILL');
        await next.exited;
        const ran = lines(logFile).filter((line) => line.startsWith('ran '));
        expect(ran).toEqual([`ran ${eventRunId('fulfil', 'o-9')} ${next.child.pid}`]);
        const started = (await publisher.store.read(eventRunId('fulfil', 'o-9'))).filter(
          (event) => event.type === 'execution.started',
        );
        expect(started).toHaveLength(1);
      } finally {
        await publisher.shutdown();
        await database.drop();
      }
    }, 45_000);
  });
}

import { type EventStore, InMemorySnapshotStore, type JsonValue } from '@loom/event-runtime';
import { createRuntime, defineFlow } from '@loom/workflow-runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { encryptingEventStore } from './encrypting-event-store.js';
import { encryptingSnapshotStore } from './encrypting-snapshot-store.js';
import { isErased } from './field-cipher.js';
import { InMemoryKeyring } from './in-memory-keyring.js';
import { localKeyProvider } from './key-provider.js';
import type { Keyring } from './keyring.js';
import { PostgresKeyring } from './postgres-keyring.js';
import type { SensitiveFields } from './sensitive-fields.js';
import { SqliteKeyring } from './sqlite-keyring.js';
import {
  backendNames,
  pgTestUrl,
  type RawStore,
  useBackends,
} from './store-harness.test-support.js';

const backends = useBackends();
const provider = localKeyProvider({ current: 'm1', keys: { m1: Buffer.alloc(32, 9) } });

// The e-mail travels through the flow's input, a step's result and the output: all three
// events mark it, each naming its subject by the user id beside it.
const sensitive: SensitiveFields = {
  'execution.started': { subject: 'input.userId', fields: ['input.email'] },
  'step.completed': { subject: 'result.userId', fields: ['result.email'] },
  'execution.completed': { subject: 'output.userId', fields: ['output.email'] },
};

interface Signup {
  userId: string;
  email: string;
}

async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function keyringFor(backend: string, raw: RawStore): Promise<Keyring> {
  if (backend === 'sqlite') return SqliteKeyring.open({ path: backends.freshPath(), provider });
  if (backend === 'postgres')
    return PostgresKeyring.open({
      connectionString: pgTestUrl,
      schema: backends.freshSchema(),
      provider,
    });
  void raw;
  return new InMemoryKeyring();
}

for (const backend of backendNames) {
  describe(`a flow run with a sensitive field, erased, replayed and verified (${backend})`, () => {
    const closing: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const close of closing.splice(0).reverse()) await close();
    });

    it('forget(subject) erases it in every event; the run replays to the end and verifies', async () => {
      const raw = await backends.open(backend);
      closing.push(raw.close);
      const keyring = await keyringFor(backend, raw);
      closing.push(() => keyring.close());
      const effects: string[] = [];
      const signup = defineFlow({ name: 'signup' }, async (ctx, input: Signup) => {
        const welcome = await ctx.step('welcome', () => {
          effects.push(input.userId);
          return { userId: input.userId, email: input.email, sent: true };
        });
        const confirmation = await ctx.waitForSignal<{ ok: boolean }>('confirm');
        return { userId: input.userId, email: welcome.email, confirmed: confirmation.received };
      });
      // Snapshots hold the flow's state (input, step results) in plaintext: they are wrapped too.
      const snapshotsInner = new InMemorySnapshotStore();
      const snapshots = encryptingSnapshotStore(snapshotsInner, {
        keyring,
        subjectOf: (executionId) => executionId.split('-')[0],
      });
      const settings = {
        flows: [signup],
        timerPollMs: 0,
        inlineWaitMs: 0,
        snapshots,
        snapshotEvery: 1,
      };
      const store = encryptingEventStore(raw.store, { sensitive, keyring });
      const first = createRuntime({ store, ...settings });
      const ada = await first.start(
        signup,
        { userId: 'ada', email: 'ada@example.com' },
        { executionId: `ada-${backend}` },
      );
      const bob = await first.start(
        signup,
        { userId: 'bob', email: 'bob@example.com' },
        { executionId: `bob-${backend}` },
      );
      await eventually(async () => first.activeExecutions.length === 0, 'both runs to suspend');
      expect(effects).toEqual(['ada', 'bob']);

      // What the database holds: the e-mails only as ciphertext, in every event. (Each run's own
      // log: on Postgres readAll hides rows above the oldest transaction open anywhere in the
      // cluster, so it may return nothing yet while another database's long write runs.)
      const stored = JSON.stringify([
        ...(await raw.store.read(ada.executionId)),
        ...(await raw.store.read(bob.executionId)),
      ]);
      expect(stored).not.toContain('@example.com');
      expect(stored).toContain('"$enc":"aes-256-gcm"');

      await first.idle();
      const snapshot = await snapshotsInner.load(ada.executionId);
      expect(snapshot?.sequence).toBeGreaterThan(0);
      expect(JSON.stringify(snapshot)).not.toContain('@example.com');
      expect((await snapshots.load(ada.executionId))?.state).toMatchObject({
        input: { email: 'ada@example.com' },
      });

      const receipt = await store.forget('ada');
      expect(receipt.keysDestroyed).toBe(1);
      await first.shutdown();

      // A new runtime (another process, as after a restart) replays ada's run from the log:
      // the step does not run again, its recorded result carries the Erased marker, and the
      // run completes without a key for ada.
      const second = createRuntime({
        store: encryptingEventStore(raw.store, { sensitive, keyring }),
        ...settings,
      });
      closing.push(() => second.shutdown());
      for (const id of [ada.executionId, bob.executionId])
        await second.signal(id, 'confirm', { ok: true });
      expect((await second.wakeDue()).sort()).toEqual([ada.executionId, bob.executionId].sort());
      const adaOut = (await second.attach(ada.executionId).result()) as Record<string, JsonValue>;
      const bobOut = (await second.attach(bob.executionId).result()) as Record<string, JsonValue>;
      expect(effects).toEqual(['ada', 'bob']);
      expect(adaOut).toEqual({
        userId: 'ada',
        email: { $erased: true, subject: 'ada', keyVersion: 1 },
        confirmed: true,
      });
      expect(bobOut).toEqual({ userId: 'bob', email: 'bob@example.com', confirmed: true });
      expect(await second.status(ada.executionId)).toBe('completed');

      // Reads show Erased in every event of ada's that held the e-mail, and never throw.
      const reader = encryptingEventStore(raw.store, { sensitive, keyring });
      const events = await reader.read(ada.executionId);
      const emails = events.flatMap((event) => {
        const payload = event.payload as Record<string, Record<string, JsonValue>>;
        const field = payload.input?.email ?? payload.result?.email ?? payload.output?.email;
        return field === undefined ? [] : [field];
      });
      expect(emails).toHaveLength(3);
      for (const email of emails) expect(isErased(email)).toBe(true);
      for (const id of [ada.executionId, bob.executionId])
        expect(await reader.verify(id)).toMatchObject({ ok: true });
      const adaLog = await raw.store.read(ada.executionId);
      expect(adaLog.length).toBeGreaterThan(2);
      expect(JSON.stringify(adaLog)).not.toContain('ada@example.com');
      void (raw.store satisfies EventStore);
    });
  });
}

// `--db` / LOOM_DB: Loom's own URL parameters (schema, and the poll mode of ADR 0057) are taken out
// of the PostgreSQL URL before the driver sees it, and reach the store; bad ones are typed errors.
import { openPostgres } from '@loom/event-runtime/postgres';
import { afterAll, describe, expect, it } from 'vitest';
import { parseDbUrl } from '../src/internal/db-url.js';
import { openBackend } from '../src/internal/open-backend.js';
import { pgUrl } from './db-targets.js';

const schema = `view_db_url_${process.pid}`;
afterAll(async () => {
  const backend = await openPostgres({ connectionString: pgUrl, schema });
  await backend.events.connectionPool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await backend.close();
});

describe('parseDbUrl', () => {
  it('takes schema, notifications and pollIntervalMs out of a URL and of a host list', () => {
    expect(
      parseDbUrl(
        'postgres://u@h:5432/db?schema=s&notifications=poll&pollIntervalMs=500&sslmode=disable',
      ),
    ).toEqual({
      kind: 'postgres',
      connectionString: 'postgres://u@h:5432/db?sslmode=disable',
      schema: 's',
      notifications: 'poll',
      pollIntervalMs: 500,
    });
    expect(
      parseDbUrl(
        'postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write&notifications=listen',
      ),
    ).toEqual({
      kind: 'postgres',
      connectionString: 'postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write',
      schema: undefined,
      notifications: 'listen',
      pollIntervalMs: undefined,
    });
  });

  it.each([
    ['notifications=push', "notifications must be listen or poll, got 'push'"],
    ['pollIntervalMs=fast', "pollIntervalMs must be a whole number of milliseconds, got 'fast'"],
    ['pollIntervalMs=-5', "pollIntervalMs must be a whole number of milliseconds, got '-5'"],
  ])('refuses %s with INVALID_DB_URL naming it', (query, message) => {
    expect(() => parseDbUrl(`postgres://u@h/db?${query}`)).toThrow(
      expect.objectContaining({
        code: 'INVALID_DB_URL',
        message: expect.stringContaining(message),
      }),
    );
  });
});

describe('a backend opened from --db', () => {
  it('notifications=poll reaches the store: a watched execution is found by tip polls', async () => {
    await (await openPostgres({ connectionString: pgUrl, schema, migrate: true })).close();
    const backend = await openBackend(
      parseDbUrl(`${pgUrl}?schema=${schema}&notifications=poll&pollIntervalMs=20`),
      false,
    );
    try {
      const events = backend.events as unknown as { stats: { pollStatements: number } };
      expect(events.stats.pollStatements).toBe(0);
      const subscription = backend.events.subscribe({ executionId: 'db-url-poll' }, () => undefined);
      const deadline = Date.now() + 10_000;
      while (events.stats.pollStatements < 2) {
        if (Date.now() > deadline)
          throw new Error('no tip poll within 10 s of watching an execution in poll mode');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await subscription.close();
    } finally {
      await backend.close();
    }
  });

  it('a poll interval the store refuses is its INVALID_ARGUMENT, before anything connects', async () => {
    await expect(
      openBackend(
        parseDbUrl(`${pgUrl}?schema=${schema}&notifications=poll&pollIntervalMs=1`),
        false,
      ),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

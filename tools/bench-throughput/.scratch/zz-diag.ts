import { PostgresEventStore } from '@loom/event-runtime/postgres';
import pg from 'pg';
import { payload256 } from './bench-flows.js';

const url = 'postgres://root@127.0.0.1:5432/test';
const schema = `loom_diag_${process.pid}`;
const admin = new pg.Pool({ connectionString: url, max: 2 });
await admin.query(`CREATE SCHEMA ${schema}`);
const cols = `execution_id text COLLATE "C" NOT NULL, sequence bigint NOT NULL, type text NOT NULL, payload text NOT NULL, at bigint NOT NULL, position bigint GENERATED ALWAYS AS IDENTITY, tx_id xid8 NOT NULL DEFAULT pg_current_xact_id(), prev_hash text, hash text NOT NULL, PRIMARY KEY (execution_id, sequence)`;
await admin.query(`CREATE TABLE ${schema}.plain (${cols})`);
await admin.query(`CREATE TABLE ${schema}.idx (${cols}, UNIQUE(position))`);
await admin.query(`CREATE INDEX ON ${schema}.idx (tx_id, position)`);
await admin.query(`CREATE TABLE ${schema}.plain2 (${cols})`);
await admin.query(`CREATE TABLE ${schema}.unn (${cols})`);
const pool = new pg.Pool({ connectionString: url, max: 10 });
const spool = new pg.Pool({ connectionString: url, max: 10 });
const store = await PostgresEventStore.open({ pool: spool, schema });
await store.migrate();
const payload = JSON.stringify(payload256());
const h = 'f'.repeat(64);
type Op = (id: string, seq: number) => Promise<unknown>;
const ops: Record<string, Op> = {
  raw: (id, seq) =>
    pool.query({
      name: 'a',
      text: `INSERT INTO ${schema}.plain (execution_id, sequence, type, payload, at, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7)`,
      values: [id, seq, 't', payload, Date.now(), h, h],
    }),
  rawNotify: (id, seq) =>
    pool.query({
      name: 'b',
      text: `WITH i AS (INSERT INTO ${schema}.plain2 (execution_id, sequence, type, payload, at, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7) RETURNING sequence, position) SELECT i.*, pg_notify('diag_' || (abs(hashtext($1)) % 16)::text, $1) FROM i`,
      values: [id, seq, 't', payload, Date.now(), h, h],
    }),
  rawUnnestReturning: (id, seq) =>
    pool.query({
      name: 'c',
      text: `INSERT INTO ${schema}.unn (execution_id, sequence, type, payload, at, prev_hash, hash) SELECT $1::text, $2::bigint + t.ord - 1, t.type, t.payload, t.at, t.prev_hash, t.hash FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[]) WITH ORDINALITY AS t(type, payload, at, prev_hash, hash, ord) RETURNING sequence, position`,
      values: [id, seq, ['t'], [payload], [Date.now()], [h], [h]],
    }),
  rawIdx: (id, seq) =>
    pool.query({
      name: 'd',
      text: `INSERT INTO ${schema}.idx (execution_id, sequence, type, payload, at, prev_hash, hash) VALUES ($1,$2,$3,$4,$5,$6,$7)`,
      values: [id, seq, 't', payload, Date.now(), h, h],
    }),
  store: (id, seq) =>
    store.append([
      { executionId: id, sequence: seq, type: 't', payload: payload256(), at: Date.now() },
    ]),
};
async function measure(name: string, c: number, n: number, tag: string) {
  const per = n / c;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: c }, async (_, w) => {
      for (let s = 0; s < per; s++) await ops[name]!(`${tag}-${name}-${w}`, s);
    }),
  );
  return (n * 1000) / (performance.now() - t0);
}
for (const name of Object.keys(ops)) await measure(name, 16, 800, 'warm');
const res: Record<string, number[]> = {};
const names = Object.keys(ops);
for (let r = 0; r < 5; r++)
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + r) % names.length]!;
    (res[name] ??= []).push(await measure(name, 16, 3200, `r${r}`));
  }
for (const [k, v] of Object.entries(res))
  console.log(
    k.padEnd(20),
    v
      .map((x) => Math.round(x))
      .sort((a, b) => a - b)
      .join(' '),
  );
await store.close();
await pool.end();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();

import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth: one text per value, whatever the key order. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  // One string built in place, no entry arrays: a request is hashed once per tool call.
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // A hole, or what JSON has no text for (a function), stays empty, as `join` leaves it.
      const text = i in value ? (canonicalJson(value[i]) as string | undefined) : undefined;
      if (text !== undefined) out += text;
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  // Default sort: by UTF-16 code units, as `<` compares keys (own keys are unique: no ties).
  const keys = Object.keys(record).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const v = record[key];
    if (v === undefined) continue;
    if (!first) out += ',';
    first = false;
    out += `${JSON.stringify(key)}:${canonicalJson(v)}`;
  }
  return `${out}}`;
}

/** sha-256 (hex) of a value's canonical JSON. */
export function hashOf(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

import { bench, describe } from 'vitest';
import { encodePayload } from './json-codec.js';

// The same 256-byte payload every throughput suite uses (its JSON text is exactly 256 bytes).
const payload = { data: 'x'.repeat(256 - JSON.stringify({ data: '' }).length) };

describe('encodePayload, 256-byte payload', () => {
  bench('JSON.stringify (no checks)', () => {
    JSON.stringify(payload);
  });

  bench('encodePayload (checked walk, then JSON.stringify)', () => {
    encodePayload(payload);
  });
});

import { describe, expect, it } from 'vitest';
import type { JsonValue, StoredEvent } from '../../envelope.js';
import { ErrorCode, isLoomError } from '../../errors.js';
import type { KernelEventType } from './kernel-events.js';
import { checkPayload, compilePayloadChecks } from './kernel-payload.js';
import { type FieldShape, payloadShapes } from './payload-shapes.js';

const generated = compilePayloadChecks(true);
const closures = compilePayloadChecks(false);

function event(type: string, payload: unknown): StoredEvent {
  return {
    executionId: 'x',
    sequence: 7,
    type,
    payload: payload as JsonValue,
    at: 0,
    position: 7,
    prevHash: null,
    hash: '',
  };
}

/** A value of each kind, and values that are not. */
const good: { [kind: string]: unknown } = {
  index: 3,
  string: 's',
  'string-or-null': null,
  number: 1.5,
  'number-or-null': null,
  json: { a: [1] },
  error: { name: 'E', message: 'm', code: 'C', fields: { a: 1 } },
  'child-status': 'failed',
  parent: { executionId: 'p', index: 0 },
};
const bad: { [kind: string]: unknown[] } = {
  index: [undefined, -1, 1.5, '1', Number.NaN, 2 ** 53],
  string: [undefined, 1, null, {}],
  'string-or-null': [undefined, 1, {}],
  number: [undefined, '1', null, Number.POSITIVE_INFINITY, Number.NaN],
  'number-or-null': [undefined, '1', Number.NEGATIVE_INFINITY],
  json: [undefined],
  error: [undefined, null, 'E', { name: 'E' }, { name: 'E', message: 'm', code: 1 }],
  'child-status': [undefined, 'gone', null],
  parent: [undefined, null, { executionId: 'p' }, { executionId: 1, index: 0 }],
};

function kindOf(shape: FieldShape): { kind: string; optional: boolean } | undefined {
  if (shape === 'unread' || shape === 'json?') return undefined;
  if (shape === 'outcome-error') return { kind: 'error', optional: false };
  const optional = shape.endsWith('?');
  return { kind: optional ? shape.slice(0, -1) : shape, optional };
}

function validPayload(type: KernelEventType): { [key: string]: unknown } {
  const payload: { [key: string]: unknown } = {};
  for (const [key, shape] of Object.entries(payloadShapes[type])) {
    const field = kindOf(shape as FieldShape);
    if (field !== undefined) payload[key] = good[field.kind];
  }
  return payload;
}

function outcome(check: (event: StoredEvent) => unknown, at: StoredEvent): unknown {
  try {
    return { ok: check(at) };
  } catch (error) {
    expect(isLoomError(error, ErrorCode.LOG_CORRUPT)).toBe(true);
    return { error: (error as { fields: unknown }).fields, message: (error as Error).message };
  }
}

const types = Object.keys(payloadShapes) as KernelEventType[];

describe('payload checks made from the table', () => {
  it('the kernel uses the generated checks (code generation is on in tests)', () => {
    expect(checkPayload['step.completed'].toString()).toContain('payload.result');
  });

  for (const type of types) {
    it(`${type}: a payload of its shape passes and is returned as it is`, () => {
      const payload = validPayload(type);
      const at = event(type, payload);
      expect(generated[type](at)).toBe(payload);
      expect(closures[type](at)).toBe(payload);
    });

    it(`${type}: each field of the wrong kind is LOG_CORRUPT naming it, generated and closures alike`, () => {
      for (const [key, shape] of Object.entries(payloadShapes[type])) {
        const field = kindOf(shape as FieldShape);
        if (field === undefined) continue;
        for (const wrong of bad[field.kind] ?? []) {
          if (wrong === undefined && field.optional) continue;
          const payload = { ...validPayload(type), [key]: wrong };
          if (wrong === undefined) delete payload[key];
          const at = event(type, payload);
          const fromGenerated = outcome(generated[type], at);
          expect(fromGenerated).toEqual(outcome(closures[type], at));
          expect(fromGenerated).toMatchObject({
            error: {
              executionId: 'x',
              sequence: 7,
              type,
              path: expect.stringMatching(`^payload\\.${key}`),
            },
          });
        }
      }
    });
  }

  it('a payload that is not an object is LOG_CORRUPT at `payload`', () => {
    for (const payload of [null, ['reason'], 'reason', 3]) {
      const at = event('execution.cancelled', payload);
      expect(outcome(generated['execution.cancelled'], at)).toMatchObject({
        error: { path: 'payload' },
      });
      expect(outcome(closures['execution.cancelled'], at)).toEqual(
        outcome(generated['execution.cancelled'], at),
      );
    }
  });

  it("child.completed may omit its error only when its status is 'completed'", () => {
    const completed = event('child.completed', { index: 0, childId: 'c', status: 'completed' });
    expect(outcome(generated['child.completed'], completed)).toHaveProperty('ok');
    const failed = event('child.completed', { index: 0, childId: 'c', status: 'failed' });
    expect(outcome(generated['child.completed'], failed)).toMatchObject({
      error: { path: 'payload.error' },
    });
    expect(outcome(closures['child.completed'], failed)).toEqual(
      outcome(generated['child.completed'], failed),
    );
  });

  it('fields are checked in the order the table lists them: the first bad one is named', () => {
    // step.failed lists name before index, as the hand-written fold checked them.
    const at = event('step.failed', { index: -1, name: 1, error: { name: 'E', message: 'm' } });
    expect(outcome(generated['step.failed'], at)).toMatchObject({
      error: { path: 'payload.name' },
    });
  });
});

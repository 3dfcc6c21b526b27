// Matches as data (ADR 0060): field equality on an event, checked when given, and a cancelOn
// match resolved against a run's input.
import { describe, expect, it } from 'vitest';
import { WorkflowErrorCode } from '../errors.js';
import {
  cancelMatchFor,
  checkCancelMatch,
  checkEventMatch,
  eventMatches,
  eventMatchPairsMax,
} from './event-match.js';

const event = {
  name: 'shop/order.paid',
  id: 'p-1',
  data: { orderId: 'o-7', total: 42, paid: true, note: null, customer: { tier: 'gold' } },
  publishedAtMs: 1,
};

describe('event matches', () => {
  it('every pair must equal the value at its path; an absent path never matches', () => {
    expect(eventMatches(event, {})).toBe(true);
    expect(eventMatches(event, { 'data.orderId': 'o-7', name: 'shop/order.paid' })).toBe(true);
    expect(eventMatches(event, { 'data.total': 42, 'data.paid': true, 'data.note': null })).toBe(
      true,
    );
    expect(eventMatches(event, { 'data.customer.tier': 'gold' })).toBe(true);
    expect(eventMatches(event, { 'data.orderId': 'o-8' })).toBe(false);
    expect(eventMatches(event, { 'data.total': '42' })).toBe(false);
    expect(eventMatches(event, { 'data.missing': null })).toBe(false);
    expect(eventMatches(event, { 'data.orderId.length': 3 })).toBe(false);
  });

  it('a bad match is INVALID_ARGUMENT naming where', () => {
    const bad: unknown[] = [
      null,
      [],
      'data.orderId',
      { 'payload.orderId': 'o-7' },
      { '': 'o-7' },
      { 'data..orderId': 'o-7' },
      { 'data.orderId': { nested: 1 } },
      { 'data.total': Number.NaN },
      { 'data.total': undefined },
      Object.fromEntries(
        Array.from({ length: eventMatchPairsMax + 1 }, (_, index) => [`data.f${index}`, 1]),
      ),
    ];
    for (const match of bad) {
      expect(() => checkEventMatch(match, 'the match'), JSON.stringify(match)).toThrow(
        expect.objectContaining({
          code: WorkflowErrorCode.INVALID_ARGUMENT,
          message: expect.stringContaining('the match'),
        }),
      );
    }
  });

  it('a cancelOn match names input paths, and resolves against a run input', () => {
    expect(() => checkCancelMatch({ 'data.orderId': 'input.orderId' }, 'm')).not.toThrow();
    expect(() => checkCancelMatch({ data: 'input' }, 'm')).not.toThrow();
    for (const match of [{ 'data.orderId': 'orderId' }, { 'data.orderId': 7 }, { x: 'input.a' }]) {
      expect(() => checkCancelMatch(match, 'm'), JSON.stringify(match)).toThrow(
        expect.objectContaining({ code: WorkflowErrorCode.INVALID_ARGUMENT }),
      );
    }
    const match = { 'data.orderId': 'input.order.id' };
    expect(cancelMatchFor(match, { order: { id: 'o-7' } })).toEqual({ 'data.orderId': 'o-7' });
    // An input without the field, or with an object there, matches no event.
    expect(cancelMatchFor(match, { order: {} })).toBeUndefined();
    expect(cancelMatchFor(match, { order: { id: { deep: 1 } } })).toBeUndefined();
    expect(cancelMatchFor(undefined, { any: 1 })).toEqual({});
  });
});

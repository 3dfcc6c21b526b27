import { describe, expect, it } from 'vitest';
import type { AiSdkLanguageModel } from './ai-sdk-model.js';
import { fromAiSdk } from './ai-sdk-provider.js';
import { retryAfterOf } from './map-ai-sdk-error.js';

const model = (specificationVersion: string) =>
  ({
    specificationVersion,
    provider: 'p',
    modelId: 'm',
    doGenerate: () => Promise.reject(new Error('unused')),
    doStream: () => Promise.reject(new Error('unused')),
  }) as unknown as AiSdkLanguageModel;

describe('fromAiSdk options', () => {
  it('refuses a model of specification v2, and a timeout that is not a positive whole number', () => {
    expect(() => fromAiSdk(model('v2'))).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => fromAiSdk(model('v4'), { timeoutMs: 0 })).toThrow(
      expect.objectContaining({
        code: 'INVALID_ARGUMENT',
        fields: expect.objectContaining({ option: 'timeoutMs' }),
      }),
    );
    expect(fromAiSdk(model('v3')).id).toBe('p:m');
  });
});

describe('retryAfterOf', () => {
  const nowMs = Date.parse('2026-01-01T00:00:00Z');
  it('reads retry-after-ms, seconds, and an HTTP date; ignores what it cannot read', () => {
    expect(retryAfterOf({ 'Retry-After-Ms': '250.5' }, nowMs)).toBe(251);
    expect(retryAfterOf({ 'retry-after': '1.5' }, nowMs)).toBe(1_500);
    expect(retryAfterOf({ 'retry-after': 'Thu, 01 Jan 2026 00:00:30 GMT' }, nowMs)).toBe(30_000);
    expect(retryAfterOf({ 'retry-after': 'Wed, 31 Dec 2025 23:00:00 GMT' }, nowMs)).toBe(0);
    expect(retryAfterOf({ 'retry-after': 'soon' }, nowMs)).toBeUndefined();
    expect(retryAfterOf({}, nowMs)).toBeUndefined();
  });
});

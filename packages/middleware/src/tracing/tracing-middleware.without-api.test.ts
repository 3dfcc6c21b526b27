import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Tracer } from '@opentelemetry/api';
import { describe, expect, it, vi } from 'vitest';
import { composeMiddleware, wrapEffect } from '../compose-middleware.js';
import { testEffectContext } from '../testing/test-effect-context.js';
import { tracingMiddleware } from './tracing-middleware.js';

// As if `@opentelemetry/api` were not installed.
vi.mock('./load-otel-api.js', () => ({ loadOtelApi: async () => null }));

function recordingTracer() {
  const spans: { name: string; args: number; events: string[] }[] = [];
  const tracer = {
    startSpan(name: string, ...rest: unknown[]) {
      const span = { name, args: rest.length + 1, events: [] as string[] };
      spans.push(span);
      return {
        setAttribute: () => {},
        recordException: () => span.events.push('exception'),
        setStatus: (status: { code: number }) => span.events.push(`status ${status.code}`),
        end: () => span.events.push('end'),
      };
    },
  };
  return { spans, tracer: tracer as unknown as Tracer };
}

describe('tracingMiddleware without @opentelemetry/api', () => {
  it('still makes spans (as roots, no context passed) and changes no outcome', async () => {
    const { spans, tracer } = recordingTracer();
    const tracing = tracingMiddleware({ tracer });
    const chain = composeMiddleware(tracing.step, tracing.attempt);
    await expect(wrapEffect(chain, () => 'ok')(testEffectContext())).resolves.toBe('ok');
    const thrown = 'bare';
    await expect(
      wrapEffect(chain, () => {
        throw thrown;
      })(testEffectContext()),
    ).rejects.toBe(thrown);
    expect(spans.map((s) => [s.name, s.args, s.events.join(',')])).toEqual([
      ['loom.step charge', 2, 'end'],
      ['loom.attempt charge', 2, 'end'],
      ['loom.step charge', 2, 'exception,status 2,end'],
      ['loom.attempt charge', 2, 'exception,status 2,end'],
    ]);
  });

  it('the package source imports @opentelemetry/api only as types, or lazily in one place', () => {
    const root = join(import.meta.dirname, '..');
    const offending: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/(?<!\.test|\.test-support)\.ts$/.test(entry.name)) check(path);
      }
    };
    const check = (path: string) => {
      for (const line of readFileSync(path, 'utf8').split('\n')) {
        const text = line.trim();
        if (/from '@opentelemetry\//.test(text) && !text.startsWith('import type ')) {
          offending.push(`${path}: ${text}`);
        }
        if (/import\('@opentelemetry\//.test(text) && !path.endsWith('load-otel-api.ts')) {
          offending.push(`${path}: ${text}`);
        }
      }
    };
    walk(root);
    expect(offending).toEqual([]);
  });
});

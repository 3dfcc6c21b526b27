// The oracle: over 3,000 random blueprints and histories, renderMessages and renderHistory give
// byte for byte what the deliberately simple reference renderer (@loom/render/testing) gives,
// including the error when the required parts do not fit. Texts include lone surrogates,
// control characters and U+2028. Seeded: the seed is printed, and LOOM_RENDER_SEED=<seed>
// replays a run.
import type { JsonValue, ToolCall, ToolSpec } from '@loom/reasoning';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BlueprintNode, HistoryStep, Observation } from './blueprint.js';
import { defaultObservation, type ObservationRenderer } from './default-observation.js';
import { isLoomError } from './errors.js';
import { renderHistory } from './render-history.js';
import { type RenderResult, renderMessages } from './render-messages.js';
import { referenceRenderMessages } from './testing/reference-render-messages.js';
import { approximateTokenizer, type Tokenizer } from './tokenizer.js';

const seed = Number(process.env.LOOM_RENDER_SEED ?? Math.floor(Math.random() * 2 ** 31));
console.log(`render oracle: seed ${seed} (replay with LOOM_RENDER_SEED=${seed})`);

const hostileUnit = fc.constantFrom(
  '\ud800',
  '\udfff',
  '\u0000',
  '\u001b',
  '\u2028',
  '\ufeff',
  '😀',
);
const text = fc.string({
  unit: fc.oneof(
    { arbitrary: fc.constantFrom('a', 'b', ' ', '\n'), weight: 6 },
    { arbitrary: hostileUnit, weight: 1 },
  ),
  maxLength: 40,
});
const json: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>;
// Optional keys: fc.record leaves them out at random (requiredKeys), so a node may inherit.
const priority = fc.oneof(
  { arbitrary: fc.integer({ min: -2, max: 3 }), weight: 8 },
  fc.constantFrom(Infinity, -Infinity, 0.5),
);
const required = fc.boolean();

const toolSpec: fc.Arbitrary<ToolSpec> = fc.record({
  name: text,
  description: text,
  inputSchema: fc.dictionary(fc.string({ maxLength: 5 }), json, { maxKeys: 3 }),
});

const observationFor = (callId: string): fc.Arbitrary<Observation> =>
  fc.oneof(
    json.map((content) => ({ kind: 'tool_result' as const, callId, content })),
    text.map((message) => ({ kind: 'tool_error' as const, callId, message })),
    text.map((reason) => ({ kind: 'denied' as const, callId, reason })),
    text.map((message) => ({ kind: 'invalid_decision' as const, callId, message })),
  );

const step: fc.Arbitrary<HistoryStep> = fc
  .record({
    text: fc.option(text, { nil: undefined }),
    tools: fc.array(fc.tuple(text, json), { maxLength: 3 }),
    stray: fc.array(text, { maxLength: 1 }),
    order: fc.array(fc.nat(), { minLength: 3, maxLength: 3 }),
  })
  .chain(({ text: words, tools, stray, order }) => {
    const calls: ToolCall[] = tools.map(([tool, input], i) => ({ callId: `c${i}`, tool, input }));
    return fc.tuple(...calls.map((call) => observationFor(call.callId))).map((answers) => {
      // Answers in a shuffled order, stray invalid decisions (no callId) mixed in.
      const observations: Observation[] = answers
        .map((answer, i) => ({ answer, key: order[i]! }))
        .sort((a, b) => a.key - b.key)
        .map(({ answer }) => answer);
      for (const message of stray)
        observations.splice(order[0]! % (observations.length + 1), 0, {
          kind: 'invalid_decision',
          message,
        });
      const built: HistoryStep = {};
      if (words !== undefined) built.text = words;
      if (calls.length > 0 || tools.length > 0) built.calls = calls;
      if (observations.length > 0) built.observations = observations;
      return built;
    });
  });

const { node: blueprint } = fc.letrec<{ node: BlueprintNode; leaf: BlueprintNode }>((tie) => ({
  leaf: fc.oneof(
    fc.record(
      { kind: fc.constant('system' as const), text, priority, required },
      { requiredKeys: ['kind', 'text'] },
    ),
    fc.record(
      { kind: fc.constant('user' as const), text, priority, required },
      { requiredKeys: ['kind', 'text'] },
    ),
    fc.record(
      { kind: fc.constant('assistant' as const), text, priority, required },
      { requiredKeys: ['kind', 'text'] },
    ),
    fc.record(
      {
        kind: fc.constant('conversation' as const),
        exchanges: fc.array(
          fc.record(
            { user: text, steps: fc.array(step, { maxLength: 3 }) },
            { requiredKeys: ['user'] },
          ),
          { maxLength: 4 },
        ),
        keepLast: fc.nat(2),
        priority,
        required,
      },
      { requiredKeys: ['kind', 'exchanges'] },
    ),
    fc.record(
      {
        kind: fc.constant('tools' as const),
        tools: fc.array(toolSpec, { maxLength: 3 }),
        priority,
        required,
      },
      { requiredKeys: ['kind', 'tools'] },
    ),
    fc.record(
      {
        kind: fc.constant('history' as const),
        steps: fc.array(step, { maxLength: 6 }),
        keepLast: fc.nat(3),
        priority,
        required,
      },
      { requiredKeys: ['kind', 'steps'] },
    ),
  ),
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('leaf'),
    fc.record(
      {
        kind: fc.constant('group' as const),
        children: fc.array(tie('node'), { maxLength: 4 }),
        priority,
        required,
      },
      { requiredKeys: ['kind', 'children'] },
    ),
  ),
}));

const words: Tokenizer = {
  name: 'words',
  messageOverheadTokens: 2,
  count: (t) => t.split(/\s+/).filter(Boolean).length,
};
const chars: Tokenizer = { name: 'chars', messageOverheadTokens: 0, count: (t) => t.length };
const tokenizer = fc.constantFrom(approximateTokenizer, words, chars);
const renderer = fc.constantFrom<ObservationRenderer>(defaultObservation, (o) =>
  defaultObservation(o, { maxChars: 7 }),
);

type Outcome = { ok: Omit<RenderResult, 'passes'> } | { error: { code: string; fields: unknown } };

function outcome(render: () => RenderResult): Outcome {
  try {
    const { passes: _passes, ...rest } = render();
    return { ok: rest };
  } catch (error) {
    if (!isLoomError(error)) throw error;
    return { error: { code: error.code, fields: error.fields } };
  }
}

describe('renderMessages equals the reference renderer (fast-check oracle)', () => {
  it('3,000 random blueprints under random budgets give byte-identical output', () => {
    let dropping = 0;
    let tooSmall = 0;
    fc.assert(
      fc.property(
        blueprint,
        tokenizer,
        renderer,
        fc.double({ min: 0, max: 1.2, noNaN: true }),
        (root, tok, renderObservation, fraction) => {
          const full = renderMessages(root, {
            tokenBudget: Infinity,
            tokenizer: tok,
            renderObservation,
          });
          expect(full.passes).toBe(1);
          const tokenBudget = Math.floor(full.tokens * fraction);
          const options = { tokenBudget, tokenizer: tok, renderObservation };
          const actual = outcome(() => {
            const result = renderMessages(root, options);
            expect(result.passes).toBe(result.dropped.length === 0 ? 1 : 2);
            return result;
          });
          const expected = outcome(() => referenceRenderMessages(root, options));
          expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
          expect(actual).toStrictEqual(expected);
          if ('error' in actual) tooSmall++;
          else if (actual.ok.dropped.length > 0) dropping++;
        },
      ),
      { numRuns: 3000, seed },
    );
    // The budgets exercised all three outcomes, not only the easy one.
    expect(dropping).toBeGreaterThan(100);
    expect(tooSmall).toBeGreaterThan(50);
  });

  it('300 random histories render as the reference renders a history node with no budget', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 20 }), (steps) => {
        const expected = referenceRenderMessages(
          { kind: 'history', steps },
          { tokenBudget: Infinity },
        );
        expect(JSON.stringify(renderHistory(steps))).toBe(JSON.stringify(expected.messages));
      }),
      { numRuns: 300, seed },
    );
  });
});

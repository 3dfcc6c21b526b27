import { describe, expect, it } from 'vitest';
import type { BlueprintNode, GroupNode } from './blueprint.js';
import { isLoomError, RenderErrorCode } from './errors.js';
import { RenderLimits } from './limits.js';
import { traverseBlueprint } from './traverse-blueprint.js';

const text = (t: string): BlueprintNode => ({ kind: 'system', text: t });

describe('traverseBlueprint', () => {
  it('visits every node once, depth first and in order, with its depth and path', () => {
    const root: BlueprintNode = {
      kind: 'group',
      children: [text('a'), { kind: 'group', children: [text('b'), text('c')] }, text('d')],
    };
    const seen: string[] = [];
    traverseBlueprint(root, (node, depth, path) => {
      const label = node.kind === 'group' ? 'g' : node.kind === 'system' ? node.text : '?';
      seen.push(`${label}@${depth}[${path.join(',')}]`);
    });
    expect(seen).toEqual(['g@0[]', 'a@1[0]', 'g@1[1]', 'b@2[1,0]', 'c@2[1,1]', 'd@1[2]']);
  });

  it("'skip' leaves a node's children out", () => {
    const root: BlueprintNode = {
      kind: 'group',
      children: [{ kind: 'group', children: [text('hidden')] }, text('shown')],
    };
    const seen: string[] = [];
    traverseBlueprint(root, (node, depth) => {
      if (node.kind === 'system') seen.push(node.text);
      return node.kind === 'group' && depth === 1 ? 'skip' : undefined;
    });
    expect(seen).toEqual(['shown']);
  });

  it('walks a chain 200,000 groups deep without a stack overflow', () => {
    let node: BlueprintNode = text('leaf');
    for (let i = 0; i < 200_000; i++) node = { kind: 'group', children: [node] };
    let deepest = -1;
    let visits = 0;
    let pathsOfWrongLength = 0;
    traverseBlueprint(node, (_node, depth, path) => {
      visits++;
      if (path.length !== depth) pathsOfWrongLength++;
      deepest = Math.max(deepest, depth);
    });
    expect(visits).toBe(200_001);
    expect(pathsOfWrongLength).toBe(0);
    expect(deepest).toBe(200_000);
  });

  it('a group that contains itself is an INVALID_BLUEPRINT past blueprintNodesMax, not an endless walk', () => {
    const loop: GroupNode = { kind: 'group', children: [] };
    (loop.children as BlueprintNode[]).push(loop);
    let visits = 0;
    let caught: unknown;
    try {
      traverseBlueprint(loop, () => {
        visits++;
      });
    } catch (error) {
      caught = error;
    }
    expect(isLoomError(caught, RenderErrorCode.INVALID_BLUEPRINT)).toBe(true);
    expect(visits).toBe(RenderLimits.blueprintNodesMax);
  });

  it('a group without a children array is an INVALID_BLUEPRINT naming its path', () => {
    const root = {
      kind: 'group',
      children: [{ kind: 'group', children: 'nope' }],
    } as unknown as BlueprintNode;
    expect(() => traverseBlueprint(root, () => {})).toThrow(
      expect.objectContaining({ code: 'INVALID_BLUEPRINT', fields: { nodePath: [0] } }),
    );
  });
});

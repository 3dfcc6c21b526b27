import type { BlueprintNode } from './blueprint.js';
import { LoomError, RenderErrorCode } from './errors.js';
import { RenderLimits } from './limits.js';

/**
 * Called once per node, in depth-first order. `path` is the node's child indices from the root
 * (`[]` for the root). It is one array reused for the whole walk (so the walk stays linear):
 * copy it to keep it past the call. Returning `'skip'` leaves the node's children out.
 */
export type BlueprintVisitor = (
  node: BlueprintNode,
  depth: number,
  path: readonly number[],
  // biome-ignore lint/suspicious/noConfusingVoidType: a visitor that returns nothing is the common case
) => 'skip' | void;

/**
 * Walks a blueprint depth first, in order, with an explicit stack (no recursion, so no depth
 * limit), visiting each node once: linear in the number of nodes. Pure and synchronous.
 *
 * Throws `INVALID_BLUEPRINT` when a group's `children` is not an array, or when the walk passes
 * `RenderLimits.blueprintNodesMax` nodes (a blueprint that contains itself never ends otherwise).
 *
 * @example
 * let texts = 0;
 * traverseBlueprint(blueprint, (node) => {
 *   if (node.kind === 'system' || node.kind === 'user') texts++;
 * });
 */
export function traverseBlueprint(root: BlueprintNode, visit: BlueprintVisitor): void {
  // Parallel stacks of (node, depth, index in parent): no object per entry.
  const nodes: BlueprintNode[] = [root];
  const depths: number[] = [0];
  const indices: number[] = [0];
  const path: number[] = [];
  let visited = 0;
  while (nodes.length > 0) {
    const node = nodes.pop()!;
    const depth = depths.pop()!;
    const index = indices.pop()!;
    if (depth > 0) {
      path.length = depth - 1;
      path.push(index);
    }
    if (++visited > RenderLimits.blueprintNodesMax) {
      throw new LoomError(
        RenderErrorCode.INVALID_BLUEPRINT,
        `the blueprint has more than ${RenderLimits.blueprintNodesMax} nodes (RenderLimits.blueprintNodesMax): does a group contain itself?`,
        { nodePath: [...path], limit: 'blueprintNodesMax', max: RenderLimits.blueprintNodesMax },
      );
    }
    if (visit(node, depth, path) === 'skip') continue;
    if (node === null || typeof node !== 'object' || node.kind !== 'group') continue;
    const children = node.children;
    if (!Array.isArray(children)) {
      throw new LoomError(
        RenderErrorCode.INVALID_BLUEPRINT,
        `the group at [${path.join(', ')}] has no children array: give it children: [] or drop it`,
        { nodePath: [...path] },
      );
    }
    for (let i = children.length - 1; i >= 0; i--) {
      nodes.push(children[i]);
      depths.push(depth + 1);
      indices.push(i);
    }
  }
}

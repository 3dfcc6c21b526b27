import { createHash } from 'node:crypto';
import { ErrorCode, LoomError } from '../errors.js';
import type { NodeClaim } from '../lease-store.js';
import { Limits } from '../limits.js';
import { checkLeaseOwner } from './lease-input.js';

/**
 * Validates a batch of node ids for `liveNodes` and returns them without duplicates. Throws
 * `INVALID_ARGUMENT` (not an array, a bad id) and `LIMIT_EXCEEDED` past `leaseBatchMax`.
 */
export function checkNodeBatch(nodeIds: unknown): string[] {
  if (!Array.isArray(nodeIds)) {
    throw new LoomError(
      ErrorCode.INVALID_ARGUMENT,
      `liveNodes needs an array of node ids, got ${typeof nodeIds}`,
      { path: 'nodeIds' },
    );
  }
  if (nodeIds.length > Limits.leaseBatchMax) {
    throw new LoomError(
      ErrorCode.LIMIT_EXCEEDED,
      `liveNodes got ${nodeIds.length} node ids, over leaseBatchMax (${Limits.leaseBatchMax}): ` +
        'split the batch',
      { limit: 'leaseBatchMax', actual: nodeIds.length, operation: 'liveNodes' },
    );
  }
  return [...new Set(nodeIds.map((nodeId) => checkLeaseOwner(nodeId, 'nodeId')))];
}

/** A stable digest of a node id: file names and advisory-lock keys are derived from it. */
export function nodeDigest(nodeId: string): Buffer {
  return createHash('sha256').update(nodeId, 'utf8').digest();
}

/**
 * Node claims held in this process's memory: the claims of the in-memory lease store and of a
 * SQLite lease store on an in-memory database (a process-private store, so a process that dies
 * takes the store with it and nobody is left to ask).
 */
export class ProcessNodeClaims {
  private readonly held = new Set<string>();

  /** Claims `nodeId`; undefined when it is held already. */
  claim(nodeId: string): NodeClaim | undefined {
    if (this.held.has(nodeId)) return undefined;
    this.held.add(nodeId);
    let released = false;
    return {
      nodeId,
      release: async () => {
        if (released) return;
        released = true;
        this.held.delete(nodeId);
      },
    };
  }

  /** The ids among `nodeIds` that are held. */
  live(nodeIds: readonly string[]): Set<string> {
    return new Set(nodeIds.filter((nodeId) => this.held.has(nodeId)));
  }

  get count(): number {
    return this.held.size;
  }
}

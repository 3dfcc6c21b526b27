import { LoomError, WorkflowErrorCode } from '../errors.js';

/** Limits of placement and of the remote effect protocol, each with the reason for its size. */
export const PlacementLimits = {
  /** Tags per node or per placement: a placement is a short list of capabilities, not a query. */
  tagsMax: 32,
  /** Characters of one tag (`gpu`, `region:eu-west-1`, `mem.64g`). */
  tagLengthMax: 64,
  /**
   * Bytes of a remote effect's request or response body: effects carry arguments and results,
   * not files (put large payloads in a content store and pass references).
   */
  responseBytesMax: 4 * 1024 * 1024,
  /** Default per-call timeout of a remote effect, ms. */
  remoteTimeoutMsDefault: 30_000,
  /** Completed results an effect server keeps for deduplication by idempotency key. */
  dedupeEntriesMaxDefault: 10_000,
} as const;

/**
 * Where an effect (or a whole execution) may run: on a node that carries every one of `tags`, or
 * on the named remote worker. Tags are capabilities a node declares (`createRuntime({ tags })`,
 * `loom worker --tags gpu`), e.g. `gpu`, `region:eu`.
 */
export type Placement =
  | { tags: readonly string[]; remote?: never }
  | { remote: string; tags?: never };

const tagPattern = /^[A-Za-z0-9][A-Za-z0-9._:=-]*$/;

/**
 * Checks a list of tags (`where` names the option for the message) and returns a frozen copy.
 * Throws `INVALID_ARGUMENT` for a non-array, too many tags, or a tag that is empty, too long or
 * has characters outside `[A-Za-z0-9._:=-]`.
 */
export function checkTags(tags: unknown, where: string): readonly string[] {
  if (!Array.isArray(tags) || tags.length > PlacementLimits.tagsMax) {
    throw new LoomError(
      WorkflowErrorCode.INVALID_ARGUMENT,
      `${where} must be an array of at most ${PlacementLimits.tagsMax} tags`,
      { path: where, actual: Array.isArray(tags) ? tags.length : typeof tags },
    );
  }
  for (const tag of tags) {
    if (
      typeof tag !== 'string' ||
      tag.length > PlacementLimits.tagLengthMax ||
      !tagPattern.test(tag)
    ) {
      throw new LoomError(
        WorkflowErrorCode.INVALID_ARGUMENT,
        `${where} has the tag ${JSON.stringify(tag)}: a tag is 1 to ${PlacementLimits.tagLengthMax} ` +
          'characters of [A-Za-z0-9._:=-], starting with a letter or digit',
        { path: where, actual: String(tag) },
      );
    }
  }
  return Object.freeze([...new Set(tags as string[])]);
}

/** True when `have` carries every tag of `need` (an empty `need` fits every node). */
export function tagsSatisfy(have: readonly string[], need: readonly string[]): boolean {
  for (const tag of need) if (!have.includes(tag)) return false;
  return true;
}

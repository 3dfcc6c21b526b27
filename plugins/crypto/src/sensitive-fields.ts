import type { EventEnvelope } from '@loom/event-runtime';
import { CryptoErrorCode, cryptoError } from './errors.js';

/**
 * Names the subject an event's sensitive fields belong to: a dotted path into the payload
 * (`'userId'`, `'input.customer.id'`), or a function of the envelope.
 */
export type SubjectOf = string | ((envelope: EventEnvelope) => unknown);

/** The sensitive fields of one event type. */
export interface SensitiveRule {
  /** Whose data it is: the subject whose data key encrypts the fields. */
  subject: SubjectOf;
  /**
   * Payload paths to encrypt: dotted names, `[]` after a name for every element of an array:
   * `'email'`, `'address.street'`, `'cards[].number'`, `'tags[]'`. One path may not lie inside
   * another. A path that is absent from a payload is skipped; a value of another shape than the
   * path expects (a string where it names `address.street`) is encrypted whole.
   */
  fields: readonly string[];
}

/**
 * Per event type, the fields to encrypt and the subject they belong to. Keep a path in the map
 * as long as events written with it exist: reads decrypt the paths the map names.
 */
export type SensitiveFields = Readonly<Record<string, SensitiveRule>>;

/** One step of a compiled path: a key, optionally every element of the array under it. */
export interface PathNode {
  readonly name: string;
  readonly each: boolean;
  /** The path ends here: the value (or each element) is encrypted whole. */
  readonly leaf: boolean;
  readonly children: readonly PathNode[];
}

/** One event type's rule, compiled once: a trie of its paths and its subject reader. */
export interface CompiledRule {
  readonly type: string;
  readonly roots: readonly PathNode[];
  subjectOf(envelope: EventEnvelope): unknown;
}

interface MutableNode {
  name: string;
  each: boolean;
  leaf: boolean;
  children: MutableNode[];
}

const segmentPattern = /^([^.[\]]+)(\[\])?$/;

function invalid(option: string, why: string): never {
  throw cryptoError(CryptoErrorCode.INVALID_ARGUMENT, `sensitive: ${option} ${why}`, { option });
}

function compilePaths(type: string, fields: unknown): MutableNode[] {
  const option = `['${type}'].fields`;
  if (!Array.isArray(fields) || fields.length === 0)
    invalid(option, 'must be a non-empty array of paths');
  const roots: MutableNode[] = [];
  fields.forEach((field: unknown, index) => {
    const where = `${option}[${index}]`;
    if (typeof field !== 'string' || field.length === 0)
      invalid(where, 'must be a non-empty string');
    let level = roots;
    const segments = field.split('.');
    segments.forEach((segment, depth) => {
      const match = segmentPattern.exec(segment);
      if (match === null)
        invalid(
          where,
          `'${field}': segment '${segment}' must be a name, optionally followed by []`,
        );
      const name = match[1] as string;
      const each = match[2] !== undefined;
      const last = depth === segments.length - 1;
      let node = level.find((candidate) => candidate.name === name);
      if (node === undefined) {
        node = { name, each, leaf: false, children: [] };
        level.push(node);
      } else if (node.each !== each) {
        invalid(where, `'${field}': '${name}' is an array in one path and not in another`);
      }
      if (node.leaf || (last && node.children.length > 0))
        invalid(where, `'${field}' overlaps another path: one path may not lie inside another`);
      if (last) node.leaf = true;
      level = node.children;
    });
  });
  return roots;
}

function compileSubject(type: string, subject: unknown): (envelope: EventEnvelope) => unknown {
  if (typeof subject === 'function') return subject as (envelope: EventEnvelope) => unknown;
  if (typeof subject !== 'string' || subject.length === 0)
    invalid(`['${type}'].subject`, 'must be a payload path or a function of the envelope');
  const keys = subject.split('.');
  if (keys.some((key) => key.length === 0))
    invalid(`['${type}'].subject`, `'${subject}' has an empty segment`);
  return (envelope) => {
    let value: unknown = envelope.payload;
    for (const key of keys) {
      if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key))
        return undefined;
      value = (value as Record<string, unknown>)[key];
    }
    return value;
  };
}

/**
 * Checks a `sensitive` map and compiles it into one trie per event type, so an event costs one
 * map lookup and then a walk of its marked paths only.
 *
 * Error codes: `INVALID_ARGUMENT` (`fields.option` names the bad entry).
 */
export function compileSensitiveFields(
  sensitive: SensitiveFields,
): ReadonlyMap<string, CompiledRule> {
  if (typeof sensitive !== 'object' || sensitive === null || Array.isArray(sensitive))
    invalid('map', 'must be an object of event type → { subject, fields }');
  const rules = new Map<string, CompiledRule>();
  for (const [type, rule] of Object.entries(sensitive)) {
    if (typeof rule !== 'object' || rule === null)
      invalid(`['${type}']`, 'must be an object { subject, fields }');
    rules.set(type, {
      type,
      roots: compilePaths(type, rule.fields),
      subjectOf: compileSubject(type, rule.subject),
    });
  }
  return rules;
}

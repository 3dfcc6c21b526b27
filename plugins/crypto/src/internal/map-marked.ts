import type { JsonValue } from '@loom/event-runtime';
import type { PathNode } from '../sensitive-fields.js';

/** What a walk does where it stands on a marked path. */
export interface MarkedVisitor {
  /**
   * At a value the path ends on (or an element of a `[]` path's last array). Returns what
   * replaces it; the value itself to keep it.
   */
  leaf(value: JsonValue, path: string): JsonValue;
  /**
   * At a value the path goes on through. Returns what replaces it, or undefined to descend
   * (the walk then keeps values of a shape it cannot descend into as they are).
   */
  branch(value: JsonValue, path: string, expect: 'array' | 'object'): JsonValue | undefined;
}

/**
 * A value a walk put in place of a field, to be filled in after the walk (decryption waits for
 * one key lookup of the whole batch).
 */
export class Pending {
  constructor(
    readonly field: unknown,
    readonly path: string,
  ) {}
}

/** Where a walk put a {@link Pending}, so a later step can fill it in (one walk, one lookup). */
export interface Slot {
  container: JsonValue[] | { [key: string]: JsonValue };
  key: string | number;
  pending: Pending;
}

type JsonObject = { [key: string]: JsonValue };

/**
 * Walks only the marked paths of `payload`, replacing values as the visitor says, and copies
 * only the containers on the way to a replaced value (the caller's payload is never changed).
 * Every {@link Pending} a visitor returns is recorded in `slots`. Returns the payload itself when nothing changed.
 */
export function mapMarked(
  payload: JsonValue,
  roots: readonly PathNode[],
  visitor: MarkedVisitor,
  slots: Slot[],
): JsonValue {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return payload;
  return mapObject(payload, roots, '$', visitor, slots);
}

function mapObject(
  object: JsonObject,
  nodes: readonly PathNode[],
  path: string,
  visitor: MarkedVisitor,
  slots: Slot[],
): JsonObject {
  let copy: JsonObject | undefined;
  for (const node of nodes) {
    if (!Object.hasOwn(object, node.name)) continue;
    const value = object[node.name] as JsonValue;
    const next = mapNode(value, node, `${path}.${node.name}`, visitor, slots);
    if (next === value) continue;
    copy ??= { ...object };
    copy[node.name] = next;
    if (next instanceof Pending) slots.push({ container: copy, key: node.name, pending: next });
  }
  return copy ?? object;
}

function mapNode(
  value: JsonValue,
  node: PathNode,
  path: string,
  visitor: MarkedVisitor,
  slots: Slot[],
): JsonValue {
  if (!node.each) return mapStep(value, node, path, visitor, slots);
  const replaced = visitor.branch(value, path, 'array');
  if (replaced !== undefined) return replaced;
  if (!Array.isArray(value)) return value;
  let copy: JsonValue[] | undefined;
  for (let index = 0; index < value.length; index++) {
    const element = value[index] as JsonValue;
    const next = mapStep(element, node, `${path}[${index}]`, visitor, slots);
    if (next === element) continue;
    copy ??= value.slice();
    copy[index] = next;
    if (next instanceof Pending) slots.push({ container: copy, key: index, pending: next });
  }
  return copy ?? value;
}

function mapStep(
  value: JsonValue,
  node: PathNode,
  path: string,
  visitor: MarkedVisitor,
  slots: Slot[],
): JsonValue {
  if (node.leaf) return visitor.leaf(value, path);
  const replaced = visitor.branch(value, path, 'object');
  if (replaced !== undefined) return replaced;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return mapObject(value, node.children, path, visitor, slots);
}

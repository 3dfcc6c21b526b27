import type { ContentKey } from '../content-ref.js';
import type { ContentStore } from '../content-store.js';

/**
 * The content of `keys` from `store`: one `getMany` when the store has it, else one `get` per
 * distinct key (through `get`, which may share calls in flight), all at once.
 */
export async function fetchMany(
  store: ContentStore,
  keys: readonly ContentKey[],
  get: (key: ContentKey) => Promise<Uint8Array | undefined> = (key) => store.get(key),
): Promise<ReadonlyMap<ContentKey, Uint8Array>> {
  if (store.getMany !== undefined) return store.getMany(keys);
  const distinct = [...new Set(keys)];
  const values = await Promise.all(distinct.map(get));
  const found = new Map<ContentKey, Uint8Array>();
  distinct.forEach((key, index) => {
    const bytes = values[index];
    if (bytes !== undefined) found.set(key, bytes);
  });
  return found;
}

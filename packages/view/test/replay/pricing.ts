/** The price step's result: the same as flows-v1.mjs records. */
export function priceOf(id: string): { id: string; total: number } {
  return { id, total: 42 };
}

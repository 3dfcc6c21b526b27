// What a flow awaits once its execution can go no further in this process.
/** A promise that never settles: what a flow awaits once its execution suspends or stops. */
export function never<T>(): Promise<T> {
  return new Promise<T>(() => undefined);
}

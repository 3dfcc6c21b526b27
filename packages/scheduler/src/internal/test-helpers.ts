/** A promise with its settle functions outside, so a test decides when a task finishes. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every pending promise callback run (microtasks drain before a macrotask turn). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** Counts tasks in flight and remembers the most seen at once. */
export class ConcurrencyProbe {
  active = 0;
  maxActive = 0;
  started = 0;

  enter(): void {
    this.active++;
    this.started++;
    if (this.active > this.maxActive) this.maxActive = this.active;
  }

  leave(): void {
    this.active--;
  }
}

/** Runs `work` every `ms` (never overlapping itself) until the returned stop is called; 0 = never. */
export function every(ms: number, work: () => Promise<unknown>): () => void {
  if (ms <= 0) return () => undefined;
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void work().finally(() => {
      running = false;
    });
  }, ms);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * Resolves once `stopped()` is true, checking every 100 ms. Unlike `every`, its timer keeps the
 * process alive until then.
 */
export function keepAliveUntil(stopped: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => {
      if (!stopped()) return;
      clearInterval(keepAlive);
      resolve();
    }, 100);
  });
}

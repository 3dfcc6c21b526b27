/** Where a progress line goes, and whether it may appear at all. */
export interface ProgressOptions {
  /** Writes to stderr; a text starting with `\r` is written without a newline (the bin's rule). */
  stderr(text: string): void;
  /** Only on a terminal, and never with `--json`. */
  enabled: boolean;
  /** How long the work runs before the line appears (ms). */
  afterMs: number;
}

/** A line on stderr that rewrites itself while long work goes on. */
export interface Progress {
  /** What is done so far (`12,000 events`); shown at the next tick, or at once when it is due. */
  update(done: string): void;
  /** Erases the line for now, if it is shown (before writing other lines); the next draw shows it again. */
  clear(): void;
  /** Clears the line, if it was shown. */
  end(): void;
}

/** How often a shown line is redrawn with the elapsed time (ms). */
const redrawMs = 250;

/** The environment variable that moves the 1 s threshold (tests: 0 shows the line at once). */
export const progressAfterMsEnvVar = 'LOOM_PROGRESS_AFTER_MS';

/**
 * The threshold: 1 s, unless `LOOM_PROGRESS_AFTER_MS` holds a non-negative integer (for tests: 0
 * shows the line at once and redraws it on every update).
 */
export function progressAfterMs(env: Readonly<Record<string, string | undefined>>): number {
  const given = Number(env[progressAfterMsEnvVar] ?? '');
  return env[progressAfterMsEnvVar] !== undefined && Number.isInteger(given) && given >= 0
    ? given
    : 1_000;
}

const clearLine = '\r\x1b[2K';

/**
 * Starts a progress line for `label` (`verifying`): after `afterMs` it shows
 * `label… <done> (<seconds> s)` and redraws it in place; `end()` erases it. Disabled (not a
 * terminal, or `--json`), it writes nothing at all.
 */
export function startProgress(label: string, options: ProgressOptions): Progress {
  if (!options.enabled) return { update: () => {}, clear: () => {}, end: () => {} };
  const started = Date.now();
  let done = '';
  let shown = false;
  let lastDraw = 0;
  const draw = () => {
    const now = Date.now();
    lastDraw = now;
    shown = true;
    const seconds = ((now - started) / 1_000).toFixed(1);
    options.stderr(`${clearLine}${label}…${done === '' ? '' : ` ${done}`} (${seconds} s)`);
  };
  const due = () => Date.now() - started >= options.afterMs;
  let ticker: ReturnType<typeof setInterval> | undefined;
  const startTicker = () => {
    ticker = setInterval(() => {
      if (due()) draw();
    }, redrawMs);
    ticker.unref();
  };
  if (options.afterMs === 0) draw();
  startTicker();
  return {
    update(text) {
      done = text;
      // Threshold 0 (tests) redraws on every update, so the last count is always written.
      const gap = shown && options.afterMs > 0 ? redrawMs : 0;
      if (due() && Date.now() - lastDraw >= gap) draw();
    },
    clear() {
      if (shown) options.stderr(clearLine);
      shown = false;
    },
    end() {
      if (ticker !== undefined) clearInterval(ticker);
      if (shown) options.stderr(clearLine);
      shown = false;
    },
  };
}

/** `12,345` */
export function count(n: number): string {
  return n.toLocaleString('en-US');
}

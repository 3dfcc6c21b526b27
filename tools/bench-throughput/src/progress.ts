/**
 * The one progress line on stderr: rewritten in place on a terminal, throttled to one line per
 * cell when stderr is a file or a pipe (so a log stays readable). Tables go to stdout untouched.
 */
export class Progress {
  private lastLength = 0;
  private lastWriteMs = 0;
  private readonly tty = process.stderr.isTTY === true;

  /** Replace the line (at most ~10 times a second on a terminal). */
  update(text: string, force = false): void {
    const now = Date.now();
    if (!this.tty) {
      if (force) process.stderr.write(`${text}\n`);
      return;
    }
    if (!force && now - this.lastWriteMs < 100) return;
    this.lastWriteMs = now;
    const line = text.length > 150 ? `${text.slice(0, 149)}…` : text;
    process.stderr.write(`\r${line.padEnd(this.lastLength)}`);
    this.lastLength = line.length;
  }

  /** A message that stays (skips, notes): clears the progress line first. */
  note(text: string): void {
    this.clear();
    process.stderr.write(`${text}\n`);
  }

  clear(): void {
    if (this.tty && this.lastLength > 0) process.stderr.write(`\r${' '.repeat(this.lastLength)}\r`);
    this.lastLength = 0;
  }
}

/**
 * Polls `check` every 5 ms until it holds; fails once `deadlineMs` of real time passed (a count of
 * tries would be a few seconds on a loaded box, where one store round trip can take 100 ms).
 * On timeout the error names `what` it waited for and, when `describe` is given, what it saw
 * instead (a suite passes one that prints the executions it made and the tails of their logs),
 * so a hang that shows up once in a hundred runs says where it stopped.
 */
export async function until(
  check: () => Promise<boolean> | boolean,
  what: string,
  deadlineMs = 30_000,
  describe?: () => Promise<string> | string,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (await check()) return;
  let seen = '';
  if (describe !== undefined) {
    try {
      seen = `; saw instead:\n${await describe()}`;
    } catch (error) {
      seen = `; describing what it saw failed: ${String(error)}`;
    }
  }
  throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}${seen}`);
}

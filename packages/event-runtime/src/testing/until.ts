/**
 * Polls `check` every 5 ms until it holds; fails once `deadlineMs` of real time passed (a count of
 * tries would be a few seconds on a loaded box, where one store round trip can take 100 ms).
 */
export async function until(
  check: () => Promise<boolean> | boolean,
  what: string,
  deadlineMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (await check()) return;
  throw new Error(`timed out after ${deadlineMs} ms waiting for ${what}`);
}

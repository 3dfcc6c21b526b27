/** What the demo observed, from the side channel, the log and its child processes. */
export interface DemoFacts {
  /** The first worker died of the driver's SIGKILL while the run waited for approval. */
  killedWhileWaiting: boolean;
  /** Lines in the side channel file: refunds that really ran. */
  refunds: number;
  /** The event store's hash-chain check of the run's log. */
  verified: boolean;
  /** How the run ended, as the log says; undefined if it did not end. */
  reason: string | undefined;
}

/**
 * What the demo promises and did not hold: empty when the run was SIGKILLed while waiting for
 * approval, the refund ran exactly once, the log verifies and the run completed its goal. The
 * demo exits 1 when this is not empty.
 */
export function contractBreaches(facts: DemoFacts): string[] {
  const breaches: string[] = [];
  if (!facts.killedWhileWaiting) {
    breaches.push('the first worker was not SIGKILLed while the run waited for approval');
  }
  if (facts.refunds !== 1) {
    breaches.push(`the refund ran ${facts.refunds} times (side channel lines), not exactly once`);
  }
  if (!facts.verified) breaches.push("verify failed: the run's hash chain is broken");
  if (facts.reason !== 'goal_completed') {
    breaches.push(
      `the run ended with ${facts.reason ?? 'nothing (it did not end)'}, not goal_completed`,
    );
  }
  return breaches;
}

/**
 * An index row's `claimedBy` as a summary field: present only when a claim recorded its node
 * (ADR 0063), so summaries of rows without one stay as they were.
 */
export function claimedByField(claimedBy: string | null | undefined): { claimedBy?: string } {
  return claimedBy === null || claimedBy === undefined ? {} : { claimedBy };
}

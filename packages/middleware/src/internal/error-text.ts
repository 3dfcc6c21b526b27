/** A one-line description of anything thrown; never throws itself (null-prototype objects). */
export function errorText(error: unknown): string {
  try {
    if (error instanceof Error) return `${error.name}: ${error.message}`;
    return String(error);
  } catch {
    try {
      return Object.prototype.toString.call(error);
    } catch {
      return '[unprintable value]';
    }
  }
}

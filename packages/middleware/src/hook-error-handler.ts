/**
 * Where the error of a throwing observer hook (`onRecord`, `log`, `onStateChange`) goes. It
 * never reaches the effect's caller; the default reports it as a process warning.
 */
export type HookErrorHandler = (error: unknown) => void;

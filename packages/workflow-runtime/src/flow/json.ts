/**
 * What a value JSON cannot hold becomes in {@link Json}, so the compiler's error names it:
 * "Type 'Date' is not assignable to type 'NotJson<"a Date: …">'".
 */
export interface NotJson<Why extends string> {
  readonly 'not JSON, so the log cannot hold it': Why;
}

/**
 * `T` itself when the log can hold it (strings, finite numbers, booleans, null, arrays and plain
 * objects of those, interfaces included), with every part JSON cannot give back replaced by a
 * {@link NotJson} that says why: `Date`, `Map`, `Set`, `bigint`, functions, and class instances
 * with methods. Step results and flow inputs and outputs are checked against it at compile
 * time; the kernel still refuses them at run time (`PAYLOAD_NOT_JSON`). Limits of a type-level
 * check: `undefined` passes (a step may return nothing), `unknown` and `any` pass unchecked, and
 * an instance of a class with only data fields is indistinguishable from a plain object.
 *
 * @example
 * type Ok = Json<{ id: string; lines: { sku: string }[] }>; // the same type
 * type Refused = Json<{ at: Date }>; // { at: NotJson<'a Date: …'> }
 */
export type Json<T> = unknown extends T
  ? T
  : // biome-ignore lint/suspicious/noConfusingVoidType: a step that returns nothing has type void
    T extends string | number | boolean | null | undefined | void
    ? T
    : T extends bigint
      ? NotJson<'a bigint: store it as a string'>
      : T extends Date
        ? NotJson<'a Date: store date.toISOString() or date.getTime()'>
        : T extends ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>
          ? NotJson<'a Map or Set: store an array or a plain object'>
          : T extends symbol | ((...args: never[]) => unknown)
            ? NotJson<'a function or symbol'>
            : T extends object
              ? { [K in keyof T]: Json<T[K]> }
              : NotJson<'not a JSON value'>;

/** Calls `task`, turning a synchronous throw or a plain return value into a promise. */
export function runTask<A, T>(task: (argument: A) => Promise<T>, argument: A): Promise<T> {
  let result: Promise<T>;
  try {
    result = task(argument);
  } catch (error) {
    return Promise.reject(error);
  }
  return result instanceof Promise ? result : Promise.resolve(result);
}

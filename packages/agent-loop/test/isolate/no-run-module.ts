// An isolated tool's module that exports no `run` function.
export const notRun = 42;

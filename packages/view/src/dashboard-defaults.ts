// The dashboard's defaults and limits, apart from `start-dashboard.ts` so that the `loom` command
// can print them in its help without loading the dashboard's server (hono).

/** The port `loom serve` listens on when `--port` is not given. */
export const dashboardPortDefault = 7380;
/** How often an open page's event stream polls the store for changes (ms). */
export const dashboardPollMsDefault = 500;
/** The shortest token accepted: a guessable token would make the bearer check moot. */
export const dashboardTokenCharsMin = 16;
/** The environment variable `loom serve` reads the token from when `--token` is not given. */
export const tokenEnvVar = 'LOOM_TOKEN';
